package processor_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// tracedRun enqueues a job inside a span, the W3C trace context in its
// metadata, and runs it (failing once, then succeeding) under a processor
// with a recording tracer provider. It returns the enqueuer's span
// context, the job, the recorded spans and the span each attempt's
// handler saw in its context.
func tracedRun(t *testing.T, parent bool) (trace.SpanContext, int64, []sdktrace.ReadOnlySpan, []trace.SpanContext) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, enqSpan := tp.Tracer("app").Start(context.Background(), "POST /orders")
	s := newMem()
	id := enqueue(t, s, jobs.EnqueueParams{Type: "flaky", Metadata: processor.InjectTraceContext(ctx, map[string]string{"tenant": "acme"})})
	enqSpan.End()
	reg := processor.NewRegistry()
	var seen []trace.SpanContext
	reg.MustHandle("flaky", func(ctx context.Context, j *processor.Job) error {
		seen = append(seen, trace.SpanContextFromContext(ctx))
		if j.Attempt == 1 {
			return errors.New("once")
		}
		return nil
	})
	cfg := testConfig()
	cfg.TracerProvider, cfg.TraceParentFromEnqueue = tp, parent
	p := startProcessor(t, s, reg, cfg)
	waitFor(t, time.Minute, "archived", inTable(s, id, jobs.TableArchive))
	stop(t, p)
	var process []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.SpanKind() == trace.SpanKindConsumer {
			process = append(process, sp)
		}
	}
	return enqSpan.SpanContext(), id, process, seen
}

// TestEveryAttemptRunsInASpanLinkedToTheEnqueuer: across a retry, each
// attempt's consumer span links to the enqueuer's span, carries the
// job's attributes and outcome, and is the span its handler's context
// holds.
func TestEveryAttemptRunsInASpanLinkedToTheEnqueuer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		enq, id, spans, seen := tracedRun(t, false)
		if len(spans) != 2 || len(seen) != 2 {
			t.Fatalf("%d attempt spans and %d handler contexts, want 2 each", len(spans), len(seen))
		}
		for i, sp := range spans {
			a := attrs(sp)
			want := map[attribute.Key]any{processor.AttrQueue: jobs.DefaultQueue, processor.AttrKind: "flaky", processor.AttrJobID: id,
				processor.AttrAttempt: int64(i + 1), processor.AttrOutcome: []string{"retried", "succeeded"}[i]}
			for k, v := range want {
				if a[k].AsInterface() != v {
					t.Errorf("attempt %d: %s = %v, want %v", i+1, k, a[k].AsInterface(), v)
				}
			}
			if _, ok := a[processor.AttrLease]; !ok {
				t.Errorf("attempt %d has no lease attribute", i+1)
			}
			if len(sp.Links()) != 1 || sp.Links()[0].SpanContext.SpanID() != enq.SpanID() || sp.Parent().IsValid() {
				t.Errorf("attempt %d: links %v, parent %v; want one link to the enqueuer and no parent", i+1, sp.Links(), sp.Parent())
			}
			if seen[i].SpanID() != sp.SpanContext().SpanID() {
				t.Errorf("attempt %d: the handler's context holds span %v, not the attempt's", i+1, seen[i].SpanID())
			}
		}
		if spans[0].Status().Code.String() != "Error" {
			t.Errorf("the failed attempt's span status is %v", spans[0].Status())
		}
	})
}

// TestTraceParentFromEnqueueParentsTheAttempt: by option, the enqueuer's
// span is each attempt's parent, in its trace.
func TestTraceParentFromEnqueueParentsTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		enq, _, spans, _ := tracedRun(t, true)
		for i, sp := range spans {
			if sp.Parent().SpanID() != enq.SpanID() || sp.SpanContext().TraceID() != enq.TraceID() || len(sp.Links()) != 0 {
				t.Errorf("attempt %d: parent %v, trace %v, links %v; want the enqueuer's span as parent", i+1, sp.Parent().SpanID(), sp.SpanContext().TraceID(), sp.Links())
			}
		}
	})
}

// TestNoTracerProviderNoSpan: without a provider the handler's context
// holds no span.
func TestNoTracerProviderNoSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		var sc trace.SpanContext
		reg.MustHandle("x", func(ctx context.Context, j *processor.Job) error { sc = trace.SpanContextFromContext(ctx); return nil })
		id := enqueue(t, s, jobs.EnqueueParams{Type: "x"})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "archived", inTable(s, id, jobs.TableArchive))
		stop(t, p)
		if sc.IsValid() {
			t.Errorf("a span %v without a provider", sc)
		}
	})
}
