package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// The scale benchmarks load a store with a large backlog, so that what
// they time is what a rescue round or an operator call costs the lock
// every enqueue, claim and heartbeat of the process waits on.

const (
	benchBacklog  = 1_000_000
	benchInFlight = 10_000
	fetchTimeout  = time.Minute
	zombieTimeout = time.Hour
)

// fill enqueues n Pending jobs to queue q, in batches.
func fill(tb testing.TB, s *memstore.Store, q string, n int) {
	tb.Helper()
	ctx := context.Background()
	batch := make([]jobs.EnqueueParams, 0, 1000)
	for i := 0; i < n; i += len(batch) {
		batch = batch[:0]
		for k := 0; k < min(1000, n-i); k++ {
			batch = append(batch, jobs.EnqueueParams{Queue: q, Type: fmt.Sprintf("type-%d", k%7), Payload: []byte(`{}`)})
		}
		if _, err := s.EnqueueMany(ctx, batch); err != nil {
			tb.Fatal(err)
		}
	}
}

// claim claims n jobs of queue q, starting them with timeout if it is not 0.
func claim(tb testing.TB, s *memstore.Store, q string, n int, timeout time.Duration) []jobs.LeaseRef {
	tb.Helper()
	ctx := context.Background()
	var refs []jobs.LeaseRef
	for len(refs) < n {
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{q}, Limit: min(1000, n-len(refs))})
		if err != nil || len(got) == 0 {
			tb.Fatalf("claim: %d jobs, %v", len(got), err)
		}
		for _, j := range got {
			ref := jobs.LeaseRef{ID: j.ID, Lease: j.Lease}
			if timeout > 0 {
				if _, err := s.Start(ctx, ref, jobs.StartParams{DefaultTimeout: timeout}); err != nil {
					tb.Fatal(err)
				}
			}
			refs = append(refs, ref)
		}
	}
	return refs
}

// round is one rescue round: the three phases, as the processor runs them.
func round(tb testing.TB, s *memstore.Store) int {
	ctx := context.Background()
	n := 0
	for _, phase := range []struct {
		run     func(context.Context, jobs.RescueParams) ([]jobs.Rescued, error)
		timeout time.Duration
	}{{s.RescueFetched, fetchTimeout}, {s.RescueZombies, zombieTimeout}, {s.RescueExpired, 0}} {
		moved, err := phase.run(ctx, jobs.RescueParams{Timeout: phase.timeout})
		if err != nil {
			tb.Fatal(err)
		}
		n += len(moved)
	}
	return n
}

// BenchmarkMemstoreRescue times one rescue round over 1,000,000 Pending
// jobs and 10,000 in flight: with nothing to rescue (half of them Fetched,
// half Processing), and with 1,000 jobs to rescue each round (500 claimed
// and never started, 500 past their deadline) beside 10,000 that beat.
func BenchmarkMemstoreRescue(b *testing.B) {
	setup := func(b *testing.B) (*memstore.Store, *memstore.ManualClock) {
		clock := memstore.NewManualClock(epoch)
		s := memstore.New(memstore.WithClock(clock.Now))
		fill(b, s, "bulk", benchBacklog)
		fill(b, s, "work", 200_000)
		return s, clock
	}
	b.Run("nothing-expired", func(b *testing.B) {
		s, _ := setup(b)
		claim(b, s, "work", benchInFlight/2, 0)
		claim(b, s, "work", benchInFlight/2, 24*time.Hour)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if n := round(b, s); n != 0 {
				b.Fatalf("rescued %d jobs, want none", n)
			}
		}
	})
	b.Run("1000-expired", func(b *testing.B) {
		s, clock := setup(b)
		ctx := context.Background()
		beating := claim(b, s, "work", benchInFlight, 24*time.Hour)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			fill(b, s, "work", 500) // as many as the round dead-letters
			claim(b, s, "work", 500, 0)
			claim(b, s, "work", 500, time.Second)
			clock.Advance(fetchTimeout + time.Second)
			if _, err := s.Heartbeat(ctx, beating); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n := round(b, s); n != 1000 {
				b.Fatalf("rescued %d jobs, want 1000", n)
			}
		}
	})
}

// BenchmarkMemstoreHeartbeat times a heartbeat of 100 jobs among 10,000
// Processing ones: the call a rescue index must not slow down.
func BenchmarkMemstoreHeartbeat(b *testing.B) {
	clock := memstore.NewManualClock(epoch)
	s := memstore.New(memstore.WithClock(clock.Now))
	fill(b, s, "work", benchInFlight)
	refs := claim(b, s, "work", benchInFlight, 24*time.Hour)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % (len(refs) / 100)
		if _, err := s.Heartbeat(ctx, refs[k*100:(k+1)*100]); err != nil {
			b.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
}

// operatorStore is a store of 1,000,000 jobs: 800,000 Pending in two
// queues, 100,000 archived and 100,000 dead-lettered.
func operatorStore(b *testing.B) *memstore.Store {
	clock := memstore.NewManualClock(epoch)
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	fill(b, s, "bulk", 400_000)
	fill(b, s, "other", 400_000)
	fill(b, s, "done", 200_000)
	for i := range 400 {
		refs := claim(b, s, "done", jobs.MaxWorkerBatch, time.Hour)
		if i%2 == 0 {
			_, err := s.CompleteMany(ctx, refs)
			if err != nil {
				b.Fatal(err)
			}
			continue
		}
		items := make([]jobs.DeadLetterItem, len(refs))
		for k, r := range refs {
			items[k] = jobs.DeadLetterItem{Ref: r, Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "boom"}}
		}
		if _, err := s.DeadLetterMany(ctx, items); err != nil {
			b.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	return s
}

// BenchmarkMemstoreOperator times each operator read and bulk action over
// 1,000,000 jobs: how long it holds the store's lock.
func BenchmarkMemstoreOperator(b *testing.B) {
	s := operatorStore(b)
	ctx := context.Background()
	pending := jobs.StatusPending
	failed := jobs.ReasonFatal
	now, _ := s.Now(ctx)
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"QueueStats", func() error { _, err := s.QueueStats(ctx); return err }},
		{"QueueDepths", func() error { _, err := s.QueueDepths(ctx, []string{"bulk", "other"}, 1000); return err }},
		{"ListJobs/hot", func() error { _, err := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot}); return err }},
		{"ListJobs/hot-queue-status", func() error {
			_, err := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Queue: "other", Status: &pending}})
			return err
		}},
		{"ListJobs/hot-queue-type-none", func() error { // the worst case: every job of the queue read
			_, err := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Queue: "other", Type: "none"}})
			return err
		}},
		{"ListJobs/dlq-reason-text", func() error {
			_, err := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableDLQ, Filter: jobs.Filter{Reason: &failed, Text: "boom"}})
			return err
		}},
		{"CountJobs/hot-queue", func() error {
			_, err := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{Queue: "bulk"})
			return err
		}},
		{"CountJobs/archive", func() error { _, err := s.CountJobs(ctx, jobs.TableArchive, jobs.Filter{}); return err }},
		{"FinishedCounts/day", func() error {
			_, err := s.FinishedCounts(ctx, jobs.FinishedCountsParams{From: now.Add(-24 * time.Hour), To: now.Add(time.Second), Bucket: time.Minute})
			return err
		}},
		{"TableQueues/hot", func() error { _, err := s.TableQueues(ctx, jobs.TableHot, ""); return err }},
		{"Resurrect/no-match", func() error {
			_, err := s.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{Type: "none"}})
			return err
		}},
		{"Purge/archive-no-match", func() error {
			_, err := s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableArchive, Filter: jobs.Filter{Type: "none"}})
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
