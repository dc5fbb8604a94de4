package chokaq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/zombie"
)

// ErrTxUnsupported is returned by EnqueueTx when the store is not SQL Server.
var ErrTxUnsupported = errors.New("chokaq: EnqueueTx needs the SQL Server store")

// Config builds a Client.
type Config struct {
	// Store, when set, is used as is. Otherwise the Client opens SQL Server
	// when ConnectionString is set, else an in-memory store.
	Store            jobs.Store
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
}

// New builds a Client; it connects to SQL Server if configured, but starts
// nothing. reg may be nil when DisableProcessor is set.
func New(ctx context.Context, cfg Config, reg *processor.Registry) (*Client, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Schema == "" {
		cfg.Schema = schema.DefaultName
	}
	c := &Client{cfg: cfg, log: cfg.Logger}
	switch {
	case cfg.Store != nil:
		c.store = cfg.Store
		c.sql, _ = cfg.Store.(*sqlserver.Store)
	case cfg.ConnectionString != "":
		if cfg.Migrate {
			if err := schema.Up(ctx, cfg.ConnectionString, cfg.Schema); err != nil {
				return nil, fmt.Errorf("chokaq: migrate: %w", sqlserver.RedactError(err, cfg.ConnectionString))
			}
		}
		s, err := sqlserver.Open(ctx, cfg.ConnectionString,
			sqlserver.WithSchema(cfg.Schema), sqlserver.WithLimits(cfg.Limits), sqlserver.WithLogger(cfg.Logger))
		if err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		c.store, c.sql = s, s
	default:
		c.store = memstore.New(memstore.WithLimits(cfg.Limits))
	}

	// One FetchedJobTimeout for the buffer's release rule and for phase 1.
	pc := cfg.Processor
	if pc.FetchedJobTimeout == 0 {
		pc.FetchedJobTimeout = cfg.Rescue.FetchedJobTimeout
	}
	if cfg.Rescue.FetchedJobTimeout == 0 {
		cfg.Rescue.FetchedJobTimeout = pc.FetchedJobTimeout
	}
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	if !cfg.DisableProcessor {
		if reg == nil {
			return nil, errors.New("chokaq: a handler registry is required unless DisableProcessor is set")
		}
		p, err := processor.New(c.store, reg, pc)
		if err != nil {
			return nil, err
		}
		c.proc = p
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
		r, err := zombie.New(c.store, rc)
		if err != nil {
			return nil, err
		}
		c.rescuer = r
	}
	return c, nil
}

// Start checks the schema (SQL Server), writes queue settings, then starts
// the rescue loop and the processor.
func (c *Client) Start(ctx context.Context) error {
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
			return err
		}
	}
	return nil
}

// Stop shuts the processor down gracefully (see processor.Stop), then the
// rescue loop, then closes the SQL Server pool if the Client opened it.
func (c *Client) Stop(ctx context.Context) error {
	var errs []error
	if c.proc != nil {
		if err := c.proc.Stop(ctx); err != nil && !errors.Is(err, processor.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	if c.rescuer != nil {
		if err := c.rescuer.Stop(ctx); err != nil && !errors.Is(err, zombie.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	if c.sql != nil && c.cfg.Store == nil {
		errs = append(errs, c.sql.Close())
	}
	return errors.Join(errs...)
}

func (c *Client) withDefaults(p jobs.EnqueueParams) jobs.EnqueueParams {
	if p.MaxAttempts == 0 && c.cfg.DefaultMaxAttempts > 0 {
		p.MaxAttempts = c.cfg.DefaultMaxAttempts
	}
	return p
}

// Enqueue adds a job and wakes this process's processor.
func (c *Client) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	r, err := c.store.Enqueue(ctx, c.withDefaults(p))
	if err == nil {
		c.notify()
	}
	return r, err
}

// EnqueueMany adds jobs atomically and wakes this process's processor.
func (c *Client) EnqueueMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	filled := make([]jobs.EnqueueParams, len(ps))
	for i, p := range ps {
		filled[i] = c.withDefaults(p)
	}
	r, err := c.store.EnqueueMany(ctx, filled)
	if err == nil {
		c.notify()
	}
	return r, err
}

// EnqueueTx adds a job inside the caller's transaction: it exists if and
// only if tx commits. SQL Server only.
func (c *Client) EnqueueTx(ctx context.Context, tx *sql.Tx, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	if c.sql == nil {
		return jobs.EnqueueResult{}, ErrTxUnsupported
	}
	return c.sql.EnqueueTx(ctx, tx, c.withDefaults(p))
}

func (c *Client) notify() {
	if c.proc != nil {
		c.proc.Notify()
	}
}

// Store returns the store, for operator reads and tests.
func (c *Client) Store() jobs.Store { return c.store }

// Processor returns the processor, nil when disabled.
func (c *Client) Processor() *processor.Processor { return c.proc }

// Rescuer returns the rescue loop, nil when disabled.
func (c *Client) Rescuer() *zombie.Rescuer { return c.rescuer }
