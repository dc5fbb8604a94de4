package telemetry_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

func processorConfig(id string, queues ...string) processor.Config {
	return processor.Config{
		WorkerID: id, Queues: queues, Concurrency: 4, PrefetchSize: 8, BatchSize: 4,
		PollInterval: 100 * time.Millisecond, DefaultTimeout: time.Hour,
		HeartbeatIntervalMin: 8 * time.Second, HeartbeatIntervalMax: 12 * time.Second,
		ShutdownTimeout: 5 * time.Second, ReleaseAfter: 30 * time.Second,
		Retry: processor.RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Minute, BackoffMultiplier: 2},
	}
}

// TestMetricsOfAScriptedRun drives real processors and the rescue loop on
// the in-memory store, in fake time, through every outcome, and checks
// every instrument's exact values and labels (histograms by count and sum):
//
//   - main: 3 succeed, 2 fail once then succeed, 1 fails permanently
//     (Fatal), 1 fails both of its 2 attempts (MaxRetriesExceeded);
//   - main: 1 job claimed by a worker that vanished, recovered by rescue
//     phase 1, then succeeds;
//   - fragile: the worker running it loses the store mid-job: its
//     heartbeats degrade, phase 2 dead-letters the job as Zombie, and once
//     the store is back the worker learns it lost the lease;
//   - stuck: a job started by a worker that hangs past its deadline,
//     dead-lettered by phase 3 as Timeout.
func TestMetricsOfAScriptedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, reader := newTestMetrics(t, telemetry.Options{})
		mem := memstore.New()
		store := &startLog{Store: mem, lag: map[string]time.Duration{}}
		enqueue := func(p jobs.EnqueueParams) int64 {
			t.Helper()
			r, err := store.Enqueue(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			m.RecordEnqueued(p.Queue, p.Type, 1)
			return r.ID
		}

		// The vanished worker's job and the hanging worker's job.
		enqueue(jobs.EnqueueParams{Queue: "main", Type: "orphan"})
		if got, err := store.Claim(ctx, jobs.ClaimParams{WorkerID: "vanished", Queues: []string{"main"}, Limit: 1}); err != nil || len(got) != 1 {
			t.Fatalf("claim orphan: %v %v", got, err)
		}
		enqueue(jobs.EnqueueParams{Queue: "stuck", Type: "hang"})
		hung, err := store.Claim(ctx, jobs.ClaimParams{WorkerID: "hung", Queues: []string{"stuck"}, Limit: 1})
		if err != nil || len(hung) != 1 {
			t.Fatalf("claim hang: %v %v", hung, err)
		}
		// Started by hand, not by a processor, so no lag is recorded for
		// it: past startLog.
		if _, err := mem.Start(ctx, hung[0].Ref(), jobs.StartParams{DefaultTimeout: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}

		rescuer, err := zombie.New(store, m.InstrumentRescue(zombie.Config{
			ScanInterval: 10 * time.Second, FetchedJobTimeout: time.Minute, ProcessingZombieTimeout: time.Minute,
		}, store, []string{"main", "fragile", "stuck"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := rescuer.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer rescuer.Stop(ctx) // also when a check fails, so the bubble can end

		// Each type's handler takes its own time, in binary fractions of a
		// second so that the duration sums below are exact.
		reg := processor.NewRegistry()
		reg.MustHandle("ok", func(context.Context, *processor.Job) error { time.Sleep(250 * time.Millisecond); return nil })
		reg.MustHandle("orphan", func(context.Context, *processor.Job) error { return nil })
		reg.MustHandle("flaky", func(_ context.Context, j *processor.Job) error {
			time.Sleep(125 * time.Millisecond)
			if j.Attempt == 1 {
				return errors.New("once")
			}
			return nil
		})
		reg.MustHandle("fatal", func(context.Context, *processor.Job) error {
			time.Sleep(500 * time.Millisecond)
			return processor.Permanent(errors.New("never"))
		})
		reg.MustHandle("exhaust", func(context.Context, *processor.Job) error { time.Sleep(time.Second); return errors.New("always") })
		healthy, err := processor.New(store, reg, m.InstrumentProcessor(processorConfig("healthy", "main")))
		if err != nil {
			t.Fatal(err)
		}
		m.ObserveProcessor(healthy)

		cut := faultstore.New(store)
		var fragileRan atomic.Int64 // how long the fragile handler ran, in fake time
		doomedReg := processor.NewRegistry()
		doomedReg.MustHandle("fragile", func(ctx context.Context, _ *processor.Job) error {
			began := time.Now()
			defer func() { fragileRan.Store(int64(time.Since(began))) }()
			cut.Cut()
			<-ctx.Done()
			return ctx.Err()
		})
		dcfg := processorConfig("doomed", "fragile")
		dcfg.Concurrency, dcfg.PrefetchSize, dcfg.BatchSize = 1, 1, 1
		doomed, err := processor.New(cut, doomedReg, m.InstrumentProcessor(dcfg))
		if err != nil {
			t.Fatal(err)
		}
		m.ObserveProcessor(doomed)
		for _, p := range []*processor.Processor{healthy, doomed} {
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer p.Stop(ctx)
		}
		for range 3 {
			enqueue(jobs.EnqueueParams{Queue: "main", Type: "ok"})
		}
		for range 2 {
			enqueue(jobs.EnqueueParams{Queue: "main", Type: "flaky"})
		}
		enqueue(jobs.EnqueueParams{Queue: "main", Type: "fatal"})
		enqueue(jobs.EnqueueParams{Queue: "main", Type: "exhaust", MaxAttempts: 2})
		fragile := enqueue(jobs.EnqueueParams{Queue: "fragile", Type: "fragile"})

		// Phase 2 takes the fragile job a minute after its last beat; its
		// worker's beats fail meanwhile and degrade.
		waitFor(t, 5*time.Minute, "the zombie rescued and the heartbeats degraded", func() bool {
			return rescuer.Counters().Zombies == 1 && doomed.Stats().HeartbeatFailures == 1 && rescuer.Counters().Recovered == 1
		})
		synctest.Wait() // let the recovered orphan leave the buffer
		gauges := collect(t, reader)
		wantValues(t, "running while the cut-off handler still runs", gauges.gauge(t, "chokaq.processor.running"), map[string]int64{"": 1})
		wantValues(t, "buffered", gauges.gauge(t, "chokaq.processor.buffered"), map[string]int64{"": 0})

		// The store comes back: the worker's next beat finds the job gone.
		cut.Restore()
		waitFor(t, time.Minute, "the lease loss noticed", func() bool { return doomed.Stats().LeaseLost == 1 })
		waitFor(t, 5*time.Minute, "everything settled", func() bool {
			n, err := store.CountJobs(ctx, jobs.TableHot, jobs.Filter{})
			return err == nil && n == 0 && healthy.Stats().Running == 0
		})

		// Two jobs for later, to read in the next depth sample.
		for range 2 {
			enqueue(jobs.EnqueueParams{Queue: "main", Type: "later", Delay: time.Hour})
		}
		time.Sleep(rescuer.Interval())
		synctest.Wait() // the sweep due now, and its depth sample, are done
		got := collect(t, reader)

		wantValues(t, "enqueued", got.counter(t, "chokaq.jobs.enqueued"), map[string]int64{
			qt("main", "orphan"): 1, qt("main", "ok"): 3, qt("main", "flaky"): 2, qt("main", "fatal"): 1,
			qt("main", "exhaust"): 1, qt("main", "later"): 2, qt("fragile", "fragile"): 1, qt("stuck", "hang"): 1,
		})
		ran := map[string]int64{ // every execution by a processor
			qt("main", "orphan"): 1, qt("main", "ok"): 3, qt("main", "flaky"): 4, qt("main", "fatal"): 1,
			qt("main", "exhaust"): 2, qt("fragile", "fragile"): 1,
		}
		wantValues(t, "fetched", got.counter(t, "chokaq.jobs.fetched"), ran)
		wantValues(t, "started", got.counter(t, "chokaq.jobs.started"), ran)
		wantValues(t, "succeeded", got.counter(t, "chokaq.jobs.succeeded"), map[string]int64{
			qt("main", "orphan"): 1, qt("main", "ok"): 3, qt("main", "flaky"): 2,
		})
		wantValues(t, "failed", got.counter(t, "chokaq.jobs.failed"), map[string]int64{
			qt("main", "flaky"): 2, qt("main", "fatal"): 1, qt("main", "exhaust"): 2,
		})
		wantValues(t, "retried", got.counter(t, "chokaq.jobs.retried"), map[string]int64{
			qt("main", "flaky"): 2, qt("main", "exhaust"): 1,
		})
		wantValues(t, "dead_lettered", got.counter(t, "chokaq.jobs.dead_lettered"), map[string]int64{
			qrt("main", "Fatal", "fatal"): 1, qrt("main", "MaxRetriesExceeded", "exhaust"): 1,
			qrt("fragile", "Zombie", "fragile"): 1, qrt("stuck", "Timeout", "hang"): 1,
		})
		wantValues(t, "lease_lost", got.counter(t, "chokaq.jobs.lease_lost"), map[string]int64{qt("fragile", "fragile"): 1})
		wantValues(t, "heartbeat_failures", got.counter(t, "chokaq.jobs.heartbeat_failures"), map[string]int64{qt("fragile", "fragile"): 1})
		wantValues(t, "rescue.recovered", got.counter(t, "chokaq.rescue.recovered"), map[string]int64{qt("main", "orphan"): 1})
		wantValues(t, "rescue.archived", got.counter(t, "chokaq.rescue.archived"), map[string]int64{qt("fragile", "fragile"): 1})
		wantValues(t, "rescue.deadline", got.counter(t, "chokaq.rescue.deadline"), map[string]int64{qt("stuck", "hang"): 1})

		duration := got.histogram(t, "chokaq.jobs.duration")
		wantValues(t, "duration counts", counts(duration), ran)
		// The handler that failed only after a lost lease ran from its start
		// until the store came back: longer than the zombie timeout.
		if d := time.Duration(fragileRan.Load()); d <= time.Minute {
			t.Errorf("the fragile handler ran %v, want over a minute", d)
		}
		wantSums(t, "duration sums", duration, map[string]time.Duration{
			qt("main", "orphan"): 0, qt("main", "ok"): 3 * 250 * time.Millisecond, qt("main", "flaky"): 4 * 125 * time.Millisecond,
			qt("main", "fatal"): 500 * time.Millisecond, qt("main", "exhaust"): 2 * time.Second,
			qt("fragile", "fragile"): time.Duration(fragileRan.Load()),
		})
		queueLag := got.histogram(t, "chokaq.jobs.queue_lag")
		wantValues(t, "queue_lag counts", counts(queueLag), ran)
		// Each start's lag is the store's start time less the due time the
		// store had for the job; which instants those are depends on the
		// processor's polling, so they are read from the store.
		wantSums(t, "queue_lag sums", queueLag, store.lags())
		if store.lags()[qt("main", "orphan")] < time.Minute {
			t.Errorf("the orphan's lag %v does not include the minute before its rescue", store.lags()[qt("main", "orphan")])
		}

		latency := got.histogram(t, "chokaq.rescue.detection_latency")
		wantValues(t, "detection_latency counts", counts(latency), map[string]int64{
			qrt("fragile", "Zombie", "fragile"): 1, qrt("stuck", "Timeout", "hang"): 1,
		})
		// From the last sign of life the store kept (the zombie's one
		// heartbeat, the hung job's deadline) to the rescue that moved it.
		zombieJob, deadlineJob := dead(t, mem, fragile), dead(t, mem, hung[0].ID)
		wantSums(t, "detection_latency sums", latency, map[string]time.Duration{
			qrt("fragile", "Zombie", "fragile"): zombieJob.FinishedAt.Sub(zombieJob.HeartbeatAt),
			qrt("stuck", "Timeout", "hang"):     deadlineJob.FinishedAt.Sub(deadlineJob.DeadlineAt),
		})
		// The zombie went unnoticed for its timeout plus at most one scan
		// interval; the hung job for at most one interval past its deadline.
		if s := latency[qrt("fragile", "Zombie", "fragile")].Sum; s < 60 || s > 70 {
			t.Errorf("zombie detection latency %vs, want 60 to 70", s)
		}
		if s := latency[qrt("stuck", "Timeout", "hang")].Sum; s < 0 || s > 10 {
			t.Errorf("deadline detection latency %vs, want 0 to 10", s)
		}

		wantValues(t, "running", got.gauge(t, "chokaq.processor.running"), map[string]int64{"": 0})
		wantValues(t, "buffered", got.gauge(t, "chokaq.processor.buffered"), map[string]int64{"": 0})
		wantValues(t, "queue depth", got.gauge(t, "chokaq.queue.depth"), map[string]int64{
			"queue=main,status=pending": 2, "queue=main,status=fetched": 0, "queue=main,status=processing": 0,
			"queue=fragile,status=pending": 0, "queue=fragile,status=fetched": 0, "queue=fragile,status=processing": 0,
			"queue=stuck,status=pending": 0, "queue=stuck,status=fetched": 0, "queue=stuck,status=processing": 0,
		})

		for _, p := range []*processor.Processor{healthy, doomed} {
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := rescuer.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		// Every sweep the loop ran, none failed or skipped.
		wantValues(t, "rescue.sweeps", collect(t, reader).counter(t, "chokaq.rescue.sweeps"), map[string]int64{
			"result=ok": rescuer.Counters().Sweeps,
		})
	})
}

// startLog is a store that notes, for every start it passes on, how long
// the job had been due by the store's clock: the lag the queue_lag
// histogram must record, summed by queue and type.
type startLog struct {
	jobs.Store
	mu  sync.Mutex
	lag map[string]time.Duration
}

func (s *startLog) Start(ctx context.Context, ref jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	j, err := s.Store.GetJob(ctx, ref.ID)
	if err != nil {
		return jobs.Started{}, err
	}
	st, err := s.Store.Start(ctx, ref, p)
	if err == nil {
		s.mu.Lock()
		s.lag[qt(j.Queue, j.Type)] += st.StartedAt.Sub(j.ScheduledAt)
		s.mu.Unlock()
	}
	return st, err
}

func (s *startLog) lags() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.lag)
}

// dead reads a job that must be in the DLQ.
func dead(t *testing.T, s jobs.Store, id int64) *jobs.Job {
	t.Helper()
	j, err := s.GetJob(context.Background(), id)
	if err != nil || j.Table != jobs.TableDLQ {
		t.Fatalf("job %d: %+v %v, want a dead letter", id, j, err)
	}
	return j
}

// TestShutdownInterruptionIsNotAFailure: a handler cancelled by shutdown is
// retried, and neither the processor's Stats nor chokaq.jobs.failed count
// its error as a failure: both count failures the same way.
func TestShutdownInterruptionIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, reader := newTestMetrics(t, telemetry.Options{})
		store := memstore.New()
		started := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("long", func(ctx context.Context, _ *processor.Job) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
		cfg := processorConfig("w", "main")
		cfg.ShutdownTimeout = time.Second
		p, err := processor.New(store, reg, m.InstrumentProcessor(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Enqueue(ctx, jobs.EnqueueParams{Queue: "main", Type: "long"}); err != nil {
			t.Fatal(err)
		}
		p.Notify()
		<-started
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Retried != 1 || st.Failed != 0 {
			t.Fatalf("stats: retried %d, failed %d; want 1 and 0", st.Retried, st.Failed)
		}
		got := collect(t, reader)
		wantValues(t, "retried", got.counter(t, "chokaq.jobs.retried"), map[string]int64{qt("main", "long"): 1})
		wantValues(t, "failed", got.counter(t, "chokaq.jobs.failed"), map[string]int64{})
	})
}
