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
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// chainStore is the in-memory store with its batch forms, and a hook that
// sees every Transition before it is applied: it may act on the store
// first (as rescue or an operator would), apply the call, or fail it, with
// or without applying it (a reply lost).
type chainStore struct {
	*memstore.Store
	mu      sync.Mutex
	calls   []jobs.Transitions
	before  func(t jobs.Transitions) (apply bool, err error)
	chained atomic.Int64 // calls that carried a start and an outcome
}

func (c *chainStore) Transition(ctx context.Context, t jobs.Transitions) (jobs.TransitionResults, error) {
	if chained(t) {
		c.chained.Add(1)
	}
	c.mu.Lock()
	c.calls = append(c.calls, t)
	before := c.before
	c.mu.Unlock()
	if before != nil {
		apply, err := before(t)
		if err != nil {
			if apply {
				_, _ = c.Store.Transition(ctx, t)
			}
			return jobs.TransitionResults{}, err
		}
	}
	return c.Store.Transition(ctx, t)
}

func (c *chainStore) setBefore(fn func(t jobs.Transitions) (bool, error)) {
	c.mu.Lock()
	c.before = fn
	c.mu.Unlock()
}

// runOnce registers handler "h" that records each job's runs and returns
// nil after d.
func runOnce(reg *processor.Registry, d time.Duration) (runs func(id int64) int) {
	var mu sync.Mutex
	n := map[int64]int{}
	reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
		mu.Lock()
		n[j.ID]++
		mu.Unlock()
		time.Sleep(d)
		return nil
	})
	return func(id int64) int {
		mu.Lock()
		defer mu.Unlock()
		return n[id]
	}
}

var errReplyLost = errors.New("connection reset: the reply was lost")

// chained reports whether t carries a start and an outcome.
func chained(t jobs.Transitions) bool {
	return len(t.Starts) > 0 && len(t.Completes)+len(t.Retries)+len(t.DeadLetters) > 0
}

// oneWorker starts a processor of one worker over a chainStore holding n
// jobs of type "h" whose handler returns nil at once, with hook as the
// store's before: the store, the jobs' IDs, the processor and each job's
// runs.
func oneWorker(t *testing.T, n int, hook func(s *chainStore, t jobs.Transitions) (bool, error), cfg processor.Config) (
	*chainStore, []int64, *processor.Processor, func(int64) int) {
	t.Helper()
	s := &chainStore{Store: newMem()}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = enqueue(t, s, jobs.EnqueueParams{Type: "h"})
	}
	if hook != nil {
		s.setBefore(func(tr jobs.Transitions) (bool, error) { return hook(s, tr) })
	}
	reg := processor.NewRegistry()
	runs := runOnce(reg, time.Millisecond)
	cfg.Concurrency = 1
	return s, ids, startProcessor(t, s, reg, cfg), runs
}

// outageAfterChain fails every transition for three minutes from the
// first that carries a start and an outcome; applyFirst says whether that
// one reaches the store (its reply lost) or not. It reports whether it
// has begun.
func outageAfterChain(applyFirst bool) (hook func(*chainStore, jobs.Transitions) (bool, error), begun func() bool) {
	var mu sync.Mutex
	var until time.Time
	hook = func(_ *chainStore, t jobs.Transitions) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if until.IsZero() && chained(t) {
			until = time.Now().Add(3 * time.Minute)
			return applyFirst, errReplyLost
		}
		if time.Now().Before(until) {
			return false, errReplyLost
		}
		return true, nil
	}
	return hook, func() bool { mu.Lock(); defer mu.Unlock(); return !until.IsZero() }
}

// TestABusyWorkerStartsItsNextJobWithItsOutcome: one worker with a full
// buffer writes each outcome in the same call as the start of its next
// job, so it pays one store call per job, not two.
func TestABusyWorkerStartsItsNextJobWithItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		s := &chainStore{Store: newMem()}
		enqueueN(t, s, n)
		reg := processor.NewRegistry()
		runOnce(reg, time.Millisecond)
		cfg := testConfig()
		cfg.Concurrency, cfg.PrefetchSize, cfg.BatchSize = 1, n, n
		p := startProcessor(t, s, reg, cfg)
		waitFor(t, time.Minute, "all archived", func() bool { return countIn(t, s, jobs.TableArchive) == n })
		stop(t, p)
		// The first start goes alone (Start), the last outcome too
		// (Complete); every other call carries an outcome and a start.
		if got := s.chained.Load(); got != n-1 {
			t.Fatalf("%d transitions carried an outcome and the next start, want %d", got, n-1)
		}
	})
}

// TestAChainedStartWhoseReplyIsLostKeepsBeating: the call that completes
// one job and starts the next commits, but its reply is lost, and the
// store then refuses transitions for three minutes while heartbeats go
// through. The next job is Processing all that time with its worker not
// knowing: it must be beaten (rescue's zombie timeout is one minute), its
// start reported again by the retry, and it must run once, on one attempt.
func TestAChainedStartWhoseReplyIsLostKeepsBeating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook, begun := outageAfterChain(true)
		s, ids, p, runs := oneWorker(t, 2, hook, testConfig())
		startRescue(t, s, zombie.Config{ScanInterval: time.Second, FetchedJobTimeout: 10 * time.Minute, ProcessingZombieTimeout: time.Minute})
		waitFor(t, 5*time.Minute, "both archived", func() bool { return countIn(t, s, jobs.TableArchive) == 2 })
		stop(t, p)
		if !begun() {
			t.Fatal("no transition carried a complete and a start: nothing was tested")
		}
		for _, id := range ids {
			if j := get(t, s, id); j.AttemptCount != 1 || runs(id) != 1 {
				t.Fatalf("job %d: %d attempts recorded, %d runs; want one of each", id, j.AttemptCount, runs(id))
			}
		}
	})
}

// TestAChainedStartThatNeverRanKeepsItsJob: the call that would complete
// one job and start the next fails before it reaches the store, and the
// store refuses transitions for three minutes. The next job's beats find
// it still Fetched (the heartbeat says lost): that is no loss while its
// start is unanswered, and once the store is back the job starts and runs.
func TestAChainedStartThatNeverRanKeepsItsJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook, begun := outageAfterChain(false)
		s, ids, p, runs := oneWorker(t, 2, hook, testConfig())
		waitFor(t, 5*time.Minute, "both archived", func() bool { return countIn(t, s, jobs.TableArchive) == 2 })
		stop(t, p)
		if st := p.Stats(); !begun() || st.HeartbeatBeats == 0 || runs(ids[0]) != 1 || runs(ids[1]) != 1 {
			t.Fatalf("stats %+v, runs %d and %d; want the second job beaten while Fetched, and each job run once", st, runs(ids[0]), runs(ids[1]))
		}
	})
}

// TestAChainedStartSurvivesItsOutcomesLostLease: the outcome a start rides
// with is refused (rescue took that job meanwhile); the start stands, and
// the next job runs.
func TestAChainedStartSurvivesItsOutcomesLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var once sync.Once
		s, ids, p, runs := oneWorker(t, 2, func(s *chainStore, t jobs.Transitions) (bool, error) {
			if chained(t) {
				once.Do(func() {
					// what rescue phase 3 would do to a job past its deadline
					_ = s.Store.DeadLetter(context.Background(), t.Completes[0], jobs.DeadLetterParams{Reason: jobs.ReasonTimeout, Details: "taken"})
				})
			}
			return true, nil
		}, testConfig())
		waitFor(t, time.Minute, "the second job archived", inTable(s, ids[1], jobs.TableArchive))
		stop(t, p)
		if j := get(t, s, ids[0]); j.Table != jobs.TableDLQ {
			t.Fatalf("the first job is in %s, want the DLQ it was taken to", j.Table)
		}
		if st := p.Stats(); st.LeaseLost != 1 || st.Succeeded != 1 || runs(ids[1]) != 1 {
			t.Fatalf("stats %+v, the second job ran %d times; want the first's lease lost and the second run once", st, runs(ids[1]))
		}
	})
}

// TestAChainedStartOfAJobTakenMeanwhileIsRefused: the next job is
// cancelled while its start is on the way; the start is refused, the
// outcome it rode with stands, and the worker goes on with the job after.
func TestAChainedStartOfAJobTakenMeanwhileIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var once sync.Once
		s, ids, p, runs := oneWorker(t, 3, func(s *chainStore, t jobs.Transitions) (bool, error) {
			if chained(t) {
				once.Do(func() {
					_, _ = s.Store.Cancel(context.Background(), jobs.CancelParams{IDs: []int64{t.Starts[0].ID}, By: "test"})
				})
			}
			return true, nil
		}, testConfig())
		waitFor(t, time.Minute, "two archived", func() bool { return countIn(t, s, jobs.TableArchive) == 2 })
		stop(t, p)
		if j := get(t, s, ids[1]); j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonCancelled || runs(ids[1]) != 0 {
			t.Fatalf("the second job: %s, %s, ran %d times; want cancelled before it ran", j.Table, j.FailureReason, runs(ids[1]))
		}
		if runs(ids[0]) != 1 || runs(ids[2]) != 1 {
			t.Fatalf("the first job ran %d times, the third %d; want once each", runs(ids[0]), runs(ids[2]))
		}
	})
}

// TestStopGivesBackAChainedStartItNeverHeardOf: the call carrying a's
// complete and b's start commits with its reply lost, and transitions fail
// from then on. At Stop, when the writes are abandoned, b (Processing, no
// user code run) is handed back to Pending with no delay instead of being
// left for rescue to dead-letter as a zombie.
func TestStopGivesBackAChainedStartItNeverHeardOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var broken atomic.Bool
		cfg := testConfig()
		cfg.ShutdownTimeout = time.Second
		s, ids, p, runs := oneWorker(t, 2, func(_ *chainStore, t jobs.Transitions) (bool, error) {
			if broken.Load() {
				return false, errReplyLost
			}
			if chained(t) {
				broken.Store(true)
				return true, errReplyLost
			}
			return true, nil
		}, cfg)
		waitFor(t, time.Minute, "the chained call sent", broken.Load)
		time.Sleep(10 * time.Second)
		_ = p.Stop(context.Background())
		synctest.Wait()
		j := get(t, s, ids[1])
		if j.Table != jobs.TableHot || j.Status != jobs.StatusPending || runs(ids[1]) != 0 {
			t.Fatalf("the second job: %s status %d, ran %d times; want Pending again, never run", j.Table, j.Status, runs(ids[1]))
		}
	})
}

// claimGauge holds each claim for a while and records how many were out
// at once, and the most jobs buffered or on their way at any claim.
type claimGauge struct {
	jobs.Store
	hold     time.Duration
	inFlight atomic.Int64
	peak     atomic.Int64
}

func (g *claimGauge) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	n := g.inFlight.Add(1)
	for {
		old := g.peak.Load()
		if n <= old || g.peak.CompareAndSwap(old, n) {
			break
		}
	}
	time.Sleep(g.hold)
	defer g.inFlight.Add(-1)
	return g.Store.Claim(ctx, p)
}

// TestClaimsOverlapUnderLoad: while claims come back full, the next claim
// is out while the last batch is still being started, as long as the
// buffer has room for both; the buffer never holds more than PrefetchSize.
// With little work, one claim at a time.
func TestClaimsOverlapUnderLoad(t *testing.T) {
	for _, c := range []struct {
		name     string
		jobs     int
		wantPeak int64
	}{
		{"FullClaims", 400, 2},
		{"OnePartialClaim", 10, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newMem()
				enqueueN(t, mem, c.jobs)
				g := &claimGauge{Store: mem, hold: 50 * time.Millisecond}
				reg := processor.NewRegistry()
				runOnce(reg, 5*time.Millisecond)
				cfg := testConfig()
				cfg.Concurrency, cfg.PrefetchSize, cfg.BatchSize = 8, 60, 20
				p := startProcessor(t, g, reg, cfg)
				for p.Stats().Succeeded < int64(c.jobs) {
					if st := p.Stats(); st.Buffered > int64(cfg.PrefetchSize) {
						t.Fatalf("%d jobs buffered, PrefetchSize %d", st.Buffered, cfg.PrefetchSize)
					}
					time.Sleep(time.Millisecond)
				}
				stop(t, p)
				if got := g.peak.Load(); got != c.wantPeak {
					t.Fatalf("at most %d claims out at once, want %d", got, c.wantPeak)
				}
			})
		})
	}
}

// lateBeats answers each heartbeat call as the store saw it when the call
// arrived, but only after holding the answer for a while: an answer that
// overtakes nothing the worker did since.
type lateBeats struct {
	*chainStore
	hold time.Duration
}

func (l lateBeats) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	r, err := l.chainStore.Heartbeat(ctx, refs)
	time.Sleep(l.hold)
	return r, err
}

// TestABeatSentBeforeItsStartWasConfirmedIsNoLoss: a chained call is slow
// (15 s); meanwhile the next job's beat goes out while it is still Fetched,
// and the store's "lost" comes back after the start was confirmed. That
// answer is about the Fetched job, not a lost lease: the handler must not
// be cancelled, and the job must be archived.
func TestABeatSentBeforeItsStartWasConfirmedIsNoLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &chainStore{Store: newMem()}
		enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		b := enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		var slowed atomic.Bool
		s.setBefore(func(t jobs.Transitions) (bool, error) {
			if chained(t) && !slowed.Swap(true) {
				time.Sleep(15 * time.Second)
			}
			return true, nil
		})
		reg := processor.NewRegistry()
		runs := runOnce(reg, 30*time.Second) // still running when the late answer comes
		cfg := testConfig()
		cfg.Concurrency = 1
		p := startProcessor(t, lateBeats{chainStore: s, hold: 10 * time.Second}, reg, cfg)
		waitFor(t, 5*time.Minute, "the second job archived", inTable(s, b, jobs.TableArchive))
		stop(t, p)
		if st := p.Stats(); st.LeaseLost != 0 || runs(b) != 1 || !slowed.Load() {
			t.Fatalf("stats %+v, the second job ran %d times; want no lease lost and one run", st, runs(b))
		}
	})
}
