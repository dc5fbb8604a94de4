package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// Defaults of Options.
const (
	DefaultMaxLabelValues = 100
	DefaultDepthCap       = 10_000
)

// ScopeName is the instrumentation scope of every chokaq-go instrument.
const ScopeName = "github.com/chokaq/chokaq-go"

// Attribute keys. Their values are bounded: queue and type by
// Options.MaxLabelValues, reason by jobs.FailureReason's names, status by
// the three hot statuses, result by a sweep's three endings.
const (
	KeyQueue  = "queue"
	KeyType   = "type"
	KeyReason = "reason"
	KeyStatus = "status"
	KeyResult = "result"
	// KeyTable is retention's label: archive or dlq.
	KeyTable = "table"
	// KeySchedule is a schedule's name.
	KeySchedule = "schedule"
)

// Options configures New.
type Options struct {
	// MeterProvider creates the instruments; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// MaxLabelValues caps the distinct values of the queue label, and
	// separately of the type label (DefaultMaxLabelValues). Values beyond
	// it are recorded as Other.
	MaxLabelValues int
	// DepthCap caps each per-queue, per-status count of the depth sample
	// (DefaultDepthCap), so sampling costs a bounded query however deep a
	// backlog grows. At most jobs.MaxDepthCap.
	DepthCap int
	// Logger, nil for none.
	Logger *zap.Logger
}

// Metrics records chokaq-go's metrics, listed in docs/design.md (Metrics).
// It is safe for concurrent use; one Metrics may observe several processors
// and rescuers.
type Metrics struct {
	log       *zap.Logger
	queues    *labelCap
	types     *labelCap
	schedules *labelCap
	depthCap  int

	enqueued, duplicates, fetched, started, succeeded, failed, retried metric.Int64Counter
	deadLettered, leaseLost, heartbeatFailures                         metric.Int64Counter
	cancelled, snoozed                                                 metric.Int64Counter
	rescueRecovered, rescueArchived, rescueDeadline, sweeps            metric.Int64Counter
	zombiesRecovered                                                   metric.Int64Counter
	retentionDeleted, scheduleFired                                    metric.Int64Counter
	workflowsStarted, workflowsFinished, workflowsFailed               metric.Int64Counter
	duration, queueLag, detectionLatency                               metric.Float64Histogram
	bufferedGauge, runningGauge, depthGauge, waitingGauge              metric.Int64ObservableGauge
	registration                                                       metric.Registration

	// running remembers the labels of every started job until it finishes,
	// so a heartbeat failure (reported by lease only) gets its queue and
	// type, and a finished job's duration is recorded only if it ran.
	running sync.Map // jobs.LeaseRef -> attribute.Set

	procMu sync.Mutex
	procs  []*processor.Processor

	depths  atomic.Pointer[depthSample]
	waiting atomic.Pointer[depthSample]
}

// Buckets for the histograms, in seconds. Handler durations and queue lags
// run from milliseconds to the hour-long execution timeouts; a rescue is
// noticed no sooner than the zombie timeout (minutes).
var (
	durationBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	lagBuckets       = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	detectionBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200}
)

// New creates the instruments on opts.MeterProvider.
func New(opts Options) (*Metrics, error) {
	if opts.MeterProvider == nil {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxLabelValues == 0 {
		opts.MaxLabelValues = DefaultMaxLabelValues
	}
	if opts.DepthCap == 0 {
		opts.DepthCap = DefaultDepthCap
	}
	if opts.MaxLabelValues < 1 {
		return nil, fmt.Errorf("telemetry: MaxLabelValues = %d: must be at least 1", opts.MaxLabelValues)
	}
	if opts.DepthCap < 1 || opts.DepthCap > jobs.MaxDepthCap {
		return nil, fmt.Errorf("telemetry: DepthCap = %d: must be between 1 and %d", opts.DepthCap, jobs.MaxDepthCap)
	}
	m := &Metrics{
		log:       opts.Logger,
		queues:    newLabelCap(KeyQueue, opts.MaxLabelValues, opts.Logger),
		types:     newLabelCap(KeyType, opts.MaxLabelValues, opts.Logger),
		schedules: newLabelCap(KeySchedule, opts.MaxLabelValues, opts.Logger),
		depthCap:  opts.DepthCap,
	}
	meter := opts.MeterProvider.Meter(ScopeName)
	b := builder{meter: meter}
	m.enqueued = b.counter("chokaq.jobs.enqueued", "Jobs added (duplicates of an idempotency or unique key not counted).")
	m.duplicates = b.counter("chokaq.jobs.duplicates", "Enqueues refused as duplicates: a job holding the same idempotency or unique key existed, so nothing was added.")
	m.fetched = b.counter("chokaq.jobs.fetched", "Jobs claimed into a processor's buffer.")
	m.started = b.counter("chokaq.jobs.started", "Executions started (Fetched -> Processing).")
	m.succeeded = b.counter("chokaq.jobs.succeeded", "Executions that succeeded and were archived.")
	m.failed = b.counter("chokaq.jobs.failed", "Executions whose handler returned an error or panicked, before retry or dead-letter.")
	m.retried = b.counter("chokaq.jobs.retried", "Failed executions returned to Pending for another attempt.")
	m.deadLettered = b.counter("chokaq.jobs.dead_lettered", "Jobs moved to the dead-letter queue, by the processor or the rescue loop, by reason.")
	m.leaseLost = b.counter("chokaq.jobs.lease_lost", "Executions whose job was taken away (rescued or re-claimed); nothing was written.")
	m.cancelled = b.counter("chokaq.jobs.cancelled", "Jobs cancelled: by an operator (at once while Pending or Fetched, or by the handler they stopped) or by their handler (Cancel); also counted as dead_lettered with reason Cancelled.")
	m.snoozed = b.counter("chokaq.jobs.snoozed", "Executions that snoozed: back to Pending without counting an attempt.")
	m.heartbeatFailures = b.counter("chokaq.jobs.heartbeat_failures", "Running jobs whose heartbeats failed HeartbeatFailureThreshold times in a row.")
	m.rescueRecovered = b.counter("chokaq.rescue.recovered", "Abandoned Fetched jobs returned to Pending (rescue phase 1).")
	m.rescueArchived = b.counter("chokaq.rescue.archived", "Processing jobs whose heartbeat expired, moved to the DLQ as Zombie (rescue phase 2).")
	m.zombiesRecovered = b.counter("chokaq.rescue.zombies_recovered", "Processing jobs whose heartbeat expired, returned to Pending under their kind's zombie policy (rescue phase 2).")
	m.rescueDeadline = b.counter("chokaq.rescue.deadline", "Processing jobs past their deadline, moved to the DLQ as Timeout (rescue phase 3).")
	m.sweeps = b.counterUnit("chokaq.rescue.sweeps", "{sweep}", "Rescue sweeps this process ran, by result: ok, failed, or skipped (another process leads).")
	m.retentionDeleted = b.counter("chokaq.retention.deleted", "Archived and dead-lettered jobs the retention loop deleted past their retention, by table and queue.")
	m.scheduleFired = b.counterUnit("chokaq.schedule.fired", "{tick}", "Schedule ticks this process fired (each enqueued one job).")
	m.workflowsStarted = b.counterUnit("chokaq.workflows.started", "{workflow}", "Workflows enqueued (every task inserted at once).")
	m.workflowsFinished = b.counterUnit("chokaq.workflows.finished", "{workflow}", "Workflows ended with every task archived (succeeded), as the store reports them.")
	m.workflowsFailed = b.counterUnit("chokaq.workflows.failed", "{workflow}", "Workflows ended with every task finished and one or more in the DLQ, as the store reports them.")
	m.duration = b.histogram("chokaq.jobs.duration", "Handler run time.", durationBuckets)
	m.queueLag = b.histogram("chokaq.jobs.queue_lag", "Time from a job's due time to its start.", lagBuckets)
	m.detectionLatency = b.histogram("chokaq.rescue.detection_latency", "Time from a rescued job's last sign of life (heartbeat or deadline) to its rescue.", detectionBuckets)
	m.bufferedGauge = b.gauge("chokaq.processor.buffered", "Jobs in this process's prefetch buffers (Fetched, not started).")
	m.runningGauge = b.gauge("chokaq.processor.running", "Handlers running in this process.")
	m.depthGauge = b.gauge("chokaq.queue.depth", "Hot jobs per queue and status at the last rescue sweep, each count capped.")
	m.waitingGauge = b.gauge("chokaq.jobs.waiting", "Due Pending jobs flow control holds back at the last rescue sweep, per queue and reason: key (their concurrency key at its limit), sequence (an earlier job of their sequence unfinished) or rate_limit (the queue's rate-limit window full).")
	if b.err != nil {
		return nil, fmt.Errorf("telemetry: %w", b.err)
	}
	reg, err := meter.RegisterCallback(m.observe, m.bufferedGauge, m.runningGauge, m.depthGauge, m.waitingGauge)
	if err != nil {
		return nil, fmt.Errorf("telemetry: register gauge callback: %w", err)
	}
	m.registration = reg
	return m, nil
}

// Close stops reporting the gauges. Counters and histograms need no
// cleanup; the MeterProvider's own shutdown flushes them.
func (m *Metrics) Close() error { return m.registration.Unregister() }

// builder creates instruments, keeping the first error.
type builder struct {
	meter metric.Meter
	err   error
}

func (b *builder) counter(name, desc string) metric.Int64Counter {
	return b.counterUnit(name, "{job}", desc)
}

func (b *builder) counterUnit(name, unit, desc string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
	b.err = errors.Join(b.err, err)
	return c
}

func (b *builder) histogram(name, desc string, buckets []float64) metric.Float64Histogram {
	h, err := b.meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(buckets...))
	b.err = errors.Join(b.err, err)
	return h
}

func (b *builder) gauge(name, desc string) metric.Int64ObservableGauge {
	g, err := b.meter.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{job}"))
	b.err = errors.Join(b.err, err)
	return g
}

// jobAttrs is the bounded (queue, type) label set.
func (m *Metrics) jobAttrs(queue, typ string) attribute.Set {
	return attribute.NewSet(attribute.String(KeyQueue, m.queues.value(queue)), attribute.String(KeyType, m.types.value(typ)))
}

// RecordCancelled counts n jobs of one queue and type an operator's cancel
// moved to the DLQ at once (they never ran). The chokaq Client calls it;
// jobs that were running are counted when their processor dead-letters
// them.
func (m *Metrics) RecordCancelled(queue, typ string, n int) {
	if n <= 0 {
		return
	}
	ctx, attrs := context.Background(), m.jobAttrs(queue, typ)
	m.cancelled.Add(ctx, int64(n), metric.WithAttributeSet(attrs))
	m.deadLettered.Add(ctx, int64(n), metric.WithAttributeSet(withReason(attrs, jobs.ReasonCancelled)))
}

// RecordEnqueued counts n jobs of one queue and type that an enqueue added.
// The chokaq Client calls it; code that enqueues through a jobs.Store
// directly may call it too.
func (m *Metrics) RecordEnqueued(queue, typ string, n int) {
	if n <= 0 {
		return
	}
	m.enqueued.Add(context.Background(), int64(n), metric.WithAttributeSet(m.jobAttrs(queue, typ)))
}

// RecordDuplicates counts n enqueues of one queue and type that the store
// refused as duplicates (EnqueueResult.Duplicate): the job holding their
// idempotency or unique key was returned instead. The chokaq Client calls
// it.
func (m *Metrics) RecordDuplicates(queue, typ string, n int) {
	if n <= 0 {
		return
	}
	m.duplicates.Add(context.Background(), int64(n), metric.WithAttributeSet(m.jobAttrs(queue, typ)))
}

// Workflows are counted without labels: a workflow's name is free text
// (it need not be unique, and often carries a date or an ID), and its
// tasks may span queues, so neither bounds a label.

// RecordWorkflowStarted counts a workflow enqueued. The chokaq Client
// calls it at EnqueueWorkflow.
func (m *Metrics) RecordWorkflowStarted() {
	m.workflowsStarted.Add(context.Background(), 1)
}

// RecordWorkflowEnded counts a workflow that ended: finished when every
// task succeeded, failed when one or more is in the DLQ; a workflow still
// running is not counted. Only the store sees a workflow end, so it is
// the store's hook that calls it (memstore.WithWorkflowEnded); it is
// cheap and does not block.
func (m *Metrics) RecordWorkflowEnded(w jobs.Workflow) {
	switch w.State {
	case jobs.WorkflowSucceeded:
		m.workflowsFinished.Add(context.Background(), 1)
	case jobs.WorkflowFailed:
		m.workflowsFailed.Add(context.Background(), 1)
	}
}
