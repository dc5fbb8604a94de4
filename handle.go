package chokaq

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// What a handler author needs, from the root package: the engine behind
// them lives in package processor, which this package imports (so they
// cannot move here), and these names are those types themselves.
type (
	// Registry maps job kinds to handlers; safe for concurrent use.
	Registry = processor.Registry
	// Job is what a handler sees of the job it runs: its ID, queue, kind,
	// attempt, lease (the fencing token of this execution) and payload.
	Job = processor.Job
	// HandlerFunc is a handler of raw payload bytes (Registry.Handle).
	HandlerFunc = processor.HandlerFunc
	// PermanentError marks an error no retry can fix (see Permanent).
	PermanentError = processor.PermanentError
	// PanicError is a handler's panic, recovered, with its stack.
	PanicError = processor.PanicError
	// DecodeError is a payload that does not decode into the handler's
	// Args; the job is dead-lettered at once (reason Fatal).
	DecodeError = processor.DecodeError
	// CancelError marks a job its handler cancelled (see Cancel).
	CancelError = processor.CancelError
	// SnoozeError asks for the job to run again later (see Snooze).
	SnoozeError = processor.SnoozeError
)

// ErrCancelled is the cause of a handler's context when an operator
// cancelled its job: errors.Is(context.Cause(ctx), chokaq.ErrCancelled).
var ErrCancelled = processor.ErrCancelled

// Cancel wraps err so the job is dead-lettered at once with reason
// Cancelled: the work is no longer wanted. nil stays nil.
func Cancel(err error) error { return processor.Cancel(err) }

// Snooze returns the error that runs the job again after d without
// counting the attempt, at most Processor.MaxSnoozes times; a d beyond
// jobs.MaxDelay (10 years) is capped at it, and the log says so.
func Snooze(d time.Duration) error { return processor.Snooze(d) }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return processor.NewRegistry() }

// Permanent wraps err so the job is dead-lettered at once (reason Fatal)
// instead of retried; nil stays nil.
func Permanent(err error) error { return processor.Permanent(err) }

// IsPermanent reports whether err, or an error it wraps, is permanent.
func IsPermanent(err error) bool { return processor.IsPermanent(err) }

// Handle registers fn for the jobs of T's kind (T's Kind, called on its
// zero value; a panic there is an error naming T), and T's KindPolicy
// when T is an ArgsWithPolicy (an invalid policy is an error naming the
// kind and the field): each job's payload is
// decoded from JSON into a T before fn runs. A payload that does not decode
// is dead-lettered at once with a *DecodeError (reason Fatal): no retry can
// make it decode. fn returns nil for success, an error to retry (until the
// job's MaxAttempts), or Permanent(err) to dead-letter at once; its context
// ends when the execution timeout fires, the lease is lost or the processor
// shuts down.
func Handle[T Args](reg *Registry, fn func(ctx context.Context, job *Job, args T) error) error {
	if reg == nil || fn == nil {
		return fmt.Errorf("chokaq: Handle: nil registry or handler")
	}
	var zero T
	kind, err := kindOf(zero, reflect.TypeFor[T]().String())
	if err != nil {
		return fmt.Errorf("chokaq: Handle: %w", err)
	}
	kp, err := policyOf(zero, reflect.TypeFor[T]().String())
	if err != nil {
		return fmt.Errorf("chokaq: Handle: %w", err)
	}
	if err := kp.Validate(kind); err != nil { // before anything is registered
		return fmt.Errorf("chokaq: Handle: %w", err)
	}
	if err := processor.HandleJSON(reg, kind, fn); err != nil {
		return err
	}
	if kp.IsZero() {
		return nil
	}
	// An operator's Kinds.<kind>.* already applied (New ran first) stays
	// over the code's.
	have, _ := reg.Policy(kind)
	return reg.SetPolicy(kind, have.Over(kp))
}

// kindOf is args.Kind(), with a panic in it returned as an error naming
// the type (typ, or args' own when ""): Kind is the caller's code, run on
// a zero value by Handle, and Handle, Enqueue and New return errors.
func kindOf(args Args, typ string) (kind string, err error) {
	defer func() {
		if r := recover(); r != nil {
			if typ == "" {
				typ = fmt.Sprintf("%T", args)
			}
			err = fmt.Errorf("%w: %s.Kind() panicked: %v", jobs.ErrInvalidArgument, typ, r)
		}
	}()
	return args.Kind(), nil
}

// MustHandle is Handle that panics on error, for registration in main.
func MustHandle[T Args](reg *Registry, fn func(ctx context.Context, job *Job, args T) error) {
	if err := Handle(reg, fn); err != nil {
		panic(err)
	}
}

// ErrNotReported is returned by RecordOutput and Progress outside a
// handler, or on a store that keeps neither (jobs.Reporter).
var ErrNotReported = processor.ErrNotReported

// RecordOutput records v, as JSON of at most 32 KiB, as the output of the
// job whose handler ctx is: written with its outcome in the same statement
// (archived on success, in the DLQ on failure), shown by GetJob, chokaq jobs
// show and the dashboard. See processor.RecordOutput.
func RecordOutput(ctx context.Context, v any) error { return processor.RecordOutput(ctx, v) }

// Progress reports how far the handler of ctx has come (0 to 1, and a
// message of at most 200 characters), carried on the job's next heartbeat
// (every 8-12 s by default). See processor.Progress.
func Progress(ctx context.Context, fraction float64, message string) error {
	return processor.Progress(ctx, fraction, message)
}
