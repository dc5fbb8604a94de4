package processor_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// A rate-limited queue (ADR 0033) with a standing backlog: each window
// takes its Count and no more, and the processor waits out the rest of a
// full window instead of claiming for nothing: the claim that fills the
// window says so, so a window costs no empty claim at all.
func TestARateLimitedQueueIsClaimedWindowByWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := latencystore.New(mem, latencystore.Config{})
		rate := jobs.RateLimit{Count: 10, Window: time.Second}
		if _, err := mem.UpdateQueue(t.Context(), jobs.DefaultQueue, jobs.QueueUpdate{RateLimit: &rate}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var starts []time.Time
		reg := processor.NewRegistry()
		reg.MustHandle("t", func(context.Context, *processor.Job) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return nil
		})
		for range 45 {
			enqueue(t, s, jobs.EnqueueParams{Type: "t"})
		}
		cfg := testConfig()
		cfg.PollJitter = processor.NoPollJitter
		p := startProcessor(t, s, reg, cfg)
		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(starts) != 45 {
			t.Fatalf("%d of 45 jobs ran in 4.5 s at 10 a second", len(starts))
		}
		// Windows open at their first claim: group the starts greedily.
		var counts []int
		for i := 0; i < len(starts); {
			end, n := starts[i].Add(rate.Window), 0
			for ; i < len(starts) && starts[i].Before(end); i++ {
				n++
			}
			counts = append(counts, n)
		}
		for w, n := range counts {
			if n > rate.Count || (w < len(counts)-1 && n < rate.Count) {
				t.Fatalf("jobs started per window %v: want %d in each full window, never more", counts, rate.Count)
			}
		}
		// Each window: claims of 4, 4 and 2, the last full and held (three
		// a window, and a few idle ones after the backlog: at most four a
		// window; a processor deaf to the holds claims five or more).
		if claims := s.Count(latencystore.OpClaim); claims > int64(4*len(counts)) {
			t.Errorf("%d claims over %d windows: the processor claimed into full windows", claims, len(counts))
		}
		t.Logf("jobs per window %v, %d claims, %d probes", counts, s.Count(latencystore.OpClaim), s.Count(latencystore.OpProbe))
		stop(t, p)
	})
}
