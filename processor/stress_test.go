package processor_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
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
// fail once and 1% panic once, while processors are stopped and started at
// random. At the end every job is in exactly one terminal table, no job ran
// on two workers at once, and every archived job ran exactly as many times
// as its recorded attempts.
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
			select {
			case <-time.After(time.Duration(j.ID%7) * 30 * time.Millisecond):
			case <-ctx.Done():
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
			c.Retry = processor.RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, BackoffMultiplier: 2, JitterMaxDelay: 50 * time.Millisecond}
			return c
		}
		startRescue(t, s, zombie.Config{ScanInterval: time.Second})
		var procs [3]*processor.Processor
		next := 0
		for i := range procs {
			procs[i] = startProcessor(t, s, reg, cfg(next))
			next++
		}
		restarts := 0
		for countIn(t, s, jobs.TableArchive)+countIn(t, s, jobs.TableDLQ) < total {
			time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
			i := rng.IntN(len(procs))
			if err := procs[i].Stop(context.Background()); err != nil {
				t.Fatalf("stop %s: %v", procs[i].WorkerID(), err)
			}
			procs[i] = startProcessor(t, s, reg, cfg(next))
			next++
			restarts++
			if restarts > 2000 {
				t.Fatal("the jobs never finished")
			}
		}
		for _, p := range procs {
			stop(t, p)
		}

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
			j := get(t, s, id)
			if j.Table == jobs.TableArchive && l.runs[id] != j.AttemptCount {
				t.Fatalf("job %d ran %d times but records %d attempts", id, l.runs[id], j.AttemptCount)
			}
		}
		t.Logf("5000 jobs: %d archived, %d dead-lettered, %d processor restarts", arc, dlq, restarts)
	})
}
