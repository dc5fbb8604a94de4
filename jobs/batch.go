package jobs

import (
	"context"
	"errors"
	"fmt"
)

// BatchWorker is an optional capability of a Worker: the worker
// transitions of many jobs in one call, so that a processor running many
// short jobs pays one round trip for many starts and one for many
// outcomes (ADR 0018). The processor detects it with a type assertion and
// falls back to the one-job calls for a store without it.
//
// Each job of a batch is fenced on its own, by its ID, lease and expected
// status, exactly as the one-job call would fence it: a stale ref gets its
// own ErrLeaseLost and never fails the others. Results are in input order.
// A ref repeated within a batch is applied once and every occurrence gets
// that result. An empty batch does nothing and succeeds. A batch larger
// than MaxWorkerBatch is refused whole. The returned error is for the call
// (the store could not be reached, the context ended): then nothing is
// known of any job, and the caller retries the batch, as it would retry a
// one-job call.
type BatchWorker interface {
	// StartMany starts each job as Start would: Fetched -> Processing.
	// A job already started under the same lease reports that start
	// again.
	StartMany(ctx context.Context, refs []LeaseRef, p StartParams) ([]StartResult, error)
	// CompleteMany moves each job as Complete would: Processing ->
	// archive. Each result is nil, or an error wrapping ErrLeaseLost.
	CompleteMany(ctx context.Context, refs []LeaseRef) ([]error, error)
	// RetryMany returns each job to Pending as Retry would, with its own
	// delay and error. Each result is nil, an error wrapping ErrLeaseLost,
	// or a *ValidationError for that item's parameters.
	RetryMany(ctx context.Context, items []RetryItem) ([]error, error)
	// DeadLetterMany moves each job to the DLQ as DeadLetter would, with
	// its own reason and details. Results as for RetryMany.
	DeadLetterMany(ctx context.Context, items []DeadLetterItem) ([]error, error)
	// Transition applies the four forms in one call (one round trip):
	// the starts, then the completes, the retries and the dead letters,
	// each list as its own form would apply it. A processor sends the
	// starts of some workers with the outcomes of others in one call
	// (ADR 0018). At most MaxWorkerBatch jobs in all.
	Transition(ctx context.Context, t Transitions) (TransitionResults, error)
}

// Transitions are the worker transitions of many jobs, for one call.
type Transitions struct {
	Starts      []LeaseRef
	StartParams StartParams // for every start
	Completes   []LeaseRef
	Retries     []RetryItem
	DeadLetters []DeadLetterItem
}

// Len is the number of jobs in t.
func (t Transitions) Len() int {
	return len(t.Starts) + len(t.Completes) + len(t.Retries) + len(t.DeadLetters)
}

// TransitionResults are a Transition's results, list by list, in the
// order of its lists.
type TransitionResults struct {
	Starts      []StartResult
	Completes   []error
	Retries     []error
	DeadLetters []error
}

// MaxWorkerBatch caps the jobs of one BatchWorker call: 500 table-valued
// parameter rows stay well below the 5,000 locks at which SQL Server
// escalates a statement's row locks to a table lock.
const MaxWorkerBatch = 500

// StartResult is one job's result of StartMany: what Start would have
// returned.
type StartResult struct {
	Started Started
	// Err is nil, or wraps ErrLeaseLost.
	Err error
}

// RetryItem is one job of RetryMany.
type RetryItem struct {
	Ref    LeaseRef
	Params RetryParams
}

// DeadLetterItem is one job of DeadLetterMany.
type DeadLetterItem struct {
	Ref    LeaseRef
	Params DeadLetterParams
}

// CheckBatchSize refuses a batch of more than MaxWorkerBatch jobs.
func CheckBatchSize(n int) error {
	if n > MaxWorkerBatch {
		return &ValidationError{Field: "batch", Value: n, Rule: fmt.Sprintf("at most %d jobs per call", MaxWorkerBatch)}
	}
	return nil
}

// Batches returns w's batch forms: w itself when it is a BatchWorker,
// else forms that make one call per job, with the results the contract
// asks of a batch (in order, a repeated ref answered once). A store
// wrapper uses it to offer the batch forms whatever it wraps.
func Batches(w Worker) BatchWorker {
	if bw, ok := w.(BatchWorker); ok {
		return bw
	}
	return oneByOne{w}
}

// oneByOne is a BatchWorker made of one-job calls.
type oneByOne struct{ w Worker }

// eachOnce calls fn for each item, once per distinct ref. An error that is
// about the job (its lease lost, its parameters refused) is that item's
// result; any other ends the batch as the call's error, as a batch
// statement's failure would.
func eachOnce[T any](ctx context.Context, items []T, ref func(T) LeaseRef, fn func(T) error) ([]error, error) {
	if err := CheckBatchSize(len(items)); err != nil {
		return nil, err
	}
	out := make([]error, len(items))
	first := make(map[LeaseRef]int, len(items))
	for i, it := range items {
		if j, seen := first[ref(it)]; seen {
			out[i] = out[j]
			continue
		}
		first[ref(it)] = i
		err := fn(it)
		if err != nil && !IsJobError(err) {
			return nil, err
		}
		out[i] = err
	}
	return out, nil
}

func self(r LeaseRef) LeaseRef { return r }

// Transition applies the lists one form after the other, as four calls.
func (o oneByOne) Transition(ctx context.Context, t Transitions) (TransitionResults, error) {
	return TransitionOf(ctx, o, t)
}

// TransitionOf is Transition made of bw's four batch forms, one call each
// for the lists that are not empty: for a store that has no cheaper way.
func TransitionOf(ctx context.Context, bw BatchWorker, t Transitions) (TransitionResults, error) {
	var r TransitionResults
	if err := CheckBatchSize(t.Len()); err != nil {
		return r, err
	}
	var err error
	if len(t.Starts) > 0 {
		if r.Starts, err = bw.StartMany(ctx, t.Starts, t.StartParams); err != nil {
			return TransitionResults{}, err
		}
	}
	if len(t.Completes) > 0 {
		if r.Completes, err = bw.CompleteMany(ctx, t.Completes); err != nil {
			return TransitionResults{}, err
		}
	}
	if len(t.Retries) > 0 {
		if r.Retries, err = bw.RetryMany(ctx, t.Retries); err != nil {
			return TransitionResults{}, err
		}
	}
	if len(t.DeadLetters) > 0 {
		if r.DeadLetters, err = bw.DeadLetterMany(ctx, t.DeadLetters); err != nil {
			return TransitionResults{}, err
		}
	}
	return r, nil
}

func (o oneByOne) StartMany(ctx context.Context, refs []LeaseRef, p StartParams) ([]StartResult, error) {
	started := make(map[LeaseRef]Started, len(refs))
	errs, err := eachOnce(ctx, refs, self, func(r LeaseRef) error {
		st, err := o.w.Start(ctx, r, p)
		started[r] = st
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]StartResult, len(refs))
	for i, r := range refs {
		out[i] = StartResult{Started: started[r], Err: errs[i]}
	}
	return out, nil
}

func (o oneByOne) CompleteMany(ctx context.Context, refs []LeaseRef) ([]error, error) {
	return eachOnce(ctx, refs, self, func(r LeaseRef) error { return o.w.Complete(ctx, r) })
}

func (o oneByOne) RetryMany(ctx context.Context, items []RetryItem) ([]error, error) {
	return eachOnce(ctx, items, func(it RetryItem) LeaseRef { return it.Ref }, func(it RetryItem) error {
		return o.w.Retry(ctx, it.Ref, it.Params)
	})
}

func (o oneByOne) DeadLetterMany(ctx context.Context, items []DeadLetterItem) ([]error, error) {
	return eachOnce(ctx, items, func(it DeadLetterItem) LeaseRef { return it.Ref }, func(it DeadLetterItem) error {
		return o.w.DeadLetter(ctx, it.Ref, it.Params)
	})
}

// IsJobError reports whether err, returned by a worker transition, is
// about the job alone (its lease lost, its parameters refused, its cancel
// found instead), not about the call: a batch reports such an error for
// that job and goes on with the others.
func IsJobError(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrCancelled)
}
