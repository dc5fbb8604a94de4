package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

func fill(b *testing.B, s jobs.Store, n int) {
	b.Helper()
	batch := make([]jobs.EnqueueParams, 1000)
	for i := range batch {
		batch[i] = jobs.EnqueueParams{Type: "noop", Payload: []byte(`{"n":1}`)}
	}
	for n > 0 {
		k := min(n, len(batch))
		if _, err := s.EnqueueMany(context.Background(), batch[:k]); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// BenchmarkThroughput: jobs through the processor and the in-memory store
// with a no-op handler; one op is one job. Reports jobs/s and, with
// -benchmem, allocations per job (processor and store together).
func BenchmarkThroughput(b *testing.B) {
	for _, conc := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("Concurrency=%d", conc), func(b *testing.B) {
			s := newMem()
			fill(b, s, b.N)
			reg := processor.NewRegistry()
			done := make(chan struct{}, 1024)
			reg.MustHandle("noop", func(context.Context, *processor.Job) error { done <- struct{}{}; return nil })
			cfg := processor.Config{WorkerID: "bench", Concurrency: conc, PrefetchSize: max(100, 2*conc), BatchSize: 20,
				PollInterval: 10 * time.Millisecond}
			p, err := processor.New(s, reg, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			if err := p.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				<-done
			}
			for p.Stats().Succeeded < int64(b.N) {
				time.Sleep(100 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			_ = p.Stop(context.Background())
		})
	}
}

// BenchmarkStoreCallsPerJob: store calls the processor makes per job, and
// jobs per second, for no-op jobs claimed 20 at a time, on the in-memory
// store as is (Latency=0) and behind the latency store as a database
// (Latency=500us: 500 us per call plus 5 us per row, 4 calls at a time).
// At 500 us the number of calls decides the throughput. Mode=group hands
// the processor the store with its batch forms (group commit, ADR 0018);
// Mode=plain hands it latencystore.Single(), one call per transition, the
// baseline; a group run reports its jobs/s as a multiple of the plain run
// of the same concurrency just before it (x-plain). Output=on: each handler
// records an output (RecordOutput), which rides on its outcome's call, so
// calls/job stay those of the run without.
func BenchmarkStoreCallsPerJob(b *testing.B) {
	db := latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4}
	plain := map[int]float64{} // jobs/s of the last plain run, by concurrency
	for _, c := range []struct {
		name   string
		cfg    latencystore.Config
		single bool
		linger time.Duration
		output bool
	}{
		{"Latency=0/Mode=group", latencystore.Config{}, false, 0, false},
		{"Latency=500us/Mode=plain", db, true, 0, false},
		{"Latency=500us/Mode=group", db, false, 0, false},
		{"Latency=500us/Mode=group,Output=on", db, false, 0, true},
		{"Latency=500us/Mode=group,Linger=200us", db, false, 200 * time.Microsecond, false},
	} {
		for _, conc := range []int{8, 64} {
			b.Run(fmt.Sprintf("%s/Concurrency=%d", c.name, conc), func(b *testing.B) {
				mem := newMem()
				fill(b, mem, b.N)
				s := latencystore.New(mem, c.cfg)
				defer s.Close()
				var store jobs.Store = s
				if c.single {
					store = s.Single()
				}
				reg := processor.NewRegistry()
				reg.MustHandle("noop", func(ctx context.Context, j *processor.Job) error {
					if c.output {
						return processor.RecordOutput(ctx, benchOutput{ID: j.ID, Rows: 1280})
					}
					return nil
				})
				p, err := processor.New(store, reg, processor.Config{WorkerID: "bench", Concurrency: conc,
					PrefetchSize: max(100, 2*conc), BatchSize: 20, PollInterval: 10 * time.Millisecond, BatchLinger: c.linger})
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				if err := p.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				for p.Stats().Succeeded < int64(b.N) {
					time.Sleep(200 * time.Microsecond)
				}
				b.StopTimer()
				_ = p.Stop(context.Background())
				if c.output {
					if j, err := mem.GetJob(context.Background(), 1); err != nil || len(j.Output) == 0 {
						b.Fatalf("job 1 archived without its output: %v", err)
					}
				}
				rate := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(float64(s.Counts(latencystore.WorkerOps...))/float64(b.N), "calls/job")
				b.ReportMetric(float64(s.Count(latencystore.OpClaim))/float64(b.N), "claims/job")
				b.ReportMetric(rate, "jobs/s")
				switch {
				case c.single:
					plain[conc] = rate
				case c.cfg.Delay > 0 && plain[conc] > 0:
					b.ReportMetric(rate/plain[conc], "x-plain")
				}
			})
		}
	}
}

// benchOutput is what a benchmark's handler records.
type benchOutput struct {
	ID   int64 `json:"id"`
	Rows int   `json:"rows"`
}

// BenchmarkHeartbeat10kInFlight: 10,000 running jobs heartbeat on a schedule
// scaled down 100x (80-120ms instead of 8-12s; the ratio of calls to beats
// does not depend on the scale). One op is one mean beat interval. Aim:
// at most 0.01 store calls per beat. Progress=on: every handler reports a
// new progress twice per beat interval, carried on its beats, which must
// make no more calls than Progress=off.
func BenchmarkHeartbeat10kInFlight(b *testing.B) {
	for _, progress := range []bool{false, true} {
		b.Run(fmt.Sprintf("Progress=%s", map[bool]string{false: "off", true: "on"}[progress]), func(b *testing.B) {
			heartbeat10k(b, progress)
		})
	}
}

func heartbeat10k(b *testing.B, progress bool) {
	const inFlight = 10000
	mem := newMem()
	fill(b, mem, inFlight)
	release := make(chan struct{})
	reg := processor.NewRegistry()
	reg.MustHandle("noop", func(ctx context.Context, _ *processor.Job) error {
		for step := 0; ; step++ {
			var tick <-chan time.Time
			if progress {
				if err := processor.Progress(ctx, float64(step%100)/100, "step"); err != nil {
					return err
				}
				tick = time.After(50 * time.Millisecond)
			}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return nil
			case <-tick:
			}
		}
	})
	p, err := processor.New(mem, reg, processor.Config{WorkerID: "bench", Concurrency: inFlight, PrefetchSize: inFlight, BatchSize: 1000,
		PollInterval: 10 * time.Millisecond, HeartbeatIntervalMin: 100 * time.Millisecond, HeartbeatIntervalMax: 150 * time.Millisecond,
		ReleaseAfter: 30 * time.Second, ShutdownTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	for p.Stats().Running < inFlight {
		time.Sleep(10 * time.Millisecond)
	}
	before := p.Stats()
	b.ResetTimer()
	for range b.N {
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	after := p.Stats()
	if j, err := mem.GetJob(context.Background(), 1); progress && (err != nil || j.ProgressMessage != "step") {
		b.Fatalf("job 1's progress was not carried: %+v, %v", j, err)
	}
	close(release)
	_ = p.Stop(context.Background())
	calls, beats := after.HeartbeatCalls-before.HeartbeatCalls, after.HeartbeatBeats-before.HeartbeatBeats
	if beats == 0 {
		b.Fatal("no beats")
	}
	b.ReportMetric(float64(calls)/float64(beats), "calls/beat")
	b.ReportMetric(float64(beats)/float64(b.N)/inFlight, "beats/job/interval")
	// At the real 8-12s schedule the same ratio gives this many calls per second.
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds()/100, "calls/s@8-12s")
}
