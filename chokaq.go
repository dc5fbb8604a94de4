package chokaq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
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
	// Limits apply to every enqueue through the Client and to the
	// schedules' jobs, whatever the store: with Store, the Client checks
	// them before the store applies its own (build it with the same, e.g.
	// memstore.WithLimits, for one set). New refuses a negative one.
	Limits jobs.Limits
	// DefaultMaxAttempts fills EnqueueParams.MaxAttempts when it is 0
	// (Retry.MaxAttempts in appsettings; jobs.DefaultMaxAttempts if unset).
	// 0 or 1 to jobs.MaxMaxAttempts; New refuses any other.
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

	// Kinds are the operator's policies per job kind (appsettings
	// ChokaQ.Kinds.<kind>.*), written field by field over the policy the
	// code declares (ArgsWithPolicy, Registry.SetPolicy). Kinds compare
	// exactly; New refuses two that differ only by case
	// (ErrKindsDifferOnlyByCase), since configuration keys ignore case.
	Kinds map[string]KindPolicy

	// Schedules are recurring jobs (typed); RawSchedules the same in the
	// schedule package's form (appsettings' ChokaQ.Schedules arrive
	// there). The Client records them in the store at Start and fires
	// their ticks: led by one process per set of schedules on SQL Server
	// (sp_getapplock), by this one in memory. Each tick fires once
	// whatever the number of processes (ADR 0020).
	Schedules    []Schedule
	RawSchedules []schedule.Schedule

	// Retention deletes archived and dead-lettered jobs past their
	// retention (7 and 30 days unless set; a queue's own wins), run by one
	// process per schema on SQL Server, in every Client that runs the
	// processor or the rescue loop unless DisableRetention.
	Retention        retention.Config
	DisableRetention bool

	// Telemetry, when set, records the Client's metrics (package
	// telemetry): it observes the processor next to any Observer in
	// Processor, hooks the rescue loop next to any OnRescue and OnSweep in
	// Rescue (sampling the depth of the served queues and of Queues after
	// each sweep), reports the processor's gauges, and counts enqueues.
	Telemetry *telemetry.Metrics

	// TracerProvider traces the Client (OpenTelemetry): an enqueue inside
	// a span keeps its W3C trace context in the job's metadata, every
	// attempt runs in a consumer span linked to it, and the rescue,
	// retention and schedule rounds have spans of their own. It fills the
	// TracerProvider of Processor, Rescue and Retention that are unset.
	// Nil (the default) traces nothing; the library pulls no exporter.
	TracerProvider trace.TracerProvider

	// EnqueueMiddleware sees every job the Client enqueues before it is
	// checked and inserted, in this order (EnqueueMiddleware). Work
	// middleware is the Registry's (Registry.Use).
	EnqueueMiddleware []EnqueueMiddleware

	// Logger, nil for none.
	Logger *zap.Logger
}

// Client runs chokaq-go inside a service.
type Client struct {
	cfg       Config
	store     jobs.Store
	sql       *sqlserver.Store // nil unless on SQL Server
	proc      *processor.Processor
	reg       *processor.Registry // the kinds' policies, also without a processor
	rescuer   *zombie.Rescuer
	scheduler *schedule.Scheduler // nil without schedules
	retainer  *retention.Retainer // nil when disabled
	leader    *sqlserver.Leader
	log       *zap.Logger

	mu       sync.Mutex
	state    clientState
	stopOnce periodic.StopOnce
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
	// Everything is checked before anything is written: Start applies
	// Queues, and a bad entry found there would leave the ones before it
	// applied.
	check := func() error { return checkQueues(cfg.Queues) }
	if !cfg.DisableProcessor && !cfg.DisableRescue {
		check = func() error { return CheckConfig(cfg.Processor, cfg.Rescue, cfg.Queues) }
	}
	if err := check(); err != nil {
		return nil, fmt.Errorf("chokaq: %w", err)
	}
	if err := cfg.checkEnqueue(); err != nil {
		return nil, err
	}
	if err := checkEnqueueMiddleware(cfg.EnqueueMiddleware); err != nil {
		return nil, err
	}
	if err := checkKinds(cfg.Kinds); err != nil {
		return nil, err
	}
	if reg == nil {
		if !cfg.DisableProcessor {
			return nil, errors.New("chokaq: a handler registry is required unless DisableProcessor is set")
		}
		reg = processor.NewRegistry() // enqueue-only: the kinds' policies still apply to enqueues
	}
	if err := applyKinds(reg, cfg.Kinds); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: cfg.Logger, reg: reg}
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
		// Before the migrations and the pool, which would dial it.
		if err := sqlserver.CheckDSN(cfg.ConnectionString); err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		if cfg.Migrate {
			if err := schema.Up(ctx, cfg.ConnectionString, cfg.Schema); err != nil {
				return nil, fmt.Errorf("chokaq: migrate: %w", redact.Error(err, cfg.ConnectionString))
			}
		}
		opts := []sqlserver.Option{sqlserver.WithSchema(cfg.Schema), sqlserver.WithLimits(cfg.Limits), sqlserver.WithLogger(cfg.Logger)}
		if cfg.Telemetry != nil {
			opts = append(opts, sqlserver.WithWorkflowEnded(cfg.Telemetry.RecordWorkflowEnded))
		}
		s, err := sqlserver.Open(ctx, cfg.ConnectionString, opts...)
		if err != nil {
			return nil, fmt.Errorf("chokaq: %w", err)
		}
		c.store, c.sql = s, s
	}

	if cfg.TracerProvider != nil {
		for _, tp := range []*trace.TracerProvider{&cfg.Processor.TracerProvider, &cfg.Rescue.TracerProvider, &cfg.Retention.TracerProvider} {
			if *tp == nil {
				*tp = cfg.TracerProvider
			}
		}
	}
	pc := cfg.Processor
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	if cfg.Telemetry != nil {
		pc = cfg.Telemetry.InstrumentProcessor(pc)
	}
	if !cfg.DisableProcessor {
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
	if err := c.maintenance(cfg); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// checkEnqueue refuses limits and defaults that would fail, or silently
// change, every enqueue.
func (cfg Config) checkEnqueue() error {
	if err := cfg.Limits.Validate(); err != nil {
		ve, _ := errors.AsType[*jobs.ValidationError](err)
		return &jobs.SettingError{Component: "chokaq", Key: "Limits.MaxPayloadBytes", Value: ve.Value, Rule: ve.Rule}
	}
	if n := cfg.DefaultMaxAttempts; n < 0 || n > jobs.MaxMaxAttempts {
		return &jobs.SettingError{Component: "chokaq", Key: "DefaultMaxAttempts", Value: n,
			Rule: fmt.Sprintf("must be between 1 and %d (0 takes jobs.DefaultMaxAttempts, %d)", jobs.MaxMaxAttempts, jobs.DefaultMaxAttempts)}
	}
	return nil
}

// maintenance builds the schedule and retention loops, each led by one
// process on SQL Server.
func (c *Client) maintenance(cfg Config) error {
	scheds, err := cfg.schedules()
	if err != nil {
		return err
	}
	if len(scheds) > 0 {
		for i := range scheds {
			// Written into the definition, so that the stored one, which
			// operators trigger by hand, says what runs.
			if scheds[i].Job.MaxAttempts == 0 && cfg.DefaultMaxAttempts > 0 {
				scheds[i].Job.MaxAttempts = cfg.DefaultMaxAttempts
			}
		}
		sc := schedule.Config{Schedules: scheds, Limits: cfg.Limits, Logger: cfg.Logger, TracerProvider: cfg.TracerProvider}
		if c.sql != nil {
			// One leader per set of schedules: a process defining another
			// set (another service, a new release mid-deploy) fires its own.
			sc.Leader = sqlserver.NewLeader(c.sql, "schedules:"+schedule.SetID(scheds))
		}
		if cfg.Telemetry != nil {
			sc = cfg.Telemetry.InstrumentSchedules(sc)
		}
		if c.scheduler, err = schedule.New(c.store, sc); err != nil {
			return fmt.Errorf("chokaq: %w", err)
		}
	}
	if cfg.DisableRetention || (cfg.DisableProcessor && cfg.DisableRescue) {
		return nil
	}
	rc := cfg.Retention
	if rc.Logger == nil {
		rc.Logger = cfg.Logger
	}
	if c.sql != nil {
		rc.Leader = sqlserver.NewLeader(c.sql, "retention")
	}
	if cfg.Telemetry != nil {
		rc = cfg.Telemetry.InstrumentRetention(rc)
	}
	if c.retainer, err = retention.New(c.store, rc); err != nil {
		return fmt.Errorf("chokaq: %w", err)
	}
	return nil
}

// depthQueues are the queues whose depth the rescue loop samples: the ones
// this process serves and the ones it configures.
func (c *Client) depthQueues(pc processor.Config) []string {
	qs := slices.Clone(pc.Queues)
	if len(qs) == 0 && !c.cfg.DisableProcessor {
		qs = []string{jobs.DefaultQueue}
	}
	qs = append(qs, slices.Sorted(maps.Keys(c.cfg.Queues))...)
	return jobs.UniqueQueues(qs) // "mail" in Queues and "Mail" in the settings are one queue
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
	if err := c.applyQueues(ctx); err != nil {
		return err
	}
	// Each loop started is stopped again if a later one fails to start.
	var started []func(context.Context) error
	undo := func(err error) error {
		for _, stop := range slices.Backward(started) {
			_ = stop(context.WithoutCancel(ctx))
		}
		return err
	}
	if c.rescuer != nil {
		if err := c.rescuer.Start(ctx); err != nil {
			return err
		}
		started = append(started, c.rescuer.Stop)
	}
	if c.scheduler != nil {
		if err := c.scheduler.Start(ctx); err != nil {
			return undo(fmt.Errorf("chokaq: %w", err))
		}
		started = append(started, c.scheduler.Stop)
	}
	if c.retainer != nil {
		if err := c.retainer.Start(ctx); err != nil {
			return undo(err)
		}
		started = append(started, c.retainer.Stop)
	}
	if c.proc != nil {
		if err := c.proc.Start(ctx); err != nil {
			return undo(err)
		}
	}
	c.state = clientStarted
	return nil
}

// applyQueues writes Config.Queues to the store, in name order. Each write
// sets the values the Config gives, so the apply is idempotent: New checked
// every entry, the SQL Server store retries a transient failure, and when a
// write still fails the Client stays unstarted and Start may be called
// again, which writes every entry again (ADR 0023). The error names the
// queues already written.
func (c *Client) applyQueues(ctx context.Context) error {
	names := slices.Sorted(maps.Keys(c.cfg.Queues))
	for i, name := range names {
		if _, err := c.store.UpdateQueue(ctx, name, c.cfg.Queues[name]); err != nil {
			written := "none written"
			if i > 0 {
				written = "written: " + strings.Join(names[:i], ", ")
			}
			return fmt.Errorf("chokaq: queue %s: %w (queue settings %s; call Start again to write them all)", name, err, written)
		}
	}
	return nil
}

// Stop shuts the processor down gracefully (see processor.Stop; it takes up
// to twice Processor.ShutdownTimeout), then the schedule, retention and
// rescue loops, then closes the SQL Server pool if the Client opened it.
// A second Stop, concurrent or later, waits for the first and returns the
// same result, or its own context's error if that ends first.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.state = clientStopped
	c.mu.Unlock()
	return c.stopOnce.Do(ctx, func() error { return c.stop(ctx) })
}

// stop is the first Stop's work.
func (c *Client) stop(ctx context.Context) error {
	var errs []error
	if c.proc != nil {
		if err := c.proc.Stop(ctx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	var stops []func(context.Context) error
	if c.scheduler != nil {
		stops = append(stops, c.scheduler.Stop)
	}
	if c.retainer != nil {
		stops = append(stops, c.retainer.Stop)
	}
	if c.rescuer != nil {
		stops = append(stops, c.rescuer.Stop)
	}
	for _, stop := range stops {
		if err := stop(ctx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
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

// Scheduler returns the schedule loop, nil without schedules.
func (c *Client) Scheduler() *schedule.Scheduler { return c.scheduler }

// Retainer returns the retention loop, nil when disabled.
func (c *Client) Retainer() *retention.Retainer { return c.retainer }

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
