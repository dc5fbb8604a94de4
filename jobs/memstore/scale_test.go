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
