package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Store is the port between chokaq-go's policy (processor, rescue, operator
// tools) and a storage backend: every role at once. Each part of chokaq-go
// takes only the role it uses (the processor a Worker, the rescue loop a
// Rescuer, the dashboard and the command an Admin), so a store written for
// one role need not implement the others, and a capability added later is a
// role or an optional interface of its own, detected by the caller.
//
// Every method is safe for concurrent use. Transitions follow
// docs/design.md (Transitions). Worker transitions take a LeaseRef and
// return ErrLeaseLost when the lease no longer matches the job in the
// expected status; they then change nothing.
type Store interface {
	Enqueuer
	Worker
	Rescuer
	Scheduler
	Admin
}

// TxEnqueuer is an optional capability of a store on a database/sql
// database: enqueueing inside the caller's own transaction, so the job
// exists if and only if tx commits. Callers detect it with a type
// assertion; there is no fallback (a job added outside tx would outlive a
// rollback), so they report that the store cannot do it.
type TxEnqueuer interface {
	// EnqueueTx adds one job (new -> Pending) as part of tx. It neither
	// commits nor rolls back tx.
	EnqueueTx(ctx context.Context, tx *sql.Tx, p EnqueueParams) (EnqueueResult, error)
}

// Enqueuer adds jobs.
type Enqueuer interface {
	// Enqueue adds one job (new -> Pending).
	Enqueue(ctx context.Context, p EnqueueParams) (EnqueueResult, error)
	// EnqueueMany adds jobs atomically: all of them or none. Results are in
	// input order. A key repeated within the batch resolves to its first job.
	EnqueueMany(ctx context.Context, ps []EnqueueParams) ([]EnqueueResult, error)
}

// Worker is what a processor needs: claim, start, heartbeat and settle
// jobs under their leases, and read which queues are paused.
type Worker interface {
	// Claim moves up to Limit due Pending jobs of the named queues to Fetched
	// for WorkerID, each with a new lease. Paused queues give nothing, and a
	// queue's MaxWorkers caps its Fetched plus Processing jobs fleet-wide.
	Claim(ctx context.Context, p ClaimParams) ([]*Job, error)
	// Start moves a Fetched job to Processing: AttemptCount+1, start,
	// heartbeat and deadline (StartParams.EffectiveTimeout: the job's or
	// kind's timeout, else the queue's execution timeout, else
	// DefaultTimeout), recording the timeout's source and the kind's zombie
	// policy with the job.
	// Starting again with the same lease reports the first start unchanged:
	// a call retried after its reply was lost must not lose the job.
	Start(ctx context.Context, ref LeaseRef, p StartParams) (Started, error)
	// Heartbeat stamps Processing jobs with the store's time in one call. It
	// reports the refs that matched no row (those jobs' leases are lost)
	// and the jobs an operator asked to cancel (Admin.Cancel), which it
	// stamps like any other.
	Heartbeat(ctx context.Context, refs []LeaseRef) (HeartbeatResult, error)
	// Complete moves a Processing job to the archive, also one whose
	// cancel was requested: its work finished.
	Complete(ctx context.Context, ref LeaseRef) error
	// Retry returns a Processing job to Pending, due after Delay. A job
	// whose cancel was requested goes to the DLQ as Cancelled instead, and
	// Retry returns an error wrapping ErrCancelled.
	Retry(ctx context.Context, ref LeaseRef, p RetryParams) error
	// Snooze returns a Processing job to Pending, due after Delay, and
	// takes back the attempt it counted at Start (AttemptCount - 1,
	// SnoozeCount + 1): a snooze is not a failure. A job whose cancel was
	// requested goes to the DLQ as Cancelled instead (ErrCancelled).
	Snooze(ctx context.Context, ref LeaseRef, p SnoozeParams) error
	// DeadLetter moves a Processing job to the DLQ with a reason.
	DeadLetter(ctx context.Context, ref LeaseRef, p DeadLetterParams) error
	// Release returns Fetched jobs to Pending without touching AttemptCount.
	// Stale refs are skipped; it returns how many were released.
	Release(ctx context.Context, refs []LeaseRef) (int, error)
	// Queues lists the queue control rows.
	Queues(ctx context.Context) ([]QueueSettings, error)
}

// Rescuer is what the rescue loop needs: the three phases, each one
// bounded statement.
type Rescuer interface {
	// RescueFetched (phase 1) returns Fetched jobs whose status is older
	// than Timeout to Pending.
	RescueFetched(ctx context.Context, p RescueParams) ([]Rescued, error)
	// RescueZombies (phase 2) moves Processing jobs whose last heartbeat is
	// older than their queue's ZombieTimeout (else Timeout), and than
	// MissedBeats x the HeartbeatMax they were started with (the rule is
	// ZombieTimeout), to the DLQ with ReasonZombie; a job started with a
	// zombie policy it has not used up (RecoversZombie) and no cancel
	// requested goes back to Pending instead, due now, its ZombieRetries
	// one more and its LastError RecoveredError, reported Recovered. Limit
	// counts both.
	RescueZombies(ctx context.Context, p RescueParams) ([]Rescued, error)
	// RescueExpired (phase 3) moves Processing jobs past their DeadlineAt to
	// the DLQ with ReasonTimeout. Timeout is ignored.
	RescueExpired(ctx context.Context, p RescueParams) ([]Rescued, error)
}

// Admin is what operator tools need: look jobs up, bring dead letters back,
// purge, and read and change queue settings.
type Admin interface {
	// Resurrect moves dead letters back to Pending (AttemptCount reset, ID
	// kept) and returns how many moved, also when it fails part way.
	Resurrect(ctx context.Context, p ResurrectParams) (int, error)
	// Purge deletes archived or dead-lettered jobs and returns how many were
	// deleted, also when it fails part way.
	Purge(ctx context.Context, p PurgeParams) (int, error)

	// GetJob finds a job in whichever table holds it, or ErrJobNotFound.
	GetJob(ctx context.Context, id int64) (*Job, error)
	// ListJobs pages through one table, newest (highest ID) first.
	ListJobs(ctx context.Context, p ListParams) (JobPage, error)
	// CountJobs counts one table's jobs that match a filter.
	CountJobs(ctx context.Context, table Table, f Filter) (int64, error)

	// Cancel stops jobs nobody wants any more: a Pending or Fetched job
	// goes to the DLQ at once as Cancelled; a Processing job is marked, its
	// worker learns of it at its next heartbeat and cancels the handler.
	// Results are in the order of p.IDs (see CancelOutcome).
	Cancel(ctx context.Context, p CancelParams) ([]CancelResult, error)

	// Schedules lists the schedules the store knows, by name.
	Schedules(ctx context.Context) ([]ScheduleState, error)
	// PauseSchedule pauses or resumes a schedule (ErrScheduleNotFound if
	// none has that name). A paused schedule fires no tick; resumed, it
	// fires the ticks it missed by its missed-fire policy.
	PauseSchedule(ctx context.Context, name string, paused bool) (ScheduleState, error)
	// DeleteSchedule forgets a schedule no process defines any more
	// (ErrScheduleNotFound if none has that name). A process that still
	// defines it records it again at its next start.
	DeleteSchedule(ctx context.Context, name string) error

	// TableQueues lists, by name, the distinct queues of the jobs table t
	// holds whose names sort after after ("" from the first), at most
	// MaxStatsQueues: a caller pages through every queue with the last name
	// of each page. The retention loop trims each queue's archived and
	// dead-lettered jobs with that queue's own retention.
	TableQueues(ctx context.Context, t Table, after string) ([]string, error)
	// Trim deletes up to Limit of a queue's archived or dead-lettered jobs
	// that finished more than OlderThan ago, oldest first, after the key
	// p.After: the retention loop's delete. Each call continues where the
	// last one stopped (Last), so a store whose index keeps the rows just
	// deleted for a while (SQL Server's ghost records) does not read them
	// again at every step.
	Trim(ctx context.Context, p TrimParams) (TrimResult, error)

	// Queues lists the queue control rows.
	Queues(ctx context.Context) ([]QueueSettings, error)
	// UpdateQueue changes a queue's settings, creating its row if needed.
	UpdateQueue(ctx context.Context, name string, u QueueUpdate) (QueueSettings, error)
	// QueueStats reports counts and lag for every queue that has a control
	// row or any job (at most MaxStatsQueues queues). Each count is capped
	// at the store's stats cap (DefaultStatsCap unless configured), so a
	// poll costs a bounded read however large the tables grow: a count at
	// the cap means "at least that many". It is an operator read, not a
	// snapshot (a SQL Server read at read committed can count a job that
	// changes status meanwhile twice, or not at all).
	QueueStats(ctx context.Context) ([]QueueStats, error)
	// QueueDepths counts the hot jobs of the named queues by status, each
	// count capped at Cap, so that sampling costs a bounded number of rows
	// however deep a backlog grows.
	QueueDepths(ctx context.Context, queues []string, cap int) ([]QueueDepth, error)

	// Now reports the store's clock, the only clock used to judge expiry.
	Now(ctx context.Context) (time.Time, error)
}

// QueueDepth is one queue's hot jobs by status, each capped (see QueueDepths).
type QueueDepth struct {
	Queue      string
	Pending    int64 // due or not
	Fetched    int64
	Processing int64
}

// MaxDepthCap bounds QueueDepths' cap.
const MaxDepthCap = 1_000_000

// QueueStats' bounds: each count is capped at a store's stats cap
// (DefaultStatsCap unless the store is configured otherwise), and at most
// MaxStatsQueues queues are reported.
const (
	DefaultStatsCap = 10_000
	MaxStatsQueues  = 1000
)

// MaxClaimLimit caps one claim: its update locks stay well below the
// 5,000 at which SQL Server escalates a statement to a table lock, which
// READPAST cannot skip.
const MaxClaimLimit = 1000

// ClaimParams selects what a claim may take.
type ClaimParams struct {
	WorkerID string
	// Queues are tried in order until Limit jobs are claimed.
	Queues []string
	Limit  int
}

// StartParams configures Start.
type StartParams struct {
	// DefaultTimeout is the execution timeout when the queue sets none.
	DefaultTimeout time.Duration
	// HeartbeatMax is the longest the worker lets pass between two
	// heartbeats of the job (processor.Config.HeartbeatIntervalMax), 0 to
	// MaxHeartbeatInterval. The store records it with the job (to the
	// millisecond), and rescue phase 2 waits at least MissedBeats x it
	// before it dead-letters the job, whatever the queue's zombie timeout
	// (ZombieTimeout). 0 records nothing: the zombie timeout alone applies.
	HeartbeatMax time.Duration
	// Timeout is the execution timeout of the job's kind (or of the job
	// itself), 0 for none: it wins over the queue's and DefaultTimeout
	// (docs/design.md, Policy per kind). TimeoutFrom says which level it
	// is (SourceJob or SourceKind; SourceKind when unset).
	Timeout     time.Duration
	TimeoutFrom PolicySource
	// ZombieRetryCap is the kind's zombie policy: how many times rescue
	// phase 2 may return the job to Pending when its worker goes silent
	// (0, the default, dead-letters it: I4). The store records it with
	// the job, so a rescuer that never heard of the kind applies it.
	ZombieRetryCap int
}

// Started reports what Start wrote.
type Started struct {
	AttemptCount int
	StartedAt    time.Time
	DeadlineAt   time.Time
	// Timeout is the execution timeout the store applied (the queue's own,
	// else the default). A worker arms its own timer with it, relative to
	// now, so its clock never has to agree with the store's.
	Timeout time.Duration
	// TimeoutFrom is the level Timeout came from: StartParams.TimeoutFrom,
	// SourceQueue or SourceDefault. The store records it with the job.
	TimeoutFrom PolicySource
}

// HeartbeatResult is what a Heartbeat call found.
type HeartbeatResult struct {
	// Lost are the refs that matched no Processing row.
	Lost []LeaseRef
	// CancelRequested are the refs of jobs an operator asked to cancel:
	// their handlers should stop. They were stamped.
	CancelRequested []LeaseRef
}

// SnoozeParams configures Snooze.
type SnoozeParams struct {
	Delay time.Duration
}

// Validate checks a snooze request.
func (p SnoozeParams) Validate() error {
	if p.Delay < 0 || p.Delay > MaxDelay {
		return &ValidationError{Field: "delay", Value: p.Delay, Rule: "must be between 0 and " + MaxDelay.String()}
	}
	return nil
}

// RetryParams configures Retry.
type RetryParams struct {
	Delay time.Duration
	Error string
}

// DeadLetterParams configures DeadLetter.
type DeadLetterParams struct {
	Reason  FailureReason
	Details string
}

// MaxRescueBatch caps one rescue statement.
const MaxRescueBatch = 1000

// RescueParams configures one rescue phase call.
type RescueParams struct {
	Timeout time.Duration
	// Limit caps the jobs moved by this call; 0 means MaxRescueBatch.
	Limit int
}

// RescueLimit returns the effective batch size, clamped to [1, MaxRescueBatch].
func (p RescueParams) RescueLimit() int {
	if p.Limit <= 0 || p.Limit > MaxRescueBatch {
		return MaxRescueBatch
	}
	return p.Limit
}

// Rescued describes one job a rescue phase moved.
type Rescued struct {
	ID       int64
	Queue    string
	Type     string
	WorkerID string
	Lease    int64
	// LastSeen is the job's last sign of life: its heartbeat (phase 2), its
	// status change (phase 1) or its deadline (phase 3).
	LastSeen time.Time
	// Reason is set for phases 2 and 3.
	Reason FailureReason
	// Recovered is set for a job phase 2 returned to Pending under its
	// kind's zombie policy instead of dead-lettering it.
	Recovered bool
	// At is the store's time of the rescue, so At - LastSeen is how long the
	// job went unnoticed, measured on one clock.
	At time.Time
}

// Filter selects jobs for listing, counting, resurrect and purge. Empty
// fields do not filter.
type Filter struct {
	IDs    []int64
	Queue  string
	Type   string
	Status *Status        // hot only
	Reason *FailureReason // DLQ only
	// From (inclusive) and To (exclusive) bound the table's own instant:
	// CreatedAt for hot jobs, FinishedAt for archived and dead-lettered ones.
	From, To time.Time
	// OlderThan keeps jobs whose instant is older than the store's now minus
	// this duration.
	OlderThan time.Duration
	// Text matches a substring of the type, the last error or error details
	// (by the store's collation), or the payload bytes.
	Text string
}

// IsEmpty reports whether f selects everything.
func (f Filter) IsEmpty() bool {
	return len(f.IDs) == 0 && f.Queue == "" && f.Type == "" && f.Status == nil &&
		f.Reason == nil && f.From.IsZero() && f.To.IsZero() && f.OlderThan == 0 && f.Text == ""
}

// Validate checks that f makes sense for table t.
func (f Filter) Validate(t Table) error {
	if !t.Valid() {
		return &ValidationError{Field: "table", Value: t, Rule: "must be hot, archive or dlq"}
	}
	if f.Status != nil {
		if t != TableHot {
			return &ValidationError{Field: "status", Value: *f.Status, Rule: "applies only to hot jobs"}
		}
		if !f.Status.Valid() {
			return &ValidationError{Field: "status", Value: *f.Status, Rule: "must be Pending(0), Fetched(1) or Processing(2)"}
		}
	}
	if f.Reason != nil {
		if t != TableDLQ {
			return &ValidationError{Field: "reason", Value: *f.Reason, Rule: "applies only to dead letters"}
		}
		if !f.Reason.Valid() {
			return &ValidationError{Field: "reason", Value: int(*f.Reason), Rule: "is not a known failure reason"}
		}
	}
	if f.OlderThan < 0 {
		return &ValidationError{Field: "older_than", Value: f.OlderThan, Rule: "must not be negative"}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return &ValidationError{Field: "from", Value: f.From, Rule: "must be before to (" + f.To.String() + ")"}
	}
	if f.Queue != "" {
		if err := ValidateQueueName(f.Queue); err != nil {
			return err
		}
	}
	if len(f.Text) > MaxFilterTextLen {
		return &ValidationError{Field: "text", Value: f.Text, Rule: "must be at most " + itoa(MaxFilterTextLen) + " bytes"}
	}
	if len(f.IDs) > MaxFilterIDs {
		return &ValidationError{Field: "ids", Value: len(f.IDs), Rule: "at most " + itoa(MaxFilterIDs) + " ids per call"}
	}
	return nil
}

// Caps on a filter.
const (
	MaxFilterIDs     = 10000
	MaxFilterTextLen = 400
)

// Paging limits for ListJobs.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// ListParams pages through one table.
type ListParams struct {
	Table  Table
	Filter Filter
	// Limit defaults to DefaultPageSize and is capped at MaxPageSize.
	Limit int
	// BeforeID continues a listing: only IDs below it. 0 starts at the newest.
	BeforeID int64
}

// PageLimit returns the effective page size.
func (p ListParams) PageLimit() int {
	switch {
	case p.Limit <= 0:
		return DefaultPageSize
	case p.Limit > MaxPageSize:
		return MaxPageSize
	}
	return p.Limit
}

// JobPage is one page of a listing.
type JobPage struct {
	Jobs []*Job
	// NextBeforeID continues the listing; 0 when this was the last page.
	NextBeforeID int64
}

// ResurrectParams selects dead letters to bring back.
type ResurrectParams struct {
	Filter Filter
	// All must be set to resurrect with an empty filter.
	All bool
	// Payload, when not nil, replaces the payload of every resurrected job.
	Payload []byte
}

// PurgeParams selects archived or dead-lettered jobs to delete.
type PurgeParams struct {
	Table  Table // TableArchive or TableDLQ
	Filter Filter
	// All must be set to purge with an empty filter.
	All bool
	// Limit, when positive, is the most jobs this call deletes, oldest
	// (by FinishedAt) first: a caller that trims a table in steps, with a
	// pause between them, passes it.
	Limit int
}

// TrimParams is one step of the retention loop's trim of one queue.
type TrimParams struct {
	Table     Table // TableArchive or TableDLQ
	Queue     string
	OlderThan time.Duration
	// Limit is the most jobs this step deletes: 1 to MaxRescueBatch.
	Limit int
	// After is the last job the previous step of this trim deleted; zero
	// for the first step.
	After TrimKey
}

// TrimKey is a job's place in a trim's order: finish instant, then ID.
type TrimKey struct {
	FinishedAt time.Time
	ID         int64
}

// TrimResult is what one step deleted.
type TrimResult struct {
	Deleted int
	// Last is the last job deleted, for the next step's After; zero when
	// none was.
	Last TrimKey
}

// Validate checks a trim step.
func (p TrimParams) Validate() error {
	switch {
	case p.Table != TableArchive && p.Table != TableDLQ:
		return &ValidationError{Field: "table", Value: p.Table, Rule: "trim applies to archive or dlq"}
	case p.OlderThan <= 0 || p.OlderThan > MaxRetention:
		return &ValidationError{Field: "older_than", Value: p.OlderThan, Rule: "must be positive and at most " + MaxRetention.String()}
	case p.Limit < 1 || p.Limit > MaxRescueBatch:
		return &ValidationError{Field: "limit", Value: p.Limit, Rule: "must be between 1 and " + itoa(MaxRescueBatch)}
	}
	return ValidateQueueName(p.Queue)
}

// CheckBulk validates a bulk filter for table t, refusing an empty one
// unless all is set.
func CheckBulk(t Table, f Filter, all bool) error {
	if err := f.Validate(t); err != nil {
		return err
	}
	if f.IsEmpty() && !all {
		return ErrEmptyFilter
	}
	return nil
}

// Validate checks worker-side parameters shared by every store.
func (p StartParams) Validate() error {
	if p.DefaultTimeout <= 0 {
		return &ValidationError{Field: "default_timeout", Value: p.DefaultTimeout, Rule: "must be positive"}
	}
	if p.DefaultTimeout > MaxDelay {
		return &ValidationError{Field: "default_timeout", Value: p.DefaultTimeout, Rule: "must be at most " + MaxDelay.String()}
	}
	if p.HeartbeatMax < 0 || p.HeartbeatMax > MaxHeartbeatInterval {
		return &ValidationError{Field: "heartbeat_max", Value: p.HeartbeatMax, Rule: "must be between 0 (not recorded) and " + MaxHeartbeatInterval.String()}
	}
	if p.Timeout < 0 || p.Timeout > MaxDelay {
		return &ValidationError{Field: "timeout", Value: p.Timeout, Rule: "must be between 0 (none: the queue's, else the default) and " + MaxDelay.String()}
	}
	if p.Timeout > 0 && p.Timeout < time.Millisecond {
		return &ValidationError{Field: "timeout", Value: p.Timeout, Rule: "must be at least 1ms (stores keep milliseconds)"}
	}
	if p.TimeoutFrom != SourceUnknown && p.TimeoutFrom != SourceJob && p.TimeoutFrom != SourceKind {
		return &ValidationError{Field: "timeout_from", Value: p.TimeoutFrom, Rule: "must be job or kind"}
	}
	if p.ZombieRetryCap < 0 || p.ZombieRetryCap > MaxZombieRetries {
		return &ValidationError{Field: "zombie_retry_cap", Value: p.ZombieRetryCap, Rule: "must be between 0 (dead-letter) and " + itoa(MaxZombieRetries)}
	}
	return nil
}

// EffectiveTimeout is the execution timeout Start applies and its source:
// the job's or kind's (p.Timeout), else the queue's (queueTimeout, 0 for
// none), else p.DefaultTimeout. Every store resolves it with this rule.
func (p StartParams) EffectiveTimeout(queueTimeout time.Duration) (time.Duration, PolicySource) {
	switch {
	case p.Timeout > 0:
		if p.TimeoutFrom == SourceJob {
			return p.Timeout, SourceJob
		}
		return p.Timeout, SourceKind
	case queueTimeout > 0:
		return queueTimeout, SourceQueue
	}
	return p.DefaultTimeout, SourceDefault
}

// Validate checks a retry request.
func (p RetryParams) Validate() error {
	if p.Delay < 0 || p.Delay > MaxDelay {
		return &ValidationError{Field: "delay", Value: p.Delay, Rule: "must be between 0 and " + MaxDelay.String()}
	}
	return nil
}

// Validate checks a dead-letter request.
func (p DeadLetterParams) Validate() error {
	if !p.Reason.Valid() {
		return &ValidationError{Field: "reason", Value: int(p.Reason), Rule: "is not a known failure reason"}
	}
	return nil
}

// Validate checks a claim request.
func (p ClaimParams) Validate() error {
	if p.Limit < 0 || p.Limit > MaxClaimLimit {
		return &ValidationError{Field: "limit", Value: p.Limit, Rule: fmt.Sprintf("must be between 0 and %d", MaxClaimLimit)}
	}
	if err := checkText("worker_id", p.WorkerID, MaxWorkerIDLen); err != nil {
		return err
	}
	if p.WorkerID == "" {
		return &ValidationError{Field: "worker_id", Value: p.WorkerID, Rule: "must not be empty"}
	}
	for _, q := range p.Queues {
		if err := ValidateQueueName(q); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a rescue request for phases 1 and 2, which need a timeout.
func (p RescueParams) Validate() error {
	if p.Timeout <= 0 || p.Timeout > MaxDelay {
		return &ValidationError{Field: "timeout", Value: p.Timeout, Rule: "must be positive and at most " + MaxDelay.String()}
	}
	return nil
}

// MaxWorkerIDLen caps a worker ID.
const MaxWorkerIDLen = 200

// ValidateDepthParams checks QueueDepths' arguments.
func ValidateDepthParams(queues []string, cap int) error {
	if cap < 1 || cap > MaxDepthCap {
		return &ValidationError{Field: "cap", Value: cap, Rule: "must be between 1 and " + itoa(MaxDepthCap)}
	}
	if len(queues) > MaxFilterIDs {
		return &ValidationError{Field: "queues", Value: len(queues), Rule: "at most " + itoa(MaxFilterIDs) + " queues"}
	}
	for _, q := range queues {
		if err := ValidateQueueName(q); err != nil {
			return err
		}
	}
	return nil
}
