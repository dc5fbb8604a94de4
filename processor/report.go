package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/chokaq/chokaq-go/jobs"
)

// ErrNotReported is returned by RecordOutput and Progress when they cannot
// keep what the handler reports: the context is not a running handler's,
// or the processor's store does not keep outputs and progress (it is not a
// jobs.Reporter).
var ErrNotReported = errors.New("processor: output and progress need a handler's context on a store that keeps them (jobs.Reporter)")

// runKey finds a handler's run in its context (withDeadline.Value).
type runKey struct{}

// report is what a running handler reported of its job.
type report struct {
	keeps  bool // the store is a jobs.Reporter
	output atomic.Pointer[json.RawMessage]
	beat   *beat
	hb     *heartbeater
}

// RecordOutput records v, encoded as JSON (at most jobs.MaxOutputBytes), as
// the output of the job whose handler ctx is: it is written with the job's
// outcome, in the same statement (archived with the job when it succeeds,
// in the DLQ with it when it is dead-lettered; a retry, a snooze or a lost
// lease writes none), so it costs no store call of its own and needs the
// lease the outcome needs. A later call replaces an earlier one. An output
// that does not encode, or is too large, is refused with a
// *jobs.ValidationError and the earlier one, if any, kept.
func RecordOutput(ctx context.Context, v any) error {
	rp, _ := ctx.Value(runKey{}).(*report)
	if rp == nil || !rp.keeps {
		return ErrNotReported
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("processor: record output: %w", &jobs.ValidationError{Field: "output", Value: fmt.Sprintf("%T", v), Rule: "must encode as JSON: " + err.Error()})
	}
	if err := jobs.ValidateOutput(b); err != nil {
		return fmt.Errorf("processor: record output: %w", err)
	}
	raw := json.RawMessage(b)
	rp.output.Store(&raw)
	return nil
}

// Progress reports how far the job whose handler ctx is has come: fraction
// from 0 to 1, and a message of at most jobs.MaxProgressMessageLen
// characters. It is carried on the job's next heartbeat (every 8-12 s by
// default), fenced by its lease, and costs no store call of its own;
// operators see the last one carried (the dashboard's job page, chokaq jobs
// show). Bad values are refused with a *jobs.ValidationError.
func Progress(ctx context.Context, fraction float64, message string) error {
	rp, _ := ctx.Value(runKey{}).(*report)
	if rp == nil || !rp.keeps {
		return ErrNotReported
	}
	it := jobs.ProgressItem{Ref: rp.beat.ref, Fraction: fraction, Message: message}
	if err := it.Validate(); err != nil {
		return fmt.Errorf("processor: progress: %w", err)
	}
	rp.hb.progress(rp.beat, it)
	return nil
}

// takeOutput is the output recorded, nil for none.
func (rp *report) takeOutput() json.RawMessage {
	if o := rp.output.Load(); o != nil {
		return *o
	}
	return nil
}
