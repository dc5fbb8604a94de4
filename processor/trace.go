package processor

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/chokaq/chokaq-go/internal/periodic"
)

// Span attributes of an attempt (ADR 0028).
const (
	AttrQueue         = attribute.Key("chokaq.queue")
	AttrKind          = attribute.Key("chokaq.kind")
	AttrJobID         = attribute.Key("chokaq.job.id")
	AttrAttempt       = attribute.Key("chokaq.attempt")
	AttrLease         = attribute.Key("chokaq.lease")
	AttrOutcome       = attribute.Key("chokaq.outcome")
	AttrFailureReason = attribute.Key("chokaq.failure_reason")
)

// traceContext reads and writes the W3C trace context (traceparent,
// tracestate) that an enqueue inside a span keeps in the job's metadata.
var traceContext propagation.TraceContext

// InjectTraceContext returns meta with the W3C trace context of ctx's span
// added (traceparent, and tracestate if any), a copy: meta itself is not
// changed. Without a valid span in ctx it returns meta as it is. The
// Client calls it at every enqueue.
func InjectTraceContext(ctx context.Context, meta map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	out := make(map[string]string, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	traceContext.Inject(ctx, propagation.MapCarrier(out))
	return out
}

// startSpan starts the consumer span of an attempt, linked to the
// enqueuer's span (or its child, by Config.TraceParentFromEnqueue), and
// returns ctx carrying it.
func (p *Processor) startSpan(ctx context.Context, j *Job) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		AttrQueue.String(j.Queue), AttrKind.String(j.Type), AttrJobID.Int64(j.ID),
		AttrAttempt.Int(j.Attempt), AttrLease.Int64(j.Lease),
		attribute.String("messaging.system", "chokaq"), attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.destination.name", j.Queue))}
	if len(j.Metadata) > 0 {
		enq := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier(j.Metadata)))
		if enq.IsValid() {
			if p.cfg.TraceParentFromEnqueue {
				ctx = trace.ContextWithRemoteSpanContext(ctx, enq)
			} else {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: enq}), trace.WithNewRoot())
			}
		}
	}
	return p.tracer.Start(ctx, "process "+j.Queue+" "+j.Type, opts...)
}

// endSpan ends an attempt's span with what became of it.
func endSpan(span trace.Span, r Result) {
	span.SetAttributes(AttrOutcome.String(r.Outcome.String()))
	if r.Outcome == OutcomeDeadLettered {
		span.SetAttributes(AttrFailureReason.String(r.Reason.String()))
	}
	if r.HandlerErr != nil {
		span.RecordError(r.HandlerErr)
	}
	if r.Failed() || r.Outcome == OutcomeDeadLettered {
		span.SetStatus(codes.Error, r.Outcome.String())
	}
	span.End()
}

// tracerOf is the processor's tracer, nil without a provider.
func tracerOf(c Config) trace.Tracer { return periodic.Tracer(c.TracerProvider) }
