package chokaq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/zombie"
)

// TestEnqueueInsideASpanKeepsItsTraceContext: the W3C trace context of
// the enqueuer's span goes into the job's metadata beside the caller's
// own keys; outside a span nothing is added.
func TestEnqueueInsideASpanKeepsItsTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("app").Start(t.Context(), "POST /orders")
	defer span.End()
	c, _ := clientWith(t)
	meta := map[string]string{"tenant": "acme"}
	r, err := c.Enqueue(ctx, WelcomeArgs{}, &chokaq.EnqueueOpts{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := c.GetJob(ctx, r.ID)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if j.Metadata["traceparent"] != want || j.Metadata["tenant"] != "acme" {
		t.Errorf("metadata %v, want tenant and traceparent %s", j.Metadata, want)
	}
	if len(meta) != 1 {
		t.Errorf("the caller's map was changed: %v", meta)
	}
	r, _ = c.Enqueue(t.Context(), WelcomeArgs{}, nil)
	if j, _ := c.GetJob(t.Context(), r.ID); j.Metadata != nil {
		t.Errorf("an enqueue outside a span got metadata %v", j.Metadata)
	}
}

// TestRoundsHaveSpansOfTheirOwn: a rescue sweep that dead-letters a job,
// a retention sweep and a schedule round each end a span, a failed one
// with its error.
func TestRoundsHaveSpansOfTheirOwn(t *testing.T) {
	ctx := t.Context()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	clock := memstore.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 1})
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	zc := zombie.DefaultConfig()
	zc.TracerProvider = tp
	r, err := zombie.New(s, zc)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Sweep(ctx); err != nil || res.Expired != 1 {
		t.Fatalf("sweep: %+v, %v", res, err)
	}
	rc := retention.DefaultConfig()
	rc.TracerProvider = tp
	ret, err := retention.New(s, rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ret.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	sch, err := schedule.New(failingNow{s}, schedule.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sch.Round(ctx); err == nil {
		t.Fatal("a round whose clock fails did not fail")
	}
	names := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		names[sp.Name()] = sp
	}
	for _, n := range []string{"chokaq.zombie sweep", "chokaq.retention sweep", "chokaq.schedule round"} {
		if names[n] == nil || names[n].SpanKind() != trace.SpanKindInternal {
			t.Errorf("no span %q among %v", n, rec.Ended())
		}
	}
	if sp := names["chokaq.schedule round"]; sp != nil && sp.Status().Code.String() != "Error" {
		t.Errorf("the failed round's span has status %v", sp.Status())
	}
}

// failingNow is a store whose clock cannot be read.
type failingNow struct{ *memstore.Store }

func (failingNow) Now(context.Context) (time.Time, error) {
	return time.Time{}, errors.New("clock unreachable")
}
