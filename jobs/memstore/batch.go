package memstore

import (
	"context"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.BatchWorker = (*Store)(nil)

// batch applies one transition to each item under one lock, in order, at
// one instant. A ref repeated within the batch gets the result of its first
// occurrence (jobs.BatchWorker), so a repeat is not reported lost.
func batch[T, R any](ctx context.Context, s *Store, items []T, ref func(T) jobs.LeaseRef, apply func(T, time.Time) R) ([]R, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := jobs.CheckBatchSize(len(items)); err != nil {
		return nil, err
	}
	out := make([]R, len(items))
	if len(items) == 0 {
		return out, nil
	}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for i, it := range items {
		if j, seen := earlier(i, ref(it)); seen {
			out[i] = out[j]
			continue
		}
		out[i] = apply(it, now)
	}
	return out, nil
}

func self(r jobs.LeaseRef) jobs.LeaseRef { return r }

// smallBatch is the size up to which a batch looks for repeated refs by
// scanning instead of with a map.
const smallBatch = 16

// StartMany implements jobs.BatchWorker.
func (s *Store) StartMany(ctx context.Context, refs []jobs.LeaseRef, p jobs.StartParams) ([]jobs.StartResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return batch(ctx, s, refs, self, func(r jobs.LeaseRef, now time.Time) jobs.StartResult {
		st, err := s.start(r, p, now)
		return jobs.StartResult{Started: st, Err: err}
	})
}

// CompleteMany implements jobs.BatchWorker.
func (s *Store) CompleteMany(ctx context.Context, refs []jobs.LeaseRef) ([]error, error) {
	return batch(ctx, s, refs, self, func(r jobs.LeaseRef, now time.Time) error { return s.complete(r, now) })
}

// RetryMany implements jobs.BatchWorker.
func (s *Store) RetryMany(ctx context.Context, items []jobs.RetryItem) ([]error, error) {
	return batch(ctx, s, items, func(it jobs.RetryItem) jobs.LeaseRef { return it.Ref }, func(it jobs.RetryItem, now time.Time) error {
		if err := it.Params.Validate(); err != nil {
			return err
		}
		return s.retry(it.Ref, it.Params, now)
	})
}

// DeadLetterMany implements jobs.BatchWorker.
func (s *Store) DeadLetterMany(ctx context.Context, items []jobs.DeadLetterItem) ([]error, error) {
	return batch(ctx, s, items, func(it jobs.DeadLetterItem) jobs.LeaseRef { return it.Ref }, func(it jobs.DeadLetterItem, now time.Time) error {
		if err := it.Params.Validate(); err != nil {
			return err
		}
		return s.deadLetter(it.Ref, it.Params, now)
	})
}
