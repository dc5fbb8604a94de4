package jobs

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// What a handler reports of its job (ADR 0028): an output written with its
// outcome, and progress carried on its heartbeats.
const (
	// MaxOutputBytes bounds a job's output, as JSON (32 KiB).
	MaxOutputBytes = 32 << 10
	// MaxProgressMessageLen bounds a progress message, in characters.
	MaxProgressMessageLen = 200
)

// Reporter is an optional capability of a BatchWorker: it keeps what a
// handler reports. Its Transition writes each of Transitions.Outputs with
// the move of its job (Completes: the archive; DeadLetters: the DLQ) in the
// same statement, fenced by that move's lease; HeartbeatProgress carries
// progress on a heartbeat. The processor detects it with a type assertion;
// without it, processor.RecordOutput and processor.Progress report
// ErrNotReported.
type Reporter interface {
	BatchWorker
	// HeartbeatProgress is Heartbeat of refs, which also writes each
	// item of progress (its ref among refs) to its job, fenced by the same
	// lease and status as the beat: a ref that matches no Processing row
	// is Lost and its progress is not written. Beats whose progress did
	// not change since their last call carry none.
	HeartbeatProgress(ctx context.Context, refs []LeaseRef, progress []ProgressItem) (HeartbeatResult, error)
}

// OutputItem is the output of one job of a Transition, written with its
// move. An output whose ref moves in none of the call's Completes and
// DeadLetters is not written.
type OutputItem struct {
	Ref    LeaseRef
	Output json.RawMessage
}

// ProgressItem is the progress of one running job, for HeartbeatProgress.
type ProgressItem struct {
	Ref LeaseRef
	// Fraction is from 0 to 1; Message at most MaxProgressMessageLen
	// characters.
	Fraction float64
	Message  string
}

// ValidateOutput checks an output: valid JSON of at most MaxOutputBytes.
func ValidateOutput(b []byte) error {
	if len(b) > MaxOutputBytes {
		return &ValidationError{Field: "output", Value: len(b), Rule: "must be at most " + itoa(MaxOutputBytes) + " bytes as JSON"}
	}
	if !json.Valid(b) {
		return &ValidationError{Field: "output", Value: Clip(string(b), 80), Rule: "must be valid JSON"}
	}
	return nil
}

// Validate checks an item of progress.
func (p ProgressItem) Validate() error {
	if !(p.Fraction >= 0 && p.Fraction <= 1) { // NaN too
		return &ValidationError{Field: "progress", Value: p.Fraction, Rule: "must be between 0 and 1"}
	}
	if utf8.RuneCountInString(p.Message) > MaxProgressMessageLen {
		return &ValidationError{Field: "progress_message", Value: Clip(p.Message, 80), Rule: "must be at most " + itoa(MaxProgressMessageLen) + " characters"}
	}
	return checkText("progress_message", p.Message, MaxProgressMessageLen)
}
