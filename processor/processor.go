package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/jobs"
)

// Limits on the text a processor writes about a failure.
const (
	maxDetails   = 16000 // DLQ ErrorDetails
	maxLastError = 4000  // hot LastError between retries
	maxLogLine   = 500   // the error shown in a log line
)

var (
	// ErrHandlersAbandoned is returned by Stop when some handlers did not
	// return within the shutdown grace: their jobs stay Processing and
	// rescue dead-letters them once their heartbeats expire.
	ErrHandlersAbandoned = errors.New("processor: handlers abandoned at shutdown")
)

// Processor claims, runs and settles jobs. Create it with New, then Start
// and Stop it once.
type Processor struct {
	store jobs.Worker
	reg   *Registry
	cfg   Config
	log   *zap.Logger
	stats counters
	buf   *buffer
	hb    *heartbeater

	wakeFetch chan struct{} // a local enqueue or free buffer space
	minPoll   time.Duration
	prober    jobs.Prober      // nil: the store cannot probe, idle polls claim
	rates     jobs.RateClaimer // nil: claims cannot tell a queue held by its rate limit
	jitter    float64          // PollJitter, 0 for none

	paused atomic.Pointer[pausedView]

	// batch coalesces workers' starts and outcomes into batch calls when
	// the store offers them (jobs.BatchWorker); nil means one call per job.
	batch *batchers
	// reporter is the store as a jobs.Reporter, nil when it is not one:
	// outputs and progress are then refused (ErrNotReported).
	reporter jobs.Reporter
	// tracer gives every attempt a span; nil without Config.TracerProvider.
	tracer trace.Tracer

	mu       sync.Mutex
	started  bool
	stopOnce periodic.StopOnce
	// fetchCtx ends when claiming must stop; workCtx when workers must stop
	// taking buffered jobs; runCtx (cause errShutdown) when running handlers
	// must stop; hbCtx when heartbeats stop; writesCtx when outcome writes
	// must give up.
	cancelFetch  context.CancelFunc
	cancelWork   context.CancelFunc
	runCtx       context.Context
	cancelRun    context.CancelCauseFunc
	cancelHB     context.CancelFunc
	writesCtx    context.Context
	cancelWrites context.CancelFunc
	fetchDone    chan struct{}
	workersDone  chan struct{}
	hbDone       chan struct{}
}

// New checks cfg and returns a processor over store that runs the handlers
// of reg.
func New(store jobs.Worker, reg *Registry, cfg Config) (*Processor, error) {
	if store == nil || reg == nil {
		return nil, errors.New("processor: nil store or registry")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Processor{
		store:     store,
		reg:       reg,
		cfg:       cfg,
		log:       cfg.Logger.With(zap.String("worker_id", cfg.WorkerID)),
		buf:       newBuffer(cfg.PrefetchSize),
		wakeFetch: make(chan struct{}, 1),
		minPoll:   max(cfg.PollInterval/10, time.Millisecond),
		jitter:    max(cfg.PollJitter, 0),
	}
	p.prober, _ = store.(jobs.Prober)
	p.rates, _ = store.(jobs.RateClaimer)
	p.hb = newHeartbeater(store, cfg, &p.stats)
	p.reporter, _ = store.(jobs.Reporter)
	p.tracer = tracerOf(cfg)
	p.hb.reporter = p.reporter
	p.hb.log = p.log
	p.paused.Store(&pausedView{})
	return p, nil
}

// WorkerID is the name this processor claims under.
func (p *Processor) WorkerID() string { return p.cfg.WorkerID }

// Stats returns the processor's counters.
func (p *Processor) Stats() Stats { return p.stats.snapshot(p.buf.len()) }

// HeartbeatsFailing reports whether the last heartbeat call failed. While it
// does, the processor claims nothing.
func (p *Processor) HeartbeatsFailing() bool { return p.hb.failing.Load() }

// Notify wakes the fetch loop, for example after a local enqueue.
func (p *Processor) Notify() {
	select {
	case p.wakeFetch <- struct{}{}:
	default:
	}
}

// Start launches the fetch loop, the heartbeater and the workers. They run
// until Stop; ctx is not kept.
func (p *Processor) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return fmt.Errorf("processor: %w", jobs.ErrAlreadyStarted)
	}
	p.started = true
	fetchCtx, cancelFetch := context.WithCancel(context.Background())
	workCtx, cancelWork := context.WithCancel(context.Background())
	p.runCtx, p.cancelRun = context.WithCancelCause(context.Background())
	hbCtx, cancelHB := context.WithCancel(context.Background())
	p.writesCtx, p.cancelWrites = context.WithCancel(context.Background())
	p.cancelFetch, p.cancelWork, p.cancelHB = cancelFetch, cancelWork, cancelHB
	p.fetchDone, p.workersDone, p.hbDone = make(chan struct{}), make(chan struct{}), make(chan struct{})

	go func() { defer close(p.hbDone); p.hb.run(hbCtx) }()
	if bw, ok := p.store.(jobs.BatchWorker); ok {
		p.batch = newBatchers(p.writesCtx, p.store, bw, p.cfg)
		go p.batch.watch(time.Second)
	}
	go func() { defer close(p.fetchDone); p.fetchLoop(fetchCtx) }()
	var wg sync.WaitGroup
	for range p.cfg.Concurrency {
		wg.Add(1)
		go func() { defer wg.Done(); p.worker(workCtx) }()
	}
	go func() { wg.Wait(); close(p.workersDone) }()
	p.log.Info("processor started", zap.Strings("queues", p.cfg.Queues), zap.Int("concurrency", p.cfg.Concurrency))
	return nil
}

// Stop shuts down gracefully: it stops claiming, releases every buffered
// job at once, gives running handlers ShutdownTimeout to finish, then
// cancels them; a handler that returns after cancellation is retried with
// no delay. A handler that never returns is left to rescue.
//
// When ctx has a deadline, the handlers' grace is cut so that part of what
// is left (a quarter, at most 2s) remains for writing the retries of the
// handlers cancelled at its end; a job interrupted by a short orchestrator
// grace period is then retried, not left for rescue to dead-letter. When ctx
// ends without warning, cancelled handlers get up to one second to settle.
// Stop takes at most twice ShutdownTimeout, plus the release of the buffer.
//
// A second Stop, concurrent or later, waits for the first and returns the
// same result (ErrHandlersAbandoned, say), or its own context's error if
// that ends first.
func (p *Processor) Stop(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return fmt.Errorf("processor: %w", jobs.ErrNotRunning)
	}
	return p.stopOnce.Do(ctx, func() error { return p.shutdown(ctx) })
}

// shutdown is the first Stop's work.
func (p *Processor) shutdown(ctx context.Context) error {
	grace := p.cfg.ShutdownTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		grace = max(min(grace, left-min(2*time.Second, left/4)), 0)
	}

	p.cancelFetch()
	select {
	case <-p.fetchDone:
	case <-ctx.Done():
	}
	p.cancelWork()
	if left := p.buf.close(); len(left) > 0 {
		p.release(ctx, left, "processor stopping")
	}

	timer := time.NewTimer(grace)
	defer timer.Stop()
	var err error
	select {
	case <-p.workersDone:
	case <-timer.C:
		p.log.Warn("shutdown timeout: cancelling running handlers", zap.Int64("running", p.stats.running.Load()))
		p.cancelRun(errShutdown)
		// Handlers that return are retried at once; one that ignores its
		// context is abandoned after another ShutdownTimeout and left to
		// rescue, so Stop always returns.
		timer.Reset(p.cfg.ShutdownTimeout)
		select {
		case <-p.workersDone:
		case <-timer.C:
			err = fmt.Errorf("%w: %d handlers ignoring cancellation, or outcome writes failing; their jobs are left to rescue", ErrHandlersAbandoned, p.stats.running.Load())
			p.log.Error("workers did not finish; their jobs are left to rescue", zap.Int64("running_handlers", p.stats.running.Load()))
		case <-ctx.Done():
			err = ctx.Err()
		}
	case <-ctx.Done():
		p.cancelRun(errShutdown)
		timer.Reset(min(time.Second, p.cfg.ShutdownTimeout))
		select {
		case <-p.workersDone:
		case <-timer.C:
		}
		err = ctx.Err()
	}
	p.cancelWrites()
	if p.batch != nil {
		p.batch.stop()
	}
	p.cancelHB()
	<-p.hbDone
	p.cancelRun(errShutdown)
	p.log.Info("processor stopped", zap.Any("stats", p.Stats()))
	return err
}

// pausedView is the processor's last read of the queue settings: which
// queues are paused, and the weights its claims are ordered by (picker).
type pausedView struct {
	at      time.Time // when the read began
	queues  map[string]bool
	weights map[string]int // by QueueKey; a queue without a row weighs 1
}

func (p *Processor) refreshPaused(ctx context.Context) {
	at := time.Now()
	qs, err := p.store.Queues(ctx)
	if err != nil {
		return // keep the last view; claims themselves skip paused queues
	}
	m, w := map[string]bool{}, map[string]int{}
	for _, q := range qs {
		if q.Paused {
			m[jobs.QueueKey(q.Name)] = true // a job's spelling may differ from the row's
		}
		w[jobs.QueueKey(q.Name)] = q.ClaimWeight()
	}
	p.paused.Store(&pausedView{at: at, queues: m, weights: w})
}

// pausedSinceClaim reports whether f's queue was seen paused after f was
// claimed. A claim of a paused queue returns nothing, so a pause read
// before the claim is out of date for that job: releasing it would only
// claim it again (a claim/release spin right after a resume).
func (p *Processor) pausedSinceClaim(f *fetched) bool {
	v := p.paused.Load()
	return v.queues[jobs.QueueKey(f.job.Queue)] && v.at.After(f.claimedAt)
}

// releaseStale gives back buffered jobs that waited more than ReleaseAfter,
// or whose queue was paused since their claim.
func (p *Processor) releaseStale(ctx context.Context) {
	cutoff := time.Now().Add(-p.cfg.ReleaseAfter)
	stale := p.buf.takeIf(func(f *fetched) bool { return f.claimedAt.Before(cutoff) || p.pausedSinceClaim(f) })
	if len(stale) > 0 {
		p.release(ctx, stale, "buffered too long or queue paused")
	}
}

// release returns Fetched jobs to Pending in one store call. It outlives a
// cancelled ctx (the jobs should go back even as the processor stops) but
// not ctx's deadline, and waits at most 30s: jobs it cannot release are
// returned by rescue phase 1 anyway.
func (p *Processor) release(ctx context.Context, fs []*fetched, why string) int {
	refs := make([]jobs.LeaseRef, len(fs))
	for i, f := range fs {
		refs[i] = f.job.Ref()
	}
	limit := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		limit = max(min(limit, time.Until(dl)), 100*time.Millisecond)
	}
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	n, err := p.store.Release(callCtx, refs)
	if err != nil {
		p.stats.storeErrors.Add(1)
		p.log.Warn("release failed; rescue phase 1 will return the jobs", zap.Int("jobs", len(refs)), zap.String("why", why), zap.Error(err))
		return 0
	}
	p.stats.released.Add(int64(n))
	p.log.Debug("jobs released", zap.Int("jobs", n), zap.String("why", why))
	return n
}

// finished counts an execution's outcome and tells the observer: the one
// place every path through execute ends.
func (p *Processor) finished(j *jobs.Job, r Result) {
	switch r.Outcome {
	case OutcomeSucceeded:
		p.stats.succeeded.Add(1)
	case OutcomeRetried:
		p.stats.retried.Add(1)
	case OutcomeDeadLettered:
		p.stats.deadLettered.Add(1)
	case OutcomeLeaseLost:
		p.stats.leaseLost.Add(1)
	case OutcomeSnoozed:
		p.stats.snoozed.Add(1)
	}
	if r.Failed() {
		p.stats.failed.Add(1)
	}
	p.cfg.Observer.JobFinished(j, r)
}

// call runs the handler inside the registry's work middleware, turning a
// panic into a *PanicError.
func (p *Processor) call(ctx context.Context, j *Job) error {
	h, mws, ok := p.reg.lookup(j.Type)
	if !ok { // no handler to wrap: the job goes to the DLQ as Fatal
		return Permanent(fmt.Errorf("unknown job type %q: no handler is registered for it", j.Type))
	}
	return runChain(ctx, j, mws, h)
}

// settle records a finished execution's outcome, by the table in
// docs/design.md (Outcomes), and reports what became of it. failed says the
// handler returned an error; f is what inspect read from it, the only form of
// it used here.
func (p *Processor) settle(ws *workerSlots, log jobLogger, ref jobs.LeaseRef, j *Job, f failure, failed bool, cause error) Result {
	switch {
	case errors.Is(cause, errLeaseLost):
		log.Warn("lease lost: the job was taken away; writing nothing", zap.String("handler_error", jobs.Headline(f.msg, maxLogLine)))
		return Result{Outcome: OutcomeLeaseLost}
	case !failed:
		r := p.write(log, "complete", func(ctx context.Context) error { return p.completeJob(ctx, ws, ref) })
		if r.Outcome == OutcomeSucceeded {
			log.Debug("job succeeded")
		}
		return r
	case errors.Is(cause, ErrCancelled):
		return p.deadLetter(ws, log, ref, jobs.ReasonCancelled, "the handler stopped after its cancel was requested: "+f.msg)
	case f.cancel:
		return p.deadLetter(ws, log, ref, jobs.ReasonCancelled, "the handler cancelled the job: "+f.msg)
	case f.snooze:
		return p.snooze(ws, log, ref, j, f.snoozeFor)
	case errors.Is(cause, errShutdown):
		return p.retry(ws, log, ref, 0, "interrupted by shutdown: "+f.msg)
	case errors.Is(cause, errHeartbeatFailure):
		return p.deadLetter(ws, log, ref, jobs.ReasonHeartbeatFailure, "heartbeats failed; cancelled: "+f.msg)
	case errors.Is(cause, errExecutionTimeout):
		return p.deadLetter(ws, log, ref, jobs.ReasonTimeout, fmt.Sprintf("execution timeout: the handler ran past its deadline %s: %s", j.Deadline.UTC().Format(time.RFC3339Nano), f.msg))
	case f.permanent:
		return p.deadLetter(ws, log, ref, jobs.ReasonFatal, f.msg)
	case j.Attempt >= j.MaxAttempts:
		return p.deadLetter(ws, log, ref, jobs.ReasonMaxRetriesExceeded, fmt.Sprintf("attempt %d of %d failed: %s", j.Attempt, j.MaxAttempts, f.msg))
	default:
		d, _ := p.retryDelay(log, j, f.err)
		return p.retry(ws, log, ref, d, f.msg)
	}
}

// snooze returns the job to Pending after d without counting the attempt,
// or dead-letters it once it has snoozed MaxSnoozes times.
func (p *Processor) snooze(ws *workerSlots, log jobLogger, ref jobs.LeaseRef, j *Job, d time.Duration) Result {
	if j.Snoozes >= p.cfg.MaxSnoozes {
		return p.deadLetter(ws, log, ref, jobs.ReasonSnoozeLimitExceeded,
			fmt.Sprintf("the handler snoozed the job %d times, the most MaxSnoozes allows", j.Snoozes))
	}
	params := jobs.SnoozeParams{Delay: min(d, jobs.MaxDelay)}
	if d > jobs.MaxDelay {
		// Not refused: the handler asked for later, and the job stays
		// wanted; but a longer delay than asked would be a surprise kept
		// quiet, so it is said.
		log.Warn("snooze capped at jobs.MaxDelay", zap.Duration("requested", d), zap.Duration("delay", params.Delay))
	}
	r := p.write(log, "snooze", func(ctx context.Context) error { return p.store.Snooze(ctx, ref, params) })
	if r.Outcome == OutcomeSucceeded {
		log.Debug("job snoozed", zap.Duration("delay", params.Delay))
		r.Outcome = OutcomeSnoozed
	}
	return r
}

func (p *Processor) retry(ws *workerSlots, log jobLogger, ref jobs.LeaseRef, delay time.Duration, msg string) Result {
	params := jobs.RetryParams{Delay: delay, Error: jobs.Clip(msg, maxLastError)}
	r := p.write(log, "retry", func(ctx context.Context) error { return p.retryJob(ctx, ws, ref, params) })
	if r.Outcome == OutcomeSucceeded {
		log.Info("job failed, retrying", zap.Duration("delay", delay), zap.String("error", jobs.Headline(msg, maxLogLine)))
		r.Outcome = OutcomeRetried
	}
	return r
}

func (p *Processor) deadLetter(ws *workerSlots, log jobLogger, ref jobs.LeaseRef, reason jobs.FailureReason, details string) Result {
	params := jobs.DeadLetterParams{Reason: reason, Details: jobs.Clip(details, maxDetails)}
	r := p.write(log, "dead-letter", func(ctx context.Context) error { return p.deadLetterJob(ctx, ws, ref, params) })
	if r.Outcome == OutcomeSucceeded {
		log.Warn("job dead-lettered", zap.Stringer("reason", reason), zap.String("error", jobs.Headline(details, maxLogLine)))
		r = Result{Outcome: OutcomeDeadLettered, Reason: reason}
	}
	return r
}

// write records an outcome, retrying through a store outage for as long as
// the processor runs: the job keeps its heartbeat meanwhile, so nothing is
// rescued and nothing is lost. A lost lease ends it at once. It reports
// OutcomeSucceeded when the write went through.
func (p *Processor) write(log jobLogger, op string, fn func(context.Context) error) Result {
	wait := 100 * time.Millisecond
	for {
		var err error
		if p.batch != nil { // the batch call has its own bound
			err = fn(p.writesCtx)
		} else {
			ctx, cancel := context.WithTimeout(p.writesCtx, writeTimeout)
			err = fn(ctx)
			cancel()
		}
		switch {
		case err == nil:
			return Result{Outcome: OutcomeSucceeded}
		case errors.Is(err, jobs.ErrLeaseLost):
			log.Warn("lease lost: "+op+" changed nothing", zap.Error(err))
			return Result{Outcome: OutcomeLeaseLost}
		case errors.Is(err, jobs.ErrCancelled): // the store dead-lettered it instead
			log.Info("job cancelled: its cancel was requested before the "+op+" was written", zap.Error(err))
			return Result{Outcome: OutcomeDeadLettered, Reason: jobs.ReasonCancelled}
		case errors.Is(err, jobs.ErrInvalidArgument):
			log.Error(op+" refused by the store", zap.Error(err))
			return Result{Outcome: OutcomeUnsettled}
		}
		p.stats.storeErrors.Add(1)
		log.Warn(op+" failed; will retry", zap.Duration("wait", wait), zap.Error(err))
		t := time.NewTimer(wait)
		select {
		case <-p.writesCtx.Done():
			t.Stop()
			log.Warn(op+" abandoned at shutdown; rescue will settle the job", zap.Error(err))
			return Result{Outcome: OutcomeUnsettled}
		case <-t.C:
		}
		wait = min(wait*2, 5*time.Second)
	}
}
