package retention

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

const day = 24 * time.Hour

func newStore() (*memstore.Store, *memstore.ManualClock) {
	clock := memstore.NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	return memstore.New(memstore.WithClock(clock.Now)), clock
}

// finish runs n jobs of queue through the store's batch transitions:
// archived when ok, else dead-lettered as Fatal.
func finish(t testing.TB, s *memstore.Store, queue string, n int, ok bool) {
	t.Helper()
	ctx := context.Background()
	for n > 0 {
		size := min(n, jobs.MaxWorkerBatch)
		n -= size
		ps := make([]jobs.EnqueueParams, size)
		for i := range ps {
			ps[i] = jobs.EnqueueParams{Queue: queue, Type: "t"}
		}
		if _, err := s.EnqueueMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: size})
		if err != nil || len(got) != size {
			t.Fatalf("claimed %d of %d: %v", len(got), size, err)
		}
		refs := make([]jobs.LeaseRef, size)
		for i, j := range got {
			refs[i] = j.Ref()
		}
		tr := jobs.Transitions{Starts: refs, StartParams: jobs.StartParams{DefaultTimeout: time.Minute}}
		if _, err := s.Transition(ctx, tr); err != nil {
			t.Fatal(err)
		}
		tr = jobs.Transitions{}
		if ok {
			tr.Completes = refs
		} else {
			for _, r := range refs {
				tr.DeadLetters = append(tr.DeadLetters, jobs.DeadLetterItem{Ref: r, Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal}})
			}
		}
		if _, err := s.Transition(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
}

func countIn(t testing.TB, s jobs.Admin, table jobs.Table, queue string) int64 {
	t.Helper()
	n, err := s.CountJobs(context.Background(), table, jobs.Filter{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newRetainer(t testing.TB, s Store, cfg Config) *Retainer {
	t.Helper()
	if cfg.Pause == 0 {
		cfg.Pause = time.Nanosecond
	}
	r, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dur(d time.Duration) *time.Duration { return &d }

// Each queue keeps its jobs for its own retention, else the global one;
// KeepForever keeps them; the hot table is never touched, however old its
// jobs are.
func TestSweepTrimsEachQueueByItsRetention(t *testing.T) {
	s, clock := newStore()
	ctx := t.Context()
	if _, err := s.UpdateQueue(ctx, "short", jobs.QueueUpdate{ArchiveRetention: dur(day), DeadLetterRetention: dur(2 * day)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateQueue(ctx, "AUDIT", jobs.QueueUpdate{ArchiveRetention: dur(jobs.KeepForever), DeadLetterRetention: dur(jobs.KeepForever)}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"default", "short", "AUDIT"} {
		finish(t, s, q, 3, true)
		finish(t, s, q, 2, false)
	}
	// Hot jobs in every state, as old as the oldest finished ones.
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "short", Type: "pending"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "default", Type: "later", Delay: 90 * day}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"short"}, Limit: 1})
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: 365 * day}); err != nil {
		t.Fatal(err)
	}
	hot := countIn(t, s, jobs.TableHot, "")

	r := newRetainer(t, s, Config{})
	want := func(step string, archived, dead map[string]int64) {
		t.Helper()
		for q, n := range archived {
			if got := countIn(t, s, jobs.TableArchive, q); got != n {
				t.Fatalf("%s: %d archived jobs of %s, want %d", step, got, q, n)
			}
		}
		for q, n := range dead {
			if got := countIn(t, s, jobs.TableDLQ, q); got != n {
				t.Fatalf("%s: %d dead letters of %s, want %d", step, got, q, n)
			}
		}
		if got := countIn(t, s, jobs.TableHot, ""); got != hot {
			t.Fatalf("%s: %d hot jobs, want %d: retention touched the hot table", step, got, hot)
		}
	}
	all := map[string]int64{"default": 3, "short": 3, "AUDIT": 3}
	dead := map[string]int64{"default": 2, "short": 2, "AUDIT": 2}
	if res, err := r.Sweep(ctx); err != nil || res.Archived+res.DeadLetters != 0 {
		t.Fatalf("a sweep of fresh jobs: %+v, %v", res, err)
	}
	want("fresh", all, dead)

	clock.Advance(day + time.Second)
	if res, err := r.Sweep(ctx); err != nil || res.Archived != 3 || res.DeadLetters != 0 {
		t.Fatalf("after a day: %+v, %v", res, err)
	}
	want("after a day", map[string]int64{"default": 3, "short": 0, "AUDIT": 3}, dead)

	clock.Advance(day)
	r.Sweep(ctx)
	want("after two days", map[string]int64{"default": 3, "AUDIT": 3}, map[string]int64{"default": 2, "short": 0, "AUDIT": 2})

	clock.Advance(5 * day)
	r.Sweep(ctx)
	want("after a week", map[string]int64{"default": 0, "AUDIT": 3}, map[string]int64{"default": 2, "AUDIT": 2})

	clock.Advance(23 * day)
	r.Sweep(ctx)
	want("after a month", map[string]int64{"AUDIT": 3}, map[string]int64{"default": 0, "AUDIT": 2})

	clock.Advance(10 * 365 * day)
	r.Sweep(ctx)
	want("after ten years", map[string]int64{"AUDIT": 3}, map[string]int64{"AUDIT": 2})
}

// trimLog records every trim a sweep makes.
type trimLog struct {
	Store
	mu    sync.Mutex
	calls []trimCall
}

type trimCall struct {
	p  jobs.TrimParams
	r  jobs.TrimResult
	at time.Time
}

func (l *trimLog) Trim(ctx context.Context, p jobs.TrimParams) (jobs.TrimResult, error) {
	r, err := l.Store.Trim(ctx, p)
	l.mu.Lock()
	l.calls = append(l.calls, trimCall{p, r, time.Now()})
	l.mu.Unlock()
	return r, err
}

// A 50,000-job archive past its retention is trimmed oldest first in
// deletes of at most BatchSize, a pause between each, a sweep bounded by
// MaxBatchesPerSweep and the next one going on; the jobs within their
// retention stay.
func TestALargeArchiveIsTrimmedInBoundedBatches(t *testing.T) {
	s, clock := newStore()
	finish(t, s, "bulk", 50_000, true)
	clock.Advance(8 * day)
	finish(t, s, "bulk", 1_000, true)
	synctest.Test(t, func(t *testing.T) {
		log := &trimLog{Store: s}
		r := newRetainer(t, log, Config{BatchSize: 1000, Pause: 100 * time.Millisecond, MaxBatchesPerSweep: 30})
		began := time.Now() // the bubble's fake clock: pauses cost no real time
		first, err := r.Sweep(t.Context())
		if err != nil || first.Archived != 30_000 || !first.Truncated {
			t.Fatalf("first sweep: %+v, %v", first, err)
		}
		second, err := r.Sweep(t.Context())
		if err != nil || second.Archived != 20_000 || second.Truncated {
			t.Fatalf("second sweep: %+v, %v", second, err)
		}
		if len(log.calls) != 30+21 { // the second ends with a short delete
			t.Fatalf("%d deletes", len(log.calls))
		}
		for i, c := range log.calls {
			if c.p.Limit != 1000 || c.r.Deleted > 1000 || c.p.Table != jobs.TableArchive || c.p.Queue != "bulk" || c.p.OlderThan != DefaultArchive {
				t.Fatalf("delete %d: %+v deleted %d", i, c.p, c.r.Deleted)
			}
			if i > 0 && i != 30 && c.at.Sub(log.calls[i-1].at) < 100*time.Millisecond {
				t.Fatalf("no pause before delete %d", i)
			}
			// Each step goes on after the last job the step before deleted.
			if i > 0 && i != 30 && c.p.After != log.calls[i-1].r.Last {
				t.Fatalf("delete %d starts after %+v, not after the last deleted, %+v", i, c.p.After, log.calls[i-1].r.Last)
			}
		}
		if elapsed := time.Since(began); elapsed < 49*100*time.Millisecond {
			t.Fatalf("the sweeps paused %v in all", elapsed)
		}
	})
	if n := countIn(t, s, jobs.TableArchive, ""); n != 1_000 {
		t.Fatalf("%d archived jobs left, want the 1,000 within their retention", n)
	}
}

type noLead struct{}

func (noLead) TryLead(context.Context) (bool, error) { return false, nil }
func (noLead) Resign(context.Context) error          { return nil }

// A process that does not lead deletes nothing; a leader logs one line for
// a sweep that deleted something and none for one that did not.
func TestLeaderAndLogLine(t *testing.T) {
	s, clock := newStore()
	finish(t, s, "q", 5, true)
	clock.Advance(8 * day)
	if res, _ := newRetainer(t, s, Config{Leader: noLead{}}).Sweep(t.Context()); !res.Skipped || countIn(t, s, jobs.TableArchive, "") != 5 {
		t.Fatalf("a follower swept: %+v", res)
	}
	core, logs := observer.New(zap.InfoLevel)
	r := newRetainer(t, s, Config{Logger: zap.New(core)})
	r.Sweep(t.Context())
	r.Sweep(t.Context())
	lines := logs.All()
	if len(lines) != 1 || lines[0].Message != "retention: deleted 5 archived and 0 dead-lettered jobs past their retention" {
		t.Fatalf("log lines %v", lines)
	}
	if r.Deleted() != 5 {
		t.Fatalf("Deleted() = %d", r.Deleted())
	}
}

// failing fails every trim.
type failing struct{ Store }

func (failing) Trim(context.Context, jobs.TrimParams) (jobs.TrimResult, error) {
	return jobs.TrimResult{}, errors.New("connection reset")
}

// The loop keeps going through failing sweeps and a panicking hook, and
// stops cleanly.
func TestLoopSurvivesFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, clock := newStore()
		finish(t, s, "q", 1, true)
		clock.Advance(8 * day)
		var sweeps int
		r := newRetainer(t, failing{s}, Config{Interval: time.Second, OnSweep: func(Result, error) {
			sweeps++
			panic("hook")
		}})
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3500 * time.Millisecond)
		if err := r.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		if sweeps != 4 {
			t.Fatalf("%d sweeps in 3.5s at 1s", sweeps)
		}
		if err := r.Stop(t.Context()); !errors.Is(err, jobs.ErrNotRunning) {
			t.Fatalf("second Stop: %v", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Archive: time.Millisecond}, {DeadLetters: -5}, {Interval: time.Millisecond}, {BatchSize: 1001}, {Pause: -1},
		{Archive: jobs.MaxRetention + time.Hour},
	} {
		var se *jobs.SettingError
		if err := c.Validate(); !errors.As(err, &se) || se.Component != "retention" {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (Config{Archive: jobs.KeepForever, DeadLetters: jobs.KeepForever}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// A long-running in-memory process holds steady memory: a million jobs
// through the store, the clock moving a second per thousand and retention
// keeping a minute of them, end with the heap where it was after the
// first hundred thousand. (With the race detector, which makes every
// operation far slower, a quarter of the run.)
func TestRetentionHoldsTheHeapSteady(t *testing.T) {
	total := 1_000_000
	if raceEnabled {
		total = 250_000
	}
	s, clock := newStore()
	r := newRetainer(t, s, Config{Archive: time.Minute, DeadLetters: time.Minute})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var early uint64
	peakArchive := int64(0)
	for done := 0; done < total; done += 1000 {
		finish(t, s, "steady", 900, true)
		finish(t, s, "steady", 100, false)
		clock.Advance(time.Second)
		if done%10_000 == 0 {
			if _, err := r.Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
			peakArchive = max(peakArchive, countIn(t, s, jobs.TableArchive, ""))
		}
		if done == 100_000 {
			early = heap()
		}
	}
	late := heap()
	t.Logf("%d jobs: heap %.1f MiB after 100,000, %.1f MiB at the end; at most %d archived at once; %d deleted",
		total, float64(early)/(1<<20), float64(late)/(1<<20), peakArchive, r.Deleted())
	if late > early+early/2 {
		t.Fatalf("the heap grew from %d to %d bytes", early, late)
	}
	if peakArchive > 90_000 { // a minute of 900 a second, plus a sweep interval
		t.Fatalf("the archive held %d jobs at once", peakArchive)
	}
}

// A sweep reaches every queue, however many: the queues come a page of
// jobs.MaxStatsQueues names at a time.
func TestSweepReachesEveryQueue(t *testing.T) {
	s, clock := newStore()
	n := jobs.MaxStatsQueues + 5
	for i := range n {
		finish(t, s, fmt.Sprintf("tenant-%04d", i), 1, i%2 == 0)
	}
	clock.Advance(31 * day)
	res, err := newRetainer(t, s, Config{MaxBatchesPerSweep: 10 * n}).Sweep(t.Context())
	if err != nil || res.Archived+res.DeadLetters != n {
		t.Fatalf("a sweep over %d queues: %+v, %v", n, res, err)
	}
}
