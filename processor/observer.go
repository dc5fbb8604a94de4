package processor

import (
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Observer sees what a processor does, for metrics and event feeds. Its
// methods run on the processor's own goroutines, on the hot path: they must
// be cheap and must not block.
type Observer interface {
	// JobsClaimed: a claim moved these jobs into the buffer.
	JobsClaimed(claimed []*jobs.Job)
	// JobStarted: a handler is about to run. Started carries the store's
	// start time; StartedAt - job.ScheduledAt is the job's queue lag.
	JobStarted(job *jobs.Job, st jobs.Started)
	// JobFinished: an execution's outcome was written (or could not be).
	JobFinished(job *jobs.Job, r Result)
	// HeartbeatDegraded: a running job's beats failed
	// HeartbeatFailureThreshold times in a row.
	HeartbeatDegraded(ref jobs.LeaseRef)
}

// Outcome is what became of one execution.
type Outcome int

const (
	OutcomeSucceeded    Outcome = iota + 1 // archived
	OutcomeRetried                         // back to Pending
	OutcomeDeadLettered                    // moved to the DLQ (Result.Reason)
	OutcomeLeaseLost                       // the job was taken away; nothing written
	OutcomeUnsettled                       // the outcome could not be written before shutdown; rescue settles it
	OutcomeSnoozed                         // back to Pending by Snooze, the attempt not counted
)

// String returns the outcome as metrics label it: "succeeded",
// "retried", "dead_lettered", "lease_lost", "unsettled" or "snoozed".
func (o Outcome) String() string {
	switch o {
	case OutcomeSucceeded:
		return "succeeded"
	case OutcomeRetried:
		return "retried"
	case OutcomeDeadLettered:
		return "dead_lettered"
	case OutcomeLeaseLost:
		return "lease_lost"
	case OutcomeUnsettled:
		return "unsettled"
	case OutcomeSnoozed:
		return "snoozed"
	}
	return "unknown"
}

// Result describes one finished execution.
type Result struct {
	Outcome Outcome
	Reason  jobs.FailureReason // for OutcomeDeadLettered
	// HandlerErr is what the handler returned (a *PanicError for a panic);
	// nil when it succeeded.
	HandlerErr error
	// Duration is the handler's run time.
	Duration time.Duration
	// Interrupted says shutdown cancelled the handler: its job was retried
	// at once, and the handler's error is not counted as a failure (see
	// Stats.Failed).
	Interrupted bool
}

// Failed reports whether the execution failed: its handler returned an
// error (or panicked) of its own. A handler stopped by shutdown or by a
// lost lease, one that snoozed, and a job cancelled (by an operator or by
// its handler) did not fail. Stats.Failed and chokaq.jobs.failed count
// these.
func (r Result) Failed() bool {
	switch {
	case r.HandlerErr == nil, r.Interrupted, r.Outcome == OutcomeLeaseLost, r.Outcome == OutcomeSnoozed:
		return false
	case r.Outcome == OutcomeDeadLettered && r.Reason == jobs.ReasonCancelled:
		return false
	}
	return true
}

type nopObserver struct{}

func (nopObserver) JobsClaimed([]*jobs.Job)            {}
func (nopObserver) JobStarted(*jobs.Job, jobs.Started) {}
func (nopObserver) JobFinished(*jobs.Job, Result)      {}
func (nopObserver) HeartbeatDegraded(jobs.LeaseRef)    {}
