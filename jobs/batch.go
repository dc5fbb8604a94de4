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
//
// A store writes Transition alone, applying the repeated-ref rule with
// EachOnce, and embeds FormsOf(itself) for the one-list forms.
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
	// Outputs are what the handlers of some of the Completes and
	// DeadLetters recorded, each written with its job's move by a store
	// that is a Reporter (and ignored by one that is not; the processor
	// sends none to it). They do not count towards MaxWorkerBatch.
	Outputs []OutputItem
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

// Validate refuses a call that no job of it could go through: more than
// MaxWorkerBatch jobs, or starts with invalid StartParams. An item's own
// parameters are that item's result, not the call's.
func (t Transitions) Validate() error {
	if err := CheckBatchSize(t.Len()); err != nil {
		return err
	}
	for _, o := range t.Outputs {
		if err := ValidateOutput(o.Output); err != nil {
			return err
		}
	}
	if len(t.Starts) > 0 {
		return t.StartParams.Validate()
	}
	return nil
}

// Transitioner is the one method a store writes to be a BatchWorker: the
// one-list forms come from BatchForms.
type Transitioner interface {
	// Transition is BatchWorker's.
	Transition(ctx context.Context, t Transitions) (TransitionResults, error)
}

// BatchForms are BatchWorker's one-list forms, each one call of a
// Transitioner's Transition with that list alone. A store embeds
// FormsOf(itself) and implements Transition, so a new kind of worker
// transition is one more list in Transitions and its form here, not a
// method in every store.
type BatchForms struct{ t Transitioner }

// FormsOf returns the one-list forms of t.
func FormsOf(t Transitioner) BatchForms { return BatchForms{t} }

// StartMany implements BatchWorker.
func (f BatchForms) StartMany(ctx context.Context, refs []LeaseRef, p StartParams) ([]StartResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := f.t.Transition(ctx, Transitions{Starts: refs, StartParams: p})
	return orEmpty(r.Starts), err
}

// CompleteMany implements BatchWorker.
func (f BatchForms) CompleteMany(ctx context.Context, refs []LeaseRef) ([]error, error) {
	r, err := f.t.Transition(ctx, Transitions{Completes: refs})
	return orEmpty(r.Completes), err
}

// RetryMany implements BatchWorker.
func (f BatchForms) RetryMany(ctx context.Context, items []RetryItem) ([]error, error) {
	r, err := f.t.Transition(ctx, Transitions{Retries: items})
	return orEmpty(r.Retries), err
}

// DeadLetterMany implements BatchWorker.
func (f BatchForms) DeadLetterMany(ctx context.Context, items []DeadLetterItem) ([]error, error) {
	r, err := f.t.Transition(ctx, Transitions{DeadLetters: items})
	return orEmpty(r.DeadLetters), err
}

// orEmpty is r, or an empty slice for a list the call did not have.
func orEmpty[R any](r []R) []R {
	if r == nil {
		return []R{}
	}
	return r
}

// smallBatch is the size up to which EachOnce finds repeated refs by a
// scan, allocating no map.
const smallBatch = 16

// EachOnce applies apply to each item, in order, once per distinct ref: a
// ref repeated within items gets the result of its first occurrence, as
// BatchWorker asks. An error apply returns is the call's, not an item's:
// it ends the batch and EachOnce returns it. An empty list gives nil.
func EachOnce[T, R any](items []T, ref func(T) LeaseRef, apply func(T) (R, error)) ([]R, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]R, len(items))
	var first map[LeaseRef]int
	if len(items) > smallBatch {
		first = make(map[LeaseRef]int, len(items))
	}
	earlier := func(i int, r LeaseRef) (int, bool) {
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
		r, err := apply(it)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func self(r LeaseRef) LeaseRef                 { return r }
func retryRef(it RetryItem) LeaseRef           { return it.Ref }
func deadLetterRef(it DeadLetterItem) LeaseRef { return it.Ref }

// Batches returns w's batch forms: w itself when it is a BatchWorker,
// else forms that make one call per job, with the results the contract
// asks of a batch (in order, a repeated ref answered once). A store
// wrapper uses it to offer the batch forms whatever it wraps.
func Batches(w Worker) BatchWorker {
	if bw, ok := w.(BatchWorker); ok {
		return bw
	}
	o := &oneByOne{w: w}
	o.BatchForms = FormsOf(o)
	return o
}

// oneByOne is a BatchWorker made of one-job calls.
type oneByOne struct {
	BatchForms
	w Worker
}

// Transition applies the lists one form after the other, one call per
// distinct job. An error that is about the job (its lease lost, its
// parameters refused) is that item's result; any other ends the call, as a
// batch statement's failure would.
func (o *oneByOne) Transition(ctx context.Context, t Transitions) (TransitionResults, error) {
	var r TransitionResults
	if err := t.Validate(); err != nil {
		return r, err
	}
	var err error
	if r.Starts, err = EachOnce(t.Starts, self, func(ref LeaseRef) (StartResult, error) {
		st, err := o.w.Start(ctx, ref, t.StartParams)
		return StartResult{Started: st, Err: err}, callError(err)
	}); err != nil {
		return TransitionResults{}, err
	}
	if r.Completes, err = EachOnce(t.Completes, self, func(ref LeaseRef) (error, error) {
		err := o.w.Complete(ctx, ref)
		return err, callError(err)
	}); err != nil {
		return TransitionResults{}, err
	}
	if r.Retries, err = EachOnce(t.Retries, retryRef, func(it RetryItem) (error, error) {
		err := o.w.Retry(ctx, it.Ref, it.Params)
		return err, callError(err)
	}); err != nil {
		return TransitionResults{}, err
	}
	if r.DeadLetters, err = EachOnce(t.DeadLetters, deadLetterRef, func(it DeadLetterItem) (error, error) {
		err := o.w.DeadLetter(ctx, it.Ref, it.Params)
		return err, callError(err)
	}); err != nil {
		return TransitionResults{}, err
	}
	return r, nil
}

// callError is err when it is the call's, not the job's (IsJobError).
func callError(err error) error {
	if err != nil && !IsJobError(err) {
		return err
	}
	return nil
}

// IsJobError reports whether err, returned by a worker transition, is
// about the job alone (its lease lost, its parameters refused, its cancel
// found instead), not about the call: a batch reports such an error for
// that job and goes on with the others.
func IsJobError(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrCancelled)
}
