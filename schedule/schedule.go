package schedule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// MissedFire says what a schedule does with ticks that passed while no
// process could fire them: every process was down, the schedule was
// paused, or the leader was changing.
type MissedFire string

const (
	// Coalesce fires once for any number of missed ticks: the latest. The
	// default, and what a report or a sync job wants.
	Coalesce MissedFire = "coalesce"
	// CatchUp fires each missed tick, oldest first, up to the schedule's
	// CatchUpLimit (the latest ones; older ones are dropped and logged).
	CatchUp MissedFire = "catch-up"
	// Skip fires no tick later than the scheduler's Grace: a missed tick
	// is dropped and the schedule waits for the next one.
	Skip MissedFire = "skip"
)

// Bounds of a definition.
const (
	// DefaultCatchUpLimit is how many missed ticks CatchUp fires at most
	// when the schedule sets no limit.
	DefaultCatchUpLimit = 10
	// MaxCatchUpLimit bounds CatchUpLimit: one round fires at most this
	// many jobs per schedule.
	MaxCatchUpLimit = 1000
)

// Schedule is one recurring job: the job it enqueues at each tick of a
// cron expression read in a time zone.
type Schedule struct {
	// Name identifies the schedule in the store, the command line and the
	// dashboard: 1 to 80 ASCII letters, digits, '_', '-', '.' and ':'.
	Name string
	// Cron is a standard five-field expression (minute, hour, day of
	// month, month, day of week) or a descriptor: @yearly, @monthly,
	// @weekly, @daily, @hourly, @every 10m.
	Cron string
	// TimeZone is an IANA name (Europe/Berlin); "" is UTC. The fields of
	// Cron are wall times there, with the daylight-saving rules of Parse.
	// "Local" is refused: each host would read its own zone.
	TimeZone string
	// Job is what each tick enqueues.
	Job Job
	// MissedFire is the policy for missed ticks; "" is Coalesce.
	MissedFire MissedFire
	// CatchUpLimit bounds the ticks CatchUp fires at once (0 is
	// DefaultCatchUpLimit). Other policies ignore it.
	CatchUpLimit int
	// Paused starts the schedule paused. It is part of the definition: a
	// change here starts the schedule over in this state, while a pause or
	// resume by an operator holds until the definition changes.
	Paused bool
}

// Job is the job a schedule enqueues. Each tick's job is due at the tick
// (so its ScheduledAt says which tick it stands for), is created by
// "schedule:<name>", and carries the idempotency key
// "schedule:<name>:<tick>".
type Job struct {
	Type  string
	Queue string // "" is "default"
	// Payload is JSON, or empty.
	Payload  json.RawMessage
	Priority int
	// MaxAttempts 0 is the store's default (3); the Client writes its own
	// DefaultMaxAttempts in, so the stored definition says what runs.
	MaxAttempts int
}

// DefinitionError is a field of a Schedule that breaks a rule. Field is
// the field's name, which is also its appsettings key
// (ChokaQ.Schedules.<Schedule>.<Field>).
type DefinitionError struct {
	Schedule string
	Field    string
	Value    any
	Rule     string
	// Err is the cause, when there is one (ErrBadCron, a time zone that
	// does not load).
	Err error
}

// Error names the schedule, the field, the value and the rule.
func (e *DefinitionError) Error() string {
	return fmt.Sprintf("schedule %q: %s %s: %s", e.Schedule, e.Field, quote(e.Value), e.Rule)
}

// Unwrap returns jobs.ErrInvalidArgument and the cause.
func (e *DefinitionError) Unwrap() []error {
	if e.Err != nil {
		return []error{jobs.ErrInvalidArgument, e.Err}
	}
	return []error{jobs.ErrInvalidArgument}
}

// quote shows a value in a message, a long text (a payload, as text or
// bytes) clipped to its first 80 bytes and its length.
func quote(v any) string {
	switch b := v.(type) {
	case []byte:
		v = string(b)
	case json.RawMessage:
		v = string(b)
	}
	if s, ok := v.(string); ok {
		if len(s) > 80 {
			return fmt.Sprintf("%q (%d bytes)", jobs.Clip(s, 80), len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// Validate checks s and returns its cadence. limits bounds the payload.
func (s Schedule) Validate(limits jobs.Limits) (Cadence, error) {
	bad := func(field string, v any, rule string, cause error) (Cadence, error) {
		return Cadence{}, &DefinitionError{Schedule: s.Name, Field: field, Value: v, Rule: rule, Err: cause}
	}
	if err := jobs.ValidateScheduleName(s.Name); err != nil {
		var ve *jobs.ValidationError
		errors.As(err, &ve)
		return bad("Name", s.Name, ve.Rule, nil)
	}
	if strings.TrimSpace(s.Cron) == "" {
		return bad("Cron", s.Cron, "must be set: five fields (minute hour day-of-month month day-of-week) or a descriptor such as @hourly", ErrBadCron)
	}
	c, err := Parse(s.Cron, "")
	if err != nil {
		// Parse's message names the expression, which the error names too.
		rule := strings.TrimPrefix(err.Error(), fmt.Sprintf("%s %q: ", ErrBadCron.Error(), strings.TrimSpace(s.Cron)))
		return bad("Cron", s.Cron, rule, ErrBadCron)
	}
	if s.TimeZone != "" {
		if _, rule, _ := loadZone(s.TimeZone); rule != "" {
			return bad("TimeZone", s.TimeZone, rule, nil)
		}
		if c, err = Parse(s.Cron, s.TimeZone); err != nil {
			return bad("TimeZone", s.TimeZone, "not a time zone this machine knows; want an IANA name such as Europe/Berlin", err)
		}
	}
	switch s.MissedFire {
	case "", Coalesce, CatchUp, Skip:
	default:
		return bad("MissedFire", string(s.MissedFire), "must be coalesce, catch-up or skip", nil)
	}
	if s.CatchUpLimit < 0 || s.CatchUpLimit > MaxCatchUpLimit {
		return bad("CatchUpLimit", s.CatchUpLimit, fmt.Sprintf("must be between 1 and %d (0 takes %d)", MaxCatchUpLimit, DefaultCatchUpLimit), nil)
	}
	if len(s.Job.Payload) > 0 && !json.Valid(s.Job.Payload) {
		return bad("Payload", string(s.Job.Payload), "must be JSON", nil)
	}
	// The job's own rules are the enqueue's: check a tick's job now, so a
	// bad one fails at start-up, not at its first tick.
	if _, err := s.jobAt(time.Time{}, TickKey(s.Name, time.Unix(0, 0))).Normalize(limits); err != nil {
		var ve *jobs.ValidationError
		if errors.As(err, &ve) {
			return bad(jobField(ve.Field), ve.Value, ve.Rule, nil)
		}
		return Cadence{}, err
	}
	return c, nil
}

// jobField is the Schedule field of an enqueue's validation field.
func jobField(f string) string {
	switch f {
	case "type":
		return "Type"
	case "queue":
		return "Queue"
	case "payload":
		return "Payload"
	case "priority":
		return "Priority"
	case "max_attempts":
		return "MaxAttempts"
	}
	return "Job." + f
}

// definition is what the store keeps of a schedule: every field, in a
// fixed order, so the same schedule always encodes, and hashes, the same.
type definition struct {
	Cron         string          `json:"cron"`
	TimeZone     string          `json:"timeZone,omitempty"`
	Type         string          `json:"type"`
	Queue        string          `json:"queue,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	Priority     int             `json:"priority,omitempty"`
	MaxAttempts  int             `json:"maxAttempts,omitempty"`
	MissedFire   MissedFire      `json:"missedFire"`
	CatchUpLimit int             `json:"catchUpLimit,omitempty"`
	Paused       bool            `json:"paused,omitempty"`
}

// normalized fills the defaults that do not change what s means, so that
// writing them out or leaving them does not change its hash.
func (s Schedule) normalized() Schedule {
	if s.MissedFire == "" {
		s.MissedFire = Coalesce
	}
	if s.MissedFire != CatchUp {
		s.CatchUpLimit = 0
	} else if s.CatchUpLimit == 0 {
		s.CatchUpLimit = DefaultCatchUpLimit
	}
	if s.Job.Queue == "" {
		s.Job.Queue = jobs.DefaultQueue
	}
	if len(s.Job.Payload) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, s.Job.Payload) == nil {
			s.Job.Payload = b.Bytes()
		}
	}
	s.Cron = strings.TrimSpace(s.Cron)
	return s
}

// Def is what the store records of s (see jobs.ScheduleDef): its
// definition as JSON, and that JSON's SHA-256.
func (s Schedule) Def() jobs.ScheduleDef {
	n := s.normalized()
	def, err := json.Marshal(definition{Cron: n.Cron, TimeZone: n.TimeZone, Type: n.Job.Type, Queue: n.Job.Queue,
		Payload: n.Job.Payload, Priority: n.Job.Priority, MaxAttempts: n.Job.MaxAttempts, MissedFire: n.MissedFire,
		CatchUpLimit: n.CatchUpLimit, Paused: n.Paused})
	if err != nil {
		// Only an invalid Payload fails to encode, and Validate refuses it.
		panic(fmt.Sprintf("schedule %q: encode the definition: %v", s.Name, err))
	}
	sum := sha256.Sum256(def)
	return jobs.ScheduleDef{Name: s.Name, Definition: def, Hash: hex.EncodeToString(sum[:]), Paused: n.Paused}
}

// Decode reads a stored definition back (jobs.ScheduleState.Definition),
// for operators: listing, firing by hand.
func Decode(name string, def []byte) (Schedule, error) {
	var d definition
	if err := json.Unmarshal(def, &d); err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: the stored definition does not decode: %w", name, err)
	}
	return Schedule{Name: name, Cron: d.Cron, TimeZone: d.TimeZone, MissedFire: d.MissedFire, CatchUpLimit: d.CatchUpLimit,
		Paused: d.Paused, Job: Job{Type: d.Type, Queue: d.Queue, Payload: d.Payload, Priority: d.Priority, MaxAttempts: d.MaxAttempts}}, nil
}

// TickKey is the idempotency key of a schedule's job for one tick: a
// second guard behind the store's compare-and-set on the schedule's row
// (keys are unique among active jobs only, so it cannot be the first).
func TickKey(name string, tick time.Time) string {
	return "schedule:" + name + ":" + tick.UTC().Format("2006-01-02T15:04:05.000Z")
}

// CreatedBy is the creator a schedule's jobs record.
func CreatedBy(name string) string { return "schedule:" + name }

// jobAt is the enqueue of s's job for tick (due at the tick; zero: now),
// with key as its idempotency key.
func (s Schedule) jobAt(tick time.Time, key string) jobs.EnqueueParams {
	return jobs.EnqueueParams{Queue: s.Job.Queue, Type: s.Job.Type, Payload: s.Job.Payload, Priority: s.Job.Priority,
		MaxAttempts: s.Job.MaxAttempts, IdempotencyKey: key, CreatedBy: CreatedBy(s.Name), RunAt: tick}
}
