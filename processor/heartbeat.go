package processor

import (
	"container/heap"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// MaxHeartbeatBatch caps the jobs one heartbeat store call carries.
const MaxHeartbeatBatch = 500

// ErrCancelled is the cause of a handler's context when an operator
// cancelled its job (Client.Cancel): a handler that wants to tell it from
// a shutdown or a timeout tests errors.Is(context.Cause(ctx), ErrCancelled).
// If the handler then returns an error the job goes to the DLQ with reason
// Cancelled; if it returns nil its work finished and the job is archived.
var ErrCancelled = errors.New("processor: job cancelled by an operator")

// Causes a running job's context is cancelled with.
var (
	errLeaseLost        = errors.New("lease lost: the job was rescued or claimed again")
	errHeartbeatFailure = errors.New("heartbeats failed too many times in a row")
	errShutdown         = errors.New("processor shutting down")
	errExecutionTimeout = errors.New("execution timeout")
)

// beat is one running job's heartbeat schedule.
type beat struct {
	ref jobs.LeaseRef
	// due is when this beat must be sent; earliest is when it may ride
	// along on another beat's call. Both are set from the last beat, so
	// the gap between a job's beats stays within [min, max].
	due, earliest time.Time

	failures int
	cancel   context.CancelCauseFunc
	index    int  // in the heap; -1 while a call carries it
	removed  bool // the job finished; do not schedule it again
	// finishing: the handler returned and its outcome is being written; a
	// "lost" answer then means the write won, not that the lease was lost.
	finishing bool
	// failed: the last call that carried this beat failed.
	failed bool
	// cancelled: the job's handler was cancelled at an operator's request.
	cancelled bool
	// pending: the job's start has gone out (alone or chained with the
	// worker's last outcome) and its answer is not in: the start may have
	// committed with its reply lost, so the job is beaten from before the
	// start is sent, and a "lost" answer only means it is still Fetched.
	pending bool
	// sentPending: the beat was pending when its call went out, so a
	// "lost" in that call's answer proves nothing even if the start was
	// confirmed while the call was out.
	sentPending bool
	// prog is the progress the handler last reported (Progress);
	// progDirty says no call has carried it yet.
	prog      jobs.ProgressItem
	progDirty bool
	log       jobLogger
}

type beatHeap []*beat

func (h beatHeap) Len() int           { return len(h) }
func (h beatHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h beatHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *beatHeap) Push(x any) {
	b := x.(*beat)
	b.index = len(*h)
	*h = append(*h, b)
}
func (h *beatHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	b.index = -1
	return b
}

// heartbeater keeps every running job alive. Each job has its own jittered
// interval in [min, max]; when the earliest beat falls due, every beat due
// within the coalescing window that is at least min past its last beat
// rides along in the same store call, so the number of calls grows with how
// often beats fall due, not with the number of jobs, and no job beats more
// often than min.
type heartbeater struct {
	store jobs.Worker
	// reporter is store as a jobs.Reporter (nil if it is not one): a call
	// that carries progress goes through it.
	reporter  jobs.Reporter
	min, max  time.Duration
	window    time.Duration
	retryWait time.Duration
	threshold int
	cancelOn  bool
	log       *zap.Logger
	stats     *counters
	observer  Observer

	mu    sync.Mutex
	heap  beatHeap
	beats map[jobs.LeaseRef]*beat
	rng   *rand.Rand

	wake chan struct{}
	// failedBeats counts beats whose last call failed; failing mirrors
	// failedBeats > 0 for the fetch loop, which claims nothing while it is
	// set. Counting beats, not calls, clears the state when the last failing
	// job finishes or is cancelled, even if no later call is ever sent.
	failedBeats int
	failing     atomic.Bool
}

func newHeartbeater(store jobs.Worker, cfg Config, stats *counters) *heartbeater {
	window := (cfg.HeartbeatIntervalMax - cfg.HeartbeatIntervalMin) / 2
	if window <= 0 {
		window = cfg.HeartbeatIntervalMin / 10
	}
	return &heartbeater{
		store: store, min: cfg.HeartbeatIntervalMin, max: cfg.HeartbeatIntervalMax,
		window: window, retryWait: max(cfg.HeartbeatIntervalMin/4, time.Millisecond),
		threshold: cfg.HeartbeatFailureThreshold, cancelOn: cfg.CancelOnHeartbeatFailure,
		log: cfg.Logger, stats: stats, observer: cfg.Observer,
		beats: map[jobs.LeaseRef]*beat{},
		rng:   rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		wake:  make(chan struct{}, 1),
	}
}

// schedule sets b's next beat a jittered interval after from.
func (h *heartbeater) schedule(b *beat, from time.Time) {
	b.earliest = from.Add(h.min)
	b.due = from.Add(h.min + time.Duration(h.rng.Int64N(int64(h.max-h.min)+1)))
}

// add schedules b, the beat of a job whose start is about to go out (its
// ref, cancel and log set, pending true): it is the heartbeater's until
// remove. Beating before the start is sent is what keeps a start whose
// reply is lost from leaving a Processing job with no heartbeat (ADR 0018).
func (h *heartbeater) add(b *beat) {
	ref := b.ref
	h.mu.Lock()
	h.schedule(b, time.Now())
	h.beats[ref] = b
	heap.Push(&h.heap, b)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// started marks that a job's start was confirmed: its beats are now a
// running job's, scheduled from now, so the first beat after the start
// keeps the gap within [min, max] as every later one does.
func (h *heartbeater) started(b *beat) {
	h.mu.Lock()
	b.pending = false
	if b.index >= 0 {
		h.schedule(b, time.Now())
		heap.Fix(&h.heap, b.index)
	}
	h.mu.Unlock()
}

// progress records a running job's progress for its next beat.
func (h *heartbeater) progress(b *beat, it jobs.ProgressItem) {
	h.mu.Lock()
	b.prog, b.progDirty = it, true
	h.mu.Unlock()
}

// finishing marks that a job's outcome is being written.
func (h *heartbeater) finishing(ref jobs.LeaseRef) {
	h.mu.Lock()
	if b := h.beats[ref]; b != nil {
		b.finishing = true
	}
	h.mu.Unlock()
}

// remove stops beating for a job.
func (h *heartbeater) remove(ref jobs.LeaseRef) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.beats[ref]
	if b == nil {
		return
	}
	h.dropLocked(b)
	if b.index >= 0 {
		heap.Remove(&h.heap, b.index)
	}
}

// dropLocked forgets a beat that is out of the heap or about to leave it.
func (h *heartbeater) dropLocked(b *beat) {
	delete(h.beats, b.ref)
	b.removed = true
	h.setFailedLocked(b, false)
}

// setFailedLocked records whether b's last call failed.
func (h *heartbeater) setFailedLocked(b *beat, failed bool) {
	if b.failed == failed {
		return
	}
	b.failed = failed
	if failed {
		h.failedBeats++
	} else {
		h.failedBeats--
	}
	h.failing.Store(h.failedBeats > 0)
}

// run beats until ctx ends.
func (h *heartbeater) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		wait := time.Hour
		if len(h.heap) > 0 {
			wait = time.Until(h.heap[0].due)
		}
		h.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-h.wake:
				continue
			case <-timer.C:
			}
		}
		// Take everything due now first: a beat rescheduled by a failed
		// call must wait for the next wake, not ride this one again.
		due := h.due()
		for len(due) > 0 {
			n := min(len(due), MaxHeartbeatBatch)
			h.send(ctx, due[:n])
			due = due[n:]
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// due takes out of the heap every beat that is due, and every beat due
// within the window that may already ride along. A beat in the window that
// may not yet ride along goes back: it is due soon and waits for that call.
func (h *heartbeater) due() []*beat {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	horizon := now.Add(h.window)
	var out, early []*beat
	for len(h.heap) > 0 && !h.heap[0].due.After(horizon) {
		b := heap.Pop(&h.heap).(*beat)
		if b.due.After(now) && b.earliest.After(now) {
			early = append(early, b)
			continue
		}
		b.sentPending = b.pending
		out = append(out, b)
	}
	for _, b := range early {
		heap.Push(&h.heap, b)
	}
	return out
}

func (h *heartbeater) send(ctx context.Context, batch []*beat) {
	refs := make([]jobs.LeaseRef, len(batch))
	for i, b := range batch {
		refs[i] = b.ref
	}
	// Only the beats whose progress changed carry it: the call's bytes
	// grow by what changed, and a call with none is a plain Heartbeat.
	var progress []jobs.ProgressItem
	var carried []*beat
	h.mu.Lock()
	for _, b := range batch {
		if b.progDirty {
			progress, carried = append(progress, b.prog), append(carried, b)
			b.progDirty = false
		}
	}
	h.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, h.min)
	var res jobs.HeartbeatResult
	var err error
	if len(progress) > 0 && h.reporter != nil {
		res, err = h.reporter.HeartbeatProgress(callCtx, refs, progress)
	} else {
		res, err = h.store.Heartbeat(callCtx, refs)
	}
	cancel()
	if err != nil && len(carried) > 0 {
		// Not carried after all: the next call takes it, unless the
		// handler reported newer progress meanwhile.
		h.mu.Lock()
		for i, b := range carried {
			if !b.progDirty && b.prog == progress[i] {
				b.progDirty = true
			}
		}
		h.mu.Unlock()
	}
	h.stats.hbCalls.Add(1)
	h.stats.hbBeats.Add(int64(len(batch)))
	lostSet := make(map[jobs.LeaseRef]bool, len(res.Lost))
	for _, r := range res.Lost {
		lostSet[r] = true
	}
	var cancelSet map[jobs.LeaseRef]bool
	if len(res.CancelRequested) > 0 {
		cancelSet = make(map[jobs.LeaseRef]bool, len(res.CancelRequested))
		for _, r := range res.CancelRequested {
			cancelSet[r] = true
		}
	}
	if err != nil && ctx.Err() == nil {
		h.stats.storeErrors.Add(1)
		h.log.Warn("heartbeat failed", zap.Int("jobs", len(batch)), zap.Error(err))
	}

	// Degraded beats are reported after the lock is released: a slow
	// observer or log sink must not hold up every worker's add and remove.
	var degraded []*beat
	defer func() {
		for _, b := range degraded {
			h.stats.hbFailures.Add(1)
			h.observer.HeartbeatDegraded(b.ref)
			b.log.Error("heartbeat degraded: consecutive failures reached the threshold",
				zap.Int("failures", h.threshold), zap.Bool("cancel", h.cancelOn), zap.Error(err))
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for _, b := range batch {
		if b.removed {
			continue
		}
		switch {
		case err != nil:
			h.setFailedLocked(b, true)
			b.failures++
			if b.failures == h.threshold {
				degraded = append(degraded, b)
			}
			// A pending start has no handler to cancel, and dropping its
			// beat could leave a started job with none: it keeps beating.
			if h.cancelOn && b.failures >= h.threshold && !b.pending {
				b.cancel(errHeartbeatFailure)
				h.dropLocked(b)
				continue
			}
			b.due = now.Add(h.retryWait)
			b.earliest = b.due
		case lostSet[b.ref] && b.sentPending:
			// Not started yet (still Fetched), or its lease is gone: the
			// start's own answer will tell which; until then it beats on.
			h.setFailedLocked(b, false)
			b.failures = 0
			h.schedule(b, now)
		case lostSet[b.ref]:
			if !b.finishing {
				b.cancel(errLeaseLost)
			}
			h.dropLocked(b)
			continue
		default:
			// An operator asked to cancel the job: cancel its handler once,
			// and go on beating, so the job is not taken for a zombie while
			// the handler winds down. An outcome already being written is
			// left alone.
			if cancelSet[b.ref] && !b.cancelled && !b.finishing {
				b.cancelled = true
				h.stats.cancelRequests.Add(1)
				b.cancel(ErrCancelled)
				b.log.Info("cancel requested: cancelling the handler")
			}
			h.setFailedLocked(b, false)
			b.failures = 0
			h.schedule(b, now)
		}
		heap.Push(&h.heap, b)
	}
}
