package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

var _ processor.Observer = (*Metrics)(nil)

// JobsClaimed counts chokaq.jobs.fetched.
func (m *Metrics) JobsClaimed(claimed []*jobs.Job) {
	ctx := context.Background()
	for _, j := range claimed {
		m.fetched.Add(ctx, 1, metric.WithAttributeSet(m.jobAttrs(j.Queue, j.Type)))
	}
}

// JobStarted counts chokaq.jobs.started and records the queue lag: from the
// job's due time to its start, both on the store's clock.
func (m *Metrics) JobStarted(job *jobs.Job, st jobs.Started) {
	attrs := m.jobAttrs(job.Queue, job.Type)
	m.running.Store(job.Ref(), attrs)
	ctx := context.Background()
	m.started.Add(ctx, 1, metric.WithAttributeSet(attrs))
	if !st.StartedAt.IsZero() && !job.ScheduledAt.IsZero() {
		m.queueLag.Record(ctx, seconds(st.StartedAt.Sub(job.ScheduledAt)), metric.WithAttributeSet(attrs))
	}
}

// JobFinished counts the outcome, the handler's failure and its duration.
// An outcome that could not be written (shutdown) is left to the rescue
// loop, which counts it when it settles the job.
func (m *Metrics) JobFinished(job *jobs.Job, r processor.Result) {
	ctx := context.Background()
	v, ran := m.running.LoadAndDelete(job.Ref())
	attrs, ok := v.(attribute.Set)
	if !ok {
		attrs = m.jobAttrs(job.Queue, job.Type)
	}
	with := metric.WithAttributeSet(attrs)
	switch r.Outcome {
	case processor.OutcomeSucceeded:
		m.succeeded.Add(ctx, 1, with)
	case processor.OutcomeRetried:
		m.retried.Add(ctx, 1, with)
	case processor.OutcomeDeadLettered:
		m.deadLettered.Add(ctx, 1, metric.WithAttributeSet(withReason(attrs, r.Reason)))
		if r.Reason == jobs.ReasonCancelled {
			m.cancelled.Add(ctx, 1, with)
		}
	case processor.OutcomeLeaseLost:
		m.leaseLost.Add(ctx, 1, with)
	case processor.OutcomeSnoozed:
		m.snoozed.Add(ctx, 1, with)
	}
	// The same rule as the processor's Stats.Failed (Result.Failed).
	if r.Failed() {
		m.failed.Add(ctx, 1, with)
	}
	if ran {
		m.duration.Record(ctx, seconds(r.Duration), with)
	}
}

// HeartbeatDegraded counts chokaq.jobs.heartbeat_failures.
func (m *Metrics) HeartbeatDegraded(ref jobs.LeaseRef) {
	attrs, ok := m.running.Load(ref)
	set, _ := attrs.(attribute.Set)
	if !ok {
		// Not started through this Metrics: the job's labels are unknown.
		set = attribute.NewSet(attribute.String(KeyQueue, Other), attribute.String(KeyType, Other))
	}
	m.heartbeatFailures.Add(context.Background(), 1, metric.WithAttributeSet(set))
}

// withReason adds the bounded reason label: a FailureReason's name, Other
// for a number outside the defined set.
func withReason(attrs attribute.Set, r jobs.FailureReason) attribute.Set {
	reason := Other
	if r.Valid() {
		reason = r.String()
	}
	kvs := append(attrs.ToSlice(), attribute.String(KeyReason, reason))
	return attribute.NewSet(kvs...)
}

// seconds converts a duration to the histograms' unit. It clamps at zero:
// a job started a hair before its due time, by a store whose clock stepped
// back, has no lag rather than a negative one.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

// MultiObserver fans a processor's events out to every non-nil observer,
// in order, so metrics can be added next to an observer the caller has.
func MultiObserver(observers ...processor.Observer) processor.Observer {
	var out multiObserver
	for _, o := range observers {
		if o != nil {
			out = append(out, o)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

type multiObserver []processor.Observer

func (mo multiObserver) JobsClaimed(claimed []*jobs.Job) {
	for _, o := range mo {
		o.JobsClaimed(claimed)
	}
}

func (mo multiObserver) JobStarted(job *jobs.Job, st jobs.Started) {
	for _, o := range mo {
		o.JobStarted(job, st)
	}
}

func (mo multiObserver) JobFinished(job *jobs.Job, r processor.Result) {
	for _, o := range mo {
		o.JobFinished(job, r)
	}
}

func (mo multiObserver) HeartbeatDegraded(ref jobs.LeaseRef) {
	for _, o := range mo {
		o.HeartbeatDegraded(ref)
	}
}

// InstrumentProcessor returns cfg with m added to its Observer (after any
// the caller set). Register the processor built from it with
// ObserveProcessor for the buffer and running gauges.
func (m *Metrics) InstrumentProcessor(cfg processor.Config) processor.Config {
	cfg.Observer = MultiObserver(cfg.Observer, m)
	return cfg
}
