package processor_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// BenchmarkWeightedQueues: a processor serving two queues of weight 1 and
// 9 (ADR 0032), each with a standing backlog, through the latency store as
// a database (500 us per call plus 5 us per row, 4 calls at a time, as in
// BenchmarkClaimWithKeys), no-op jobs claimed 20 at a time by 64 workers,
// two claims in flight. One op is one run of weightedClaims claimed jobs;
// light-% is the weight-1 queue's share of them (of the run farthest from
// 10%), which must be within 2 percentage points of 10% (the benchmark
// fails if not).
// Each claim is whole from the queue asked first, so the share of jobs is
// the share of claims the picker gave the light queue.
//
//	go test -run xxx -bench BenchmarkWeightedQueues -benchtime=3x ./processor/
func BenchmarkWeightedQueues(b *testing.B) {
	b.Run("1to9", func(b *testing.B) {
		share := 10.0
		for range b.N {
			if got := weightedShare(b, 1, 9); math.Abs(got-10) > math.Abs(share-10) {
				share = got // the run farthest from 10%
			}
		}
		b.ReportMetric(share, "light-%")
		if share < 8 || share > 12 {
			b.Fatalf("the weight-1 queue had %.2f%% of %d claimed jobs, want 10%% +- 2", share, weightedClaims)
		}
	})
}

// weightedClaims is how many claimed jobs a run judges.
const weightedClaims = 10000

// weightedShare runs one processor over queues "light" and "heavy" of the
// given weights until it claimed weightedClaims jobs, and returns the light
// queue's share of those, in percent.
func weightedShare(b *testing.B, light, heavy int) float64 {
	b.StopTimer()
	mem := newMem()
	weigh(b, mem, "light", light)
	weigh(b, mem, "heavy", heavy)
	backlog(b, mem, "light", weightedClaims) // either backlog outlasts the run
	backlog(b, mem, "heavy", weightedClaims+1000)
	s := latencystore.New(mem, latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4})
	defer s.Close()
	log := &claimLog{}
	p, err := processor.New(s, noopRegistry(), processor.Config{WorkerID: "bench", Queues: []string{"light", "heavy"},
		Concurrency: 64, PrefetchSize: 128, BatchSize: 20, PollInterval: 10 * time.Millisecond, Observer: log})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.StartTimer()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for log.until("", weightedClaims) == 0 {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	_ = p.Stop(ctx)
	n := log.until("", weightedClaims)
	_, claimed := log.tally(0, n)
	// The last claim may run past weightedClaims: count only what fits.
	// The jobs past the cut are the claim's last, its second queue's
	// before its first's (the store fills from the first queue first).
	over := claimed["light"] + claimed["heavy"] - weightedClaims
	if c := log.claims[n-1]; c.queue == "light" {
		claimed["light"] -= max(0, over-c.jobs["heavy"])
	} else {
		claimed["light"] -= min(over, c.jobs["light"])
	}
	return 100 * float64(claimed["light"]) / weightedClaims
}
