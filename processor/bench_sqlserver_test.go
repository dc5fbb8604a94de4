package processor_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// BenchmarkSQLServerThroughput drains a backlog of 20,000 no-op jobs from
// SQL Server and reports the drain rate and the store calls per job; then,
// on the empty queue, it enqueues at about half that rate for a few
// seconds and reports the pickup latency (enqueue to start) at p50 and
// p99. It runs when a server is available (see sqlservertest) and skips
// otherwise. One op is one whole run: use -benchtime 1x.
func BenchmarkSQLServerThroughput(b *testing.B) {
	for _, conc := range []int{8, 64} {
		b.Run(fmt.Sprintf("Concurrency=%d", conc), func(b *testing.B) {
			dsn, name := sqlservertest.NewSchema(b)
			db, err := sqlserver.Open(context.Background(), dsn, sqlserver.WithSchema(name))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			drainAndPickup(b, db, conc)
		})
	}
}

// BenchmarkBacklog is BenchmarkSQLServerThroughput on the latency store
// (500 us a call, 5 us a row, 4 at once): it runs everywhere, so the
// measurement itself is exercised without a server.
func BenchmarkBacklog(b *testing.B) {
	for _, conc := range []int{8, 64} {
		b.Run(fmt.Sprintf("Latency=500us/Concurrency=%d", conc), func(b *testing.B) {
			db := latencystore.New(newMem(), latencystore.Config{Delay: 500 * time.Microsecond, PerRow: 5 * time.Microsecond, Pool: 4})
			defer db.Close()
			drainAndPickup(b, db, conc)
		})
	}
}

// drainAndPickup measures a processor of conc workers over db: the drain
// rate of a 20,000-job backlog and its calls per job, then the pickup
// latency at half that rate.
func drainAndPickup(b *testing.B, db jobs.Store, conc int) {
	const backlog = 20000
	ctx := context.Background()
	s := latencystore.New(db, latencystore.Config{}) // counts calls, adds no delay
	var rate, calls, p50, p99 float64
	for b.Loop() {
		b.StopTimer()
		fillSQL(b, db, backlog, nil)
		before := s.Counts(latencystore.WorkerOps...)
		reg := processor.NewRegistry()
		reg.MustHandle("noop", func(context.Context, *processor.Job) error { return nil })
		p, err := processor.New(s, reg, processor.Config{WorkerID: "bench", Concurrency: conc,
			PrefetchSize: max(100, 2*conc), BatchSize: 100, PollInterval: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if err := p.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for p.Stats().Succeeded < backlog {
			time.Sleep(5 * time.Millisecond)
		}
		drained := time.Since(began)
		b.StopTimer()
		rate = backlog / drained.Seconds()
		calls = float64(s.Counts(latencystore.WorkerOps...)-before) / backlog
		_ = p.Stop(ctx)
		lat := pickup(b, db, rate/2, 5*time.Second)
		p50, p99 = percentile(lat, 50), percentile(lat, 99)
		b.StartTimer() // b.Loop wants it running
	}
	b.ReportMetric(rate, "jobs/s")
	b.ReportMetric(calls, "calls/job")
	b.ReportMetric(p50, "p50-pickup-ms")
	b.ReportMetric(p99, "p99-pickup-ms")
}

// fillSQL enqueues n no-op jobs in batches of 500; payload, when set,
// makes each job's payload.
func fillSQL(b *testing.B, s jobs.Store, n int, payload func() []byte) {
	b.Helper()
	for n > 0 {
		k := min(n, 500)
		ps := make([]jobs.EnqueueParams, k)
		for i := range ps {
			ps[i] = jobs.EnqueueParams{Type: "noop"}
			if payload != nil {
				ps[i].Payload = payload()
			}
		}
		if _, err := s.EnqueueMany(context.Background(), ps); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// pickup enqueues one job at a time at rate jobs per second for d and
// returns each job's wait from its enqueue to its handler's start, in
// milliseconds. The handler "stamp" reads the enqueue instant from the
// payload (this process's clock on both sides).
func pickup(b *testing.B, s jobs.Store, rate float64, d time.Duration) []float64 {
	b.Helper()
	reg := processor.NewRegistry()
	var mu sync.Mutex
	var waits []float64
	reg.MustHandle("stamp", func(_ context.Context, j *processor.Job) error {
		sent := time.Unix(0, int64(binary.BigEndian.Uint64(j.Payload)))
		mu.Lock()
		waits = append(waits, float64(time.Since(sent).Microseconds())/1000)
		mu.Unlock()
		return nil
	})
	q, err := processor.New(s, reg, processor.Config{WorkerID: "pickup", Queues: []string{"pickup"}, Concurrency: 8,
		PollInterval: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer q.Stop(ctx)
	every := time.Duration(float64(time.Second) / max(rate, 1))
	n := int(d / every)
	start := time.Now()
	for i := range n {
		payload := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "pickup", Type: "stamp", Payload: payload}); err != nil {
			b.Fatal(err)
		}
		q.Notify() // as a Client's Enqueue wakes its own processor
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * every)))
	}
	for q.Stats().Succeeded < int64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(waits)
}

func percentile(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
