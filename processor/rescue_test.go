package processor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// blockingHandler blocks every job until released, and reports starts.
type blockingHandler struct {
	started chan int64
	release chan struct{}
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{started: make(chan int64, 100), release: make(chan struct{})}
}

func (b *blockingHandler) handle(ctx context.Context, j *processor.Job) error {
	b.started <- j.ID
	<-b.release // ignores ctx: a hung handler
	return nil
}

// TestWorkerThatDiesMidJobIsRescued: a processor loses its store while one
// job runs and others wait in its buffer. Phase 1 returns the buffered jobs
// to Pending without an attempt; phase 2 dead-letters the running one as a
// zombie. A healthy processor then runs the recovered jobs.
func TestWorkerThatDiesMidJobIsRescued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		for range 5 {
			enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		}
		dying := faultstore.New(mem)
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, dying, reg, cfg)
		running := <-block.started
		waitFor(t, time.Minute, "the rest buffered", func() bool { return p.Stats().Buffered == 4 })
		dying.Cut() // the worker is gone as far as the store can tell

		rescue := startRescue(t, mem, zombie.Config{})
		waitFor(t, 15*time.Minute, "phase 1 and 2", func() bool {
			c := rescue.Counters()
			return c.Recovered == 4 && c.Zombies == 1
		})
		d := get(t, mem, running)
		if d.Table != jobs.TableDLQ || d.FailureReason != jobs.ReasonZombie || d.AttemptCount != 1 {
			t.Fatalf("running job %+v, want a zombie dead letter after 1 attempt", d)
		}
		page, err := mem.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot})
		if err != nil || len(page.Jobs) != 4 {
			t.Fatalf("hot jobs %v %v", page.Jobs, err)
		}
		for _, j := range page.Jobs {
			if j.Status != jobs.StatusPending || j.AttemptCount != 0 {
				t.Fatalf("recovered job %+v, want Pending with no attempt", j)
			}
		}

		healthy := processor.NewRegistry()
		healthy.MustHandle("h", func(context.Context, *processor.Job) error { return nil })
		cfg.WorkerID = "w2"
		p2 := startProcessor(t, mem, healthy, cfg)
		waitFor(t, time.Minute, "recovered jobs archived", func() bool { return countIn(t, mem, jobs.TableArchive) == 4 })
		stop(t, p2)
		close(block.release)
		_ = p.Stop(context.Background())
	})
}

// TestHungHandlerIsDeadLetteredAtItsDeadline: the handler ignores its
// context and never finishes, while its process keeps heartbeating. Phase 3
// dead-letters it at the deadline; when it finally returns, its completion
// changes nothing.
func TestHungHandlerIsDeadLetteredAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		// The zombie timeout is far shorter than the deadline: only the
		// heartbeats keep the job from phase 2 until phase 3 takes it.
		if _, err := s.UpdateQueue(t.Context(), "hang", jobs.QueueUpdate{ExecutionTimeout: secs(120), ZombieTimeout: secs(40)}); err != nil {
			t.Fatal(err)
		}
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		id := enqueue(t, s, jobs.EnqueueParams{Type: "h", Queue: "hang"})
		cfg := testConfig()
		cfg.Queues = []string{"hang"}
		p := startProcessor(t, s, reg, cfg)
		<-block.started
		rescue := startRescue(t, s, zombie.Config{ScanInterval: 5 * time.Second})
		time.Sleep(100 * time.Second)
		if j := get(t, s, id); j.Table != jobs.TableHot {
			t.Fatalf("rescued before its deadline: %+v", j)
		}
		if st := p.Stats(); st.HeartbeatBeats < 100/12 {
			t.Fatalf("%d beats in 100 s, want one at least every 12 s", st.HeartbeatBeats)
		}
		waitFor(t, time.Minute, "phase 3", inTable(s, id, jobs.TableDLQ))
		if c := rescue.Counters(); c.Expired != 1 || c.Zombies != 0 {
			t.Fatalf("counters %+v, want one deadline rescue and no zombie", c)
		}
		close(block.release) // the late completion
		waitFor(t, time.Minute, "lease lost recorded", func() bool { return p.Stats().LeaseLost == 1 })
		stop(t, p)
		j := get(t, s, id)
		if j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonTimeout {
			t.Fatalf("after the late completion the job is %+v, want still a Timeout dead letter", j)
		}
		if st := p.Stats(); st.Succeeded != 0 {
			t.Fatalf("late completion counted as success: %+v", st)
		}
	})
}

// TestHeartbeatsKeepALongJobAlive: a job that runs for three times the
// zombie timeout, heartbeating, is never rescued; its beats ride in shared
// store calls.
func TestHeartbeatsKeepALongJobAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := newCountingStore(mem)
		const zombieTimeout = 40 * time.Second
		reg := processor.NewRegistry()
		reg.MustHandle("long", func(ctx context.Context, j *processor.Job) error {
			select {
			case <-time.After(3 * zombieTimeout):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		var ids []int64
		for range 20 {
			ids = append(ids, enqueue(t, mem, jobs.EnqueueParams{Type: "long"}))
		}
		cfg := testConfig()
		cfg.Concurrency, cfg.PrefetchSize, cfg.BatchSize = 20, 20, 20
		p := startProcessor(t, s, reg, cfg)
		rescue := startRescue(t, mem, zombie.Config{ScanInterval: 5 * time.Second, ProcessingZombieTimeout: zombieTimeout})
		waitFor(t, 5*time.Minute, "all archived", func() bool { return countIn(t, mem, jobs.TableArchive) == 20 })
		stop(t, p)
		if c := rescue.Counters(); c.Zombies != 0 || c.Expired != 0 {
			t.Fatalf("heartbeating jobs were rescued: %+v", c)
		}
		st := p.Stats()
		// 20 jobs x 120s / ~10s = ~240 beats; coalesced into far fewer calls.
		if st.HeartbeatBeats < 200 || st.HeartbeatCalls*4 > st.HeartbeatBeats {
			t.Fatalf("%d beats in %d calls: want >= 200 beats, at least 4 per call", st.HeartbeatBeats, st.HeartbeatCalls)
		}
		_ = ids
	})
}

// TestPerQueueZombieTimeoutAppliesOnlyToItsQueue: two jobs lose their
// worker at the same moment; the one whose queue sets 60s is rescued after a
// minute, the other after the global ten.
func TestPerQueueZombieTimeoutAppliesOnlyToItsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		if _, err := mem.UpdateQueue(t.Context(), "fast", jobs.QueueUpdate{ZombieTimeout: secs(60)}); err != nil {
			t.Fatal(err)
		}
		fast := enqueue(t, mem, jobs.EnqueueParams{Type: "h", Queue: "fast"})
		slow := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		dying := faultstore.New(mem)
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		cfg := testConfig()
		cfg.Queues = []string{"fast", "default"}
		p := startProcessor(t, dying, reg, cfg)
		<-block.started
		<-block.started
		dying.Cut()
		startRescue(t, mem, zombie.Config{ScanInterval: 5 * time.Second})
		waitFor(t, 3*time.Minute, "fast queue's zombie", inTable(mem, fast, jobs.TableDLQ))
		if get(t, mem, slow).Table != jobs.TableHot {
			t.Fatal("the global-timeout job was rescued with the fast queue's timeout")
		}
		waitFor(t, 11*time.Minute, "global zombie", inTable(mem, slow, jobs.TableDLQ))
		close(block.release)
		_ = p.Stop(context.Background())
	})
}

// TestRescueWaitsForAJobsOwnHeartbeatsWhateverItsQueueSays: a processor
// beats every 50-60 s, and an operator gave the queue a zombie timeout of
// 40 s (another process's rule, the dashboard's, or a typo). A healthy job
// that runs 150 s goes silent for longer than 40 s between its beats; it
// must still be archived, not dead-lettered as a zombie: its start recorded
// the processor's heartbeat maximum, and rescue waits 3 x that (180 s).
// A processor that dies is still rescued, after those 180 s.
func TestRescueWaitsForAJobsOwnHeartbeatsWhateverItsQueueSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		if _, err := mem.UpdateQueue(t.Context(), "impatient", jobs.QueueUpdate{ZombieTimeout: secs(40)}); err != nil {
			t.Fatal(err)
		}
		healthy := enqueue(t, mem, jobs.EnqueueParams{Type: "long", Queue: "impatient"})
		reg := processor.NewRegistry()
		reg.MustHandle("long", func(ctx context.Context, j *processor.Job) error {
			time.Sleep(150 * time.Second)
			return nil
		})
		cfg := testConfig()
		cfg.Queues = []string{"impatient"}
		cfg.HeartbeatIntervalMin, cfg.HeartbeatIntervalMax = 50*time.Second, 60*time.Second
		p := startProcessor(t, mem, reg, cfg)
		rescue := startRescue(t, mem, zombie.Config{ScanInterval: 5 * time.Second})
		waitFor(t, 4*time.Minute, "the healthy job archived", inTable(mem, healthy, jobs.TableArchive))
		if c := rescue.Counters(); c.Zombies != 0 {
			t.Fatalf("rescue dead-lettered %d zombies; the job was alive, beating every 50-60s", c.Zombies)
		}
		stop(t, p)

		dead := enqueue(t, mem, jobs.EnqueueParams{Type: "hang", Queue: "impatient"})
		dying := faultstore.New(mem)
		block := newBlockingHandler()
		reg2 := processor.NewRegistry()
		reg2.MustHandle("hang", block.handle)
		cfg.WorkerID = "w2"
		p2 := startProcessor(t, dying, reg2, cfg)
		<-block.started
		dying.Cut()
		began := time.Now()
		waitFor(t, 5*time.Minute, "the dead worker's job rescued", inTable(mem, dead, jobs.TableDLQ))
		if took := time.Since(began); took < 170*time.Second {
			t.Fatalf("the dead worker's job was rescued after %v, want about 3 x its 60s heartbeat maximum", took)
		}
		close(block.release)
		_ = p2.Stop(context.Background())
	})
}

// TestMaxWorkersHoldsAcrossThreeProcessors: MaxWorkers 3 on a queue that
// three processors of four workers each serve.
func TestMaxWorkersHoldsAcrossThreeProcessors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		if _, err := s.UpdateQueue(t.Context(), "bulk", jobs.QueueUpdate{MaxWorkers: ptr(3)}); err != nil {
			t.Fatal(err)
		}
		for range 60 {
			enqueue(t, s, jobs.EnqueueParams{Type: "h", Queue: "bulk"})
		}
		var running, peak atomic.Int64
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Second)
			running.Add(-1)
			return nil
		})
		var ps []*processor.Processor
		for i := range 3 {
			cfg := testConfig()
			cfg.WorkerID = "p" + string(rune('0'+i))
			cfg.Queues = []string{"bulk"}
			ps = append(ps, startProcessor(t, s, reg, cfg))
		}
		waitFor(t, 10*time.Minute, "all archived", func() bool { return countIn(t, s, jobs.TableArchive) == 60 })
		for _, p := range ps {
			stop(t, p)
		}
		if peak.Load() != 3 {
			t.Fatalf("peak concurrency %d, want exactly MaxWorkers 3", peak.Load())
		}
	})
}

// TestShutdownReleasesBufferedJobs: Stop gives buffered jobs back at once
// with their AttemptCount untouched, and a running handler cancelled at
// ShutdownTimeout is retried with no delay.
func TestShutdownReleasesBufferedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		for range 6 {
			enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		}
		started := make(chan int64, 10)
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			started <- j.ID
			<-ctx.Done()
			return ctx.Err()
		})
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, s, reg, cfg)
		running := <-started
		waitFor(t, time.Minute, "buffer filled", func() bool { return p.Stats().Buffered == 5 })
		stopAt := time.Now()
		stopped := make(chan error)
		go func() { stopped <- p.Stop(context.Background()) }()
		// The buffered jobs go back at once, not when the grace ends: another
		// processor can run them while this one waits for its handler.
		time.Sleep(cfg.ShutdownTimeout / 10)
		if n, err := s.CountJobs(context.Background(), jobs.TableHot, jobs.Filter{Status: ptr(jobs.StatusPending)}); err != nil || n != 5 {
			t.Fatalf("%d Pending (%v) a moment into Stop, want the 5 buffered jobs released", n, err)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(stopAt); took < cfg.ShutdownTimeout || took > cfg.ShutdownTimeout+time.Second {
			t.Fatalf("Stop took %v, want about ShutdownTimeout %v", took, cfg.ShutdownTimeout)
		}
		page, err := s.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot})
		if err != nil || len(page.Jobs) != 6 {
			t.Fatalf("hot %v %v", page.Jobs, err)
		}
		for _, j := range page.Jobs {
			if j.Status != jobs.StatusPending {
				t.Fatalf("job %d is %s after shutdown, want Pending", j.ID, j.Status)
			}
			want := 0
			if j.ID == running {
				want = 1
				if j.ScheduledAt.After(time.Now()) {
					t.Fatalf("interrupted job due at %v, want at once", j.ScheduledAt)
				}
			}
			if j.AttemptCount != want {
				t.Fatalf("job %d attempt %d, want %d", j.ID, j.AttemptCount, want)
			}
		}
		if st := p.Stats(); st.Released != 5 || st.Retried != 1 {
			t.Fatalf("stats %+v, want 5 released and 1 retried", st)
		}
	})
}

// TestShutdownAbandonsAHandlerThatNeverReturns: Stop still returns; the job
// is left Processing for rescue.
func TestShutdownAbandonsAHandlerThatNeverReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		id := enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		p := startProcessor(t, s, reg, testConfig())
		<-block.started
		if err := p.Stop(context.Background()); !errors.Is(err, processor.ErrHandlersAbandoned) {
			t.Fatalf("Stop = %v while a handler still runs, want ErrHandlersAbandoned", err)
		}
		if j := get(t, s, id); j.Table != jobs.TableHot || j.Status != jobs.StatusProcessing {
			t.Fatalf("abandoned job %+v, want left Processing for rescue", j)
		}
		r, _ := zombie.New(s, zombie.Config{})
		time.Sleep(11 * time.Minute)
		if res, err := r.Sweep(context.Background()); err != nil || res.Zombies != 1 {
			t.Fatalf("rescue %+v %v", res, err)
		}
		close(block.release)
		time.Sleep(time.Second)
	})
}

// TestStoreOutageOf30Seconds: every store call fails for 30s; the processor
// keeps running, resumes by itself and loses nothing.
func TestStoreOutageOf30Seconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := faultstore.New(mem)
		var runs atomic.Int64
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			runs.Add(1)
			time.Sleep(2 * time.Second)
			return nil
		})
		for range 40 {
			enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		}
		p := startProcessor(t, s, reg, testConfig())
		time.Sleep(3 * time.Second)
		s.Cut()
		time.Sleep(30 * time.Second)
		if st := p.Stats(); st.StoreErrors == 0 {
			t.Fatalf("no store errors seen during the outage: %+v", st)
		}
		s.Restore()
		waitFor(t, 5*time.Minute, "all archived after the outage", func() bool { return countIn(t, mem, jobs.TableArchive) == 40 })
		stop(t, p)
		if n := countIn(t, mem, jobs.TableDLQ) + countIn(t, mem, jobs.TableHot); n != 0 {
			t.Fatalf("%d jobs not archived", n)
		}
		// Jobs started before the outage finished during it and were
		// written afterwards: no job ran twice.
		if runs.Load() != 40 {
			t.Fatalf("%d handler runs for 40 jobs", runs.Load())
		}
	})
}

// heartbeatFailStore fails only heartbeats while down is set, and counts
// claims.
type heartbeatFailStore struct {
	jobs.Store
	down   atomic.Bool
	claims atomic.Int64
}

func (h *heartbeatFailStore) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	if h.down.Load() {
		return jobs.HeartbeatResult{}, errors.New("heartbeat write failed")
	}
	return h.Store.Heartbeat(ctx, refs)
}

func (h *heartbeatFailStore) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	h.claims.Add(1)
	return h.Store.Claim(ctx, p)
}

// TestHeartbeatFailuresCancelAndStopClaims: with CancelOnHeartbeatFailure,
// a job whose beats fail HeartbeatFailureThreshold times in a row is
// cancelled and dead-lettered with reason HeartbeatFailure, and no new work
// is claimed while beats fail.
func TestHeartbeatFailuresCancelAndStopClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := &heartbeatFailStore{Store: mem}
		reg := processor.NewRegistry()
		var mu sync.Mutex
		var starts []int64
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			mu.Lock()
			starts = append(starts, j.ID)
			mu.Unlock()
			<-ctx.Done()
			return ctx.Err()
		})
		first := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		cfg := testConfig()
		cfg.Concurrency, cfg.PrefetchSize, cfg.BatchSize = 1, 1, 1
		cfg.HeartbeatFailureThreshold = 3
		cfg.CancelOnHeartbeatFailure = true
		p := startProcessor(t, s, reg, cfg)
		waitFor(t, time.Minute, "first job running", func() bool { return p.Stats().Running == 1 })
		s.down.Store(true)
		waitFor(t, time.Minute, "a failed beat", p.HeartbeatsFailing)
		enqueue(t, mem, jobs.EnqueueParams{Type: "h"}) // must wait: beats are failing
		p.Notify()
		claimsWhileFailing := s.claims.Load()
		time.Sleep(3 * time.Second) // less than 3 failures at Min/4 = 2s apart
		if !p.HeartbeatsFailing() {
			t.Fatal("heartbeats stopped failing before the threshold")
		}
		if got := s.claims.Load(); got != claimsWhileFailing {
			t.Fatalf("%d claims while heartbeats failed", got-claimsWhileFailing)
		}
		waitFor(t, 2*time.Minute, "dead-lettered", inTable(mem, first, jobs.TableDLQ))
		if d := get(t, mem, first); d.FailureReason != jobs.ReasonHeartbeatFailure {
			t.Fatalf("reason %s, want HeartbeatFailure", d.FailureReason)
		}
		if st := p.Stats(); st.HeartbeatFailures != 1 {
			t.Fatalf("stats %+v, want one heartbeat failure at the threshold", st)
		}
		stop(t, p)
	})
}

// TestPausedQueueReleasesItsBufferedJobs: pausing a queue gives its
// buffered jobs back to Pending without starting them.
func TestPausedQueueReleasesItsBufferedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		for range 5 {
			enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		}
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, s, reg, cfg)
		<-block.started
		waitFor(t, time.Minute, "buffered", func() bool { return p.Stats().Buffered == 4 })
		if _, err := s.UpdateQueue(t.Context(), "default", jobs.QueueUpdate{Paused: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "released", func() bool { return p.Stats().Released == 4 })
		close(block.release)
		stop(t, p)
		st, err := s.QueueStats(context.Background())
		if err != nil || len(st) != 1 || st[0].Pending != 4 || st[0].Archived != 1 {
			t.Fatalf("queue stats %+v %v", st, err)
		}
	})
}

// recordsNoHeartbeatMax starts jobs as a processor built before starts
// recorded the heartbeat maximum did: rescue phase 2 then applies the
// queue's zombie timeout alone, as it did for every job before.
type recordsNoHeartbeatMax struct{ jobs.Store }

func (s recordsNoHeartbeatMax) Start(ctx context.Context, ref jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	p.HeartbeatMax = 0
	return s.Store.Start(ctx, ref, p)
}

// TestLostLeaseCancelsTheHandler: rescue takes a job away from a live
// worker (its queue's zombie timeout is shorter than the heartbeat
// interval, and its start recorded no heartbeat maximum, as an older
// build's did); the next beat updates nothing, the handler's context is
// cancelled, and the processor writes nothing for the job.
func TestLostLeaseCancelsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := recordsNoHeartbeatMax{mem}
		if _, err := s.UpdateQueue(t.Context(), "tight", jobs.QueueUpdate{ZombieTimeout: secs(5)}); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, s, jobs.EnqueueParams{Type: "h", Queue: "tight"})
		cancelled := make(chan time.Duration, 1)
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			began := time.Now()
			select {
			case <-ctx.Done():
				cancelled <- time.Since(began)
				return ctx.Err()
			case <-time.After(time.Hour):
				return nil
			}
		})
		cfg := testConfig()
		cfg.Queues = []string{"tight"}
		p := startProcessor(t, s, reg, cfg)
		startRescue(t, s, zombie.Config{ScanInterval: time.Second})
		select {
		case after := <-cancelled:
			if after > 15*time.Second {
				t.Fatalf("handler cancelled after %v, want at the first beat after the rescue", after)
			}
		case <-time.After(time.Minute):
			t.Fatal("the handler's context was not cancelled when its lease was lost")
		}
		waitFor(t, time.Minute, "lease lost counted", func() bool { return p.Stats().LeaseLost == 1 })
		stop(t, p)
		j := get(t, s, id)
		if j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonZombie || j.AttemptCount != 1 {
			t.Fatalf("job %+v, want left as the rescue's zombie dead letter", j)
		}
		if st := p.Stats(); st.Retried+st.DeadLettered+st.Succeeded != 0 {
			t.Fatalf("the processor wrote an outcome after losing the lease: %+v", st)
		}
	})
}

// gatedClaimStore lets the first claim through and then holds every claim
// until the gate opens: a fetch loop stuck in a slow claim.
type gatedClaimStore struct {
	jobs.Store
	claims atomic.Int64
	gate   chan struct{}
}

func (g *gatedClaimStore) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	if g.claims.Add(1) > 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Store.Claim(ctx, p)
}

// TestStaleBufferedJobsAreReleasedNotStarted: jobs that waited in the buffer
// more than ReleaseAfter are given back, not started, so rescue
// phase 1 never races a live worker. Here the fetch loop is stuck in a slow
// claim, so the worker itself must notice.
func TestStaleBufferedJobsAreReleasedNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		var ids []int64
		for range 3 {
			ids = append(ids, enqueue(t, mem, jobs.EnqueueParams{Type: "h"}))
		}
		s := &gatedClaimStore{Store: mem, gate: make(chan struct{})}
		started := make(chan int64, 10)
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			started <- j.ID
			if j.ID == ids[0] {
				time.Sleep(6 * time.Minute) // longer than ReleaseAfter
			}
			return nil
		})
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, s, reg, cfg)
		if first := <-started; first != ids[0] {
			t.Fatalf("first started %d", first)
		}
		waitFor(t, 10*time.Minute, "the stale jobs released", func() bool { return p.Stats().Released == 2 })
		select {
		case id := <-started:
			t.Fatalf("job %d started after waiting more than ReleaseAfter", id)
		default:
		}
		for _, id := range ids[1:] {
			if j := get(t, mem, id); j.Status != jobs.StatusPending || j.AttemptCount != 0 {
				t.Fatalf("released job %+v, want Pending with no attempt", j)
			}
		}
		close(s.gate)
		waitFor(t, time.Minute, "all archived", func() bool { return countIn(t, mem, jobs.TableArchive) == 3 })
		stop(t, p)
	})
}

// TestClaimsResumeAfterAnOutageEndsWithoutAnotherBeat: a heartbeat fails
// during an outage, then the job's outcome is written before any later beat
// (so no heartbeat call ever succeeds again). The processor must still
// resume claiming: a failing beat that no longer exists does not count.
func TestClaimsResumeAfterAnOutageEndsWithoutAnotherBeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		fs := faultstore.New(mem)
		reg := processor.NewRegistry()
		var p *processor.Processor
		first := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			if j.ID == first {
				fs.Cut()
				for !p.HeartbeatsFailing() {
					time.Sleep(10 * time.Millisecond)
				}
				go func() { time.Sleep(50 * time.Millisecond); fs.Restore() }()
			}
			return nil
		})
		// p must be set before the handler can run: build, assign, then start.
		var err error
		if p, err = processor.New(fs, reg, testConfig()); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the first job archived", inTable(mem, first, jobs.TableArchive))
		second := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		p.Notify()
		waitFor(t, time.Minute, "the second job archived", inTable(mem, second, jobs.TableArchive))
		if p.HeartbeatsFailing() {
			t.Fatal("heartbeats still reported failing with no job running")
		}
		stop(t, p)
	})
}

// TestClaimsResumeAfterHeartbeatFailureCancelledTheJob: the same with
// CancelOnHeartbeatFailure, where the failing beat is dropped at the
// threshold.
func TestClaimsResumeAfterHeartbeatFailureCancelledTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		fs := faultstore.New(mem)
		first := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			if j.ID == first {
				fs.Cut()
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		cfg := testConfig()
		cfg.CancelOnHeartbeatFailure = true
		cfg.HeartbeatFailureThreshold = 2
		p := startProcessor(t, fs, reg, cfg)
		time.Sleep(time.Minute)
		fs.Restore()
		waitFor(t, time.Minute, "the first job dead-lettered", inTable(mem, first, jobs.TableDLQ))
		second := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		p.Notify()
		waitFor(t, time.Minute, "the second job archived", inTable(mem, second, jobs.TableArchive))
		stop(t, p)
	})
}

// TestStopWithAShortDeadlineStillRetriesInterruptedJobs: the orchestrator
// gives Stop one second while ShutdownTimeout is five. The handler honours
// its context; its job must be retried at once, not left Processing for
// rescue to dead-letter as a zombie.
func TestStopWithAShortDeadlineStillRetriesInterruptedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		started := make(chan struct{}, 1)
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		})
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		p := startProcessor(t, mem, reg, testConfig()) // ShutdownTimeout 5s
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		began := time.Now()
		if err := p.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(began); took > time.Second {
			t.Fatalf("Stop took %v with a 1s context", took)
		}
		if j := get(t, mem, id); j.Table != jobs.TableHot || j.Status != jobs.StatusPending || j.AttemptCount != 1 {
			t.Fatalf("interrupted job %+v, want Pending again after its one attempt", j)
		}
	})
}

// hangingRelease never answers a release until its context ends.
type hangingRelease struct{ jobs.Store }

func (h hangingRelease) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStopHonoursItsContext: a release that hangs does not hold Stop past
// its context's deadline.
func TestStopHonoursItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		for range 8 {
			enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		}
		block := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error { <-block; return nil })
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, hangingRelease{mem}, reg, cfg)
		waitFor(t, time.Minute, "buffered", func() bool { return p.Stats().Buffered == 7 })
		close(block)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		began := time.Now()
		_ = p.Stop(ctx)
		if took := time.Since(began); took > 2*time.Second {
			t.Fatalf("Stop(ctx 1s) took %v", took)
		}
	})
}

// Stops that overlap agree: while a handler ignores its cancellation, the
// first Stop gives up with ErrHandlersAbandoned, and so does every other,
// concurrent or later (a second one used to report success), after at most
// twice ShutdownTimeout.
func TestConcurrentStopsReturnTheSameResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		block := newBlockingHandler()
		reg := processor.NewRegistry()
		reg.MustHandle("h", block.handle)
		cfg := testConfig()
		p := startProcessor(t, s, reg, cfg)
		<-block.started
		began := time.Now()
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- p.Stop(context.Background()) }()
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, processor.ErrHandlersAbandoned) {
				t.Errorf("concurrent Stop = %v, want ErrHandlersAbandoned", err)
			}
		}
		if took := time.Since(began); took > 2*cfg.ShutdownTimeout {
			t.Errorf("Stop took %v, more than twice ShutdownTimeout (%v)", took, cfg.ShutdownTimeout)
		}
		if err := p.Stop(context.Background()); !errors.Is(err, processor.ErrHandlersAbandoned) {
			t.Errorf("a later Stop = %v, want the first's result", err)
		}
		close(block.release)
		time.Sleep(time.Second)
	})
}

// TestConcurrentStopWaitsForTheFirst: a second Stop returns only when the
// first has finished, so a caller never closes the store under it.
func TestConcurrentStopWaitsForTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		started := make(chan struct{}, 1)
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			started <- struct{}{}
			time.Sleep(3 * time.Second)
			return nil
		})
		p := startProcessor(t, mem, reg, testConfig())
		<-started
		firstDone := make(chan struct{})
		go func() { _ = p.Stop(context.Background()); close(firstDone) }()
		synctest.Wait()
		if err := p.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if st := p.Stats(); st.Running != 0 || st.Succeeded != 1 {
			t.Fatalf("the second Stop returned while the first was still draining: %+v", st)
		}
		synctest.Wait()
		select {
		case <-firstDone:
		default:
			t.Fatal("the first Stop did not finish")
		}
	})
}

// TestResumingAQueueDoesNotSpin: the processor's view of paused queues is
// refreshed every few polls; jobs claimed after a resume, while that view
// still says paused, must run, not be released and claimed again in a loop.
// (Real time: the bug was a spin that never lets fake time advance.)
func TestResumingAQueueDoesNotSpin(t *testing.T) {
	mem := newMem()
	cs := newCountingStore(mem)
	if _, err := mem.UpdateQueue(context.Background(), "default", jobs.QueueUpdate{Paused: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	reg := processor.NewRegistry()
	reg.MustHandle("h", func(context.Context, *processor.Job) error { return nil })
	cfg := testConfig()
	cfg.PollInterval = 200 * time.Millisecond
	p := startProcessor(t, cs, reg, cfg)
	time.Sleep(50 * time.Millisecond) // the first refresh saw the pause
	for range 20 {
		enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
	}
	if _, err := mem.UpdateQueue(context.Background(), "default", jobs.QueueUpdate{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	p.Notify()
	deadline := time.Now().Add(10 * time.Second)
	for countIn(t, mem, jobs.TableArchive) < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop(t, p)
	if n := countIn(t, mem, jobs.TableArchive); n != 20 {
		t.Fatalf("%d of 20 archived after the resume", n)
	}
	if r := cs.count("release"); r > 0 {
		t.Fatalf("%d releases after the resume: jobs claimed after it were given back", r)
	}
	if c := cs.count("claim"); c > 200 {
		t.Fatalf("%d claims for 20 jobs: the fetch loop spun", c)
	}
}

// startReplyLost commits the first start of every job but reports an error,
// as when the connection drops after the commit.
type startReplyLost struct {
	jobs.Store
	mu   sync.Mutex
	seen map[int64]bool
}

func (s *startReplyLost) Start(ctx context.Context, r jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	st, err := s.Store.Start(ctx, r, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && !s.seen[r.ID] {
		s.seen[r.ID] = true
		return jobs.Started{}, errors.New("connection reset after commit")
	}
	return st, err
}

// TestAStartWhoseReplyIsLostIsRetriedNotLost: the start committed but the
// processor saw an error; the job must come back and run, not wait in
// Processing to be dead-lettered as a zombie.
func TestAStartWhoseReplyIsLostIsRetriedNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(context.Context, *processor.Job) error { return nil })
		p := startProcessor(t, &startReplyLost{Store: mem, seen: map[int64]bool{}}, reg, testConfig())
		waitFor(t, time.Minute, "the job archived", inTable(mem, id, jobs.TableArchive))
		stop(t, p)
	})
}

// gatedClaim holds every claim until its gate opens, whatever the claim's
// context says: a claim whose reply is still on the wire when Stop gives up
// waiting for it.
type gatedClaim struct {
	jobs.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedClaim) Claim(_ context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	return g.Store.Claim(context.Background(), p)
}

// TestAClaimThatOutlivesStopIsGivenBack: when Stop's context ends before
// the fetch loop returns, a claim that completes afterwards finds the
// buffer closed; its jobs go back to Pending at once instead of sitting
// Fetched until rescue phase 1.
func TestAClaimThatOutlivesStopIsGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		for range 3 {
			enqueue(t, mem, jobs.EnqueueParams{Type: "h"})
		}
		s := gatedClaim{Store: mem, entered: make(chan struct{}, 1), gate: make(chan struct{})}
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(context.Context, *processor.Job) error { return nil })
		p := startProcessor(t, s, reg, testConfig())
		<-s.entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = p.Stop(ctx)
		close(s.gate)
		synctest.Wait()
		fetched := jobs.StatusFetched
		if n, err := mem.CountJobs(context.Background(), jobs.TableHot, jobs.Filter{Status: &fetched}); err != nil || n != 0 {
			t.Fatalf("%d jobs left Fetched by a claim that returned after Stop (err %v)", n, err)
		}
		pending := jobs.StatusPending
		if n, _ := mem.CountJobs(context.Background(), jobs.TableHot, jobs.Filter{Status: &pending}); n != 3 {
			t.Fatalf("%d jobs Pending, want 3", n)
		}
	})
}
