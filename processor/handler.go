package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Job is what a handler sees of the job it runs.
type Job struct {
	ID    int64
	Queue string
	Type  string
	// Payload is the job's raw bytes; do not keep it after the handler returns.
	Payload []byte
	// Attempt is this execution's number, starting at 1 (executions that
	// snoozed are not counted).
	Attempt     int
	MaxAttempts int
	// Snoozes is how many earlier executions snoozed (Snooze).
	Snoozes int
	// Lease is the fencing token of this execution: it goes up at every
	// claim, so a downstream system that remembers the highest lease it saw
	// per job can refuse a write from an older execution.
	Lease int64
	Tags  []string
	// Metadata is what the job was enqueued with (EnqueueOpts.Metadata);
	// nil for none. Do not change it: it is the store's copy.
	Metadata  map[string]string
	CreatedAt time.Time
	// ScheduledAt is when the job was due, on the store's clock: for a
	// schedule's job, the tick it stands for; after a retry, the end of
	// its backoff.
	ScheduledAt time.Time
	// Deadline is when this execution's timeout fires, by the local clock.
	Deadline time.Time
	// Timeout is this execution's timeout, as the store applied it and
	// recorded it with the job, and TimeoutFrom the level it came from
	// (job, kind, queue or default; docs/design.md, Policy per kind).
	Timeout     time.Duration
	TimeoutFrom jobs.PolicySource
	// ZombieRetryCap is the kind's zombie policy this execution was started
	// with (0: a crash dead-letters the job), ZombieRetries how many times
	// rescue returned the job to Pending after its worker died (its
	// LastError then says so).
	ZombieRetryCap int
	ZombieRetries  int
	LastError      string
	// WorkflowID and WorkflowTask name the workflow the job is a task of
	// and its task (ADR 0034): a handler reads its parents and their
	// outcomes from Client.GetWorkflow. 0 and "" for a job of no workflow.
	WorkflowID   int64
	WorkflowTask string
}

// HandlerFunc runs one job. Return nil for success, an error to retry (until
// MaxAttempts), or Permanent(err) to dead-letter at once. The context ends
// when the execution timeout fires, the lease is lost, or the processor
// shuts down.
type HandlerFunc func(ctx context.Context, job *Job) error

// Registry maps job types to handlers. It is safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	handlers   map[string]HandlerFunc
	policies   map[string]KindPolicy
	middleware []namedWork // outermost first (Use)
}

// ErrDuplicateHandler is returned when a job type is registered twice.
var ErrDuplicateHandler = errors.New("processor: a handler is already registered for this job type")

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: map[string]HandlerFunc{}, policies: map[string]KindPolicy{}}
}

// Handle registers the raw-bytes handler of a job type.
func (r *Registry) Handle(jobType string, h HandlerFunc) error {
	if err := (jobs.EnqueueParams{Type: jobType}).ValidateType(); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("processor: nil handler for job type %q", jobType)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.handlers[jobType]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateHandler, jobType)
	}
	r.handlers[jobType] = h
	return nil
}

// MustHandle is Handle that panics on error, for registration at start-up.
func (r *Registry) MustHandle(jobType string, h HandlerFunc) {
	if err := r.Handle(jobType, h); err != nil {
		panic(err)
	}
}

func (r *Registry) lookup(jobType string) (HandlerFunc, []namedWork, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[jobType]
	return h, r.middleware, ok
}

// Types lists the registered job types.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.handlers))
	for t := range r.handlers {
		out = append(out, t)
	}
	return out
}

// HandleJSON registers a handler whose payload is JSON decoded into T. A
// payload that does not decode is dead-lettered at once (reason Fatal): no
// retry can make it decode.
func HandleJSON[T any](r *Registry, jobType string, fn func(ctx context.Context, job *Job, args T) error) error {
	return r.Handle(jobType, func(ctx context.Context, job *Job) error {
		var args T
		if err := json.Unmarshal(job.Payload, &args); err != nil {
			return Permanent(&DecodeError{JobID: job.ID, Type: job.Type, Err: err})
		}
		return fn(ctx, job, args)
	})
}

// DecodeError reports a payload that does not decode into the handler's type.
type DecodeError struct {
	JobID int64
	Type  string
	Err   error
}

// Error names the job, its type and why its payload did not decode.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("job %d (%s): undecodable payload: %v", e.JobID, e.Type, e.Err)
}

// Unwrap returns the decoder's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// PermanentError marks an error no retry can fix.
type PermanentError struct{ Err error }

// Error is the wrapped error's message, marked permanent.
func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the job is dead-lettered (reason Fatal) at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or an error it wraps, is permanent. It
// is safe on any error value: a typed nil, a panicking Unwrap or a chain
// that loops gives false rather than a panic or a hang.
func IsPermanent(err error) bool {
	_, m := findMark(err)
	_, ok := m.(*PermanentError)
	return ok
}

// CancelError marks a job its handler gave up on for good: the job goes
// to the DLQ at once with reason Cancelled (see Cancel).
type CancelError struct{ Err error }

// Error is the wrapped error's message, marked cancelled.
func (e *CancelError) Error() string { return "cancelled: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel wraps err so the job is dead-lettered at once with reason
// Cancelled: the work is no longer wanted (the order was refunded, the
// account deleted), which is not a failure to retry. nil stays nil.
func Cancel(err error) error {
	if err == nil {
		return nil
	}
	return &CancelError{Err: err}
}

// SnoozeError asks for the job to run again after Delay without counting
// the attempt (see Snooze).
type SnoozeError struct{ Delay time.Duration }

// Error says for how long the job snoozes.
func (e *SnoozeError) Error() string { return "snooze for " + e.Delay.String() }

// Snooze returns the error that puts the job back to Pending, due after d,
// and gives back the attempt this execution counted: "not now, later" is
// not a failure. A job snoozes at most Config.MaxSnoozes times, then it is
// dead-lettered with reason SnoozeLimitExceeded. A negative d is 0; a d
// beyond jobs.MaxDelay (10 years) is capped at it, with a warning in the
// log ("snooze capped at jobs.MaxDelay").
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// PanicError is a handler's or a middleware's panic, recovered, with its
// stack.
type PanicError struct {
	Value any
	Stack string
	// Middleware names the work middleware (Registry.Use) or enqueue
	// middleware that panicked; "" for the handler itself.
	Middleware string
}

// Error is the panic value, the middleware it came from if any, and the
// stack of the goroutine that panicked.
func (e *PanicError) Error() string {
	if e.Middleware != "" {
		return fmt.Sprintf("panic in middleware %q: %v\n%s", e.Middleware, e.Value, e.Stack)
	}
	return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack)
}
