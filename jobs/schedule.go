package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrScheduleNotFound means no schedule has that name.
var ErrScheduleNotFound = errors.New("jobs: schedule not found")

// Scheduler is what the schedule loop needs (package schedule): the
// schedules' state, kept by the store so that every process, every restart
// and every leader agrees on which ticks have fired.
type Scheduler interface {
	// SyncSchedules records the schedules a process defines, at its start.
	// A new one starts as if it had fired at the store's now (the ticks
	// before it existed are not owed), paused as its definition says; one
	// whose definition changed (another Hash) starts over the same way; an
	// unchanged one keeps its state, paused or not, and only its SyncedAt
	// moves. Schedules the process does not define are left alone.
	SyncSchedules(ctx context.Context, defs []ScheduleDef) error
	// FireSchedule fires one tick of a schedule: if the schedule exists
	// with this Hash, is not paused and has not fired Tick or a later one,
	// it records Tick as fired (and Next as its next fire) and enqueues Job
	// in the same transaction, so a tick fires once whoever tries it,
	// however many at once. Otherwise it changes nothing and reports
	// Fired false.
	FireSchedule(ctx context.Context, p FireParams) (FireResult, error)
}

// ScheduleDef is what a process knows of one schedule.
type ScheduleDef struct {
	Name string
	// Definition is the schedule's definition as its owner encodes it
	// (package schedule writes JSON); the store keeps it for operators and
	// for firing by hand, and does not read it.
	Definition []byte
	// Hash names the definition: a schedule whose hash changed starts
	// over.
	Hash string
	// Paused is the state a new or changed schedule starts in.
	Paused bool
}

// Bounds of a schedule's stored fields.
const (
	// MaxScheduleNameLen bounds a schedule's name, so that "schedule:"
	// and the name fit a job's CreatedBy.
	MaxScheduleNameLen = 80
	// MaxScheduleHashLen bounds a definition's hash.
	MaxScheduleHashLen = 64
	// MaxScheduleDefinitionLen bounds an encoded definition (its payload
	// included).
	MaxScheduleDefinitionLen = 1 << 20
)

// ValidateScheduleName checks a schedule's name: 1 to MaxScheduleNameLen
// characters from the set a queue name takes (letters, digits, '_', '-',
// '.', ':'), since the name appears in keys, URLs and command lines.
func ValidateScheduleName(name string) error {
	if name == "" || len(name) > MaxScheduleNameLen {
		return &ValidationError{Field: "schedule", Value: name, Rule: "must be 1 to " + itoa(MaxScheduleNameLen) + " characters"}
	}
	if !queueNameChars(name) {
		return &ValidationError{Field: "schedule", Value: name, Rule: "may contain only ASCII letters, digits, '_', '-', '.' and ':'"}
	}
	return nil
}

// Validate checks a definition.
func (d ScheduleDef) Validate() error {
	if err := ValidateScheduleName(d.Name); err != nil {
		return err
	}
	if d.Hash == "" || len(d.Hash) > MaxScheduleHashLen {
		return &ValidationError{Field: "schedule_hash", Value: d.Hash, Rule: "must be 1 to " + itoa(MaxScheduleHashLen) + " characters"}
	}
	if len(d.Definition) > MaxScheduleDefinitionLen {
		return &ValidationError{Field: "schedule_definition", Value: len(d.Definition), Rule: "must be at most " + itoa(MaxScheduleDefinitionLen) + " bytes"}
	}
	return nil
}

// ValidateScheduleDefs checks the definitions of one SyncSchedules call:
// each valid, no name twice.
func ValidateScheduleDefs(defs []ScheduleDef) error {
	seen := make(map[string]bool, len(defs))
	for _, d := range defs {
		if err := d.Validate(); err != nil {
			return err
		}
		// Names compare ignoring case, as SQL Server's default collation
		// compares them (they are ASCII): two such names are one schedule.
		key := strings.ToLower(d.Name)
		if seen[key] {
			return &ValidationError{Field: "schedule", Value: d.Name, Rule: "is defined twice (names ignore case)"}
		}
		seen[key] = true
	}
	return nil
}

// ScheduleState is a schedule as the store holds it. Stores compare
// schedule names ignoring case.
type ScheduleState struct {
	Name       string
	Definition []byte
	Hash       string
	// LastFiredTick is the last tick fired; for a schedule that has not
	// fired since it was created or changed, the instant that happened.
	LastFiredTick time.Time
	// LastFiredAt is when a tick was last fired (zero if never).
	LastFiredAt time.Time
	// NextFire is the next tick as last recorded (by a sync or a fire);
	// a reader that can decode the definition computes a fresher one.
	NextFire time.Time
	Paused   bool
	// UpdatedAt is when the definition or the pause last changed.
	UpdatedAt time.Time
	// SyncedAt is when a starting process last defined the schedule: a
	// schedule no process defines any more keeps an old one.
	SyncedAt time.Time
}

// FireParams is one tick to fire.
type FireParams struct {
	Name, Hash string
	Tick       time.Time
	// Next is the tick after this one, recorded for operators.
	Next time.Time
	// Job is what the tick enqueues; its idempotency key should name the
	// schedule and the tick, a second guard behind the tick check.
	Job EnqueueParams
}

// Validate checks a fire request.
func (p FireParams) Validate() error {
	if err := ValidateScheduleName(p.Name); err != nil {
		return err
	}
	if p.Hash == "" || len(p.Hash) > MaxScheduleHashLen || p.Tick.IsZero() {
		return &ValidationError{Field: "fire", Value: p.Name, Rule: "needs the schedule's hash (1 to " + itoa(MaxScheduleHashLen) + " characters) and a tick"}
	}
	if y := p.Tick.UTC().Year(); y < 1970 || y > 9000 {
		return &ValidationError{Field: "tick", Value: p.Tick, Rule: "must be between years 1970 and 9000"}
	}
	return nil
}

// FireResult is what FireSchedule did.
type FireResult struct {
	Fired bool
	// Job is the enqueue's result when Fired.
	Job EnqueueResult
}

// ScheduleNotFound is ErrScheduleNotFound naming the schedule.
func ScheduleNotFound(name string) error {
	return fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
}
