package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acaloiaro/neoq"
	"github.com/acaloiaro/neoq/backends/memory"
	"github.com/acaloiaro/neoq/handler"
	neoqjobs "github.com/acaloiaro/neoq/jobs"
	"github.com/acaloiaro/neoq/logging"

	"github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// noop is the job both engines run: one number, so that every job is
// distinct (neoq drops a job whose payload repeats one it holds).
type noop struct {
	N int `json:"n"`
}

func (noop) Kind() string { return "noop" }

// engine is one job library, started with conc workers that run a no-op
// handler calling done once per job.
type engine struct {
	name  string
	start func(b *testing.B, conc int, done func()) (enqueue func(ctx context.Context, n int) error, stop func())
}

var engines = []engine{
	{"neoq", startNeoq},
	{"chokaq", startChokaq},
}

func startNeoq(b *testing.B, conc int, done func()) (func(context.Context, int) error, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	nq, err := neoq.New(ctx, neoq.WithBackend(memory.Backend), neoq.WithLogLevel(logging.LogLevelError))
	if err != nil {
		b.Fatal(err)
	}
	h := handler.New("noop", func(context.Context) error { done(); return nil }, handler.Concurrency(conc))
	if err := nq.Start(ctx, h); err != nil {
		b.Fatal(err)
	}
	enqueue := func(ctx context.Context, n int) error {
		_, err := nq.Enqueue(ctx, &neoqjobs.Job{Queue: "noop", Payload: map[string]any{"n": n}})
		return err
	}
	return enqueue, func() { nq.Shutdown(ctx); cancel() }
}

func startChokaq(b *testing.B, conc int, done func()) (func(context.Context, int) error, func()) {
	reg := processor.NewRegistry()
	reg.MustHandle("noop", func(context.Context, *processor.Job) error { done(); return nil })
	c, err := chokaq.New(context.Background(), chokaq.Config{
		Store: memstore.New(),
		Processor: processor.Config{WorkerID: "bench", Concurrency: conc, PrefetchSize: max(100, 2*conc), BatchSize: 20,
			PollInterval: 10 * time.Millisecond},
		DisableRetention: true,
	}, reg)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	enqueue := func(ctx context.Context, n int) error {
		_, err := c.Enqueue(ctx, noop{N: n}, nil)
		return err
	}
	return enqueue, func() { _ = c.Stop(context.Background()) }
}

// BenchmarkNoopJobs: one op is one job, enqueued and run (see the package
// doc).
func BenchmarkNoopJobs(b *testing.B) {
	neoqRate := map[int]float64{}
	for _, conc := range []int{1, 8, 64} {
		for _, e := range engines {
			b.Run(fmt.Sprintf("Concurrency=%d/Engine=%s", conc, e.name), func(b *testing.B) {
				var left atomic.Int64
				left.Store(int64(b.N))
				all := make(chan struct{})
				enqueue, stop := e.start(b, conc, func() {
					if left.Add(-1) == 0 {
						close(all)
					}
				})
				defer stop()
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := enqueue(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
				<-all
				b.StopTimer()
				rate := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(rate, "jobs/s")
				if e.name == "neoq" {
					neoqRate[conc] = rate
				} else if neoqRate[conc] > 0 {
					b.ReportMetric(rate/neoqRate[conc], "x-neoq")
				}
			})
		}
	}
}
