package chokaq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

var (
	// ErrNoStore is returned by New when the Config names no store: neither
	// Store nor ConnectionString. There is no silent in-memory fallback: a
	// service whose connection string went missing would accept jobs and
	// lose them at its next restart. Pass memstore.New() to mean memory.
	ErrNoStore = errors.New("chokaq: no store: set Config.ConnectionString (SQL Server) or Config.Store (for example memstore.New())")
	// ErrTxUnsupported is returned by EnqueueTx when the store cannot
	// enqueue inside a transaction (it is not a jobs.TxEnqueuer).
	ErrTxUnsupported = errors.New("chokaq: EnqueueTx needs a store that enqueues in a transaction (jobs.TxEnqueuer: the SQL Server store)")
	// ErrClientStopped is returned by Start on a Client that was stopped: a
	// Client runs once (its pool is closed at Stop); build a new one.
	ErrClientStopped = errors.New("chokaq: client stopped; create a new one with New")
)

// Config builds a Client. It must name a store: Store, or ConnectionString.
type Config struct {
	// Store, when set, is used as is (memstore.New() for an in-memory
	// store). Otherwise the Client opens SQL Server at ConnectionString.
	Store jobs.Store
	// ConnectionString is a go-mssqldb DSN, used when Store is nil.
	ConnectionString string
	// Schema is the SQL Server schema (default "chokaq").
	Schema string
	// Migrate runs the schema migrations before starting (SQL Server only).
	// Without it, Start checks that the schema is at the expected version.
	Migrate bool
	// Limits apply to every enqueue.
	Limits jobs.Limits
	// DefaultMaxAttempts fills EnqueueParams.MaxAttempts when it is 0
	// (Retry.MaxAttempts in appsettings; jobs.DefaultMaxAttempts if unset).
	DefaultMaxAttempts int

	Processor processor.Config
	Rescue    zombie.Config
	// DisableProcessor runs no workers: an enqueue-only client, or a
	// rescue-only maintenance process.
	DisableProcessor bool
	// DisableRescue runs no rescue loop in this process.
	DisableRescue bool
	// SingleRescuer elects one rescuer per schema with sp_getapplock
	// (SQL Server only); the others skip their sweeps.
	SingleRescuer bool

	// Queues are written to the store's queue settings at Start.
	Queues map[string]jobs.QueueUpdate

	// Telemetry, when set, records the Client's metrics (package
	// telemetry): it observes the processor next to any Observer in
	// Processor, hooks the rescue loop next to any OnRescue and OnSweep in
	// Rescue (sampling the depth of the served queues and of Queues after
	// each sweep), reports the processor's gauges, and counts enqueues.
	Telemetry *telemetry.Metrics

	// Logger, nil for none.
	Logger *zap.Logger
}

// Client runs chokaq-go inside a service.
type Client struct {
	cfg     Config
	store   jobs.Store
	sql     *sqlserver.Store // nil unless on SQL Server
	proc    *processor.Processor
	rescuer *zombie.Rescuer
	leader  *sqlserver.Leader
	log     *zap.Logger

	mu    sync.Mutex
	state clientState
}

type clientState int

const (
	clientNew clientState = iota
	clientStarted
	clientStopped
)

// New builds a Client; it connects to SQL Server if configured, but starts
// nothing. reg may be nil when DisableProcessor is set (an enqueue-only
// client, or a rescue-only maintenance process).
func New(ctx context.Context, cfg Config, reg *processor.Registry) (*Client, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Schema == "" {
		cfg.Schema = schema.DefaultName
	}
	// The buffer releases a job before rescue phase 1 would take it back.
	if cfg.Processor.ReleaseAfter == 0 {
		cfg.Processor.ReleaseAfter = or(cfg.Rescue.FetchedJobTimeout, zombie.DefaultConfig().FetchedJobTimeout) / 2
	}
	if !cfg.DisableProcessor && !cfg.DisableRescue {
		if err := CheckConfig(cfg.Processor, cfg.Rescue, cfg.Queues); err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
	}
	c := &Client{cfg: cfg, log: cfg.Logger}
	ok := false
	defer func() {
		// Do not leak the pool New opened when a later step fails.
		if !ok && c.sql != nil && cfg.Store == nil {
			c.sql.Close()
		}
	}()
	switch {
	case cfg.Store != nil:
		c.store = cfg.Store
		c.sql, _ = cfg.Store.(*sqlserver.Store)
	case cfg.ConnectionString == "":
		return nil, ErrNoStore
	default:
		if cfg.Migrate {
			if err := schema.Up(ctx, cfg.ConnectionString, cfg.Schema); err != nil {
				return nil, fmt.Errorf("chokaq: migrate: %w", redact.Error(err, cfg.ConnectionString))
			}
		}
		s, err := sqlserver.Open(ctx, cfg.ConnectionString,
			sqlserver.WithSchema(cfg.Schema), sqlserver.WithLimits(cfg.Limits), sqlserver.WithLogger(cfg.Logger))
		if err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		c.store, c.sql = s, s
	}

	pc := cfg.Processor
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	if cfg.Telemetry != nil {
		pc = cfg.Telemetry.InstrumentProcessor(pc)
	}
	if !cfg.DisableProcessor {
		if reg == nil {
			return nil, errors.New("chokaq: a handler registry is required unless DisableProcessor is set")
		}
		p, err := processor.New(c.store, reg, pc)
		if err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		c.proc = p
		if cfg.Telemetry != nil {
			cfg.Telemetry.ObserveProcessor(p)
		}
	}
	if !cfg.DisableRescue {
		rc := cfg.Rescue
		if rc.Logger == nil {
			rc.Logger = cfg.Logger
		}
		if cfg.SingleRescuer {
			if c.sql == nil {
				return nil, errors.New("chokaq: SingleRescuer needs the SQL Server store")
			}
			c.leader = sqlserver.NewLeader(c.sql, "rescue")
			rc.Leader = c.leader
		}
		if cfg.Telemetry != nil {
			rc = cfg.Telemetry.InstrumentRescue(rc, c.store, c.depthQueues(pc))
		}
		r, err := zombie.New(c.store, rc)
		if err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		c.rescuer = r
	}
	ok = true
	return c, nil
}

// depthQueues are the queues whose depth the rescue loop samples: the ones
// this process serves and the ones it configures.
func (c *Client) depthQueues(pc processor.Config) []string {
	qs := slices.Clone(pc.Queues)
	if len(qs) == 0 && !c.cfg.DisableProcessor {
		qs = []string{jobs.DefaultQueue}
	}
	for _, q := range slices.Sorted(maps.Keys(c.cfg.Queues)) {
		if !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	return qs
}

// Start checks the schema (SQL Server), writes queue settings, then starts
// the rescue loop and the processor.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case clientStarted:
		return fmt.Errorf("chokaq: client: %w", jobs.ErrAlreadyStarted)
	case clientStopped:
		return ErrClientStopped
	}
	if c.sql != nil {
		if err := c.sql.CheckSchema(ctx); err != nil {
			return fmt.Errorf("chokaq: %w", err)
		}
	}
	for name, u := range c.cfg.Queues {
		if _, err := c.store.UpdateQueue(ctx, name, u); err != nil {
			return fmt.Errorf("chokaq: queue %s: %w", name, err)
		}
	}
	if c.rescuer != nil {
		if err := c.rescuer.Start(ctx); err != nil {
			return err
		}
	}
	if c.proc != nil {
		if err := c.proc.Start(ctx); err != nil {
			_ = c.rescuer.Stop(context.WithoutCancel(ctx))
			return err
		}
	}
	c.state = clientStarted
	return nil
}

// Stop shuts the processor down gracefully (see processor.Stop), then the
// rescue loop, then closes the SQL Server pool if the Client opened it.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == clientStopped {
		return nil
	}
	c.state = clientStopped
	var errs []error
	if c.proc != nil {
		if err := c.proc.Stop(ctx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	if c.rescuer != nil {
		if err := c.rescuer.Stop(ctx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	if c.sql != nil && c.cfg.Store == nil {
		errs = append(errs, c.sql.Close())
	}
	return errors.Join(errs...)
}

// Processor returns the processor, nil when disabled.
func (c *Client) Processor() *processor.Processor { return c.proc }

// Rescuer returns the rescue loop, nil when disabled.
func (c *Client) Rescuer() *zombie.Rescuer { return c.rescuer }

// Health returns readiness checks over the Client's store, schema, rescue
// loop and processor, for /healthz and /readyz (see telemetry.Mount). Call
// it when the Client starts: the rescue loop's grace period counts from
// then.
func (c *Client) Health() *telemetry.Health {
	hc := telemetry.HealthConfig{Store: c.store, Rescuer: c.rescuer}
	if c.proc != nil {
		hc.Processors = []*processor.Processor{c.proc}
	}
	return telemetry.NewHealth(hc)
}
