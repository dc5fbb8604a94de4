package processor_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// BenchmarkRateLimit: a queue limited to 100 a second (ADR 0033) with a
// standing backlog, through the processor and the in-memory store behind
// the latency store as a database (500 us per call plus 5 us per row, 4
// calls at a time), 64 workers claiming 20 at a time. One op is one
// window, so run it as
//
//	go test -run xxx -bench BenchmarkRateLimit -benchtime=30x ./processor/
//
// for 30 windows (30 s). It reports, over the full windows (the jobs
// claimed, by the store's claim time, grouped into windows as the store
// opens them: from the first claim after the last window closed), the
// most and the fewest jobs one
// took (aim: at most 100, at least 95), and the claims that returned no
// job per window (aim: at most 1). It fails outside those aims.
func BenchmarkRateLimit(b *testing.B) {
	const perWindow, window = 100, time.Second
	ctx := context.Background()
	mem := newMem()
	rate := jobs.RateLimit{Count: perWindow, Window: window}
	if _, err := mem.UpdateQueue(ctx, jobs.DefaultQueue, jobs.QueueUpdate{RateLimit: &rate}); err != nil {
		b.Fatal(err)
	}
	backlog := perWindow * (b.N + 2) // more than the windows can take
	batch := make([]jobs.EnqueueParams, 0, 1000)
	for i := range backlog {
		batch = append(batch, jobs.EnqueueParams{Type: "call", Payload: []byte(`{"n":1}`)})
		if len(batch) == cap(batch) || i == backlog-1 {
			if _, err := mem.EnqueueMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	s := &emptyClaims{Store: latencystore.New(mem, latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4})}
	defer s.Close()
	reg := processor.NewRegistry()
	reg.MustHandle("call", func(context.Context, *processor.Job) error { return nil })
	p, err := processor.New(s, reg, processor.Config{WorkerID: "bench", Concurrency: 64, PrefetchSize: 128, BatchSize: 20,
		PollInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// b.N full windows and the start of the next, which closes the last.
	deadline := time.Now().Add(time.Duration(b.N+1)*window + window/2)
	time.Sleep(time.Until(deadline))
	b.StopTimer()
	_ = p.Stop(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	starts := s.claimedAt
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	var counts []int
	for i := 0; i < len(starts); {
		end, n := starts[i].Add(window), 0
		for ; i < len(starts) && starts[i].Before(end); i++ {
			n++
		}
		counts = append(counts, n)
	}
	if len(counts) < b.N+1 {
		b.Fatalf("%d windows in %d s: %v", len(counts), b.N+1, counts)
	}
	full := counts[:b.N] // the last may be cut short by Stop
	most, fewest := slices.Max(full), slices.Min(full)
	empty := float64(s.empty.Load()) / float64(len(counts))
	b.ReportMetric(float64(most), "max/window")
	b.ReportMetric(float64(fewest), "min/window")
	b.ReportMetric(empty, "empty-claims/window")
	b.ReportMetric(float64(s.Count(latencystore.OpClaim))/float64(len(counts)), "claims/window")
	if most > perWindow || fewest < perWindow*95/100 || empty > 1 {
		b.Fatalf("jobs per window %v, %.2f empty claims a window: want at most %d and at least %d in each, at most 1 empty claim",
			full, empty, perWindow, perWindow*95/100)
	}
}

// emptyClaims counts the claims that returned no job, and records when
// the store claimed each job (its LastUpdatedAt, the store's clock).
type emptyClaims struct {
	*latencystore.Store
	empty     atomic.Int64
	mu        sync.Mutex
	claimedAt []time.Time
}

func (s *emptyClaims) record(got []*jobs.Job) {
	if len(got) == 0 {
		s.empty.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range got {
		s.claimedAt = append(s.claimedAt, j.LastUpdatedAt)
	}
}

func (s *emptyClaims) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	got, err := s.Store.Claim(ctx, p)
	if err == nil {
		s.record(got)
	}
	return got, err
}

func (s *emptyClaims) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	r, err := s.Store.ClaimHeld(ctx, p)
	if err == nil {
		s.record(r.Jobs)
	}
	return r, err
}
