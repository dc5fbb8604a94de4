package jobs

import "fmt"

// CancelParams names the jobs to cancel and says who asks and why; both
// go into the dead letter's details.
type CancelParams struct {
	IDs []int64
	// By names who cancels (an operator, a service); Reason says why.
	// Either may be empty.
	By, Reason string
}

// MaxCancelIDs caps the IDs of one Cancel call.
const MaxCancelIDs = 1000

// Validate checks a cancel request.
func (p CancelParams) Validate() error {
	switch {
	case len(p.IDs) == 0:
		return &ValidationError{Field: "ids", Value: 0, Rule: "name at least one job"}
	case len(p.IDs) > MaxCancelIDs:
		return &ValidationError{Field: "ids", Value: len(p.IDs), Rule: fmt.Sprintf("at most %d jobs per call", MaxCancelIDs)}
	}
	if err := checkText("cancelled_by", p.By, MaxCreatedByLen); err != nil {
		return err
	}
	return checkText("cancel_reason", p.Reason, MaxCancelReasonLen)
}

// MaxCancelReasonLen bounds CancelParams.Reason.
const MaxCancelReasonLen = 400

// Note is the text a cancel leaves on the job: who cancelled it and why.
func (p CancelParams) Note() string {
	note := "cancelled"
	if p.By != "" {
		note += " by " + p.By
	}
	if p.Reason != "" {
		note += ": " + p.Reason
	}
	return note
}

// CancelledDetails is a cancelled dead letter's ErrorDetails: the cancel's
// note, then what the worker had to say, if anything.
func CancelledDetails(note, details string) string {
	if details == "" {
		return note
	}
	return note + "; " + details
}

// CancelOutcome is what a cancel did to one job.
type CancelOutcome int

const (
	// CancelDone: the job was Pending or Fetched; no user code had run, and
	// it is now in the DLQ with reason Cancelled.
	CancelDone CancelOutcome = iota + 1
	// CancelRequested: the job is Processing; its handler is asked to stop
	// at its worker's next heartbeat. If the handler then returns an error
	// the job is dead-lettered as Cancelled; if it returns nil, the work
	// finished and the job is archived.
	CancelRequested
	// CancelAlreadyFinished: the job is archived or dead-lettered already;
	// nothing changed.
	CancelAlreadyFinished
	// CancelNotFound: no table holds the job.
	CancelNotFound
)

// String names the outcome, as the command and the dashboard print it.
func (o CancelOutcome) String() string {
	switch o {
	case CancelDone:
		return "cancelled"
	case CancelRequested:
		return "cancel requested"
	case CancelAlreadyFinished:
		return "already finished"
	case CancelNotFound:
		return "not found"
	}
	return fmt.Sprintf("CancelOutcome(%d)", int(o))
}

// CancelResult is one job's result of Cancel.
type CancelResult struct {
	ID      int64
	Outcome CancelOutcome
	// Queue and Type are the job's, when a table holds it.
	Queue, Type string
}
