package jobs

import (
	"fmt"
	"time"
)

// PolicySource says which level of the precedence a job's effective
// setting came from (docs/design.md, Policy per kind): the job's own
// option, its kind's policy, its queue's setting (which an operator can
// change at run time) or the processor's default.
type PolicySource int8

const (
	// SourceUnknown: the store recorded no source (a job started by an
	// older build, or not started).
	SourceUnknown PolicySource = 0
	SourceJob     PolicySource = 1 // set on the job at enqueue
	SourceKind    PolicySource = 2 // the kind's policy (KindPolicy, Kinds.<kind>.*)
	SourceQueue   PolicySource = 3 // the queue's setting
	SourceDefault PolicySource = 4 // the processor's or Client's default
)

// String returns "job", "kind", "queue", "default" or "unknown", as the
// command, the dashboard and the handler's Job show it.
func (s PolicySource) String() string {
	switch s {
	case SourceJob:
		return "job"
	case SourceKind:
		return "kind"
	case SourceQueue:
		return "queue"
	case SourceDefault:
		return "default"
	case SourceUnknown:
		return "unknown"
	}
	return fmt.Sprintf("PolicySource(%d)", int8(s))
}

// Valid reports whether s is one of the defined sources.
func (s PolicySource) Valid() bool { return s >= SourceUnknown && s <= SourceDefault }

// MaxZombieRetries bounds a kind's zombie retry cap: a job whose worker
// dies that often is better looked at by an operator.
const MaxZombieRetries = 100

// RecoveredError is the LastError of a job rescue phase 2 returned to
// Pending under its kind's zombie policy (ZombieRetryCap). The SQL Server
// store writes the same words from T-SQL.
func RecoveredError(lastHeartbeat time.Time, timeout time.Duration, workerID string, n, limit int) string {
	return fmt.Sprintf("recovered: heartbeat expired (last heartbeat %s, timeout %ds, worker %s); zombie retry %d of %d",
		lastHeartbeat.UTC().Format(time.RFC3339Nano), int64(timeout/time.Second), workerID, n, limit)
}

// RecoversZombie reports whether rescue phase 2 returns a silent job to
// Pending rather than dead-lettering it: its kind's zombie policy, recorded
// at start (Job.ZombieRetryCap), allows more zombie retries than it has had
// (Job.ZombieRetries). Every store decides with this rule, and
// dead-letters a job whose cancel was requested whatever its policy; the
// default cap of 0 dead-letters, as I4 requires of work with uncertain
// side effects.
func RecoversZombie(cap, retries int) bool { return cap > 0 && retries < cap }

// TimeoutText is the execution timeout of the job's last start and its
// source, as `chokaq jobs show` and the dashboard's job page show it:
// "42s (kind)", or "-" for a job never started (or not hot).
func (j *Job) TimeoutText() string {
	if j.StartedAt.IsZero() || j.DeadlineAt.IsZero() {
		return "-"
	}
	return j.DeadlineAt.Sub(j.StartedAt).String() + " (" + j.TimeoutFrom.String() + ")"
}

// ZombieText is the zombie policy recorded at the job's last start, as
// the command and the dashboard show it: "dead-letter" (the default, I4)
// or "retry 1 of 2 used" for a kind that opted into zombie retries.
func (j *Job) ZombieText() string {
	if j.ZombieRetryCap == 0 {
		if j.ZombieRetries > 0 { // recovered, then started by a build with no policy
			return fmt.Sprintf("dead-letter (%d zombie retries used)", j.ZombieRetries)
		}
		return "dead-letter"
	}
	return fmt.Sprintf("retry %d of %d used", j.ZombieRetries, j.ZombieRetryCap)
}
