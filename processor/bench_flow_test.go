package processor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// BenchmarkClaimWithKeys: what concurrency keys (ADR 0031) cost the claim,
// through the processor and the in-memory store behind the latency store
// as a database (500 us per call plus 5 us per row, 4 calls at a time, as
// in BenchmarkStoreCallsPerJob), no-op jobs claimed 20 at a time by 64
// workers. One op is one job (of the other keys, in the hot-key runs).
//
//   - Keys=0: jobs without keys, the baseline.
//   - Keys=10000: each job has a concurrency key out of 10,000 distinct
//     ones, MaxWorkersPerKey 1; reports its jobs/s and calls/job as a
//     multiple of Keys=0 just before it (x-keys0). Aim: within 20%.
//   - NoHotKey: jobs of 100 keys (MaxWorkersPerKey 10, never reached: at
//     most 1,000 of them could run, the processor holds under 200), the
//     baseline of HotKey.
//   - HotKey: the same jobs behind a backlog of hotBacklog jobs of one hot
//     key whose own limit (KeyLimits) is 1, enqueued before them. Reports
//     the other keys' jobs/s, as a multiple of NoHotKey (x-nohot; aim:
//     within 20%), hot-jobs/s, and the calls per claimed job of either kind.
//
// calls/job is the processor's store calls (latencystore.WorkerOps) per
// job claimed, counted when the last job of the op count finished (before
// Stop gives the buffer back). calls/job is deterministic enough to
// compare one run; jobs/s is bound by the CPU here, not by the latency
// store, and varies by tens of percent between runs on a busy machine:
// compare the medians of several rounds, each running all four in order, e.g.
//
//	for i in 1 2 3 4 5; do go test -run xxx -bench BenchmarkClaimWithKeys -benchtime=50000x ./processor/; done
func BenchmarkClaimWithKeys(b *testing.B) {
	const (
		conc       = 64
		manyKeys   = 10000
		otherKeys  = 100
		hotBacklog = 10000
	)
	var keys0, noHot flowResult
	b.Run("Keys=0", func(b *testing.B) {
		keys0 = claimWithKeys(b, jobs.QueueUpdate{}, 0, func(int) string { return "" }, conc)
	})
	b.Run(fmt.Sprintf("Keys=%d", manyKeys), func(b *testing.B) {
		r := claimWithKeys(b, jobs.QueueUpdate{MaxWorkersPerKey: ptr(1)}, 0,
			func(i int) string { return fmt.Sprintf("k%d", i%manyKeys) }, conc)
		r.compare(b, keys0, "x-keys0")
	})
	others := func(i int) string { return fmt.Sprintf("o%d", i%otherKeys) }
	b.Run("NoHotKey", func(b *testing.B) {
		noHot = claimWithKeys(b, jobs.QueueUpdate{MaxWorkersPerKey: ptr(10)}, 0, others, conc)
	})
	b.Run("HotKey", func(b *testing.B) {
		r := claimWithKeys(b, jobs.QueueUpdate{MaxWorkersPerKey: ptr(10), KeyLimits: map[string]int{"hot": 1}},
			hotBacklog, others, conc)
		r.compare(b, noHot, "x-nohot")
	})
}

type flowResult struct{ rate, callsPerJob float64 }

// compare reports r's jobs/s and calls/job as multiples of base's, when
// base ran (a -bench pattern may leave it out).
func (r flowResult) compare(b *testing.B, base flowResult, unit string) {
	if base.rate > 0 {
		b.ReportMetric(r.rate/base.rate, unit)
		b.ReportMetric(r.callsPerJob/base.callsPerJob, "calls-"+unit)
	}
}

// claimWithKeys runs b.N "noop" jobs, job i of concurrency key key(i),
// behind hot jobs of key "hot" (type "hot"), with the queue's settings
// updated by u first, and reports them.
func claimWithKeys(b *testing.B, u jobs.QueueUpdate, hot int, key func(int) string, conc int) flowResult {
	ctx := context.Background()
	mem := newMem()
	if u.FlowControlled() {
		if _, err := mem.UpdateQueue(ctx, jobs.DefaultQueue, u); err != nil {
			b.Fatal(err)
		}
	}
	enqueue := func(n int, typ string, key func(int) string) {
		batch := make([]jobs.EnqueueParams, 0, 1000)
		for i := range n {
			batch = append(batch, jobs.EnqueueParams{Type: typ, Payload: []byte(`{"n":1}`), ConcurrencyKey: key(i)})
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := mem.EnqueueMany(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	enqueue(hot, "hot", func(int) string { return "hot" })
	enqueue(b.N, "noop", key)

	s := latencystore.New(mem, latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4})
	defer s.Close()
	var done, hotDone, hotRunning, hotMax atomic.Int64
	reg := processor.NewRegistry()
	reg.MustHandle("noop", func(context.Context, *processor.Job) error { done.Add(1); return nil })
	reg.MustHandle("hot", func(context.Context, *processor.Job) error {
		if n := hotRunning.Add(1); n > hotMax.Load() {
			hotMax.Store(n) // racy max, enough to see a limit of 1 broken
		}
		hotDone.Add(1)
		hotRunning.Add(-1)
		return nil
	})
	p, err := processor.New(s, reg, processor.Config{WorkerID: "bench", Concurrency: conc,
		PrefetchSize: max(100, 2*conc), BatchSize: 20, PollInterval: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for done.Load() < int64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	b.StopTimer()
	calls, claimed := s.Counts(latencystore.WorkerOps...), p.Stats().Claimed
	hotRun := hotDone.Load()
	_ = p.Stop(ctx)
	if n := hotMax.Load(); n > 1 {
		b.Fatalf("%d jobs of the hot key ran at once, over its limit of 1", n)
	}
	if hot > 0 && hotRun >= int64(hot) {
		b.Fatalf("the hot key's backlog of %d ran out (%d ran): it no longer sits in front", hot, hotRun)
	}
	r := flowResult{rate: float64(b.N) / b.Elapsed().Seconds(), callsPerJob: float64(calls) / float64(claimed)}
	b.ReportMetric(r.callsPerJob, "calls/job")
	b.ReportMetric(float64(s.Count(latencystore.OpClaim))/float64(claimed), "claims/job")
	b.ReportMetric(r.rate, "jobs/s")
	if hot > 0 {
		b.ReportMetric(float64(hotRun)/b.Elapsed().Seconds(), "hot-jobs/s")
	}
	return r
}
