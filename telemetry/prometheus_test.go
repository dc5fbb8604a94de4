package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
	"github.com/chokaq/chokaq-go/zombie"
)

// TestMetricsEndpointExposesPrometheusNames records into every instrument,
// scrapes /metrics and checks the names the exporter derives (the table in
// docs/operations.md) with their values.
func TestMetricsEndpointExposesPrometheusNames(t *testing.T) {
	prom, err := promexporter.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Shutdown(context.Background()) })
	m, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	store := recordEveryInstrument(t, m)

	mux := http.NewServeMux()
	telemetry.Mount(mux, prom.MetricsHandler(), telemetry.NewHealth(telemetry.HealthConfig{Store: store}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, body := get(t, srv, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, want := range []string{
		`chokaq_jobs_enqueued_total{queue="q",type="t"} 1`,
		`chokaq_jobs_fetched_total{queue="q",type="t"} 6`,
		`chokaq_jobs_started_total{queue="q",type="t"} 6`,
		`chokaq_jobs_succeeded_total{queue="q",type="t"} 1`,
		`chokaq_jobs_failed_total{queue="q",type="t"} 2`,
		`chokaq_jobs_retried_total{queue="q",type="t"} 1`,
		`chokaq_jobs_dead_lettered_total{queue="q",reason="Fatal",type="t"} 1`,
		`chokaq_jobs_dead_lettered_total{queue="q",reason="Zombie",type="t"} 1`,
		`chokaq_jobs_dead_lettered_total{queue="q",reason="Timeout",type="t"} 1`,
		`chokaq_jobs_lease_lost_total{queue="q",type="t"} 1`,
		`chokaq_jobs_cancelled_total{queue="q",type="t"} 1`,
		`chokaq_jobs_snoozed_total{queue="q",type="t"} 1`,
		`chokaq_jobs_dead_lettered_total{queue="q",reason="Cancelled",type="t"} 1`,
		`chokaq_jobs_heartbeat_failures_total{queue="q",type="t"} 1`,
		`chokaq_rescue_recovered_total{queue="q",type="t"} 1`,
		`chokaq_rescue_archived_total{queue="q",type="t"} 1`,
		`chokaq_rescue_deadline_total{queue="q",type="t"} 1`,
		`chokaq_jobs_duration_seconds_bucket{queue="q",type="t",le="0.025"} 6`,
		`chokaq_jobs_duration_seconds_count{queue="q",type="t"} 6`,
		`chokaq_jobs_queue_lag_seconds_bucket{queue="q",type="t",le="1"} 0`,
		`chokaq_jobs_queue_lag_seconds_bucket{queue="q",type="t",le="2.5"} 6`,
		`chokaq_jobs_queue_lag_seconds_sum{queue="q",type="t"} 12`,
		`chokaq_rescue_detection_latency_seconds_bucket{queue="q",reason="Zombie",type="t",le="120"} 1`,
		`chokaq_rescue_detection_latency_seconds_count{queue="q",reason="Timeout",type="t"} 1`,
		`chokaq_rescue_detection_latency_seconds_sum{queue="q",reason="Zombie",type="t"} 90`,
		`chokaq_rescue_sweeps_total{result="ok"} 1`,
		`chokaq_processor_buffered 0`,
		`chokaq_processor_running 0`,
		`chokaq_queue_depth{queue="q",status="pending"} 1`,
		`chokaq_queue_depth{queue="q",status="processing"} 0`,
		"# TYPE chokaq_jobs_enqueued_total counter",
		"# TYPE chokaq_jobs_duration_seconds histogram",
		"# TYPE chokaq_queue_depth gauge",
		"go_goroutines ", "process_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	if strings.Contains(body, "otel_scope_name") {
		t.Error("scope labels are exposed; they should be off")
	}
	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
}

// recordEveryInstrument feeds m one scripted set of events that reaches
// every instrument, with known values, and returns the store its depth
// sample read (one Pending job of queue q).
func recordEveryInstrument(t *testing.T, m *telemetry.Metrics) jobs.Store {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	if _, err := store.Enqueue(ctx, jobs.EnqueueParams{Queue: "q", Type: "t"}); err != nil {
		t.Fatal(err)
	}
	p, err := processor.New(store, processor.NewRegistry(), processor.Config{Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveProcessor(p)

	now := time.Now()
	job := func(id int64) *jobs.Job { return &jobs.Job{ID: id, Lease: 1, Queue: "q", Type: "t", ScheduledAt: now} }
	m.RecordEnqueued("q", "t", 1)
	m.RecordDuplicates("q", "t", 1)
	m.RecordWorkflowStarted()
	m.RecordWorkflowEnded(jobs.Workflow{State: jobs.WorkflowSucceeded})
	m.RecordWorkflowEnded(jobs.Workflow{State: jobs.WorkflowFailed})
	for id, r := range []processor.Result{
		{Outcome: processor.OutcomeSucceeded, Duration: 20 * time.Millisecond},
		{Outcome: processor.OutcomeRetried, HandlerErr: context.DeadlineExceeded},
		{Outcome: processor.OutcomeDeadLettered, Reason: jobs.ReasonFatal, HandlerErr: context.Canceled},
		{Outcome: processor.OutcomeLeaseLost},
		{Outcome: processor.OutcomeDeadLettered, Reason: jobs.ReasonCancelled, HandlerErr: context.Canceled},
		{Outcome: processor.OutcomeSnoozed, HandlerErr: processor.Snooze(time.Minute)},
	} {
		j := job(int64(id + 1))
		m.JobsClaimed([]*jobs.Job{j})
		m.JobStarted(j, jobs.Started{StartedAt: now.Add(2 * time.Second)})
		if r.Outcome == processor.OutcomeLeaseLost {
			m.HeartbeatDegraded(j.Ref())
		}
		m.JobFinished(j, r)
	}
	for phase, reason := range map[zombie.Phase]jobs.FailureReason{zombie.PhaseFetched: 0, zombie.PhaseZombie: jobs.ReasonZombie, zombie.PhaseDeadline: jobs.ReasonTimeout} {
		m.OnRescue(phase, jobs.Rescued{Queue: "q", Type: "t", Reason: reason, At: now, LastSeen: now.Add(-90 * time.Second)})
	}
	m.OnRescue(zombie.PhaseZombie, jobs.Rescued{Queue: "q", Type: "t", Reason: jobs.ReasonZombie, Recovered: true, At: now, LastSeen: now.Add(-90 * time.Second)})
	m.SampleDepthsAfterSweep(store, []string{"q"})(zombie.Result{}, nil)
	m.OnSweep(zombie.Result{}, nil)
	runMaintenance(t, m)
	return store
}

// TestTwoExportersDoNotShareState: each Prometheus has its own registry.
func TestTwoExportersDoNotShareState(t *testing.T) {
	var bodies []string
	for i := range 2 {
		prom, err := promexporter.New()
		if err != nil {
			t.Fatal(err)
		}
		m, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider()})
		if err != nil {
			t.Fatal(err)
		}
		m.RecordEnqueued("q", "t", i+1)
		srv := httptest.NewServer(prom.MetricsHandler())
		_, body := get(t, srv, "/")
		srv.Close()
		bodies = append(bodies, body)
	}
	if !strings.Contains(bodies[0], `chokaq_jobs_enqueued_total{queue="q",type="t"} 1`) ||
		!strings.Contains(bodies[1], `chokaq_jobs_enqueued_total{queue="q",type="t"} 2`) {
		t.Fatalf("registries shared:\n%s\n---\n%s", bodies[0], bodies[1])
	}
}
