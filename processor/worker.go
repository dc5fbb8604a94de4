package processor

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// worker runs buffered jobs one after the other. A job's start goes out
// alone when the worker has nothing to write, and otherwise in the same
// transition as the outcome of the job before it (chained, ADR 0018), so a
// busy worker waits for one round trip per job, not two.
func (p *Processor) worker(ctx context.Context) {
	ws := newWorkerSlots()
	defer ws.close()
	var rn *run
	for {
		if rn == nil {
			f, ok := p.buf.pop(ctx)
			if !ok {
				return
			}
			p.roomFreed()
			if !p.fresh(f) {
				p.release(p.writesCtx, []*fetched{f}, "buffered too long or queue paused")
				continue
			}
			rn = p.begin(ws, p.prepare(f))
			continue
		}
		rn = p.execute(ws, rn)
	}
}

// roomFreed wakes the fetch loop when a whole batch fits again.
func (p *Processor) roomFreed() {
	if p.buf.free() >= min(p.cfg.BatchSize, p.cfg.PrefetchSize) {
		p.Notify()
	}
}

// fresh reports whether a buffered job may be started: it has not waited
// longer than ReleaseAfter, and its queue was not paused since its claim.
// It is judged when a worker takes the job; a start retried through an
// outage is not judged again, since its lease guard already refuses it
// once rescue phase 1 has taken the job back.
func (p *Processor) fresh(f *fetched) bool {
	return time.Since(f.claimedAt) <= p.cfg.ReleaseAfter && !p.pausedSinceClaim(f)
}

// run is what one execution needs, in one allocation: the handler's Job
// and context, the job's heartbeat schedule, and its start's answer.
type run struct {
	f    *fetched
	job  Job
	ctx  withDeadline
	beat beat
	// report is what the handler reported (RecordOutput, Progress).
	report report
	// answered: the start's answer is in: started (err nil), or refused
	// (err about the job). Until then the start may have committed.
	answered bool
	started  jobs.Started
	startErr error
	// start is what the job's start tells the store: the processor's
	// parameters with its kind's timeout and zombie policy.
	start jobs.StartParams
}

// prepare makes f's run and hands its beat to the heartbeater before the
// start goes out: a start whose reply is lost may have committed, and the
// job must then be beaten like any running one until the start's answer
// is in (docs/design.md (Heartbeats and leases)).
func (p *Processor) prepare(f *fetched) *run {
	j := f.job
	// One context carries every reason to stop the handler: shutdown (from
	// runCtx), a lost lease or failing heartbeats (the heartbeater), and
	// the execution deadline (the worker's timer), each as its cause.
	jobCtx, cancel := context.WithCancelCause(p.runCtx)
	rn := &run{
		f: f,
		job: Job{
			ID: j.ID, Queue: j.Queue, Type: j.Type, Payload: j.Payload,
			MaxAttempts: j.MaxAttempts, Snoozes: j.SnoozeCount, Lease: j.Lease, Tags: j.Tags, Metadata: j.Metadata, CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt,
			ZombieRetries: j.ZombieRetries, LastError: j.LastError, WorkflowID: j.WorkflowID, WorkflowTask: j.WorkflowTask,
		},
		start: p.startParams(j.Type),
		ctx:   withDeadline{Context: jobCtx},
		beat:  beat{ref: j.Ref(), cancel: cancel, log: jobLogger{base: p.log, job: j}, pending: true},
	}
	rn.ctx.report = &rn.report
	rn.report.keeps, rn.report.beat, rn.report.hb = p.reporter != nil && p.batch != nil, &rn.beat, p.hb
	p.hb.add(&rn.beat)
	return rn
}

// answer records the answer to rn's start, if err is one: nil, or an
// error about the job. A call's error leaves the start unknown.
func (rn *run) answer(st jobs.Started, err error) {
	if err == nil || jobs.IsJobError(err) {
		rn.answered, rn.started, rn.startErr = true, st, err
	}
}

// begin sends rn's start alone, unless it was answered already (chained
// with an outcome), retried through an outage like an outcome while the
// job beats. It returns rn once started, nil otherwise.
func (p *Processor) begin(ws *workerSlots, rn *run) *run {
	if !rn.answered {
		p.write(rn.beat.log, "start", func(ctx context.Context) error {
			st, err := p.startJob(ctx, ws, rn.beat.ref, rn.start)
			rn.answer(st, err)
			return err
		})
	}
	switch {
	case !rn.answered:
		// Stop ended the writes with the start unknown: hand the job back.
		p.giveBack(rn, "the start's answer never came")
		return nil
	case rn.startErr == nil:
		p.hb.started(&rn.beat)
		return rn
	case errors.Is(rn.startErr, jobs.ErrLeaseLost):
		p.drop(rn)
		p.finished(rn.f.job, Result{Outcome: OutcomeLeaseLost}) // write logged it
		return nil
	default:
		p.giveBack(rn, "start refused: "+rn.startErr.Error())
		return nil
	}
}

// drop forgets a run: its beats stop and its context ends.
func (p *Processor) drop(rn *run) {
	p.hb.remove(rn.beat.ref)
	rn.beat.cancel(nil)
}

// giveBack returns a job that never ran to Pending: released if it is
// still Fetched, else (its start may have committed) retried at once,
// since no user code ran. Both outlive Stop's end of the writes, each
// bounded by writeTimeout: the job should go back even as the processor
// stops; if neither call can be made, rescue settles it.
func (p *Processor) giveBack(rn *run, why string) {
	defer p.drop(rn)
	rn.beat.log.Warn("start not confirmed; giving the job back", zap.String("why", why))
	if p.release(p.writesCtx, []*fetched{rn.f}, "start not confirmed") == 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.writesCtx), writeTimeout)
	defer cancel()
	_ = p.store.Retry(ctx, rn.beat.ref, jobs.RetryParams{Error: jobs.Clip("start not confirmed: "+why, maxLastError)})
}

// next takes a fresh buffered job to chain its start with the outcome
// the worker is about to write, or nil: only a store with batch forms
// carries both in one call.
func (p *Processor) next() *run {
	if p.batch == nil {
		return nil
	}
	f := p.buf.tryPop()
	if f == nil {
		return nil
	}
	p.roomFreed()
	if !p.fresh(f) {
		p.release(p.writesCtx, []*fetched{f}, "buffered too long or queue paused")
		return nil
	}
	return p.prepare(f)
}

// execute runs a started job's handler and settles it, and returns the
// next job this worker started with that outcome, or nil.
func (p *Processor) execute(ws *workerSlots, rn *run) *run {
	j, st, log, ref := rn.f.job, rn.started, rn.beat.log, rn.beat.ref
	if st.Timeout <= 0 { // a store that reports no timeout: use ours
		st.Timeout = p.cfg.DefaultTimeout
	}
	p.stats.started.Add(1)
	p.cfg.Observer.JobStarted(j, st)
	due := time.Now().Add(st.Timeout)
	rn.job.Attempt, rn.job.Deadline, rn.ctx.at = st.AttemptCount, due, due
	rn.job.Timeout, rn.job.TimeoutFrom, rn.job.ZombieRetryCap = st.Timeout, st.TimeoutFrom, rn.start.ZombieRetryCap
	ws.arm(rn, due)
	execCtx := context.Context(&rn.ctx)
	hj := &rn.job
	var span trace.Span
	if p.tracer != nil {
		execCtx, span = p.startSpan(execCtx, hj)
	}
	log.Debug("job started", zap.Int("attempt", st.AttemptCount))
	p.stats.running.Add(1)
	began := time.Now()
	herr := p.call(execCtx, hj)
	ran := time.Since(began)
	p.stats.running.Add(-1)
	ws.disarm()
	var cause error
	if execCtx.Err() != nil {
		cause = context.Cause(execCtx)
	}
	p.hb.finishing(ref)
	var fail failure
	if herr != nil {
		fail = inspect(herr)
	}
	ws.chain = p.next()
	ws.output = rn.report.takeOutput()
	r := p.settle(ws, log, ref, hj, fail, herr != nil, cause)
	ws.output = nil
	next := ws.chain
	ws.chain = nil
	p.drop(rn)
	r.HandlerErr, r.Duration, r.Interrupted = fail.err, ran, errors.Is(cause, errShutdown)
	p.finished(j, r)
	if span != nil {
		endSpan(span, r)
	}
	if next != nil {
		return p.begin(ws, next)
	}
	return nil
}

// withDeadline is a handler's context: ctx reports at as its deadline, so
// a handler passes the execution deadline on (to a database driver, an
// HTTP client), and the worker's timer cancels ctx at that instant with
// the cause errExecutionTimeout. One context with a timer costs fewer
// allocations per job than a deadline context under a cancel context.
type withDeadline struct {
	context.Context
	at     time.Time
	report *report
}

// Deadline is the execution deadline.
func (c *withDeadline) Deadline() (time.Time, bool) { return c.at, true }

// Value finds the run's report for RecordOutput and Progress, and asks
// the parent for every other key.
func (c *withDeadline) Value(key any) any {
	if _, ok := key.(runKey); ok {
		return c.report
	}
	return c.Context.Value(key)
}

// deadline is a worker's execution timer, made once and armed for each of
// its jobs in turn: a timer per job would cost two allocations. A firing
// that comes late, after the worker moved on, finds its job gone or a
// later instant armed, and does nothing.
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer
	cur   *run
	at    time.Time
}

// arm cancels rn's handler at the instant at.
func (d *deadline) arm(rn *run, at time.Time) {
	d.mu.Lock()
	d.cur, d.at = rn, at
	if d.timer == nil {
		d.timer = time.AfterFunc(time.Until(at), d.fire)
	} else {
		d.timer.Reset(time.Until(at))
	}
	d.mu.Unlock()
}

// disarm forgets the job armed for.
func (d *deadline) disarm() {
	d.mu.Lock()
	d.cur = nil
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}

func (d *deadline) fire() {
	d.mu.Lock()
	rn := d.cur
	if rn == nil || time.Now().Before(d.at) {
		d.mu.Unlock()
		return
	}
	d.cur = nil
	d.mu.Unlock()
	rn.beat.cancel(errExecutionTimeout)
}
