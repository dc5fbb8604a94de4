package chokaqtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// ErrNotRunnable is returned by Worker.WorkJob for a job it cannot run
// alone: one that is not Pending, on a paused queue, or that other due
// jobs of its queue would be claimed before.
var ErrNotRunnable = errors.New("chokaqtest: job cannot be worked")

// WorkerConfig tunes a Worker. The zero value runs jobs with the
// processor's defaults, except that retries get no jitter, so
// Outcome.Job.ScheduledAt of a retry is exact.
type WorkerConfig struct {
	// Retry is the backoff of failed jobs (NoJitter unless set).
	Retry processor.RetryPolicy
	// ExecutionTimeout is the deadline of one execution (the processor's
	// DefaultTimeout, 15m, unless set). It runs on the wall clock, like
	// the handler.
	ExecutionTimeout time.Duration
	// Start is the instant the store's clock starts at (the current time,
	// to the second, unless set).
	Start time.Time
}

// Worker runs jobs one at a time through a real processor over an
// in-memory store with a manual clock. Its Client enqueues onto that store,
// so code under test can be handed it. Safe for use by one test at a time.
type Worker struct {
	reg    *chokaq.Registry
	cfg    WorkerConfig
	clock  *memstore.ManualClock
	store  *memstore.Store
	client *chokaq.Client
}

// NewWorker returns a Worker over a new in-memory store that runs the
// handlers of reg.
func NewWorker(ctx context.Context, reg *chokaq.Registry, cfg *WorkerConfig) (*Worker, error) {
	if reg == nil {
		return nil, errors.New("chokaqtest: NewWorker: nil registry")
	}
	var c WorkerConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Retry.JitterMaxDelay == 0 {
		c.Retry.JitterMaxDelay = processor.NoJitter
	}
	if c.Start.IsZero() {
		c.Start = time.Now().Truncate(time.Second)
	}
	clock := memstore.NewManualClock(c.Start)
	store := memstore.New(memstore.WithClock(clock.Now))
	client, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("chokaqtest: %w", err)
	}
	return &Worker{reg: reg, cfg: c, clock: clock, store: store, client: client}, nil
}

// Client enqueues onto the Worker's store; it runs no processor of its own.
func (w *Worker) Client() *chokaq.Client { return w.client }

// Clock is the store's clock: advance it to make a retry or a scheduled
// job due.
func (w *Worker) Clock() *memstore.ManualClock { return w.clock }

// Store is the Worker's in-memory store, for assertions beyond Outcome.
func (w *Worker) Store() *memstore.Store { return w.store }

// Outcome is what one execution became.
type Outcome struct {
	// Result is the processor's own account: Outcome (succeeded, retried,
	// dead_lettered), the dead-letter Reason, the handler's error (a
	// *chokaq.PanicError for a panic) and the run time.
	processor.Result
	// Job is the job as the store holds it afterwards: in the archive, back
	// in the hot table as Pending (ScheduledAt is the retry's due time,
	// LastError the failure), or in the DLQ (FailureReason, ErrorDetails).
	Job *jobs.Job
	// Attempt is the attempt this execution was (1 for the first).
	Attempt int
}

// Work enqueues args (opts may be nil) and runs the new job once.
func (w *Worker) Work(ctx context.Context, args chokaq.Args, opts *chokaq.EnqueueOpts) (*Outcome, error) {
	r, err := w.client.Enqueue(ctx, args, opts)
	if err != nil {
		return nil, err
	}
	return w.WorkJob(ctx, r.ID)
}

// WorkJob runs the Pending job id once. A job not yet due (a retry, or one
// enqueued with a delay) is made due by moving the clock to its ScheduledAt,
// so a test can work a job attempt after attempt:
//
//	for o.Outcome == processor.OutcomeRetried { o, err = w.WorkJob(ctx, id) }
func (w *Worker) WorkJob(ctx context.Context, id int64) (*Outcome, error) {
	j, err := w.store.GetJob(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("chokaqtest: %w", err)
	}
	switch {
	case j.Table != jobs.TableHot:
		return nil, fmt.Errorf("%w: job %d is in the %s table, not Pending", ErrNotRunnable, id, j.Table)
	case j.Status != jobs.StatusPending:
		return nil, fmt.Errorf("%w: job %d is %s, not Pending", ErrNotRunnable, id, j.Status)
	}
	if wait := j.ScheduledAt.Sub(w.clock.Now()); wait > 0 {
		w.clock.Advance(wait)
	}
	if err := w.runsAlone(ctx, j); err != nil {
		return nil, err
	}

	obs := &finish{id: id, done: make(chan processor.Result, 1)}
	p, err := processor.New(&claimOnce{Store: w.store, id: id}, w.reg, processor.Config{
		WorkerID:       "chokaqtest",
		Queues:         []string{j.Queue},
		Concurrency:    1,
		PrefetchSize:   1,
		BatchSize:      1,
		PollInterval:   processor.MinPollInterval,
		DefaultTimeout: w.cfg.ExecutionTimeout,
		Retry:          w.cfg.Retry,
		Observer:       obs,
	})
	if err != nil {
		return nil, fmt.Errorf("chokaqtest: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("chokaqtest: %w", err)
	}
	var res processor.Result
	select {
	case res = <-obs.done:
	case <-ctx.Done():
	}
	// Stop gets its own context: a test whose ctx ended must still get its
	// handler cancelled and the job settled before the store is read.
	if err := p.Stop(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("chokaqtest: stop the processor: %w", err)
	}
	if res.Outcome == 0 {
		return nil, fmt.Errorf("chokaqtest: job %d did not finish: %w", id, ctx.Err())
	}
	after, err := w.store.GetJob(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("chokaqtest: %w", err)
	}
	return &Outcome{Result: res, Job: after, Attempt: obs.attempt}, nil
}

// runsAlone refuses a job the processor would not claim first (see
// jobs.ClaimsBefore): only then does WorkJob run exactly the job it was
// asked to.
func (w *Worker) runsAlone(ctx context.Context, j *jobs.Job) error {
	qs, err := w.store.Queues(ctx)
	if err != nil {
		return fmt.Errorf("chokaqtest: %w", err)
	}
	for _, q := range qs {
		if q.Name == j.Queue && q.Paused {
			return fmt.Errorf("%w: job %d: queue %q is paused", ErrNotRunnable, j.ID, j.Queue)
		}
	}
	pending := jobs.StatusPending
	now := w.clock.Now()
	var others []int64
	err = walk(ctx, w.store, jobs.TableHot, jobs.Filter{Queue: j.Queue, Status: &pending}, func(o *jobs.Job) error {
		if o.ID != j.ID && !o.ScheduledAt.After(now) && jobs.ClaimsBefore(o, j) {
			others = append(others, o.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: job %d: %d other due jobs of queue %q come first (IDs %v); work them first or use another queue",
			ErrNotRunnable, j.ID, len(others), j.Queue, others)
	}
	return nil
}

// finish is the observer that reports the outcome of one job.
type finish struct {
	id      int64
	mu      sync.Mutex
	attempt int
	done    chan processor.Result
}

func (f *finish) JobsClaimed([]*jobs.Job) {}

func (f *finish) JobStarted(j *jobs.Job, st jobs.Started) {
	if j.ID == f.id {
		f.mu.Lock()
		f.attempt = st.AttemptCount
		f.mu.Unlock()
	}
}

func (f *finish) JobFinished(j *jobs.Job, r processor.Result) {
	if j.ID != f.id {
		return
	}
	select {
	case f.done <- r:
	default:
	}
}

func (f *finish) HeartbeatDegraded(jobs.LeaseRef) {}

// claimOnce lets the processor claim the one job WorkJob runs, and nothing
// after it: without it the processor would claim the next due job while
// the first one settles. It is the in-memory store otherwise, a
// jobs.Reporter, so handlers' outputs and progress are kept.
type claimOnce struct {
	*memstore.Store
	id      int64
	mu      sync.Mutex
	claimed bool
}

// ClaimHeld hides the memory store's own: the processor must claim
// through Claim, the one claim of the one job.
func (c *claimOnce) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	got, err := c.Claim(ctx, p)
	return jobs.ClaimResult{Jobs: got}, err
}

func (c *claimOnce) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed {
		return nil, nil
	}
	got, err := c.Store.Claim(ctx, p)
	for _, j := range got {
		if j.ID != c.id { // runsAlone checked this cannot happen
			_, _ = c.Store.Release(ctx, []jobs.LeaseRef{j.Ref()})
			continue
		}
		c.claimed = true
		return []*jobs.Job{j}, err
	}
	return nil, err
}
