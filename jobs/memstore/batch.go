package memstore

import (
	"context"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.BatchWorker = (*Store)(nil)

// smallBatch is the size up to which a batch looks for repeated refs by
// scanning instead of with a map.
const smallBatch = 16

// each applies one transition to each item, in order, at one instant,
// under s.mu. A ref repeated within the list gets the result of its first
// occurrence (jobs.BatchWorker), so a repeat is not reported lost.
func each[T, R any](items []T, ref func(T) jobs.LeaseRef, apply func(T, time.Time) R, now time.Time) []R {
	if len(items) == 0 {
		return nil
	}
	out := make([]R, len(items))
	// A small batch finds its repeats by a scan: no map to allocate.
	var first map[jobs.LeaseRef]int
	if len(items) > smallBatch {
		first = make(map[jobs.LeaseRef]int, len(items))
	}
	earlier := func(i int, r jobs.LeaseRef) (int, bool) {
		if first == nil {
			for j := range i {
				if ref(items[j]) == r {
					return j, true
				}
			}
			return 0, false
		}
		j, seen := first[r]
		if !seen {
			first[r] = i
		}
		return j, seen
	}
	for i, it := range items {
		if j, seen := earlier(i, ref(it)); seen {
			out[i] = out[j]
			continue
		}
		out[i] = apply(it, now)
	}
	return out
}

func self(r jobs.LeaseRef) jobs.LeaseRef { return r }

func retryRef(it jobs.RetryItem) jobs.LeaseRef           { return it.Ref }
func deadLetterRef(it jobs.DeadLetterItem) jobs.LeaseRef { return it.Ref }

// Transition implements jobs.BatchWorker: every list under one lock, at
// one instant.
func (s *Store) Transition(ctx context.Context, t jobs.Transitions) (jobs.TransitionResults, error) {
	var r jobs.TransitionResults
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if err := jobs.CheckBatchSize(t.Len()); err != nil {
		return r, err
	}
	if len(t.Starts) > 0 {
		if err := t.StartParams.Validate(); err != nil {
			return r, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r.Starts = each(t.Starts, self, func(ref jobs.LeaseRef, now time.Time) jobs.StartResult {
		st, err := s.start(ref, t.StartParams, now)
		return jobs.StartResult{Started: st, Err: err}
	}, now)
	r.Completes = each(t.Completes, self, s.complete, now)
	r.Retries = each(t.Retries, retryRef, func(it jobs.RetryItem, now time.Time) error {
		if err := it.Params.Validate(); err != nil {
			return err
		}
		return s.retry(it.Ref, it.Params, now)
	}, now)
	r.DeadLetters = each(t.DeadLetters, deadLetterRef, func(it jobs.DeadLetterItem, now time.Time) error {
		if err := it.Params.Validate(); err != nil {
			return err
		}
		return s.deadLetter(it.Ref, it.Params, now)
	}, now)
	return r, nil
}

// results is r or, for an empty list, an empty result slice.
func results[R any](r []R) []R {
	if r == nil {
		return []R{}
	}
	return r
}

// StartMany implements jobs.BatchWorker.
func (s *Store) StartMany(ctx context.Context, refs []jobs.LeaseRef, p jobs.StartParams) ([]jobs.StartResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.Transition(ctx, jobs.Transitions{Starts: refs, StartParams: p})
	return results(r.Starts), err
}

// CompleteMany implements jobs.BatchWorker.
func (s *Store) CompleteMany(ctx context.Context, refs []jobs.LeaseRef) ([]error, error) {
	r, err := s.Transition(ctx, jobs.Transitions{Completes: refs})
	return results(r.Completes), err
}

// RetryMany implements jobs.BatchWorker.
func (s *Store) RetryMany(ctx context.Context, items []jobs.RetryItem) ([]error, error) {
	r, err := s.Transition(ctx, jobs.Transitions{Retries: items})
	return results(r.Retries), err
}

// DeadLetterMany implements jobs.BatchWorker.
func (s *Store) DeadLetterMany(ctx context.Context, items []jobs.DeadLetterItem) ([]error, error) {
	r, err := s.Transition(ctx, jobs.Transitions{DeadLetters: items})
	return results(r.DeadLetters), err
}
