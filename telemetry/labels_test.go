package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

// TestLabelValuesAreCapped: past MaxLabelValues distinct queues (and,
// separately, types), further values are recorded as "other", so a caller
// that invents a queue or type per job cannot grow the series without bound.
func TestLabelValuesAreCapped(t *testing.T) {
	m, reader := newTestMetrics(t, telemetry.Options{MaxLabelValues: 2})
	m.RecordEnqueued("q1", "a", 1)
	m.RecordEnqueued("q2", "b", 1)
	m.RecordEnqueued("q3", "a", 1) // third queue
	m.RecordEnqueued("q1", "c", 1) // third type
	m.RecordEnqueued("q4", "d", 5)
	m.RecordEnqueued("q2", "b", 1) // admitted values stay themselves
	wantValues(t, "enqueued", collect(t, reader).counter(t, "chokaq.jobs.enqueued"), map[string]int64{
		qt("q1", "a"): 1, qt("q2", "b"): 2, qt("other", "a"): 1, qt("q1", "other"): 1, qt("other", "other"): 5,
	})

	// Reasons are a closed set: an undefined number is "other" too.
	j := &jobs.Job{ID: 1, Lease: 1, Queue: "q1", Type: "a"}
	m.JobFinished(j, processor.Result{Outcome: processor.OutcomeDeadLettered, Reason: jobs.FailureReason(42)})
	wantValues(t, "dead_lettered", collect(t, reader).counter(t, "chokaq.jobs.dead_lettered"), map[string]int64{
		qrt("q1", "other", "a"): 1,
	})
}

// TestDepthSampleMergesCappedQueues: queues beyond the cap share one
// "other" series per status, holding their sum.
func TestDepthSampleMergesCappedQueues(t *testing.T) {
	ctx := context.Background()
	m, reader := newTestMetrics(t, telemetry.Options{MaxLabelValues: 1, DepthCap: 2})
	s := memstore.New()
	for q, n := range map[string]int{"a": 1, "b": 3, "c": 1} {
		for range n {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: q, Type: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sample := m.SampleDepthsAfterSweep(s, []string{"a", "b", "c", "a"})
	sample(zombie.Result{}, nil)
	wantValues(t, "depth", collect(t, reader).gauge(t, "chokaq.queue.depth"), map[string]int64{
		"queue=a,status=pending": 1, "queue=a,status=fetched": 0, "queue=a,status=processing": 0,
		// b is capped at DepthCap 2, then merged with c.
		"queue=other,status=pending": 3, "queue=other,status=fetched": 0, "queue=other,status=processing": 0,
	})
	// A skipped sweep (another process leads) clears the sample.
	sample(zombie.Result{Skipped: true}, nil)
	wantValues(t, "depth after a skipped sweep", collect(t, reader).gauge(t, "chokaq.queue.depth"), map[string]int64{})
}

// TestInstrumentKeepsTheCallersHooks: metrics are added next to the
// observer and rescue hooks a caller already set, not instead of them.
func TestInstrumentKeepsTheCallersHooks(t *testing.T) {
	m, reader := newTestMetrics(t, telemetry.Options{})
	var rescued, swept, finished int
	rc := m.InstrumentRescue(zombie.Config{
		OnRescue: func(zombie.Phase, jobs.Rescued) { rescued++ },
		OnSweep:  func(zombie.Result, error) { swept++ },
	}, memstore.New(), []string{"q"})
	rc.OnRescue(zombie.PhaseFetched, jobs.Rescued{Queue: "q", Type: "t"})
	rc.OnSweep(zombie.Result{Recovered: 1}, nil)
	pc := m.InstrumentProcessor(processor.Config{Observer: finishCounter{&finished}})
	pc.Observer.JobFinished(&jobs.Job{Queue: "q", Type: "t"}, processor.Result{Outcome: processor.OutcomeSucceeded, Duration: time.Second})
	if rescued != 1 || swept != 1 || finished != 1 {
		t.Fatalf("caller's hooks ran rescued %d, swept %d, finished %d times; want once each", rescued, swept, finished)
	}
	got := collect(t, reader)
	wantValues(t, "recovered", got.counter(t, "chokaq.rescue.recovered"), map[string]int64{qt("q", "t"): 1})
	wantValues(t, "sweeps", got.counter(t, "chokaq.rescue.sweeps"), map[string]int64{"result=ok": 1})
	wantValues(t, "succeeded", got.counter(t, "chokaq.jobs.succeeded"), map[string]int64{qt("q", "t"): 1})
	wantValues(t, "depth", got.gauge(t, "chokaq.queue.depth"), map[string]int64{
		"queue=q,status=pending": 0, "queue=q,status=fetched": 0, "queue=q,status=processing": 0,
	})
	// A job that never started (its lease was lost before) has no duration.
	if n := len(got.histogram(t, "chokaq.jobs.duration")); n != 0 {
		t.Fatalf("duration recorded for a job that never started: %d points", n)
	}
}

type finishCounter struct{ n *int }

func (finishCounter) JobsClaimed([]*jobs.Job)                   {}
func (finishCounter) JobStarted(*jobs.Job, jobs.Started)        {}
func (f finishCounter) JobFinished(*jobs.Job, processor.Result) { *f.n++ }
func (finishCounter) HeartbeatDegraded(jobs.LeaseRef)           {}

func TestOptionsAreChecked(t *testing.T) {
	for _, o := range []telemetry.Options{{MaxLabelValues: -1}, {DepthCap: -1}, {DepthCap: jobs.MaxDepthCap + 1}} {
		if _, err := telemetry.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	// The global MeterProvider by default (a no-op one unless set).
	if _, err := telemetry.New(telemetry.Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestTheGlobalMeterProviderByDefault: without a MeterProvider option the
// instruments are made on the global one, so an application that sets it
// up once gets chokaq-go's metrics with the rest.
func TestTheGlobalMeterProviderByDefault(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	previous := otel.GetMeterProvider()
	otel.SetMeterProvider(provider)
	// Restored for the tests after this one. (The process's first global,
	// a stand-in, keeps delegating to provider once set, and provider is
	// shut down: what is recorded through it goes nowhere.)
	t.Cleanup(func() {
		otel.SetMeterProvider(previous)
		_ = provider.Shutdown(context.Background())
	})

	m, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.RecordEnqueued("q", "t", 2)
	wantValues(t, "enqueued on the global provider", collect(t, reader).counter(t, "chokaq.jobs.enqueued"), map[string]int64{qt("q", "t"): 2})
}

// TestSweepsCountByResult: a loop that fails or is not the leader shows as
// failed or skipped sweeps; one that stopped, as a counter standing still.
func TestSweepsCountByResult(t *testing.T) {
	m, reader := newTestMetrics(t, telemetry.Options{})
	rc := m.InstrumentRescue(zombie.Config{}, memstore.New(), nil)
	rc.OnSweep(zombie.Result{}, nil)
	rc.OnSweep(zombie.Result{Zombies: 2}, nil)
	rc.OnSweep(zombie.Result{}, errors.New("phase 2: timeout"))
	rc.OnSweep(zombie.Result{Skipped: true}, nil)
	wantValues(t, "sweeps", collect(t, reader).counter(t, "chokaq.rescue.sweeps"), map[string]int64{
		"result=ok": 2, "result=failed": 1, "result=skipped": 1,
	})
}
