package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/jobs"
)

// Store is what the retention loop needs of a store: the queues of a
// table, each queue's own retention, and the trim (oldest first, in steps
// that each continue after the last).
type Store interface {
	// TableQueues is jobs.Admin's.
	TableQueues(ctx context.Context, t jobs.Table, after string) ([]string, error)
	// Queues is jobs.Admin's: the queues' own retentions.
	Queues(ctx context.Context) ([]jobs.QueueSettings, error)
	// Trim is jobs.Admin's.
	Trim(ctx context.Context, p jobs.TrimParams) (jobs.TrimResult, error)
}

// Config configures the retention loop. Zero fields take their defaults
// (DefaultConfig); a queue's own retention (jobs.QueueSettings) wins over
// Archive and DeadLetters.
type Config struct {
	// Archive is how long archived (succeeded) jobs are kept (7 days);
	// jobs.KeepForever keeps them.
	Archive time.Duration
	// DeadLetters is how long dead letters are kept (30 days);
	// jobs.KeepForever keeps them. Resurrect brings a dead letter back
	// only while it is kept.
	DeadLetters time.Duration
	// Interval is the time between sweeps (1m).
	Interval time.Duration
	// BatchSize is how many jobs one delete removes (1,000, at most
	// 1,000: the locks of one statement stay far below SQL Server's lock
	// escalation).
	BatchSize int
	// Pause is the wait between two deletes of a sweep (100ms), so a
	// large backlog of expired jobs is trimmed without holding the
	// tables, or the log, busy.
	Pause time.Duration
	// MaxBatchesPerSweep bounds one sweep (1,000 deletes); the next sweep
	// goes on where it stopped.
	MaxBatchesPerSweep int
	// Leader, when set, lets one process sweep (sqlserver.Leader); nil
	// sweeps in this process.
	Leader jobs.Leader
	Logger *zap.Logger
	// TracerProvider, when set, gives each round a span of its own
	// (OpenTelemetry); nil for none. The library pulls no exporter.
	TracerProvider trace.TracerProvider
	// OnDelete, when set, sees every delete that removed jobs: the table,
	// the queue and how many (chokaq.retention.deleted).
	OnDelete func(table jobs.Table, queue string, n int)
	// OnSweep, when set, sees every finished sweep, skipped or failed
	// ones included.
	OnSweep func(Result, error)
}

// Defaults and bounds of Config.
const (
	DefaultArchive     = 7 * 24 * time.Hour
	DefaultDeadLetters = 30 * 24 * time.Hour
	DefaultInterval    = time.Minute
	DefaultBatchSize   = 1000
	DefaultPause       = 100 * time.Millisecond
	MinInterval        = 100 * time.Millisecond
	MaxInterval        = 24 * time.Hour
	MaxPause           = time.Minute
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Archive: DefaultArchive, DeadLetters: DefaultDeadLetters, Interval: DefaultInterval,
		BatchSize: DefaultBatchSize, Pause: DefaultPause, MaxBatchesPerSweep: 1000}
}

// Validate checks c as New would use it, defaults applied, and returns the
// first broken rule as a *jobs.SettingError.
func (c Config) Validate() error { return periodic.WithDefaults(c, DefaultConfig()).validate() }

func (c Config) validate() error {
	bad := func(key string, v any, rule string) error {
		return &jobs.SettingError{Component: "retention", Key: key, Value: v, Rule: rule}
	}
	for _, r := range []struct {
		key string
		d   time.Duration
	}{{"Archive", c.Archive}, {"DeadLetters", c.DeadLetters}} {
		if r.d != jobs.KeepForever && (r.d < time.Second || r.d > jobs.MaxRetention) {
			return bad(r.key, r.d, "must be between 1s and "+jobs.MaxRetention.String()+", or KeepForever")
		}
	}
	switch {
	case c.Interval < MinInterval || c.Interval > MaxInterval:
		return bad("Interval", c.Interval, fmt.Sprintf("must be between %v and %v", MinInterval, MaxInterval))
	case c.BatchSize < 1 || c.BatchSize > jobs.MaxRescueBatch:
		return bad("BatchSize", c.BatchSize, fmt.Sprintf("must be between 1 and %d", jobs.MaxRescueBatch))
	case c.Pause < 0 || c.Pause > MaxPause:
		return bad("Pause", c.Pause, "must be between 0s and "+MaxPause.String())
	case c.MaxBatchesPerSweep < 1 || c.MaxBatchesPerSweep > 1_000_000:
		return bad("MaxBatchesPerSweep", c.MaxBatchesPerSweep, "must be between 1 and 1000000")
	}
	return nil
}

// Result is what one sweep deleted.
type Result struct {
	Archived, DeadLetters int
	// Skipped is set when this process did not lead.
	Skipped bool
	// Truncated is set when the sweep stopped at MaxBatchesPerSweep; the
	// next one goes on.
	Truncated bool
}

// String says what the sweep deleted, as the log line does.
func (r Result) String() string {
	return fmt.Sprintf("deleted %d archived and %d dead-lettered jobs past their retention", r.Archived, r.DeadLetters)
}

// Retainer trims the archive and the dead-letter queue.
type Retainer struct {
	store Store
	cfg   Config
	log   *zap.Logger

	deleted atomic.Int64

	loop periodic.Loop
}

// New validates cfg and returns a Retainer.
func New(store Store, cfg Config) (*Retainer, error) {
	if store == nil {
		return nil, errors.New("retention: nil store")
	}
	cfg = periodic.WithDefaults(cfg, DefaultConfig())
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Retainer{store: store, cfg: cfg, log: cfg.Logger, loop: periodic.Loop{Name: "retention"}}, nil
}

// Config returns the settings in force, defaults filled.
func (r *Retainer) Config() Config { return r.cfg }

// Deleted is how many jobs the Retainer deleted since it was made.
func (r *Retainer) Deleted() int64 { return r.deleted.Load() }

// KeepFor is how long a queue's jobs of table t are kept: the queue's own
// retention, else the global one (jobs.KeepForever: kept).
func KeepFor(q jobs.QueueSettings, t jobs.Table, global Config) time.Duration {
	own, def := q.ArchiveRetention, global.Archive
	if t == jobs.TableDLQ {
		own, def = q.DeadLetterRetention, global.DeadLetters
	}
	if own != 0 {
		return own
	}
	return def
}

// Sweep deletes, table by table and queue by queue (every queue, a page of
// names at a time), the archived and dead-lettered jobs that finished
// longer ago than their retention, oldest first, BatchSize at a time with
// Pause between deletes, each delete continuing after the last. Hot jobs
// are never touched: a trim refuses the hot table. It logs one line when
// it deleted anything.
func (r *Retainer) Sweep(ctx context.Context) (Result, error) {
	return periodic.Round[Result]{Name: "retention", Noun: "sweep", Leader: r.cfg.Leader, Skipped: Result{Skipped: true},
		Done: r.cfg.OnSweep, Tracer: periodic.Tracer(r.cfg.TracerProvider)}.Run(ctx, r.sweep)
}

// sweep is the work of a sweep this process leads.
func (r *Retainer) sweep(ctx context.Context, res *Result) error {
	settings, err := r.store.Queues(ctx)
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	// Stores may compare queue names ignoring case (SQL Server's default
	// collation), so a queue's row matches its jobs whatever their case.
	own := make(map[string]jobs.QueueSettings, len(settings))
	for _, q := range settings {
		own[strings.ToLower(q.Name)] = q
	}
	batches := 0
	for _, table := range []jobs.Table{jobs.TableArchive, jobs.TableDLQ} {
		count := &res.Archived
		if table == jobs.TableDLQ {
			count = &res.DeadLetters
		}
		for after := ""; ; {
			queues, err := r.store.TableQueues(ctx, table, after)
			if err != nil {
				r.logSweep(*res)
				return fmt.Errorf("retention: %w", err)
			}
			for _, queue := range queues {
				keep := KeepFor(own[strings.ToLower(queue)], table, r.cfg)
				if keep == jobs.KeepForever {
					continue
				}
				p := jobs.TrimParams{Table: table, Queue: queue, OlderThan: keep, Limit: r.cfg.BatchSize}
				for {
					if batches == r.cfg.MaxBatchesPerSweep {
						res.Truncated = true
						r.logSweep(*res)
						return nil
					}
					if batches > 0 {
						if err := periodic.Sleep(ctx, r.cfg.Pause); err != nil {
							r.logSweep(*res)
							return err
						}
					}
					batches++
					t, err := r.store.Trim(ctx, p)
					*count += t.Deleted
					r.deleted.Add(int64(t.Deleted))
					if t.Deleted > 0 && r.cfg.OnDelete != nil {
						r.cfg.OnDelete(table, queue, t.Deleted)
					}
					if err != nil {
						r.logSweep(*res)
						return fmt.Errorf("retention: trim %s of queue %s: %w", table, queue, err)
					}
					if t.Deleted < r.cfg.BatchSize {
						break
					}
					p.After = t.Last
				}
			}
			if len(queues) < jobs.MaxStatsQueues {
				break
			}
			after = queues[len(queues)-1]
		}
	}
	r.logSweep(*res)
	return nil
}

func (r *Retainer) logSweep(res Result) {
	if res.Archived+res.DeadLetters > 0 {
		r.log.Info("retention: "+res.String(), zap.Int("archived", res.Archived), zap.Int("dead_letters", res.DeadLetters),
			zap.Bool("truncated", res.Truncated))
	}
}

// Start sweeps now and then every Interval until Stop. A failed sweep is
// logged; the loop carries on.
func (r *Retainer) Start(ctx context.Context) error {
	step := periodic.Step{Name: "retention", Log: r.log, Failed: "retention: sweep failed; retrying next interval"}
	return r.loop.Start(ctx, step.Every(r.cfg.Interval, func(ctx context.Context) error {
		_, err := r.Sweep(ctx)
		return err
	}))
}

// Stop ends the loop and resigns leadership.
func (r *Retainer) Stop(ctx context.Context) error { return r.loop.Stop(ctx, r.cfg.Leader) }
