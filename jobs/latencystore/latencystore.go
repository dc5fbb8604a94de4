// Package latencystore wraps a jobs.Store so that it costs what a database
// costs: every call takes a fixed delay (the round trip and the statement)
// plus a cost per row it touches, and at most Pool calls are served at
// once, as by a small connection pool. A store in memory answers in a
// microsecond and never queues, so a benchmark on it measures only the
// processor; on this wrapper the number of calls decides the throughput,
// as it does against SQL Server. It also counts the calls, by operation.
//
// Delays are exact to a few microseconds: time.Sleep alone sleeps a
// millisecond or more on many machines whatever it is asked, so one pacer
// goroutine naps (package nap) until each deadline and releases its
// waiters.
package latencystore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Config is what a call costs.
type Config struct {
	// Delay is the fixed cost of a call: round trip plus statement.
	Delay time.Duration
	// PerRow is added for every row a call reads or writes: each claimed
	// job, each job of a batch.
	PerRow time.Duration
	// Pool is the number of calls served at once; 0 is unlimited. Calls
	// beyond it wait their turn, as for a connection from a pool.
	Pool int
}

// Op names the calls Counts reports.
type Op int

// The operations counted, one per worker-side store method (batch forms
// count under their own names) and enqueues. Rescue and operator calls
// pass through at no cost and uncounted.
const (
	OpEnqueue Op = iota
	OpClaim
	OpStart
	OpHeartbeat
	OpComplete
	OpRetry
	OpDeadLetter
	OpRelease
	OpQueues
	OpStartMany
	OpCompleteMany
	OpRetryMany
	OpDeadLetterMany
	OpTransition
	OpSnooze
	OpProbe
	opCount
)

var opNames = [opCount]string{"enqueue", "claim", "start", "heartbeat", "complete", "retry", "dead-letter", "release",
	"queues", "start-many", "complete-many", "retry-many", "dead-letter-many", "transition", "snooze", "probe"}

// String names the operation.
func (o Op) String() string {
	if o >= 0 && o < opCount {
		return opNames[o]
	}
	return "unknown"
}

// WorkerOps are the calls a processor makes: Counts(WorkerOps...) is its
// cost in round trips.
var WorkerOps = []Op{OpClaim, OpStart, OpHeartbeat, OpComplete, OpRetry, OpDeadLetter, OpRelease, OpQueues,
	OpStartMany, OpCompleteMany, OpRetryMany, OpDeadLetterMany, OpTransition, OpSnooze, OpProbe}

// Store is the wrapper. Close stops its pacer.
type Store struct {
	jobs.Store
	cfg    Config
	slots  chan struct{} // nil when Pool is 0
	pace   *pacer
	counts [opCount]atomic.Int64
	rows   [opCount]atomic.Int64
}

// New wraps s. The wrapper offers the batch forms (jobs.BatchWorker),
// each at the cost of one call; Single() is the wrapper without them.
func New(s jobs.Store, cfg Config) *Store {
	w := &Store{Store: s, cfg: cfg}
	if cfg.Delay > 0 || cfg.PerRow > 0 {
		w.pace = newPacer()
	}
	if cfg.Pool > 0 {
		w.slots = make(chan struct{}, cfg.Pool)
	}
	return w
}

// Close stops the pacer goroutine, if the wrapper has a delay.
func (s *Store) Close() {
	if s.pace != nil {
		s.pace.close()
	}
}

// Count is the number of calls of op so far.
func (s *Store) Count(op Op) int64 { return s.counts[op].Load() }

// Counts is the number of calls of all the ops given.
func (s *Store) Counts(ops ...Op) int64 {
	var n int64
	for _, op := range ops {
		n += s.counts[op].Load()
	}
	return n
}

// Rows is the number of rows the calls of op touched.
func (s *Store) Rows(op Op) int64 { return s.rows[op].Load() }

// cost waits for a slot, then for the call's delay, and counts it. The
// slot is held while the inner call runs, as a connection is.
func (s *Store) cost(ctx context.Context, op Op, rows int) (release func(), err error) {
	s.counts[op].Add(1)
	s.rows[op].Add(int64(rows))
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d := s.cfg.Delay + time.Duration(rows)*s.cfg.PerRow; d > 0 && s.pace != nil {
		s.pace.wait(d)
	}
	if s.slots == nil {
		return func() {}, nil
	}
	return func() { <-s.slots }, nil
}

// call runs fn at the cost of op over rows.
func call[T any](s *Store, ctx context.Context, op Op, rows int, fn func() (T, error)) (T, error) {
	release, err := s.cost(ctx, op, rows)
	if err != nil {
		var zero T
		return zero, err
	}
	defer release()
	return fn()
}

// Enqueue implements jobs.Store at the cost of one call.
func (s *Store) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	return call(s, ctx, OpEnqueue, 1, func() (jobs.EnqueueResult, error) { return s.Store.Enqueue(ctx, p) })
}

// EnqueueMany implements jobs.Store at the cost of one call over its rows.
func (s *Store) EnqueueMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	return call(s, ctx, OpEnqueue, len(ps), func() ([]jobs.EnqueueResult, error) { return s.Store.EnqueueMany(ctx, ps) })
}

// Claim implements jobs.Store at the cost of one call over the rows it
// may take.
func (s *Store) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	return call(s, ctx, OpClaim, p.Limit, func() ([]*jobs.Job, error) { return s.Store.Claim(ctx, p) })
}

// ClaimHeld implements jobs.RateClaimer at the cost of one claim: the
// inner store's, or its Claim with no holds when it has none.
func (s *Store) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	return call(s, ctx, OpClaim, p.Limit, func() (jobs.ClaimResult, error) {
		if rc, ok := s.Store.(jobs.RateClaimer); ok {
			return rc.ClaimHeld(ctx, p)
		}
		got, err := s.Store.Claim(ctx, p)
		return jobs.ClaimResult{Jobs: got}, err
	})
}

// Start implements jobs.Store at the cost of one call.
func (s *Store) Start(ctx context.Context, ref jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	return call(s, ctx, OpStart, 1, func() (jobs.Started, error) { return s.Store.Start(ctx, ref, p) })
}

// Heartbeat implements jobs.Store at the cost of one call over its refs.
func (s *Store) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	return call(s, ctx, OpHeartbeat, len(refs), func() (jobs.HeartbeatResult, error) { return s.Store.Heartbeat(ctx, refs) })
}

// Snooze implements jobs.Store at the cost of one call.
func (s *Store) Snooze(ctx context.Context, ref jobs.LeaseRef, p jobs.SnoozeParams) error {
	_, err := call(s, ctx, OpSnooze, 1, func() (struct{}, error) { return struct{}{}, s.Store.Snooze(ctx, ref, p) })
	return err
}

// Complete implements jobs.Store at the cost of one call.
func (s *Store) Complete(ctx context.Context, ref jobs.LeaseRef) error {
	_, err := call(s, ctx, OpComplete, 1, func() (struct{}, error) { return struct{}{}, s.Store.Complete(ctx, ref) })
	return err
}

// Retry implements jobs.Store at the cost of one call.
func (s *Store) Retry(ctx context.Context, ref jobs.LeaseRef, p jobs.RetryParams) error {
	_, err := call(s, ctx, OpRetry, 1, func() (struct{}, error) { return struct{}{}, s.Store.Retry(ctx, ref, p) })
	return err
}

// DeadLetter implements jobs.Store at the cost of one call.
func (s *Store) DeadLetter(ctx context.Context, ref jobs.LeaseRef, p jobs.DeadLetterParams) error {
	_, err := call(s, ctx, OpDeadLetter, 1, func() (struct{}, error) { return struct{}{}, s.Store.DeadLetter(ctx, ref, p) })
	return err
}

// Release implements jobs.Store at the cost of one call over its refs.
func (s *Store) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	return call(s, ctx, OpRelease, len(refs), func() (int, error) { return s.Store.Release(ctx, refs) })
}

// Queues implements jobs.Store at the cost of one call.
func (s *Store) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	return call(s, ctx, OpQueues, 1, func() ([]jobs.QueueSettings, error) { return s.Store.Queues(ctx) })
}

// Probe implements jobs.Prober at the cost of one call: it asks the
// wrapped store, or answers true when that cannot tell.
func (s *Store) Probe(ctx context.Context, queues []string) (bool, error) {
	return call(s, ctx, OpProbe, 1, func() (bool, error) {
		if p, ok := s.Store.(jobs.Prober); ok {
			return p.Probe(ctx, queues)
		}
		return true, nil
	})
}
