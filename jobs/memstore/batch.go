package memstore

import (
	"context"
	"encoding/json"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.Reporter = (*Store)(nil)

// forms gives the Store its one-list batch forms (StartMany, CompleteMany,
// RetryMany, DeadLetterMany), each one call of Transition.
type forms = jobs.BatchForms

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
	if err := t.Validate(); err != nil {
		return r, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var outputs map[jobs.LeaseRef]json.RawMessage
	if len(t.Outputs) > 0 {
		outputs = make(map[jobs.LeaseRef]json.RawMessage, len(t.Outputs))
		for _, o := range t.Outputs {
			outputs[o.Ref] = o.Output
		}
	}
	// Nothing here fails the call: each job's error is its result.
	r.Starts, _ = jobs.EachOnce(t.Starts, self, func(ref jobs.LeaseRef) (jobs.StartResult, error) {
		st, err := s.start(ref, t.StartParams, now)
		return jobs.StartResult{Started: st, Err: err}, nil
	})
	r.Completes, _ = jobs.EachOnce(t.Completes, self, func(ref jobs.LeaseRef) (error, error) {
		return s.complete(ref, now, outputs[ref]), nil
	})
	r.Retries, _ = jobs.EachOnce(t.Retries, retryRef, func(it jobs.RetryItem) (error, error) {
		if err := it.Params.Validate(); err != nil {
			return err, nil
		}
		return s.retry(it.Ref, it.Params, now), nil
	})
	r.DeadLetters, _ = jobs.EachOnce(t.DeadLetters, deadLetterRef, func(it jobs.DeadLetterItem) (error, error) {
		if err := it.Params.Validate(); err != nil {
			return err, nil
		}
		return s.deadLetter(it.Ref, it.Params, now, outputs[it.Ref]), nil
	})
	return r, nil
}
