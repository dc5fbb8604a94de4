package jobs

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Status is the state of a job in the hot set.
type Status int8

const (
	// StatusPending waits to be claimed once it is due.
	StatusPending Status = 0
	// StatusFetched is reserved in a worker's prefetch buffer; no user code has run.
	StatusFetched Status = 1
	// StatusProcessing means a handler has started; its side effects are uncertain.
	StatusProcessing Status = 2
)

// String returns the status's name, as SQL Server's Status column is
// shown to operators.
func (s Status) String() string {
	switch s {
	case StatusPending:
		return "Pending"
	case StatusFetched:
		return "Fetched"
	case StatusProcessing:
		return "Processing"
	}
	return fmt.Sprintf("Status(%d)", int8(s))
}

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool { return s >= StatusPending && s <= StatusProcessing }

// FailureReason says why a job reached the dead-letter queue. The numbers
// match the reference .NET implementation so operators read the same codes.
type FailureReason int

const (
	ReasonMaxRetriesExceeded   FailureReason = 0  // the last attempt failed
	ReasonCancelled            FailureReason = 1  // an operator cancelled it, or its handler returned Cancel(err)
	ReasonZombie               FailureReason = 2  // its heartbeats stopped while Processing (rescue phase 2)
	ReasonFatal                FailureReason = 6  // Permanent error, unknown type or undecodable payload
	ReasonTimeout              FailureReason = 7  // it ran past its execution deadline
	ReasonHeartbeatFailure     FailureReason = 9  // its worker could not heartbeat (CancelOnHeartbeatFailure)
	ReasonRetryLifetimeExpired FailureReason = 10 // .NET code, kept for its number; never produced
	ReasonSnoozeLimitExceeded  FailureReason = 11 // it snoozed more times than its processor allows
	// ReasonDependencyFailed: a workflow task whose parent ended in the
	// DLQ, or left it by purge or retention, under DependencyCancel (ADR
	// 0034); numbered after the reference's reasons.
	ReasonDependencyFailed FailureReason = 12
)

var reasonNames = map[FailureReason]string{
	ReasonMaxRetriesExceeded:   "MaxRetriesExceeded",
	ReasonCancelled:            "Cancelled",
	ReasonZombie:               "Zombie",
	ReasonFatal:                "Fatal",
	ReasonTimeout:              "Timeout",
	ReasonHeartbeatFailure:     "HeartbeatFailure",
	ReasonRetryLifetimeExpired: "RetryLifetimeExpired",
	ReasonSnoozeLimitExceeded:  "SnoozeLimitExceeded",
	ReasonDependencyFailed:     "DependencyFailed",
}

// String returns the reason's name, as the .NET implementation spells it.
func (r FailureReason) String() string {
	if n, ok := reasonNames[r]; ok {
		return n
	}
	return fmt.Sprintf("FailureReason(%d)", int(r))
}

// Valid reports whether r is one of the defined reasons.
func (r FailureReason) Valid() bool {
	_, ok := reasonNames[r]
	return ok
}

// ParseFailureReason accepts a reason's name (case-insensitive) or its number.
func ParseFailureReason(s string) (FailureReason, error) {
	for r, n := range reasonNames {
		if equalFold(n, s) || fmt.Sprint(int(r)) == s {
			return r, nil
		}
	}
	return 0, &ValidationError{Field: "reason", Value: s, Rule: "must be one of " + reasonList()}
}

// reasonList names every reason with its number, in number order, as
// ParseFailureReason's error offers them.
func reasonList() string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(reasonNames)) {
		parts = append(parts, fmt.Sprintf("%s(%d)", r, int(r)))
	}
	return strings.Join(parts, ", ")
}

// Table names the place a job lives.
type Table int8

const (
	TableHot     Table = 1 // JobsHot: Pending, Fetched and Processing jobs
	TableArchive Table = 2 // JobsArchive: succeeded jobs
	TableDLQ     Table = 3 // JobsDLQ: dead letters
)

// String returns "hot", "archive" or "dlq", the names the command and the
// dashboard accept.
func (t Table) String() string {
	switch t {
	case TableHot:
		return "hot"
	case TableArchive:
		return "archive"
	case TableDLQ:
		return "dlq"
	}
	return fmt.Sprintf("Table(%d)", int8(t))
}

// Valid reports whether t is one of the three tables.
func (t Table) Valid() bool { return t >= TableHot && t <= TableDLQ }

// LeaseRef names one claim of one job: the fencing token a worker presents
// with every transition.
type LeaseRef struct {
	ID    int64
	Lease int64
}

// Job is a job as a Store reports it. Fields that do not apply to the job's
// Table are zero.
type Job struct {
	ID             int64
	Queue          string
	Type           string
	Payload        []byte
	Priority       int
	Tags           []string
	IdempotencyKey string
	CreatedBy      string
	// ConcurrencyKey and SequenceKey are the job's flow-control keys
	// (ADR 0031); empty when it has none.
	ConcurrencyKey string
	SequenceKey    string
	// WorkflowID and WorkflowTask name the workflow the job is a task of,
	// and its task (ADR 0034); 0 and "" for a job of no workflow.
	WorkflowID   int64
	WorkflowTask string
	// UniqueKey is the unique key the job was enqueued with (nil for a job
	// that is not unique), and UniqueStates where it holds it: the key is
	// the job's while it is hot, and in a finished table only if its states
	// count that table (see UniqueOpts).
	UniqueKey    *UniqueKey
	UniqueStates UniqueStates
	// Metadata is what the job was enqueued with (EnqueueParams.Metadata),
	// in every table; nil for none.
	Metadata    map[string]string
	MaxAttempts int
	// AttemptCount is the number of executions started so far, less the
	// ones that snoozed.
	AttemptCount int
	// SnoozeCount is the number of executions that snoozed: each was
	// started, then given back without counting as an attempt.
	SnoozeCount int
	// CancelRequestedAt is when an operator asked to cancel the running
	// job (hot jobs only; zero when nobody did); CancelNote says who and
	// why.
	CancelRequestedAt time.Time
	CancelNote        string

	Table  Table
	Status Status // hot jobs only

	CreatedAt     time.Time
	ScheduledAt   time.Time // due time; equals CreatedAt for an immediate job
	LastUpdatedAt time.Time // last status change
	WorkerID      string
	Lease         int64 // RunLease: goes up by one at every claim, kept across tables
	StartedAt     time.Time
	HeartbeatAt   time.Time
	DeadlineAt    time.Time
	// HeartbeatMax is the heartbeat maximum the job's worker declared when
	// it started it (StartParams.HeartbeatMax; hot Processing jobs only,
	// zero when none was recorded): rescue phase 2 leaves the job alone for
	// at least MissedBeats x it (ZombieTimeout).
	HeartbeatMax time.Duration
	// TimeoutFrom is where the execution timeout of the job's current
	// start came from (DeadlineAt - StartedAt is its value; hot Processing
	// jobs only, SourceUnknown before a start or from an older build).
	TimeoutFrom PolicySource
	// ZombieRetryCap is the zombie policy recorded at the job's last start
	// (StartParams.ZombieRetryCap), ZombieRetries how many times rescue
	// phase 2 has returned it to Pending (hot jobs only).
	ZombieRetryCap int
	ZombieRetries  int
	LastError      string

	FinishedAt    time.Time     // archive: completed; DLQ: dead-lettered
	Duration      time.Duration // archive only: StartedAt to completion
	FailureReason FailureReason // DLQ only
	ErrorDetails  string        // DLQ only

	// Output is the JSON its handler recorded (processor.RecordOutput),
	// written with its outcome: archive, and DLQ for a failure; nil for
	// none.
	Output json.RawMessage
	// Progress (0 to 1) and ProgressMessage are what its handler last
	// reported (processor.Progress), as of the job's last heartbeat
	// (HeartbeatAt): hot Processing jobs only.
	Progress        float64
	ProgressMessage string
}

// ClaimsBefore reports whether due job a is claimed before due job b of
// the same queue: higher Priority first, then earlier ScheduledAt, then
// lower ID. Every store claims in this order.
func ClaimsBefore(a, b *Job) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.ScheduledAt.Equal(b.ScheduledAt) {
		return a.ScheduledAt.Before(b.ScheduledAt)
	}
	return a.ID < b.ID
}

// Ref returns the job's current lease reference.
func (j *Job) Ref() LeaseRef { return LeaseRef{ID: j.ID, Lease: j.Lease} }

// Clone returns a deep copy of j.
func (j *Job) Clone() *Job {
	c := *j
	c.Payload = append([]byte(nil), j.Payload...)
	c.Tags = append([]string(nil), j.Tags...)
	c.Metadata = maps.Clone(j.Metadata)
	c.Output = append(json.RawMessage(nil), j.Output...)
	if j.UniqueKey != nil {
		k := *j.UniqueKey
		c.UniqueKey = &k
	}
	return &c
}

// QueueSettings is the per-queue control row. Zero values mean "not set":
// MaxWorkers 0 is unlimited, a zero timeout falls back to the global one.
// Stores keep the timeouts in whole seconds.
type QueueSettings struct {
	Name   string
	Paused bool
	// MaxWorkers caps the queue's Fetched plus Processing jobs across every
	// process; 0 is unlimited.
	MaxWorkers int
	// ZombieTimeout is how long a running job of the queue may go without a
	// heartbeat before rescue dead-letters it; 0 uses the rescue loop's
	// ProcessingZombieTimeout.
	ZombieTimeout time.Duration
	// ExecutionTimeout is the hard deadline of one execution; 0 uses the
	// processor's DefaultTimeout.
	ExecutionTimeout time.Duration
	// ArchiveRetention and DeadLetterRetention are how long the queue's
	// archived and dead-lettered jobs are kept before the retention loop
	// deletes them: 0 uses the loop's own setting (Retention.Archive,
	// Retention.DeadLetters), KeepForever keeps them until purged by hand.
	ArchiveRetention    time.Duration
	DeadLetterRetention time.Duration
	// MaxWorkersPerKey caps the Fetched plus Processing jobs of each
	// concurrency key of the queue, across every process; 0 is unlimited.
	// KeyLimits sets a key's own cap instead (ADR 0031).
	MaxWorkersPerKey int
	KeyLimits        map[string]int
	// SequenceOnDeadLetter says whether a dead-lettered job holds its
	// sequence (SequenceHold) or lets the next run (SequenceContinue).
	SequenceOnDeadLetter SequencePolicy
	// Weight is the queue's share of the claims of a processor serving it
	// beside other queues, while they have work (ADR 0032): 1 to
	// MaxQueueWeight, 0 (not set) weighs DefaultQueueWeight (ClaimWeight).
	Weight int
	// RateLimit lets at most Count of the queue's jobs be claimed per
	// Window, across every process (ADR 0033); zero is none.
	RateLimit RateLimit
}

// KeepForever is a queue's retention that deletes nothing (0 in the
// appsettings key and in the store's column).
const KeepForever time.Duration = -1

// QueueUpdate changes some settings of a queue, creating its row if needed.
// A nil field is left as it is; a pointer to zero clears the setting (a
// retention then follows the retention loop's own; KeepForever keeps the
// queue's jobs).
type QueueUpdate struct {
	Paused              *bool
	MaxWorkers          *int
	ZombieTimeout       *time.Duration
	ExecutionTimeout    *time.Duration
	ArchiveRetention    *time.Duration
	DeadLetterRetention *time.Duration
	// MaxWorkersPerKey sets the cap of every concurrency key (0: none).
	MaxWorkersPerKey *int
	// KeyLimits sets the named keys' own caps; a cap of 0 removes the
	// key's own (it then follows MaxWorkersPerKey). nil leaves them all.
	KeyLimits            map[string]int
	SequenceOnDeadLetter *SequencePolicy
	// Weight sets the queue's weight, 1 to MaxQueueWeight (ADR 0032);
	// unlike the other settings, 0 is refused: set 1, the default.
	Weight *int
	// RateLimit sets the queue's rate limit; a pointer to the zero value
	// removes it. A change applies to the open window: a lower count than
	// it has used lets nothing more in until it closes.
	RateLimit *RateLimit
}

// QueueStats is one queue's operator view.
type QueueStats struct {
	Queue        string
	Paused       bool
	MaxWorkers   int
	Pending      int64 // due now
	Scheduled    int64 // pending but not yet due
	Fetched      int64
	Processing   int64
	Archived     int64
	DeadLettered int64
	// OldestDueAt is the due time of the oldest due Pending job (zero if none);
	// Lag is how long it has been waiting, by the store's clock.
	OldestDueAt time.Time
	Lag         time.Duration
	// WaitingOnKey and WaitingOnSequence count the due Pending jobs a
	// claim held back (ADR 0031): their concurrency key at its limit, or an
	// earlier job of their sequence unfinished. Both are in Pending too.
	WaitingOnKey      int64
	WaitingOnSequence int64
	// WindowUsed is how many claims the queue's open rate-limit window
	// has taken, and WindowEndsAt when it closes (zero: no open window);
	// WaitingOnRate counts the due Pending jobs while it has none left
	// (ADR 0033).
	WindowUsed    int
	WindowEndsAt  time.Time
	WaitingOnRate int64
	// WaitingOnParents counts the workflow tasks waiting for a parent
	// (ADR 0034): hot, but in neither Pending nor Scheduled.
	WaitingOnParents int64
	// BusiestKeys are the concurrency keys with the most Fetched and
	// Processing jobs, most first (ties by key), at most MaxBusiestKeys: a
	// dashboard's view of who holds the workers, never a metric label.
	BusiestKeys []KeyCount
}

// KeyCount is one concurrency key's jobs in QueueStats.BusiestKeys.
type KeyCount struct {
	Key     string
	Running int64 // Fetched and Processing
	Waiting int64 // held back at its limit
}

// MaxBusiestKeys bounds QueueStats.BusiestKeys.
const MaxBusiestKeys = 5

// Limits of queue settings.
const (
	MaxQueueWorkers = 100000
	// MaxQueueTimeout bounds a queue's timeouts (30 days).
	MaxQueueTimeout = 30 * 24 * time.Hour
	// MaxRetention bounds a retention (50 years: stores keep seconds in
	// an INT).
	MaxRetention = 50 * 365 * 24 * time.Hour
)

// Validate checks a queue update.
func (u QueueUpdate) Validate() error {
	if u.MaxWorkers != nil && (*u.MaxWorkers < 0 || *u.MaxWorkers > MaxQueueWorkers) {
		return &ValidationError{Field: "max_workers", Value: *u.MaxWorkers, Rule: "must be between 0 (unlimited) and " + itoa(MaxQueueWorkers)}
	}
	if err := checkQueueTimeout("zombie_timeout", u.ZombieTimeout, "use the rescue loop's ProcessingZombieTimeout"); err != nil {
		return err
	}

	if err := checkQueueTimeout("execution_timeout", u.ExecutionTimeout, "use the processor's DefaultTimeout"); err != nil {
		return err
	}
	if err := checkQueueRetention("archive_retention", u.ArchiveRetention); err != nil {
		return err
	}
	if err := checkQueueRetention("dead_letter_retention", u.DeadLetterRetention); err != nil {
		return err
	}
	if err := u.checkWeight(); err != nil {
		return err
	}
	if u.RateLimit != nil {
		if err := u.RateLimit.Validate(); err != nil {
			return err
		}
	}
	return u.checkFlow()
}

// ValidateAtRunTime checks a queue update an operator makes while
// processes run (Client.UpdateQueue, the dashboard's Queues form, chokaq
// queues set): Validate, and a zombie timeout of 0 or more than
// MinQueueZombieTimeout. The operator cannot know every process's heartbeat
// maximum; rescue never dead-letters a job before MissedBeats x its own
// (ZombieTimeout), so a shorter timeout would not do what it says for a
// processor with default heartbeats, and is refused rather than quietly
// cut short. A process's configured queues are checked against that
// process's own heartbeat maximum instead (chokaq.CheckConfig).
func (u QueueUpdate) ValidateAtRunTime() error {
	if err := u.Validate(); err != nil {
		return err
	}
	if d := u.ZombieTimeout; d != nil && *d != 0 && *d <= MinQueueZombieTimeout {
		return &ValidationError{Field: "zombie_timeout", Value: *d, Rule: "must be more than " + MinQueueZombieTimeout.String() +
			" (3 x the default heartbeat maximum of 12s), or 0 to use the rescue loop's ProcessingZombieTimeout: " +
			"rescue waits 3 x each job's own heartbeat maximum anyway, so a shorter timeout would not apply to processors with default heartbeats"}
	}
	return nil
}

func checkQueueRetention(field string, d *time.Duration) error {
	switch {
	case d == nil || *d == KeepForever || *d == 0:
		return nil
	case *d < time.Second || *d > MaxRetention:
		return &ValidationError{Field: field, Value: *d, Rule: "must be 0 (the retention loop's own), KeepForever, or between 1s and " + MaxRetention.String()}
	case *d%time.Second != 0:
		return &ValidationError{Field: field, Value: *d, Rule: "must be whole seconds (stores keep seconds)"}
	}
	return nil
}

func checkQueueTimeout(field string, d *time.Duration, zero string) error {
	switch {
	case d == nil:
		return nil
	case *d < 0 || *d > MaxQueueTimeout:
		return &ValidationError{Field: field, Value: *d, Rule: "must be between 0 (" + zero + ") and 720h (30 days)"}
	case *d%time.Second != 0:
		return &ValidationError{Field: field, Value: *d, Rule: "must be whole seconds (stores keep seconds)"}
	}
	return nil
}

// Apply returns s with u's set fields written over it.
func (u QueueUpdate) Apply(s QueueSettings) QueueSettings {
	if u.Paused != nil {
		s.Paused = *u.Paused
	}
	if u.MaxWorkers != nil {
		s.MaxWorkers = *u.MaxWorkers
	}
	if u.ZombieTimeout != nil {
		s.ZombieTimeout = *u.ZombieTimeout
	}
	if u.ExecutionTimeout != nil {
		s.ExecutionTimeout = *u.ExecutionTimeout
	}
	if u.ArchiveRetention != nil {
		s.ArchiveRetention = *u.ArchiveRetention
	}
	if u.DeadLetterRetention != nil {
		s.DeadLetterRetention = *u.DeadLetterRetention
	}
	if u.Weight != nil {
		s.Weight = *u.Weight
	}
	if u.RateLimit != nil {
		s.RateLimit = *u.RateLimit
	}
	return u.applyFlow(s)
}
