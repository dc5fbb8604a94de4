package zombie

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/jobs"
)

// Leader elects one rescuer among processes (jobs.Leader); TryLead is
// called before every sweep.
type Leader = jobs.Leader

// Config configures a Rescuer. Zero fields take the defaults (see
// DefaultConfig and docs/design.md (Configuration defaults)).
type Config struct {
	ScanInterval            time.Duration // (1m)
	FetchedJobTimeout       time.Duration // phase 1 (10m)
	ProcessingZombieTimeout time.Duration // phase 2, when the queue sets none (10m)
	// BatchSize caps one statement (500; at most 1000). A rescue DELETE locks
	// a key in each of JobsHot's indexes per row, so 500 rows stay well below
	// the ~5,000 locks at which SQL Server escalates to a table lock.
	BatchSize int
	// MaxBatchesPerPhase bounds one sweep's work per phase (100).
	MaxBatchesPerPhase int
	// Leader, when set, lets only the elected process sweep.
	Leader Leader
	Logger *zap.Logger
	// TracerProvider, when set, gives each round a span of its own
	// (OpenTelemetry); nil for none. The library pulls no exporter.
	TracerProvider trace.TracerProvider
	// OnRescue, when set, sees every rescued job (for metrics and events).
	OnRescue func(phase Phase, r jobs.Rescued)
	// OnSweep, when set, sees every finished sweep, failed or skipped ones
	// included (for readiness checks and event feeds).
	OnSweep func(res Result, err error)
}

// DefaultBatchSize is the rescue batch unless configured.
const DefaultBatchSize = 500

// Phase names a rescue phase.
type Phase int

const (
	PhaseFetched  Phase = 1 // Fetched -> Pending
	PhaseZombie   Phase = 2 // Processing -> DLQ (Zombie)
	PhaseDeadline Phase = 3 // Processing -> DLQ (Timeout)
)

// String returns the phase's name, as logs and metrics label it.
func (p Phase) String() string {
	switch p {
	case PhaseFetched:
		return "recovered"
	case PhaseZombie:
		return "zombie"
	case PhaseDeadline:
		return "deadline"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Result counts what one sweep moved.
type Result struct {
	Recovered int // phase 1
	Zombies   int // phase 2, dead-lettered
	// ZombiesRecovered are the jobs phase 2 returned to Pending under their
	// kind's zombie policy (jobs.Rescued.Recovered) instead of
	// dead-lettering them.
	ZombiesRecovered int
	Expired          int // phase 3
	Skipped          bool
}

// String says what the sweep moved, in the words logs, the dashboard's
// console and the command use: phase 2 and 3 dead-letter their jobs.
func (r Result) String() string {
	if r.ZombiesRecovered > 0 {
		return fmt.Sprintf("recovered %d abandoned and %d zombies, dead-lettered %d zombies and %d past deadline", r.Recovered, r.ZombiesRecovered, r.Zombies, r.Expired)
	}
	return fmt.Sprintf("recovered %d abandoned, dead-lettered %d zombies and %d past deadline", r.Recovered, r.Zombies, r.Expired)
}

// Moved is the total of the three phases.
func (r Result) Moved() int { return r.Recovered + r.Zombies + r.ZombiesRecovered + r.Expired }

// Counters are totals since the Rescuer was created.
type Counters struct {
	Sweeps, FailedSweeps, SkippedSweeps int64
	Recovered, Zombies, Expired         int64
	ZombiesRecovered                    int64
	// LastSweep is when the last sweep finished (successful or not); zero
	// before the first.
	LastSweep time.Time
}

// Rescuer runs the rescue phases.
type Rescuer struct {
	store jobs.Rescuer
	cfg   Config
	log   *zap.Logger

	sweeps, failed, skipped     atomic.Int64
	recovered, zombies, expired atomic.Int64
	zombiesRecovered            atomic.Int64
	lastSweep                   atomic.Int64 // unix nanoseconds

	loop periodic.Loop
}

// DefaultConfig returns the rescue defaults, as listed in docs/design.md
// (Configuration defaults).
func DefaultConfig() Config {
	return Config{
		ScanInterval:            time.Minute,
		FetchedJobTimeout:       10 * time.Minute,
		ProcessingZombieTimeout: 10 * time.Minute,
		BatchSize:               DefaultBatchSize,
		MaxBatchesPerPhase:      100,
	}
}

// Bounds of Config: a scan interval of nanoseconds would sweep without
// pause, and a timeout of seconds would dead-letter live jobs.
const (
	MinScanInterval       = 100 * time.Millisecond
	MaxScanInterval       = 24 * time.Hour
	MinFetchedJobTimeout  = time.Second
	MaxFetchedJobTimeout  = 24 * time.Hour
	MinZombieTimeout      = time.Second
	MaxZombieTimeout      = 30 * 24 * time.Hour
	MaxMaxBatchesPerPhase = 10_000
)

// Validate checks c as New would use it, defaults applied, and returns the
// first broken rule as a *jobs.SettingError naming the setting, its value
// and the rule.
func (c Config) Validate() error { return periodic.WithDefaults(c, DefaultConfig()).validate() }

func (c Config) validate() error {
	bad := func(key string, v any, rule string) error {
		return &jobs.SettingError{Component: "zombie", Key: key, Value: v, Rule: rule}
	}
	between := func(key string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return bad(key, d, fmt.Sprintf("must be between %v and %v", lo, hi))
		}
		return nil
	}
	for _, err := range []error{
		between("ScanInterval", c.ScanInterval, MinScanInterval, MaxScanInterval),
		between("FetchedJobTimeout", c.FetchedJobTimeout, MinFetchedJobTimeout, MaxFetchedJobTimeout),
		between("ProcessingZombieTimeout", c.ProcessingZombieTimeout, MinZombieTimeout, MaxZombieTimeout),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > jobs.MaxRescueBatch:
		return bad("BatchSize", c.BatchSize, fmt.Sprintf("must be between 1 and %d", jobs.MaxRescueBatch))
	case c.MaxBatchesPerPhase < 1 || c.MaxBatchesPerPhase > MaxMaxBatchesPerPhase:
		return bad("MaxBatchesPerPhase", c.MaxBatchesPerPhase, fmt.Sprintf("must be between 1 and %d", MaxMaxBatchesPerPhase))
	}
	return nil
}

// New validates cfg and returns a Rescuer.
func New(store jobs.Rescuer, cfg Config) (*Rescuer, error) {
	if store == nil {
		return nil, errors.New("zombie: nil store")
	}
	cfg = periodic.WithDefaults(cfg, DefaultConfig())
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Rescuer{store: store, cfg: cfg, log: cfg.Logger, loop: periodic.Loop{Name: "zombie"}}, nil
}

// Sweep runs phases 1 to 3 once. Each phase repeats its bounded statement
// until a short batch. It returns what moved, also when a phase fails.
func (r *Rescuer) Sweep(ctx context.Context) (Result, error) {
	return periodic.Round[Result]{Name: "zombie", Noun: "sweep", Leader: r.cfg.Leader, Skipped: Result{Skipped: true},
		Done: r.swept, Tracer: periodic.Tracer(r.cfg.TracerProvider)}.Run(ctx, r.sweep)
}

// swept counts a finished sweep and hands it to OnSweep.
func (r *Rescuer) swept(res Result, err error) {
	if err != nil {
		r.failed.Add(1)
	}
	if res.Skipped {
		r.skipped.Add(1)
	}
	r.lastSweep.Store(time.Now().UnixNano())
	if r.cfg.OnSweep != nil {
		r.cfg.OnSweep(res, err)
	}
}

// sweep is the work of a sweep this process leads.
func (r *Rescuer) sweep(ctx context.Context, res *Result) error {
	phases := []struct {
		phase Phase
		count *int
		total *atomic.Int64
		run   func(context.Context, jobs.RescueParams) ([]jobs.Rescued, error)
		p     jobs.RescueParams
	}{
		{PhaseFetched, &res.Recovered, &r.recovered, r.store.RescueFetched, jobs.RescueParams{Timeout: r.cfg.FetchedJobTimeout, Limit: r.cfg.BatchSize}},
		{PhaseZombie, &res.Zombies, &r.zombies, r.store.RescueZombies, jobs.RescueParams{Timeout: r.cfg.ProcessingZombieTimeout, Limit: r.cfg.BatchSize}},
		{PhaseDeadline, &res.Expired, &r.expired, r.store.RescueExpired, jobs.RescueParams{Limit: r.cfg.BatchSize}},
	}
	var errs []error
	for _, ph := range phases {
		for range r.cfg.MaxBatchesPerPhase {
			got, err := ph.run(ctx, ph.p)
			for _, j := range got {
				if j.Recovered { // phase 2 under the job's zombie policy
					res.ZombiesRecovered++
					r.zombiesRecovered.Add(1)
				} else {
					*ph.count++
					ph.total.Add(1)
				}
				r.log.Debug("zombie rescue: job moved", zap.Stringer("phase", ph.phase), zap.Int64("job_id", j.ID),
					zap.String("queue", j.Queue), zap.String("type", j.Type), zap.Int64("lease", j.Lease),
					zap.String("worker_id", j.WorkerID), zap.Time("last_seen", j.LastSeen), zap.Bool("recovered", j.Recovered))
				if r.cfg.OnRescue != nil {
					r.cfg.OnRescue(ph.phase, j)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("phase %d (%s): %w", ph.phase, ph.phase, err))
				break
			}
			if len(got) < ph.p.Limit {
				break
			}
		}
	}
	r.sweeps.Add(1)
	if res.Moved() > 0 {
		r.log.Info("zombie rescue: "+res.String(),
			zap.Int("recovered", res.Recovered), zap.Int("zombies", res.Zombies), zap.Int("zombies_recovered", res.ZombiesRecovered), zap.Int("expired", res.Expired))
	}
	if len(errs) > 0 {
		return fmt.Errorf("zombie: sweep: %w", errors.Join(errs...))
	}
	return nil
}

// Counters returns the totals so far.
func (r *Rescuer) Counters() Counters {
	c := Counters{
		Sweeps: r.sweeps.Load(), FailedSweeps: r.failed.Load(), SkippedSweeps: r.skipped.Load(),
		Recovered: r.recovered.Load(), Zombies: r.zombies.Load(), Expired: r.expired.Load(),
		ZombiesRecovered: r.zombiesRecovered.Load(),
	}
	if ns := r.lastSweep.Load(); ns != 0 {
		c.LastSweep = time.Unix(0, ns)
	}
	return c
}

// Interval is the configured scan interval.
func (r *Rescuer) Interval() time.Duration { return r.cfg.ScanInterval }

// Start runs a sweep now and then every ScanInterval until Stop. A failed
// sweep is logged; the loop carries on.
func (r *Rescuer) Start(ctx context.Context) error {
	step := periodic.Step{Name: "zombie", Timeout: periodic.RoundTimeout(r.cfg.ScanInterval), Log: r.log,
		Failed:  "zombie rescue: sweep failed; retrying next interval",
		OnPanic: func() { r.failed.Add(1) }} // in OnSweep: that sweep failed
	return r.loop.Start(ctx, step.Every(r.cfg.ScanInterval, func(ctx context.Context) error {
		_, err := r.Sweep(ctx)
		return err
	}))
}

// Stop ends the loop and resigns leadership.
func (r *Rescuer) Stop(ctx context.Context) error { return r.loop.Stop(ctx, r.cfg.Leader) }
