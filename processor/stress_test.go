package processor_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// ledger records every handler run, and every moment two runs of one job
// overlapped.
type ledger struct {
	mu       sync.Mutex
	running  map[int64]int
	runs     map[int64]int
	overlaps []int64
	// interrupted counts handlers that returned because of their context.
	interrupted atomic.Int64
}

func (l *ledger) begin(id int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[id]++
	if l.running[id] > 1 {
		l.overlaps = append(l.overlaps, id)
	}
	l.runs[id]++
	return l.runs[id]
}

func (l *ledger) end(id int64) {
	l.mu.Lock()
	l.running[id]--
	l.mu.Unlock()
}

// TestStress: three processors of eight workers run 5,000 jobs, 5% of which
// fail once and 1% panic once, while processors are replaced at random:
// mostly by a graceful Stop, sometimes by cutting their store first (a
// process that lost its database). Some handlers outlast ShutdownTimeout
// and are interrupted; a few ignore cancellation and are abandoned. At the
// end every job is in exactly one terminal table, no job ran on two workers
// at once, every job ran exactly as many times as its recorded attempts,
// and the only dead letters are zombies that rescue took from a lost or
// abandoned worker.
func TestStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test skipped in -short mode")
	}
	synctest.Test(t, func(t *testing.T) {
		const total = 5000
		s := newMem()
		rng := rand.New(rand.NewPCG(7, 11))
		l := &ledger{running: map[int64]int{}, runs: map[int64]int{}}
		reg := processor.NewRegistry()
		reg.MustHandle("work", func(ctx context.Context, j *processor.Job) error {
			l.begin(j.ID)
			defer l.end(j.ID)
			took := time.Duration(j.ID%7) * 30 * time.Millisecond
			switch {
			case j.ID%500 == 7 && j.Attempt == 1:
				// Hung: ignores its context past both shutdown graces.
				time.Sleep(2 * time.Second)
				return nil
			case j.ID%50 == 3:
				took = time.Second // longer than ShutdownTimeout
			}
			select {
			case <-time.After(took):
			case <-ctx.Done():
				l.interrupted.Add(1)
				return ctx.Err()
			}
			if j.Attempt == 1 && j.ID%20 == 0 {
				return errors.New("fails once")
			}
			if j.Attempt == 1 && j.ID%100 == 1 {
				panic("panics once")
			}
			return nil
		})
		ps := make([]jobs.EnqueueParams, total)
		for i := range ps {
			ps[i] = jobs.EnqueueParams{Type: "work", MaxAttempts: 10}
		}
		res, err := s.EnqueueMany(context.Background(), ps)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, total)
		for i, r := range res {
			ids[i] = r.ID
		}

		cfg := func(n int) processor.Config {
			c := testConfig()
			c.WorkerID = fmt.Sprintf("proc-%d", n)
			c.Concurrency, c.PrefetchSize, c.BatchSize = 8, 40, 20
			c.ShutdownTimeout = 200 * time.Millisecond
			c.ReleaseAfter = 10 * time.Second
			c.Retry = processor.RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, BackoffMultiplier: 2, JitterMaxDelay: 50 * time.Millisecond}
			return c
		}
		startRescue(t, s, zombie.Config{ScanInterval: time.Second, FetchedJobTimeout: 20 * time.Second, ProcessingZombieTimeout: 40 * time.Second})
		// Each processor reaches the store through its own switch, so one
		// can lose its database while the others keep theirs.
		type proc struct {
			p    *processor.Processor
			conn *faultstore.Store
		}
		var procs [3]proc
		next := 0
		launch := func() proc {
			conn := faultstore.New(s)
			p := startProcessor(t, conn, reg, cfg(next))
			next++
			return proc{p, conn}
		}
		for i := range procs {
			procs[i] = launch()
		}
		restarts, cuts := 0, 0
		for countIn(t, s, jobs.TableArchive)+countIn(t, s, jobs.TableDLQ) < total {
			time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
			i := rng.IntN(len(procs))
			if rng.IntN(10) == 0 {
				procs[i].conn.Cut()
				cuts++
			}
			// Abandoning a hung handler is the expected way out of Stop.
			if err := procs[i].p.Stop(context.Background()); err != nil && !errors.Is(err, processor.ErrHandlersAbandoned) {
				t.Fatalf("stop %s: %v", procs[i].p.WorkerID(), err)
			}
			procs[i] = launch()
			restarts++
			if restarts > 2000 {
				t.Fatal("the jobs never finished")
			}
		}
		for _, p := range procs {
			stop(t, p.p)
		}
		// Abandoned handlers finish in their own time; let them, so the
		// ledger is complete.
		time.Sleep(3 * time.Second)
		synctest.Wait()

		if hot := countIn(t, s, jobs.TableHot); hot != 0 {
			t.Fatalf("%d jobs still hot", hot)
		}
		arc, err := s.CountJobs(context.Background(), jobs.TableArchive, jobs.Filter{IDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		dlq, err := s.CountJobs(context.Background(), jobs.TableDLQ, jobs.Filter{IDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		if arc+dlq != total {
			t.Fatalf("archive %d + dlq %d != %d", arc, dlq, total)
		}
		if len(l.overlaps) > 0 {
			t.Fatalf("jobs ran on two workers at once: %v", l.overlaps)
		}
		for _, id := range ids {
			in := 0
			for _, table := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
				n, err := s.CountJobs(context.Background(), table, jobs.Filter{IDs: []int64{id}})
				if err != nil {
					t.Fatal(err)
				}
				in += int(n)
			}
			if in != 1 {
				t.Fatalf("job %d is in %d tables, want exactly 1", id, in)
			}
			j := get(t, s, id)
			l.mu.Lock()
			runs := l.runs[id]
			l.mu.Unlock()
			if runs != j.AttemptCount {
				t.Fatalf("job %d (%s) ran %d times but records %d attempts", id, j.Table, runs, j.AttemptCount)
			}
			if j.Table == jobs.TableDLQ && j.FailureReason != jobs.ReasonZombie {
				t.Fatalf("job %d dead-lettered as %s, want only zombies: %s", id, j.FailureReason, j.ErrorDetails)
			}
		}
		if cuts == 0 || dlq == 0 {
			t.Fatalf("%d store cuts and %d dead letters: the crash and rescue paths never ran", cuts, dlq)
		}
		st := l.interrupted.Load()
		if st == 0 {
			t.Fatal("no handler was interrupted by a shutdown")
		}
		t.Logf("5000 jobs: %d archived, %d dead-lettered, %d processor restarts (%d with the store cut), %d handlers interrupted",
			arc, dlq, restarts, cuts, st)
	})
}
