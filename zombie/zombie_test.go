package zombie_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/zombie"
)

// setup puts one job in each state rescue acts on: abandoned Fetched,
// silent Processing, and Processing past its deadline while heartbeating.
func setup(t *testing.T, s *memstore.Store, clock *memstore.ManualClock) (fetched, silent, hung jobs.LeaseRef) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.UpdateQueue(ctx, "hang", jobs.QueueUpdate{ExecutionTimeout: secs(60)}); err != nil {
		t.Fatal(err)
	}
	claimStart := func(queue string, start bool) jobs.LeaseRef {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: queue, Type: "t"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "dead-worker", Queues: []string{queue}, Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		if start {
			if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		return got[0].Ref()
	}
	fetched = claimStart("default", false)
	silent = claimStart("default", true)
	hung = claimStart("hang", true)
	for range 4 { // the hung job's process keeps heartbeating
		clock.Advance(3 * time.Minute)
		if hb, err := s.Heartbeat(ctx, []jobs.LeaseRef{hung}); err != nil || len(hb.Lost) != 0 {
			t.Fatalf("heartbeat: %+v, %v", hb, err)
		}
	}
	return fetched, silent, hung
}

func TestSweepRunsThreePhasesAndLogsOneLine(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	fetched, silent, hung := setup(t, s, clock)
	core, logs := observer.New(zap.InfoLevel)
	var seen []zombie.Phase
	r, err := zombie.New(s, zombie.Config{Logger: zap.New(core), OnRescue: func(p zombie.Phase, _ jobs.Rescued) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res != (zombie.Result{Recovered: 1, Zombies: 1, Expired: 1}) {
		t.Fatalf("sweep = %+v, want one of each", res)
	}
	want := "zombie rescue: recovered 1 abandoned, dead-lettered 1 zombies and 1 past deadline"
	if got := logs.FilterMessage(want).Len(); got != 1 || logs.Len() != 1 {
		t.Fatalf("logs %v, want exactly one line %q", logs.All(), want)
	}
	if len(seen) != 3 {
		t.Fatalf("OnRescue saw %v", seen)
	}
	check := func(ref jobs.LeaseRef, table jobs.Table, reason jobs.FailureReason) {
		j, err := s.GetJob(t.Context(), ref.ID)
		if err != nil || j.Table != table || (table == jobs.TableDLQ && j.FailureReason != reason) {
			t.Fatalf("job %d: %+v %v; want %s reason %s", ref.ID, j, err, table, reason)
		}
	}
	check(fetched, jobs.TableHot, 0)
	check(silent, jobs.TableDLQ, jobs.ReasonZombie)
	check(hung, jobs.TableDLQ, jobs.ReasonTimeout)
	// Nothing left: the next sweep moves nothing and logs nothing.
	if res, err := r.Sweep(t.Context()); err != nil || res.Moved() != 0 || logs.Len() != 1 {
		t.Fatalf("second sweep %+v %v, %d log lines", res, err, logs.Len())
	}
	c := r.Counters()
	if c.Sweeps != 2 || c.Recovered != 1 || c.Zombies != 1 || c.Expired != 1 || c.LastSweep.IsZero() {
		t.Fatalf("counters %+v", c)
	}
}

func TestSweepRepeatsBoundedBatches(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := t.Context()
	ps := make([]jobs.EnqueueParams, 25)
	for i := range ps {
		ps[i] = jobs.EnqueueParams{Type: "t"}
	}
	if _, err := s.EnqueueMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"default"}, Limit: 25}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Minute)
	calls := &countingStore{Store: s}
	r, _ := zombie.New(calls, zombie.Config{BatchSize: 10})
	res, err := r.Sweep(ctx)
	if err != nil || res.Recovered != 25 {
		t.Fatalf("sweep %+v %v, want 25 recovered", res, err)
	}
	if n := calls.fetched.Load(); n != 3 {
		t.Fatalf("phase 1 ran %d statements, want 3 (10, 10, 5)", n)
	}
}

// failingStore fails every rescue call while down is set.
type failingStore struct {
	jobs.Store
	down atomic.Bool
}

var errDown = errors.New("store unreachable")

func (f *failingStore) RescueFetched(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.RescueFetched(ctx, p)
}

type countingStore struct {
	jobs.Store
	fetched atomic.Int64
}

func (c *countingStore) RescueFetched(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	c.fetched.Add(1)
	return c.Store.RescueFetched(ctx, p)
}

func TestLoopSurvivesFailingSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &failingStore{Store: memstore.New()}
		s.down.Store(true)
		core, logs := observer.New(zap.ErrorLevel)
		r, err := zombie.New(s, zombie.Config{ScanInterval: time.Second, Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3500 * time.Millisecond)
		if c := r.Counters(); c.FailedSweeps < 3 {
			t.Fatalf("counters %+v, want failed sweeps while the store is down", c)
		}
		if logs.FilterMessage("zombie rescue: sweep failed; retrying next interval").Len() < 3 {
			t.Fatalf("failed sweeps not logged: %v", logs.All())
		}
		s.down.Store(false)
		before := r.Counters().Sweeps
		time.Sleep(2 * time.Second)
		if c := r.Counters(); c.Sweeps <= before {
			t.Fatalf("the loop did not keep sweeping after the store recovered: %+v", c)
		}
		if err := r.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// fakeLeader lets a test decide who leads.
type fakeLeader struct {
	lead     atomic.Bool
	resigned atomic.Bool
}

func (f *fakeLeader) TryLead(context.Context) (bool, error) { return f.lead.Load(), nil }
func (f *fakeLeader) Resign(context.Context) error          { f.resigned.Store(true); return nil }

func TestOnlyTheLeaderSweeps(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	setup(t, s, clock)
	leader := &fakeLeader{}
	r, _ := zombie.New(s, zombie.Config{Leader: leader})
	res, err := r.Sweep(t.Context())
	if err != nil || !res.Skipped || res.Moved() != 0 {
		t.Fatalf("follower sweep %+v %v, want skipped", res, err)
	}
	leader.lead.Store(true)
	if res, err := r.Sweep(t.Context()); err != nil || res.Moved() != 3 {
		t.Fatalf("leader sweep %+v %v, want 3 moved", res, err)
	}
	if c := r.Counters(); c.SkippedSweeps != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	s := memstore.New()
	for _, c := range []zombie.Config{{BatchSize: 5000}, {ScanInterval: time.Nanosecond}, {MaxBatchesPerPhase: -1}} {
		if _, err := zombie.New(s, c); err == nil || !strings.HasPrefix(err.Error(), "zombie: ") {
			t.Errorf("New(%+v) = %v", c, err)
		}
	}
}

func TestOnSweepSeesEverySweep(t *testing.T) {
	s := &failingStore{Store: memstore.New()}
	var results []zombie.Result
	var errs []error
	r, _ := zombie.New(s, zombie.Config{OnSweep: func(res zombie.Result, err error) {
		results = append(results, res)
		errs = append(errs, err)
	}})
	if _, err := r.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.down.Store(true)
	if _, err := r.Sweep(t.Context()); err == nil {
		t.Fatal("sweep on a failing store succeeded")
	}
	if len(results) != 2 || errs[0] != nil || !errors.Is(errs[1], errDown) {
		t.Fatalf("OnSweep saw %v / %v", results, errs)
	}
}

// panickyStore panics in phase 1.
type panickyStore struct{ jobs.Store }

func (panickyStore) RescueFetched(context.Context, jobs.RescueParams) ([]jobs.Rescued, error) {
	panic("store bug")
}

func TestAPanickingSweepIsReportedAsFailed(t *testing.T) {
	var seen error
	r, _ := zombie.New(panickyStore{memstore.New()}, zombie.Config{OnSweep: func(_ zombie.Result, err error) { seen = err }})
	_, err := r.Sweep(t.Context())
	if err == nil || seen == nil || !strings.Contains(err.Error(), "store bug") {
		t.Fatalf("Sweep = %v, OnSweep saw %v; want the panic as an error", err, seen)
	}
	if c := r.Counters(); c.FailedSweeps != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestStopResignsEvenWhenItsContextEnded(t *testing.T) {
	leader := &fakeLeader{}
	r, _ := zombie.New(memstore.New(), zombie.Config{Leader: leader, ScanInterval: time.Hour})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.Stop(ctx)
	if !leader.resigned.Load() {
		t.Fatal("Stop with an ended context did not resign")
	}
}

// stuck puts n jobs in the given state, then lets their time run out: n
// claimed and never started (phase 1) or n started and silent (phases 2
// and 3: their deadline passes with their heartbeat).
func stuck(t *testing.T, s *memstore.Store, clock *memstore.ManualClock, n int, start bool) {
	t.Helper()
	ctx := t.Context()
	ps := make([]jobs.EnqueueParams, n)
	for i := range ps {
		ps[i] = jobs.EnqueueParams{Type: "t"}
	}
	if _, err := s.EnqueueMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"default"}, Limit: n})
	if err != nil || len(got) != n {
		t.Fatalf("claim %d: %d %v", n, len(got), err)
	}
	for _, j := range got {
		if start {
			if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: 5 * time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Advance(11 * time.Minute)
}

// TestMaxBatchesPerPhaseBoundsOneSweep: a backlog bigger than
// BatchSize x MaxBatchesPerPhase is rescued over several sweeps, so one
// sweep's work stays bounded.
func TestMaxBatchesPerPhaseBoundsOneSweep(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	stuck(t, s, clock, 25, false)
	calls := &countingStore{Store: s}
	r, _ := zombie.New(calls, zombie.Config{BatchSize: 10, MaxBatchesPerPhase: 2})
	if res, err := r.Sweep(t.Context()); err != nil || res.Recovered != 20 || calls.fetched.Load() != 2 {
		t.Fatalf("first sweep %+v %v in %d statements, want 20 recovered in 2", res, err, calls.fetched.Load())
	}
	if res, err := r.Sweep(t.Context()); err != nil || res.Recovered != 5 {
		t.Fatalf("second sweep %+v %v, want the last 5", res, err)
	}
}

// TestZombieAndDeadlinePhasesRepeatTheirBatches: phases 2 and 3 also run
// until a short batch, not one batch per sweep.
func TestZombieAndDeadlinePhasesRepeatTheirBatches(t *testing.T) {
	for _, c := range []struct {
		name          string
		zombieTimeout time.Duration
		want          func(zombie.Result) int
	}{
		// Silent for 11 minutes: past the 10-minute zombie timeout.
		{"Zombies", 10 * time.Minute, func(r zombie.Result) int { return r.Zombies }},
		// A zombie timeout longer than the silence leaves them to phase 3:
		// their 5-minute deadline has passed.
		{"PastDeadline", time.Hour, func(r zombie.Result) int { return r.Expired }},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			s := memstore.New(memstore.WithClock(clock.Now))
			stuck(t, s, clock, 25, true)
			r, _ := zombie.New(s, zombie.Config{BatchSize: 10, ProcessingZombieTimeout: c.zombieTimeout})
			res, err := r.Sweep(t.Context())
			if err != nil || c.want(res) != 25 || res.Moved() != 25 {
				t.Fatalf("sweep %+v %v, want all 25 in one sweep", res, err)
			}
			if n, _ := s.CountJobs(t.Context(), jobs.TableDLQ, jobs.Filter{}); n != 25 {
				t.Fatalf("%d dead letters, want 25", n)
			}
		})
	}
}

// TestAPanickingHookDoesNotEndTheLoop: OnSweep is user code; when it
// panics inside the running loop, the sweep counts as failed and the loop
// keeps sweeping.
func TestAPanickingHookDoesNotEndTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		r, err := zombie.New(memstore.New(), zombie.Config{ScanInterval: time.Second, OnSweep: func(zombie.Result, error) {
			if calls.Add(1) == 1 {
				panic("hook bug")
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3500 * time.Millisecond)
		if c := r.Counters(); calls.Load() < 3 || c.FailedSweeps != 1 {
			t.Fatalf("hook ran %d times, counters %+v: want the loop alive after one failed sweep", calls.Load(), c)
		}
		if err := r.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// secs is a queue timeout of n seconds.
func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }

// A silent job of a kind that opted into zombie retries (ADR 0029) is
// counted apart: recovered, not dead-lettered, in the result, the
// counters, the log line and OnRescue's Rescued.
func TestSweepCountsRecoveredZombiesApart(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := t.Context()
	for range 2 {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 2})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim %v %v", got, err)
	}
	for i, j := range got {
		if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Hour, ZombieRetryCap: i}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(zombie.DefaultConfig().ProcessingZombieTimeout + time.Minute)
	core, logs := observer.New(zap.InfoLevel)
	var recovered []int64
	r, err := zombie.New(s, zombie.Config{Logger: zap.New(core), OnRescue: func(p zombie.Phase, j jobs.Rescued) {
		if p == zombie.PhaseZombie && j.Recovered {
			recovered = append(recovered, j.ID)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(ctx)
	if err != nil || res != (zombie.Result{Zombies: 1, ZombiesRecovered: 1}) || res.Moved() != 2 {
		t.Fatalf("sweep = %+v, %v; want one zombie dead-lettered and one recovered", res, err)
	}
	want := "zombie rescue: recovered 0 abandoned and 1 zombies, dead-lettered 1 zombies and 0 past deadline"
	if logs.FilterMessage(want).Len() != 1 {
		t.Fatalf("logs %v, want %q", logs.All(), want)
	}
	if len(recovered) != 1 || recovered[0] != got[1].ID {
		t.Fatalf("OnRescue saw %v recovered, want job %d", recovered, got[1].ID)
	}
	if c := r.Counters(); c.Zombies != 1 || c.ZombiesRecovered != 1 {
		t.Fatalf("counters %+v", c)
	}
}
