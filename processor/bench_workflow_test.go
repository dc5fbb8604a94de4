package processor_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// BenchmarkWorkflowFanOut: a workflow of one root, 10,000 children of it
// and one fan-in task after all of them (ADR 0034), through the processor
// and the in-memory store behind the latency store as a database (500 us
// per call plus 5 us per row, 4 calls at a time), 64 workers. One op is
// one whole workflow. It reports:
//
//   - release-ms: from the root's handler returning to the first child's
//     start (the release itself is part of the root's move; what is left
//     is the complete's call and the next claim);
//
//   - fanin-ms: from the last child's handler returning to the fan-in's
//     start, aim: at most one poll interval (PollInterval here 100ms);
//
//   - calls/task: the processor's store calls per task, beside
//     calls/job of BenchmarkWorkflowFanOut/Independent, the same 10,002
//     jobs without dependencies (aim: within 20%).
//
//     go test -run xxx -bench BenchmarkWorkflowFanOut -benchtime=3x ./processor/
func BenchmarkWorkflowFanOut(b *testing.B) {
	const children = 10000
	var independent float64
	b.Run("Independent", func(b *testing.B) {
		independent = fanOut(b, children, false).callsPerTask
	})
	b.Run(fmt.Sprintf("Children=%d", children), func(b *testing.B) {
		r := fanOut(b, children, true)
		b.ReportMetric(r.releaseMs, "release-ms")
		b.ReportMetric(r.faninMs, "fanin-ms")
		if independent > 0 {
			b.ReportMetric(r.callsPerTask/independent, "x-independent")
		}
	})
}

type fanOutResult struct{ releaseMs, faninMs, callsPerTask float64 }

func fanOut(b *testing.B, children int, dependent bool) fanOutResult {
	ctx := context.Background()
	var res fanOutResult
	for range b.N {
		b.StopTimer()
		mem := newMem()
		tasks := []jobs.WorkflowTask{{Name: "root", Job: jobs.EnqueueParams{Type: "root"}}}
		var names []string
		for i := range children {
			names = append(names, fmt.Sprintf("c%05d", i))
			tasks = append(tasks, jobs.WorkflowTask{Name: names[i], Job: jobs.EnqueueParams{Type: "child"}, After: []string{"root"}})
		}
		tasks = append(tasks, jobs.WorkflowTask{Name: "sink", Job: jobs.EnqueueParams{Type: "sink"}, After: names})
		if !dependent {
			for i := range tasks {
				tasks[i].After = nil
			}
		}
		if _, err := mem.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "bench", Tasks: tasks}); err != nil {
			b.Fatal(err)
		}
		s := latencystore.New(mem, latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4})
		var mu sync.Mutex
		var rootDone, firstChild, lastChild, sinkStart time.Time
		var left atomic.Int64
		left.Store(int64(children))
		done := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("root", func(context.Context, *processor.Job) error {
			mu.Lock()
			rootDone = time.Now()
			mu.Unlock()
			return nil
		})
		reg.MustHandle("child", func(context.Context, *processor.Job) error {
			now := time.Now()
			mu.Lock()
			if firstChild.IsZero() {
				firstChild = now
			}
			mu.Unlock()
			if left.Add(-1) == 0 {
				mu.Lock()
				lastChild = time.Now()
				mu.Unlock()
			}
			return nil
		})
		reg.MustHandle("sink", func(context.Context, *processor.Job) error {
			mu.Lock()
			sinkStart = time.Now()
			mu.Unlock()
			close(done)
			return nil
		})
		p, err := processor.New(s, reg, processor.Config{WorkerID: "bench", Concurrency: 64, PrefetchSize: 128, BatchSize: 20,
			PollInterval: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := p.Start(ctx); err != nil {
			b.Fatal(err)
		}
		<-done
		b.StopTimer()
		calls := s.Counts(latencystore.WorkerOps...)
		_ = p.Stop(ctx)
		s.Close()
		mu.Lock()
		res.callsPerTask += float64(calls) / float64(children+2) / float64(b.N)
		if dependent {
			res.releaseMs += float64(firstChild.Sub(rootDone).Microseconds()) / 1000 / float64(b.N)
			res.faninMs += float64(sinkStart.Sub(lastChild).Microseconds()) / 1000 / float64(b.N)
		}
		mu.Unlock()
	}
	b.ReportMetric(res.callsPerTask, "calls/task")
	return res
}
