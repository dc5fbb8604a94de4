package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

// TestBufferedGaugeCountsWaitingJobs: with its one worker busy, a processor
// holds the rest of its claim in the buffer; the gauge reports that number,
// not a constant, and drops to 0 once they have run.
func TestBufferedGaugeCountsWaitingJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, reader := newTestMetrics(t, telemetry.Options{})
		store := memstore.New()
		for range 5 {
			if _, err := store.Enqueue(ctx, jobs.EnqueueParams{Queue: "q", Type: "slow"}); err != nil {
				t.Fatal(err)
			}
		}
		release := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("slow", func(ctx context.Context, _ *processor.Job) error {
			select {
			case <-release:
			case <-ctx.Done(): // Stop, when a check below fails
			}
			return nil
		})
		cfg := processorConfig("w", "q")
		cfg.Concurrency = 1
		p, err := processor.New(store, reg, m.InstrumentProcessor(cfg))
		if err != nil {
			t.Fatal(err)
		}
		m.ObserveProcessor(p)
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer p.Stop(ctx)
		waitFor(t, time.Minute, "one job running, four buffered", func() bool {
			st := p.Stats()
			return st.Running == 1 && st.Buffered == 4
		})
		synctest.Wait()
		got := collect(t, reader)
		wantValues(t, "buffered", got.gauge(t, "chokaq.processor.buffered"), map[string]int64{"": p.Stats().Buffered}) // 4
		wantValues(t, "running", got.gauge(t, "chokaq.processor.running"), map[string]int64{"": 1})

		close(release)
		waitFor(t, time.Minute, "all five done", func() bool { return p.Stats().Succeeded == 5 })
		got = collect(t, reader)
		wantValues(t, "buffered after", got.gauge(t, "chokaq.processor.buffered"), map[string]int64{"": 0})
		wantValues(t, "running after", got.gauge(t, "chokaq.processor.running"), map[string]int64{"": 0})
	})
}

// TestDepthSampleCountsEachStatus: every status has its own count in the
// store, so a sample that reports one status under another's label fails.
func TestDepthSampleCountsEachStatus(t *testing.T) {
	ctx := context.Background()
	m, reader := newTestMetrics(t, telemetry.Options{})
	s := memstore.New()
	enqueue := func(queue string, n int) {
		t.Helper()
		for range n {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: queue, Type: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// claim takes n jobs of queue and starts the first of them.
	claim := func(queue string, n int) {
		t.Helper()
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: n})
		if err != nil || len(got) != n {
			t.Fatalf("claim %s: %v %v", queue, got, err)
		}
		if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("a", 6)
	claim("a", 3) // a: 3 pending, 2 fetched, 1 processing
	enqueue("b", 1)
	claim("b", 1) // b: 1 processing

	m.SampleDepthsAfterSweep(s, []string{"a", "b"})(zombie.Result{}, nil)
	wantValues(t, "depth", collect(t, reader).gauge(t, "chokaq.queue.depth"), map[string]int64{
		"queue=a,status=pending": 3, "queue=a,status=fetched": 2, "queue=a,status=processing": 1,
		"queue=b,status=pending": 0, "queue=b,status=fetched": 0, "queue=b,status=processing": 1,
	})
}

// TestWaitingSampleCountsKeyAndSequenceApart: two jobs held back by their
// concurrency key and one by its sequence are reported under their own
// reason, never under the key's name, and every sampled queue is reported,
// zeros included; a skipped sweep clears the sample.
func TestWaitingSampleCountsKeyAndSequenceApart(t *testing.T) {
	ctx := context.Background()
	m, reader := newTestMetrics(t, telemetry.Options{})
	s := memstore.New()
	one := 1
	if _, err := s.UpdateQueue(ctx, "a", jobs.QueueUpdate{MaxWorkersPerKey: &one}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []jobs.EnqueueParams{
		{Queue: "a", Type: "t", ConcurrencyKey: "tenant-7"}, {Queue: "a", Type: "t", ConcurrencyKey: "tenant-7"},
		{Queue: "a", Type: "t", ConcurrencyKey: "tenant-7"},
		{Queue: "a", Type: "t", SequenceKey: "order-9"}, {Queue: "a", Type: "t", SequenceKey: "order-9"},
	} {
		if _, err := s.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"a"}, Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("claim: %v %v", got, err)
	}
	sample := m.SampleDepthsAfterSweep(s, []string{"a", "b"})
	sample(zombie.Result{}, nil)
	wantValues(t, "waiting", collect(t, reader).gauge(t, "chokaq.jobs.waiting"), map[string]int64{
		"queue=a,reason=key": 2, "queue=a,reason=sequence": 1, "queue=a,reason=rate_limit": 0, "queue=a,reason=parents": 0,
		"queue=b,reason=key": 0, "queue=b,reason=sequence": 0, "queue=b,reason=rate_limit": 0, "queue=b,reason=parents": 0,
	})
	sample(zombie.Result{Skipped: true}, nil)
	wantValues(t, "waiting after a skipped sweep", collect(t, reader).gauge(t, "chokaq.jobs.waiting"), map[string]int64{})
}

// TestWaitingSampleCountsJobsAFullRateWindowHolds: the due jobs of a queue
// whose rate-limit window is full (ADR 0033) are reported under
// reason="rate_limit", apart from flow control's, and a queue with room
// left in its window reports none.
func TestWaitingSampleCountsJobsAFullRateWindowHolds(t *testing.T) {
	ctx := context.Background()
	m, reader := newTestMetrics(t, telemetry.Options{})
	s := memstore.New()
	for q, r := range map[string]jobs.RateLimit{"a": {Count: 2, Window: time.Hour}, "b": {Count: 10, Window: time.Hour}} {
		if _, err := s.UpdateQueue(ctx, q, jobs.QueueUpdate{RateLimit: &r}); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: q, Type: "t"}); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{q}, Limit: 2}); err != nil || len(got) != 2 {
			t.Fatalf("claim %s: %v %v", q, got, err)
		}
	}
	m.SampleDepthsAfterSweep(s, []string{"a", "b"})(zombie.Result{}, nil)
	wantValues(t, "waiting", collect(t, reader).gauge(t, "chokaq.jobs.waiting"), map[string]int64{
		"queue=a,reason=key": 0, "queue=a,reason=sequence": 0, "queue=a,reason=rate_limit": 3, "queue=a,reason=parents": 0,
		"queue=b,reason=key": 0, "queue=b,reason=sequence": 0, "queue=b,reason=rate_limit": 0, "queue=b,reason=parents": 0,
	})
}

// TestWaitingSampleCountsWorkflowTasksWaitingOnParents: tasks waiting for
// a parent (ADR 0034) are reported under reason="parents".
func TestWaitingSampleCountsWorkflowTasksWaitingOnParents(t *testing.T) {
	ctx := context.Background()
	m, reader := newTestMetrics(t, telemetry.Options{})
	s := memstore.New()
	tasks := []jobs.WorkflowTask{{Name: "a", Job: jobs.EnqueueParams{Queue: "a", Type: "t"}}}
	for _, n := range []string{"b", "c", "d"} {
		tasks = append(tasks, jobs.WorkflowTask{Name: n, Job: jobs.EnqueueParams{Queue: "a", Type: "t"}, After: []string{"a"}})
	}
	if _, err := s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "w", Tasks: tasks}); err != nil {
		t.Fatal(err)
	}
	m.SampleDepthsAfterSweep(s, []string{"a"})(zombie.Result{}, nil)
	wantValues(t, "waiting", collect(t, reader).gauge(t, "chokaq.jobs.waiting"), map[string]int64{
		"queue=a,reason=key": 0, "queue=a,reason=sequence": 0, "queue=a,reason=rate_limit": 0, "queue=a,reason=parents": 3,
	})
}

// statsFail is a store whose QueueStats fails.
type statsFail struct{ *memstore.Store }

func (statsFail) QueueStats(context.Context) ([]jobs.QueueStats, error) {
	return nil, errors.New("stats unavailable")
}

// TestAFailedStatsReadClearsOnlyTheWaitingSample: an old waiting count
// would look current, so it is dropped; the depth, read apart, stays.
func TestAFailedStatsReadClearsOnlyTheWaitingSample(t *testing.T) {
	m, reader := newTestMetrics(t, telemetry.Options{})
	s := memstore.New()
	m.SampleDepthsAfterSweep(s, []string{"a"})(zombie.Result{}, nil)
	if got := collect(t, reader).gauge(t, "chokaq.jobs.waiting"); len(got) != 4 {
		t.Fatalf("waiting before = %v, want four zero series (key, sequence, rate_limit, parents)", got)
	}
	m.SampleDepthsAfterSweep(statsFail{s}, []string{"a"})(zombie.Result{}, nil)
	got := collect(t, reader)
	wantValues(t, "waiting after a failed read", got.gauge(t, "chokaq.jobs.waiting"), map[string]int64{})
	wantValues(t, "depth", got.gauge(t, "chokaq.queue.depth"), map[string]int64{
		"queue=a,status=pending": 0, "queue=a,status=fetched": 0, "queue=a,status=processing": 0,
	})
}
