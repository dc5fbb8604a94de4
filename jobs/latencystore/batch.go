package latencystore

import (
	"context"
	"fmt"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.Reporter = (*Store)(nil)

// StartMany implements jobs.BatchWorker at the cost of one call over its
// refs.
func (s *Store) StartMany(ctx context.Context, refs []jobs.LeaseRef, p jobs.StartParams) ([]jobs.StartResult, error) {
	return call(s, ctx, OpStartMany, len(refs), func() ([]jobs.StartResult, error) { return s.batch().StartMany(ctx, refs, p) })
}

// CompleteMany implements jobs.BatchWorker at the cost of one call over its
// refs.
func (s *Store) CompleteMany(ctx context.Context, refs []jobs.LeaseRef) ([]error, error) {
	return call(s, ctx, OpCompleteMany, len(refs), func() ([]error, error) { return s.batch().CompleteMany(ctx, refs) })
}

// RetryMany implements jobs.BatchWorker at the cost of one call over its
// items.
func (s *Store) RetryMany(ctx context.Context, items []jobs.RetryItem) ([]error, error) {
	return call(s, ctx, OpRetryMany, len(items), func() ([]error, error) { return s.batch().RetryMany(ctx, items) })
}

// DeadLetterMany implements jobs.BatchWorker at the cost of one call over
// its items.
func (s *Store) DeadLetterMany(ctx context.Context, items []jobs.DeadLetterItem) ([]error, error) {
	return call(s, ctx, OpDeadLetterMany, len(items), func() ([]error, error) { return s.batch().DeadLetterMany(ctx, items) })
}

// Transition implements jobs.BatchWorker at the cost of one call over all
// its jobs.
func (s *Store) Transition(ctx context.Context, t jobs.Transitions) (jobs.TransitionResults, error) {
	return call(s, ctx, OpTransition, t.Len(), func() (jobs.TransitionResults, error) { return s.batch().Transition(ctx, t) })
}

// batch is the wrapped store's batch forms. A store without its own gets
// one-job calls made past the wrapper, so they cost what the one batch
// call costs: to measure such a store fairly, hand the processor Single().
func (s *Store) batch() jobs.BatchWorker { return jobs.Batches(s.Store) }

// Single returns the wrapper without its batch forms: the store as a
// processor sees one that has none, for measuring the one-job path.
func (s *Store) Single() jobs.Store { return single{s} }

type single struct{ jobs.Store }

// HeartbeatProgress implements jobs.Reporter at the cost of one call over
// its refs, as Heartbeat: the progress rides on the beat. The wrapped store
// must be a jobs.Reporter.
func (s *Store) HeartbeatProgress(ctx context.Context, refs []jobs.LeaseRef, progress []jobs.ProgressItem) (jobs.HeartbeatResult, error) {
	r, ok := s.Store.(jobs.Reporter)
	if !ok {
		return jobs.HeartbeatResult{}, fmt.Errorf("latencystore: the wrapped %T keeps no progress (it is not a jobs.Reporter)", s.Store)
	}
	return call(s, ctx, OpHeartbeat, len(refs), func() (jobs.HeartbeatResult, error) { return r.HeartbeatProgress(ctx, refs, progress) })
}
