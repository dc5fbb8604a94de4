package processor

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// errBatcherStopped answers a request made after the processor stopped
// (a handler abandoned at shutdown that returned later).
var errBatcherStopped = errors.New("processor: stopped; the outcome is left to rescue")

// slot is one worker's request to a batcher: each worker has its own and
// reuses it, since it waits for each answer before asking again, so a
// request allocates nothing.
type slot[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	lead bool          // set with a wake-up that hands this worker the lead
	done chan struct{} // one wake-up at a time: the lead, or the answer
}

func newSlot[Req, Res any]() *slot[Req, Res] { return &slot[Req, Res]{done: make(chan struct{}, 1)} }

// batcher coalesces what workers hand it into store calls, group-commit
// style (ADR 0018). When no call is in flight, the worker that asks makes
// the call itself, at once or after linger, with whatever has queued; while
// a call is in flight, requests queue, and the first of them leads the
// next call as soon as the one in flight returns, with all that queued (at
// most max). Every request gets its own answer, and its worker waits for
// it exactly as it would wait for a call of its own, so what a crash can
// lose does not change. No goroutine of its own: an uncontended request
// costs what a direct call costs.
type batcher[Req, Res any] struct {
	call func(ctx context.Context, reqs []Req) ([]Res, error)
	// one sends a batch of one: the store's one-job call, which costs the
	// same round trip and allocates no result slice.
	one    func(ctx context.Context, req Req) (Res, error)
	linger time.Duration
	max    int
	peers  int             // the workers that may ask: a linger ends once all have
	ctx    context.Context // bounds every call (the processor's writes)

	mu sync.Mutex
	// callCtx is the context of every call, cancelled by the watchdog when
	// one runs longer than writeTimeout (since is when the call in flight
	// began, zero when none is) and then made anew: one context for all
	// calls, so a call allocates none.
	callCtx    context.Context
	cancelCall context.CancelFunc
	since      time.Time
	queue      []*slot[Req, Res]
	busy       bool // a worker leads: a call is in flight or about to be
	stopped    bool

	// batch and reqs are the leader's buffers, reused: only the leader
	// touches them, and there is one at a time.
	batch []*slot[Req, Res]
	reqs  []Req
}

func newBatcher[Req, Res any](ctx context.Context, cfg Config, call func(context.Context, []Req) ([]Res, error),
	one func(context.Context, Req) (Res, error)) *batcher[Req, Res] {
	b := &batcher[Req, Res]{call: call, one: one, linger: cfg.BatchLinger, max: jobs.MaxWorkerBatch, peers: cfg.Concurrency, ctx: ctx}
	b.callCtx, b.cancelCall = context.WithCancel(ctx)
	return b
}

// do sends s.req in the next call and waits for its answer.
func (b *batcher[Req, Res]) do(s *slot[Req, Res]) (Res, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		var zero Res
		return zero, errBatcherStopped
	}
	b.queue = append(b.queue, s)
	leader := !b.busy
	b.busy = true
	b.mu.Unlock()
	if leader {
		if b.linger > 0 {
			b.lingerFor(b.linger) // company for the first request after a quiet spell
		}
		b.lead()
	}
	<-s.done
	for s.lead { // the previous leader handed this worker the next call
		s.lead = false
		b.lead()
		<-s.done
	}
	return s.res, s.err
}

// lead makes one call with what has queued (the leader's own request
// first among them), answers each request, and then hands the lead to
// the first request that queued meanwhile, or, if none did, gives it up.
func (b *batcher[Req, Res]) lead() {
	// Workers the last call answered are runnable now, about to queue
	// their next transition: one yield lets them, so they ride this call
	// instead of waiting for the next (two groups of workers that take
	// turns would each wait for two round trips per job). When nothing
	// else is runnable it returns at once; when every worker has queued
	// there is no one to wait for.
	b.mu.Lock()
	if len(b.queue) < b.peers {
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
	}
	n := min(len(b.queue), b.max)
	b.batch = append(b.batch[:0], b.queue[:n]...)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	ctx := b.callCtx
	b.since = time.Now()
	b.mu.Unlock()

	var res []Res
	var err error
	if len(b.batch) == 1 {
		s := b.batch[0]
		s.res, err = b.one(ctx, s.req)
	} else {
		b.reqs = b.reqs[:0]
		for _, s := range b.batch {
			b.reqs = append(b.reqs, s.req)
		}
		res, err = b.call(ctx, b.reqs)
		if err == nil && len(res) != len(b.batch) {
			err = errors.New("processor: the store answered a batch with the wrong number of results")
		}
	}
	b.mu.Lock()
	b.since = time.Time{}
	if ctx.Err() != nil && b.ctx.Err() == nil { // the watchdog cut this call
		b.callCtx, b.cancelCall = context.WithCancel(b.ctx)
	}
	b.mu.Unlock()
	for i, s := range b.batch {
		switch {
		case err != nil:
			var zero Res
			s.res, s.err = zero, err
		case res != nil:
			s.res, s.err = res[i], nil
		default: // a batch of one: s.res is set
			s.err = nil
		}
		s.done <- struct{}{}
	}
	clear(b.batch)
	// The buffers are free: only now may another worker lead.
	var next *slot[Req, Res]
	b.mu.Lock()
	if len(b.queue) > 0 {
		next = b.queue[0]
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	if next != nil {
		next.lead = true
		next.done <- struct{}{}
	}
}

// expire cuts the call in flight if it began more than limit before now.
func (b *batcher[Req, Res]) expire(now time.Time, limit time.Duration) {
	b.mu.Lock()
	if !b.since.IsZero() && now.Sub(b.since) > limit {
		b.cancelCall()
	}
	b.mu.Unlock()
}

// lingerFor waits d, or until every worker has queued a request, since
// then no one else can come. A linger is shorter than a millisecond, which
// time.Sleep cannot wait on many machines (it rounds up to the timer's
// resolution), and a sleeping thread holds its processor until the
// runtime notices, keeping from it the very workers being waited for: so
// the leader yields until the instant instead.
func (b *batcher[Req, Res]) lingerFor(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		b.mu.Lock()
		all := len(b.queue) >= b.peers
		b.mu.Unlock()
		if all {
			return
		}
		runtime.Gosched()
	}
}

// stop refuses requests from now on; a call in flight finishes and
// answers its requests, and what queued behind it still goes out.
func (b *batcher[Req, Res]) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
}

// batchers are a processor's coalescer of worker transitions: one call in
// flight carries the starts of some workers and the outcomes of others
// (jobs.BatchWorker.Transition), and a watchdog bounds it.
type batchers struct {
	watchDone chan struct{}
	all       *batcher[transition, transitionResult]
}

// transition is one worker's request: start, complete, retry or
// dead-letter one job, and, with an outcome, the start of the worker's
// next job (chained) in the same call.
type transition struct {
	kind       transitionKind
	ref        jobs.LeaseRef
	retry      jobs.RetryParams
	deadLetter jobs.DeadLetterParams
	// output is what the handler recorded (RecordOutput), written with a
	// complete or a dead letter; nil for none.
	output  json.RawMessage
	next    jobs.LeaseRef
	chained bool
}

type transitionKind uint8

const (
	transitionStart transitionKind = iota
	transitionComplete
	transitionRetry
	transitionDeadLetter
)

// transitionResult is one request's answer: the start's report (a start's,
// or the chained start's), and each job's own error (its lease lost, its
// parameters refused), nil if done.
type transitionResult struct {
	started jobs.Started
	err     error
	nextErr error
}

// writeTimeout bounds one store call of a worker's transition.
const writeTimeout = 30 * time.Second

func newBatchers(ctx context.Context, w jobs.Worker, bw jobs.BatchWorker, cfg Config) *batchers {
	// The leader's scratch: one call at a time uses it, and every answer
	// is copied out before the lead passes on.
	sc := &transitionScratch{bw: bw, t: jobs.Transitions{StartParams: cfg.startParams()}}
	one := func(ctx context.Context, t transition) (transitionResult, error) {
		var r transitionResult
		switch {
		case t.chained || t.output != nil: // no one-job call carries two jobs, or an output
			sc.one = append(sc.one[:0], t)
			rs, err := sc.send(ctx, sc.one)
			if err != nil {
				return r, err
			}
			return rs[0], nil
		case t.kind == transitionStart:
			r.started, r.err = w.Start(ctx, t.ref, sc.t.StartParams)
		case t.kind == transitionComplete:
			r.err = w.Complete(ctx, t.ref)
		case t.kind == transitionRetry:
			r.err = w.Retry(ctx, t.ref, t.retry)
		case t.kind == transitionDeadLetter:
			r.err = w.DeadLetter(ctx, t.ref, t.deadLetter)
		}
		return r, callError(r.err)
	}
	return &batchers{watchDone: make(chan struct{}), all: newBatcher(ctx, cfg, sc.send, one)}
}

// transitionScratch sends requests as one Transition, reusing its lists
// and results from call to call.
type transitionScratch struct {
	bw  jobs.BatchWorker
	t   jobs.Transitions
	at  []int // each request's place in its list, and its chained start's
	out []transitionResult
	one []transition
}

// send sends reqs as one Transition and hands each its answer. Starts are
// a list of their own, so a chained start commits before the outcome it
// rides with (ADR 0018). The answers are valid until the next send.
func (sc *transitionScratch) send(ctx context.Context, reqs []transition) ([]transitionResult, error) {
	t := &sc.t
	t.Starts, t.Completes, t.Retries, t.DeadLetters = t.Starts[:0], t.Completes[:0], t.Retries[:0], t.DeadLetters[:0]
	t.Outputs = t.Outputs[:0]
	at := append(sc.at[:0], make([]int, 2*len(reqs))...)
	sc.at = at
	for i, r := range reqs {
		switch r.kind {
		case transitionStart:
			at[2*i] = len(t.Starts)
			t.Starts = append(t.Starts, r.ref)
		case transitionComplete:
			at[2*i] = len(t.Completes)
			t.Completes = append(t.Completes, r.ref)
		case transitionRetry:
			at[2*i] = len(t.Retries)
			t.Retries = append(t.Retries, jobs.RetryItem{Ref: r.ref, Params: r.retry})
		case transitionDeadLetter:
			at[2*i] = len(t.DeadLetters)
			t.DeadLetters = append(t.DeadLetters, jobs.DeadLetterItem{Ref: r.ref, Params: r.deadLetter})
		}
		if r.output != nil && (r.kind == transitionComplete || r.kind == transitionDeadLetter) {
			t.Outputs = append(t.Outputs, jobs.OutputItem{Ref: r.ref, Output: r.output})
		}
		if r.chained {
			at[2*i+1] = len(t.Starts)
			t.Starts = append(t.Starts, r.next)
		}
	}
	res, err := sc.bw.Transition(ctx, sc.lists())
	clear(t.Retries) // the error texts and outputs are not kept past the call
	clear(t.DeadLetters)
	clear(t.Outputs)
	if err != nil {
		return nil, err
	}
	if len(res.Starts) != len(t.Starts) || len(res.Completes) != len(t.Completes) ||
		len(res.Retries) != len(t.Retries) || len(res.DeadLetters) != len(t.DeadLetters) {
		return nil, errors.New("processor: the store answered a batch with the wrong number of results")
	}
	out := append(sc.out[:0], make([]transitionResult, len(reqs))...)
	sc.out = out
	for i, r := range reqs {
		k := at[2*i]
		switch r.kind {
		case transitionStart:
			out[i] = transitionResult{started: res.Starts[k].Started, err: res.Starts[k].Err}
		case transitionComplete:
			out[i].err = res.Completes[k]
		case transitionRetry:
			out[i].err = res.Retries[k]
		case transitionDeadLetter:
			out[i].err = res.DeadLetters[k]
		}
		if r.chained {
			sr := res.Starts[at[2*i+1]]
			out[i].started, out[i].nextErr = sr.Started, sr.Err
		}
	}
	return out, nil
}

// lists is the call's Transitions, an empty list as nil: a store skips
// the lists it is not given.
func (sc *transitionScratch) lists() jobs.Transitions {
	t := sc.t
	if len(t.Starts) == 0 {
		t.Starts = nil
	}
	if len(t.Completes) == 0 {
		t.Completes = nil
	}
	if len(t.Retries) == 0 {
		t.Retries = nil
	}
	if len(t.DeadLetters) == 0 {
		t.DeadLetters = nil
	}
	if len(t.Outputs) == 0 {
		t.Outputs = nil
	}
	return t
}

// callError is err when it is about the call (the store unreachable, the
// context ended), nil when it is about the job alone (its lease lost, its
// parameters refused), as a batch call reports them.
func callError(err error) error {
	if err == nil || jobs.IsJobError(err) {
		return nil
	}
	return err
}

// watch cuts a call that runs longer than writeTimeout, checking every
// tick, until stop. A cut call fails its requests, and their workers
// retry them as they would retry a failed call of their own.
func (b *batchers) watch(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-b.watchDone:
			return
		case now := <-t.C:
			b.all.expire(now, writeTimeout)
		}
	}
}

func (b *batchers) stop() {
	close(b.watchDone)
	b.all.stop()
}

// workerSlots are one worker's request and execution timer, reused job
// after job, and the next job whose start rides with the outcome being
// written (nil when none does).
type workerSlots struct {
	t     *slot[transition, transitionResult]
	chain *run
	// output is what the handler of the job being settled recorded.
	output json.RawMessage
	deadline
}

func newWorkerSlots() *workerSlots {
	return &workerSlots{t: newSlot[transition, transitionResult]()}
}

// close stops the worker's timer.
func (ws *workerSlots) close() { ws.disarm() }

// do sends one transition of a worker through the batcher.
func (p *Processor) do(ws *workerSlots, t transition) (transitionResult, error) {
	ws.t.req = t
	r, err := p.batch.all.do(ws.t)
	if err != nil {
		return transitionResult{}, err
	}
	return r, nil
}

// startParams is what every start tells the store: the execution timeout
// of a queue that sets none, and the longest this processor lets pass
// between two heartbeats of the job, which the store records so that
// rescue waits at least 3 x that much silence before it calls the job a
// zombie (jobs.ZombieTimeout), whatever the queue's zombie timeout.
func (c Config) startParams() jobs.StartParams {
	return jobs.StartParams{DefaultTimeout: c.DefaultTimeout, HeartbeatMax: c.HeartbeatIntervalMax}
}

// startJob starts one job, in the next batch when the store has them;
// ctx bounds the one-job call only (a batch call has its own bound).
//
// A start whose kind brings its own parameters (a timeout, a zombie
// policy) is a one-job call: a batch carries one StartParams for all its
// starts (jobs.Transitions), so such a start neither batches nor chains.
func (p *Processor) startJob(ctx context.Context, ws *workerSlots, ref jobs.LeaseRef, sp jobs.StartParams) (jobs.Started, error) {
	if p.batch == nil || sp != p.cfg.startParams() {
		return p.store.Start(ctx, ref, sp)
	}
	r, err := p.do(ws, transition{kind: transitionStart, ref: ref})
	if err != nil {
		return jobs.Started{}, err
	}
	return r.started, r.err
}

// outcome sends t, an outcome, in the next batch, with the start of
// ws.chain when that is still unanswered, and records the start's answer.
func (p *Processor) outcome(ws *workerSlots, t transition) error {
	next := ws.chain
	if next != nil && !next.answered && next.start == p.cfg.startParams() {
		t.next, t.chained = next.beat.ref, true
	}
	r, err := p.do(ws, t)
	if err == nil && t.chained {
		next.answer(r.started, r.nextErr)
	}
	return answer(r.err, err)
}

// completeJob, retryJob and deadLetterJob write one outcome, in the next
// batch when the store has them; ctx bounds the one-job call only.
func (p *Processor) completeJob(ctx context.Context, ws *workerSlots, ref jobs.LeaseRef) error {
	if p.batch == nil {
		return p.store.Complete(ctx, ref)
	}
	return p.outcome(ws, transition{kind: transitionComplete, ref: ref, output: ws.output})
}

func (p *Processor) retryJob(ctx context.Context, ws *workerSlots, ref jobs.LeaseRef, params jobs.RetryParams) error {
	if p.batch == nil {
		return p.store.Retry(ctx, ref, params)
	}
	return p.outcome(ws, transition{kind: transitionRetry, ref: ref, retry: params})
}

func (p *Processor) deadLetterJob(ctx context.Context, ws *workerSlots, ref jobs.LeaseRef, params jobs.DeadLetterParams) error {
	if p.batch == nil {
		return p.store.DeadLetter(ctx, ref, params)
	}
	return p.outcome(ws, transition{kind: transitionDeadLetter, ref: ref, deadLetter: params, output: ws.output})
}

// answer is a batch request's error: the call's, else the job's own.
func answer(own, call error) error {
	if call != nil {
		return call
	}
	return own
}
