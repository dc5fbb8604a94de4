package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/jobs"
)

// Store is what a Scheduler needs of a store: the schedules' state, the
// compare-and-set of a fire, and the store's clock, the only clock ticks
// are judged by.
type Store interface {
	jobs.Scheduler
	// Schedules is jobs.Admin's: the stored state of every schedule.
	Schedules(ctx context.Context) ([]jobs.ScheduleState, error)
	// Now is jobs.Admin's: the store's clock.
	Now(ctx context.Context) (time.Time, error)
}

// Config configures a Scheduler. Zero fields take their defaults.
type Config struct {
	// Schedules are this process's schedules. A process fires only the
	// schedules it defines, so removing one from the code or the file
	// stops it at the next deploy.
	Schedules []Schedule
	// Leader, when set, lets one process fire (the SQL Server store's
	// sqlserver.Leader); nil means this process always leads (memory). Two
	// leaders at once are harmless: every fire is a compare-and-set.
	Leader jobs.Leader
	// PollInterval is the longest wait between two rounds of the leader,
	// so a pause, a resume or a tick is seen within it (1s).
	PollInterval time.Duration
	// FollowInterval is how often a process that does not lead tries to
	// (5s): how long a schedule may wait when its leader dies.
	FollowInterval time.Duration
	// Grace is how late a tick may still fire under Skip (1m).
	Grace time.Duration
	// Limits bound the jobs' payloads.
	Limits jobs.Limits
	Logger *zap.Logger
	// TracerProvider, when set, gives each round a span of its own
	// (OpenTelemetry); nil for none. The library pulls no exporter.
	TracerProvider trace.TracerProvider
	// OnFire, when set, sees every tick fired (metrics, feeds).
	OnFire func(Fire)
}

// Defaults of Config.
const (
	DefaultPollInterval   = time.Second
	DefaultFollowInterval = 5 * time.Second
	DefaultGrace          = time.Minute
)

// Fire is one tick fired.
type Fire struct {
	Schedule string
	Tick     time.Time
	Job      jobs.EnqueueResult
	// Late is how long after its tick the fire happened, on the store's
	// clock.
	Late time.Duration
}

// RoundResult is what one round did.
type RoundResult struct {
	// Skipped is set when this process did not lead, and did nothing.
	Skipped bool
	Fired   []Fire
	// Dropped counts the schedules whose missed ticks were left unfired
	// by their policy (Skip, or CatchUp over its limit).
	Dropped int
	// Now is the store's time the round judged ticks by; NextTick is the
	// earliest tick due after it among the schedules that can fire (zero
	// if none).
	Now, NextTick time.Time
}

// Scheduler fires the ticks of a process's schedules.
type Scheduler struct {
	store   Store
	cfg     Config
	log     *zap.Logger
	entries []entry

	loop periodic.Loop

	mu sync.Mutex
	// foreign remembers the schedules whose stored definition is not
	// this process's, so that is logged once per stored hash.
	foreign map[string]string
	// skipped is the latest tick Skip dropped per schedule, logged once.
	skipped map[string]time.Time
}

// entry is one schedule, checked and encoded once.
type entry struct {
	s       Schedule
	def     jobs.ScheduleDef
	cadence Cadence
}

// New checks every schedule (the first broken rule is a *DefinitionError)
// and returns a Scheduler that fires them.
func New(store Store, cfg Config) (*Scheduler, error) {
	if store == nil {
		return nil, errors.New("schedule: nil store")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.FollowInterval <= 0 {
		cfg.FollowInterval = DefaultFollowInterval
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	entries, err := check(cfg.Schedules, cfg.Limits)
	if err != nil {
		return nil, err
	}
	return &Scheduler{store: store, cfg: cfg, log: cfg.Logger, entries: entries,
		loop: periodic.Loop{Name: "schedule"}, foreign: map[string]string{}, skipped: map[string]time.Time{}}, nil
}

// Check validates schedules as New does: each one's rules, and no name
// twice. It returns the first broken rule.
func Check(schedules []Schedule, limits jobs.Limits) error {
	_, err := check(schedules, limits)
	return err
}

func check(schedules []Schedule, limits jobs.Limits) ([]entry, error) {
	entries := make([]entry, 0, len(schedules))
	seen := map[string]bool{}
	for _, s := range schedules {
		c, err := s.Validate(limits)
		if err != nil {
			return nil, err
		}
		// Stores compare names as SQL Server does by default, ignoring
		// case: two names that differ only in case are one schedule.
		key := strings.ToLower(s.Name)
		if seen[key] {
			return nil, &DefinitionError{Schedule: s.Name, Field: "Name", Value: s.Name, Rule: "is defined twice (names ignore case)"}
		}
		seen[key] = true
		entries = append(entries, entry{s: s.normalized(), def: s.Def(), cadence: c})
	}
	return entries, nil
}

// SetID names a set of schedules by their names and definitions: the
// processes that define the same set elect one leader among themselves
// (the Client adds it to the name of its leader lock), while a process
// with another set, another service or a new release mid-deploy, fires
// its own. Overlaps are harmless: a fire is a compare-and-set.
func SetID(schedules []Schedule) string {
	parts := make([]string, len(schedules))
	for i, s := range schedules {
		parts[i] = strings.ToLower(s.Name) + "=" + s.Def().Hash
	}
	slices.Sort(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:6])
}

// Sync records the schedules in the store (jobs.Scheduler.SyncSchedules):
// a new or changed one starts from the store's now, owing no earlier tick.
func (s *Scheduler) Sync(ctx context.Context) error {
	if len(s.entries) == 0 {
		return nil
	}
	defs := make([]jobs.ScheduleDef, len(s.entries))
	for i, e := range s.entries {
		defs[i] = e.def
	}
	if err := s.store.SyncSchedules(ctx, defs); err != nil {
		return fmt.Errorf("schedule: record %d schedules: %w", len(defs), err)
	}
	return nil
}

// Round fires every tick that is due now, on the store's clock, by each
// schedule's missed-fire policy, if this process leads. A schedule that
// fails to fire is reported in the error and tried again next round; the
// others go on.
func (s *Scheduler) Round(ctx context.Context) (RoundResult, error) {
	return periodic.Round[RoundResult]{Name: "schedule", Noun: "round", Leader: s.cfg.Leader, Skipped: RoundResult{Skipped: true},
		Tracer: periodic.Tracer(s.cfg.TracerProvider)}.
		Run(ctx, s.fire)
}

// fire is the work of a round this process leads.
func (s *Scheduler) fire(ctx context.Context, res *RoundResult) error {
	now, err := s.store.Now(ctx)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	res.Now = now
	states, err := s.store.Schedules(ctx)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	byName := make(map[string]jobs.ScheduleState, len(states))
	for _, st := range states {
		byName[strings.ToLower(st.Name)] = st
	}
	var errs []error
	for _, e := range s.entries {
		st, ok := byName[strings.ToLower(e.s.Name)]
		if !ok || st.Paused || !s.current(e, st) {
			continue // deleted by an operator, paused, or another definition
		}
		last, err := s.fireDue(ctx, e, st, now, res)
		if err != nil {
			errs = append(errs, err)
		}
		if next := e.cadence.Next(maxTime(last, now)); !next.IsZero() && (res.NextTick.IsZero() || next.Before(res.NextTick)) {
			res.NextTick = next
		}
	}
	return errors.Join(errs...)
}

// current reports whether the store holds e's definition; another one
// means another process (a newer release, say) recorded its own since,
// and only that process fires it. Logged once per stored definition.
func (s *Scheduler) current(e entry, st jobs.ScheduleState) bool {
	if st.Hash == e.def.Hash {
		return true
	}
	s.mu.Lock()
	seen := s.foreign[e.s.Name] == st.Hash
	s.foreign[e.s.Name] = st.Hash
	s.mu.Unlock()
	if !seen {
		s.log.Warn("schedule: the store holds another definition of this schedule, recorded by another process; this one does not fire it until it starts again",
			zap.String("schedule", e.s.Name), zap.String("stored_hash", st.Hash), zap.String("own_hash", e.def.Hash))
	}
	return false
}

// fireDue fires e's due ticks and returns the last tick fired (or the
// stored one).
func (s *Scheduler) fireDue(ctx context.Context, e entry, st jobs.ScheduleState, now time.Time, res *RoundResult) (time.Time, error) {
	last := st.LastFiredTick
	n := 1
	if e.s.MissedFire == CatchUp {
		n = e.s.CatchUpLimit
	}
	ticks, dropped := lastTicks(e.cadence, last, now, n)
	if len(ticks) == 0 {
		return last, nil
	}
	if latest := ticks[len(ticks)-1]; e.s.MissedFire == Skip && now.Sub(latest) > s.cfg.Grace {
		// The stored tick stays where it is (the next on-time fire moves
		// it past this one), so remember the skip to report it once.
		s.mu.Lock()
		seen := s.skipped[e.s.Name].Equal(latest)
		s.skipped[e.s.Name] = latest
		s.mu.Unlock()
		if !seen {
			res.Dropped++
			s.log.Info("schedule: skipped a tick too late to fire (missed-fire policy skip)",
				zap.String("schedule", e.s.Name), zap.Time("tick", latest), zap.Duration("late", now.Sub(latest)))
		}
		return last, nil
	}
	if dropped && e.s.MissedFire != Coalesce {
		res.Dropped++
		s.log.Info("schedule: more ticks were missed than the catch-up limit; firing the latest",
			zap.String("schedule", e.s.Name), zap.Int("catch_up_limit", n), zap.Time("since", last))
	}
	next := e.cadence.Next(now)
	for _, tick := range ticks {
		r, err := s.store.FireSchedule(ctx, jobs.FireParams{Name: e.s.Name, Hash: e.def.Hash, Tick: tick, Next: next,
			Job: e.s.jobAt(tick, TickKey(e.s.Name, tick))})
		if err != nil {
			return last, fmt.Errorf("schedule %q: fire %s: %w", e.s.Name, tick.Format(time.RFC3339), err)
		}
		if !r.Fired {
			// Another process fired it, or the schedule changed under us:
			// the next round reads the new state.
			return last, nil
		}
		last = tick
		f := Fire{Schedule: e.s.Name, Tick: tick, Job: r.Job, Late: now.Sub(tick)}
		res.Fired = append(res.Fired, f)
		s.log.Debug("schedule: fired", zap.String("schedule", e.s.Name), zap.Time("tick", tick),
			zap.Int64("job_id", r.Job.ID), zap.Bool("duplicate", r.Job.Duplicate), zap.Duration("late", f.Late))
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(f)
		}
	}
	return last, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Start records the schedules (Sync) and fires them until Stop. Without
// schedules it does nothing and takes no part in the leader election.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.Sync(ctx); err != nil {
		return err
	}
	if len(s.entries) == 0 {
		return nil
	}
	return s.loop.Start(ctx, s.round)
}

// round is one round of the loop; it returns the wait until the next.
func (s *Scheduler) round(ctx context.Context) time.Duration {
	var res RoundResult
	step := periodic.Step{Name: "schedule", Timeout: periodic.RoundTimeout(s.cfg.PollInterval), Log: s.log,
		Failed: "schedule: round failed; retrying"}
	err := step.Run(ctx, func(ctx context.Context) error {
		var err error
		res, err = s.Round(ctx)
		return err
	})
	switch {
	case err != nil:
		return s.cfg.PollInterval
	case res.Skipped:
		return s.cfg.FollowInterval
	case !res.NextTick.IsZero():
		// The store's clock decides when a tick is due; the wait until
		// then is a duration, measured here.
		return min(s.cfg.PollInterval, max(res.NextTick.Sub(res.Now), 0))
	}
	return s.cfg.PollInterval
}

// Stop ends the loop and resigns leadership.
func (s *Scheduler) Stop(ctx context.Context) error {
	if len(s.entries) == 0 {
		return nil
	}
	return s.loop.Stop(ctx, s.cfg.Leader)
}

// Schedules returns the schedules the Scheduler fires, defaults filled.
func (s *Scheduler) Schedules() []Schedule {
	out := make([]Schedule, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.s
	}
	return out
}
