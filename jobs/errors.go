package jobs

import (
	"errors"
	"fmt"
)

var (
	// ErrLeaseLost means the job is no longer owned by the caller's lease: it
	// was rescued, released, finished or claimed again. The Store changed
	// nothing; the worker must stop and write nothing else for the job.
	ErrLeaseLost = errors.New("jobs: lease lost")

	// ErrJobNotFound means no table holds a job with that ID.
	ErrJobNotFound = errors.New("jobs: job not found")

	// ErrInvalidArgument is wrapped by every ValidationError.
	ErrInvalidArgument = errors.New("jobs: invalid argument")

	// ErrEmptyFilter refuses a bulk resurrect or purge that names no filter
	// and does not set All.
	ErrEmptyFilter = errors.New("jobs: refusing to act on every job: the filter is empty (set All to mean it)")

	// ErrCancelled is wrapped by a worker transition (Retry, Snooze) that
	// found the job's cancel requested and moved it to the DLQ as
	// Cancelled instead of doing what was asked.
	ErrCancelled = errors.New("jobs: job cancelled: moved to the dead-letter queue")

	// ErrNotRunning is wrapped by Stop of anything chokaq-go runs (a
	// processor, a rescue loop) that was never started.
	ErrNotRunning = errors.New("not running")

	// ErrAlreadyStarted is wrapped by Start of anything chokaq-go runs (a
	// Client, a processor, a rescue loop) that was started before: each
	// runs once.
	ErrAlreadyStarted = errors.New("already started")

	// ErrUniqueUnsupported refuses an enqueue with EnqueueParams.Unique on
	// a store that does not enforce unique keys: adding the job anyway
	// would let the duplicates through that the caller asked to refuse.
	ErrUniqueUnsupported = errors.New("jobs: this store does not enforce unique keys (EnqueueParams.Unique)")
)

// ValidationError names the field, the offending value and the rule it broke.
type ValidationError struct {
	Field string
	Value any
	Rule  string
}

// Error names the field, the value and the rule.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("jobs: invalid %s %s: %s", e.Field, quoteValue(e.Value), e.Rule)
}

// Unwrap returns ErrInvalidArgument.
func (e *ValidationError) Unwrap() error { return ErrInvalidArgument }

func quoteValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 64 {
			return fmt.Sprintf("%q (%d bytes)", x[:64]+"...", len(x))
		}
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("(%d bytes)", len(x))
	default:
		return fmt.Sprint(v)
	}
}
