package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/zombie"
)

// origin is where a configured value came from, so that a rule broken by
// the merged result is reported against what the user wrote.
type origin struct {
	key    string // e.g. "ChokaQ.ZombieTimeoutSeconds", as reported
	value  string // as written
	source string
}

// Validate checks every rule of docs/design.md (Configuration defaults) and
// returns the first broken one as an *Error. Load calls it; call it after
// changing a Config in code.
func (c *Config) Validate() error { return c.validate(nil) }

// checker reports a rule broken by the value of id (a key name relative to
// ChokaQ, e.g. "Execution.Concurrency"), naming the key, value and source
// the user wrote when origins knows them.
type checker struct {
	origins map[string]origin
}

func (v checker) fail(id string, value any, rule string) error {
	if o, ok := v.origins[id]; ok {
		return newError(o.key, o.value, o.source, rule)
	}
	return newError(root+"."+id, formatValue(value), "", rule)
}

// zerosRefused returns p and r with every zero setting that the component
// would take as its default replaced by -1. In a file, 0 is what the user
// wrote, and it would silently become the default: checked as -1 it breaks
// the component's own range, whose rule the message then states (with the
// value as written).
func zerosRefused(p processor.Config, r zombie.Config) (processor.Config, zombie.Config) {
	for _, n := range []*int{&p.Concurrency, &p.PrefetchSize, &p.BatchSize, &p.HeartbeatFailureThreshold, &p.MaxSnoozes} {
		if *n == 0 {
			*n = -1
		}
	}
	for _, d := range []*time.Duration{&p.PollInterval, &p.DefaultTimeout, &p.HeartbeatIntervalMin, &p.HeartbeatIntervalMax,
		&r.ScanInterval, &r.FetchedJobTimeout, &r.ProcessingZombieTimeout} {
		if *d == 0 {
			*d = -1
		}
	}
	if p.Retry.BackoffMultiplier == 0 {
		p.Retry.BackoffMultiplier = -1
	}
	return p, r
}

// asWritten undoes zerosRefused for a value shown in a message.
func asWritten(v any) any {
	switch x := v.(type) {
	case int:
		if x == -1 {
			return 0
		}
	case time.Duration:
		if x == -1 {
			return time.Duration(0)
		}
	case float64:
		if x == -1 {
			return 0.0
		}
	}
	return v
}

// settingKeys maps the components' settings onto this file's keys.
var settingKeys = map[string]string{
	"processor.Concurrency":               "Execution.Concurrency",
	"processor.PrefetchSize":              "Execution.PrefetchSize",
	"processor.BatchSize":                 "Execution.BatchSize",
	"processor.PollInterval":              "Execution.PollInterval",
	"processor.PollJitter":                "Execution.PollJitter",
	"processor.BatchLinger":               "Execution.BatchLinger",
	"processor.MaxSnoozes":                "Execution.MaxSnoozes",
	"processor.DefaultTimeout":            "Execution.DefaultTimeout",
	"processor.HeartbeatIntervalMin":      "Execution.HeartbeatIntervalMin",
	"processor.HeartbeatIntervalMax":      "Execution.HeartbeatIntervalMax",
	"processor.HeartbeatFailureThreshold": "Execution.HeartbeatFailureThreshold",
	"processor.ShutdownTimeout":           "Execution.ShutdownTimeout",
	"processor.Retry.BaseDelay":           "Retry.BaseDelay",
	"processor.Retry.MaxDelay":            "Retry.MaxDelay",
	"processor.Retry.BackoffMultiplier":   "Retry.BackoffMultiplier",
	"processor.Retry.JitterMaxDelay":      "Retry.JitterMaxDelay",
	"processor.Queues":                    "Queues",
	"processor.WorkerID":                  "WorkerId",
	"zombie.ScanInterval":                 "Recovery.ScanInterval",
	"zombie.FetchedJobTimeout":            "Recovery.FetchedJobTimeout",
	"zombie.ProcessingZombieTimeout":      "Recovery.ProcessingZombieTimeout",
	"retention.Archive":                   "Retention.Archive",
	"retention.DeadLetters":               "Retention.DeadLetters",
}

// keyOf names a component's setting by this file's key.
func keyOf(component, key string) string {
	if q, ok := strings.CutPrefix(component, "queue "); ok {
		switch key {
		case "Name":
			return queueSection + "." + q
		case "ZombieTimeout", "ExecutionTimeout":
			// The file keeps the queue timeouts in seconds, under the
			// .NET ChokaQ's names.
			return queueSection + "." + q + "." + key + "Seconds"
		}
		return queueSection + "." + q + "." + key
	}
	if k, ok := settingKeys[component+"."+key]; ok {
		return k
	}
	return component + "." + key
}

// setting reports a component's *jobs.SettingError by this file's keys,
// blaming the setting the user wrote when the rule is between two.
func (v checker) setting(err error) error {
	se, ok := errors.AsType[*jobs.SettingError](err)
	if !ok {
		return err
	}
	if se.Other != nil && !v.blameFirst(keyOf(se.Component, se.Key), keyOf(se.Other.Component, se.Other.Key)) {
		se = se.Other
	}
	return v.fail(keyOf(se.Component, se.Key), asWritten(se.Value), se.RuleWith(keyOf))
}

func (v checker) configured(id string) bool {
	_, ok := v.origins[id]
	return ok
}

// blameFirst reports whether a broken rule between keys a and b should
// name a: yes, unless only b was configured. Blaming a default the user
// never wrote would send them looking in the wrong place.
func (v checker) blameFirst(a, b string) bool {
	return v.configured(a) || !v.configured(b)
}

func (c *Config) validate(origins map[string]origin) error {
	v := checker{origins: origins}
	e, r, rc := &c.Execution, &c.Retry, &c.Recovery

	switch strings.ToLower(c.Storage) {
	case "", StorageSQLServer, StorageMemory:
	default:
		return v.fail("Storage", c.Storage, `must be "sqlserver", "memory" or empty (sqlserver when ConnectionString is set, else memory)`)
	}
	if c.StorageKind() == StorageSQLServer && c.ConnectionString == "" {
		return v.fail("Storage", c.Storage, "needs ConnectionString (set it with CHOKAQ__CONNECTIONSTRING)")
	}
	if err := schema.ValidateName(c.Schema); err != nil {
		return v.fail("Schema", c.Schema, schemaRule(err))
	}
	if rule := checkWorkerID(c.WorkerID); rule != "" {
		return v.fail("WorkerId", c.WorkerID, rule)
	}
	if len(c.Queues) == 0 {
		return v.fail("Queues", c.Queues, "must name at least one queue")
	}
	for _, q := range c.Queues {
		if err := jobs.ValidateQueueName(q); err != nil {
			return v.fail("Queues", c.Queues, fmt.Sprintf("queue %q %s", q, queueRule(err)))
		}
	}

	// Rules of this file's own: a zero that the components would silently
	// take as their default is a mistake here, and the default number of
	// attempts is an enqueue setting, not a component's.
	switch {
	case e.ShutdownTimeout == 0:
		return v.fail("Execution.ShutdownTimeout", e.ShutdownTimeout, "must be positive")
	case r.BaseDelay == 0:
		return v.fail("Retry.BaseDelay", r.BaseDelay, "must be positive")
	case r.MaxDelay == 0:
		return v.fail("Retry.MaxDelay", r.MaxDelay, "must be positive")
	case !(e.PollJitter >= 0 && e.PollJitter <= processor.MaxPollJitter): // also refuses NaN
		return v.fail("Execution.PollJitter", e.PollJitter, fmt.Sprintf("must be between 0 and %v (a fraction of each wait; 0 means no jitter)", processor.MaxPollJitter))
	case r.JitterMaxDelay < 0:
		return v.fail("Retry.JitterMaxDelay", r.JitterMaxDelay, "must not be negative (0s means no jitter)")
	case r.MaxAttempts < 1 || r.MaxAttempts > jobs.MaxMaxAttempts:
		return v.fail("Retry.MaxAttempts", r.MaxAttempts, fmt.Sprintf("must be between 1 and %d", jobs.MaxMaxAttempts))
	}
	// The processor releases a buffered job at half of FetchedJobTimeout
	// (ProcessorConfig), and only between polls.
	const fetched, poll = "Recovery.FetchedJobTimeout", "Execution.PollInterval"
	if rc.FetchedJobTimeout > 0 && e.PollInterval > 0 && rc.FetchedJobTimeout <= 2*e.PollInterval {
		if v.blameFirst(fetched, poll) {
			return v.fail(fetched, rc.FetchedJobTimeout, fmt.Sprintf("must be more than 2 x %s (2 x %v = %v)", poll, e.PollInterval, 2*e.PollInterval))
		}
		return v.fail(poll, e.PollInterval, fmt.Sprintf("must be less than half of %s (%v)", fetched, rc.FetchedJobTimeout))
	}
	// A queue's own rules, in this file's words, before CheckConfig
	// applies the same ones in the store's.
	for _, name := range slices.Sorted(maps.Keys(c.QueueSettings)) {
		if err := c.validateQueue(v, name); err != nil {
			return err
		}
	}
	// Every other rule is the components' own, and the one between them.
	pc, zc := zerosRefused(c.ProcessorConfig(), c.RescueConfig())
	if err := chokaq.CheckConfig(pc, zc, c.QueueUpdates()); err != nil {
		if se, ok := errors.AsType[*jobs.SettingError](err); ok && se.Component == "processor" && se.Key == "ReleaseAfter" {
			// ReleaseAfter is not a key: it is half of
			// Recovery.FetchedJobTimeout, whose own range says what is
			// wrong.
			if zerr := zc.Validate(); zerr != nil {
				err = zerr
			}
		}
		return v.setting(err)
	}

	if err := c.RetentionConfig().Validate(); err != nil {
		return v.setting(err)
	}

	for _, name := range slices.Sorted(maps.Keys(c.Schedules)) {
		if err := c.validateSchedule(v, name); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Kinds)) {
		if err := c.validateKind(v, name); err != nil {
			return err
		}
	}
	return nil
}

// kindFields maps processor.KindPolicy.Validate's fields to the keys of
// ChokaQ.Kinds.<kind>.
var kindFields = map[string]string{
	"queue": "Queue", "priority": "Priority", "max_attempts": "MaxAttempts", "timeout": "Timeout",
	"zombie_retry_cap": "ZombieRetries",
}

// kindBackoffKeys maps the processor's Retry settings to a kind's backoff
// keys.
var kindBackoffKeys = map[string]string{
	"Retry.BaseDelay": "BackoffBaseDelay", "Retry.MaxDelay": "BackoffMaxDelay",
	"Retry.BackoffMultiplier": "BackoffMultiplier", "Retry.JitterMaxDelay": "BackoffJitterMaxDelay",
}

// validateKind applies the kind's policy rules (KindPolicy.Validate),
// reported under its keys.
func (c *Config) validateKind(v checker, name string) error {
	id := kindSection + "." + name
	if err := (jobs.EnqueueParams{Type: name}).ValidateType(); err != nil {
		return v.fail(id, name, "kind "+queueRule(err))
	}
	p := c.Kinds[name]
	err := p.Validate(name)
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*jobs.SettingError](err); ok {
		key := kindBackoffKeys[se.Key]
		if key == "" {
			key = se.Key
		}
		return v.fail(id+"."+key, asWritten(se.Value), se.Rule)
	}
	if ve, ok := errors.AsType[*jobs.ValidationError](err); ok {
		if key, ok := kindFields[ve.Field]; ok {
			return v.fail(id+"."+key, asWritten(ve.Value), ve.Rule)
		}
	}
	return v.fail(id, name, err.Error())
}

// validateSchedule applies the schedule's own rules (schedule.Check),
// reported under its keys; Cron and Type must be written.
func (c *Config) validateSchedule(v checker, name string) error {
	id := scheduleSection + "." + name
	s := c.Schedules[name]
	switch {
	case strings.TrimSpace(s.Cron) == "":
		return v.fail(id+".Cron", s.Cron, "must be set: a cron expression such as 0 2 * * * (five fields), @hourly or @every 10m")
	case s.Job.Type == "":
		return v.fail(id+".Type", s.Job.Type, "must be set: the type of the job each tick enqueues")
	}
	err := schedule.Check([]schedule.Schedule{s}, jobs.Limits{})
	de, ok := errors.AsType[*schedule.DefinitionError](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case de.Field == "Name":
		return v.fail(id, name, "schedule name "+de.Rule)
	case de.Field == "Payload":
		return v.fail(id+".Payload", string(s.Job.Payload), de.Rule)
	}
	return v.fail(id+"."+de.Field, de.Value, de.Rule)
}

func (c *Config) validateQueue(v checker, name string) error {
	id := queueSection + "." + name
	if err := jobs.ValidateQueueName(name); err != nil {
		return v.fail(id, name, "queue name "+queueRule(err))
	}
	s := c.QueueSettings[name]
	limit := strconv.Itoa(int(jobs.MaxQueueTimeout/time.Second)) + " (30 days)"
	if n := s.MaxWorkers; n != nil && (*n < 0 || *n > jobs.MaxQueueWorkers) {
		return v.fail(id+".MaxWorkers", *n, "must be between 0 (unlimited) and "+strconv.Itoa(jobs.MaxQueueWorkers))
	}
	if d := s.ZombieTimeout; d != nil && (*d < 0 || *d > jobs.MaxQueueTimeout) {
		return v.fail(id+".ZombieTimeoutSeconds", int(*d/time.Second), "must be between 0 (use Recovery.ProcessingZombieTimeout) and "+limit)
	}
	if d := s.ExecutionTimeout; d != nil && (*d < 0 || *d > jobs.MaxQueueTimeout) {
		return v.fail(id+".ExecutionTimeoutSeconds", int(*d/time.Second), "must be between 0 (use Execution.DefaultTimeout) and "+limit)
	}
	for _, r := range []struct {
		key string
		d   *time.Duration
	}{{"ArchiveRetention", s.ArchiveRetention}, {"DeadLetterRetention", s.DeadLetterRetention}} {
		if err := (jobs.QueueUpdate{ArchiveRetention: r.d}).Validate(); err != nil {
			return v.fail(id+"."+r.key, *r.d, "must be 0 (keep forever), default (Retention's), or whole seconds between 1s and "+shortDuration(jobs.MaxRetention))
		}
	}
	if err := validateFlow(v, id, s); err != nil {
		return err
	}
	// The weight by the store's own rule, under the key.
	if ve, ok := errors.AsType[*jobs.ValidationError]((jobs.QueueUpdate{Weight: s.Weight}).Validate()); ok {
		return v.fail(id+".Weight", ve.Value, ve.Rule)
	}
	// A rate limit set in Go (the file's are checked as they are read).
	if ve, ok := errors.AsType[*jobs.ValidationError]((jobs.QueueUpdate{RateLimit: s.RateLimit}).Validate()); ok {
		return v.fail(id+".RateLimit", ve.Value, ve.Rule)
	}
	return nil
}

// validateFlow checks a queue's flow-control keys by the store's own rules
// (jobs.QueueUpdate.Validate), reported under the appsettings key.
func validateFlow(v checker, id string, s QueueSetting) error {
	err := (jobs.QueueUpdate{MaxWorkersPerKey: s.MaxWorkersPerKey, KeyLimits: s.KeyLimits, SequenceOnDeadLetter: s.SequenceOnDeadLetter}).Validate()
	ve, ok := errors.AsType[*jobs.ValidationError](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case ve.Field == "max_workers_per_key":
		return v.fail(id+".MaxWorkersPerKey", ve.Value, ve.Rule)
	case strings.HasPrefix(ve.Field, "key_limits."):
		k := strings.TrimPrefix(ve.Field, "key_limits.")
		return v.fail(id+"."+keyLimitsKey+"."+k, ve.Value, ve.Rule)
	case ve.Field == "key_limits":
		if k, isKey := ve.Value.(string); isKey {
			// The key itself is wrong (empty, too long): name the entry.
			return v.fail(id+"."+keyLimitsKey+"."+k, s.KeyLimits[k], "concurrency key "+strconv.Quote(k)+": "+ve.Rule)
		}
		return v.fail(id+"."+keyLimitsKey, ve.Value, ve.Rule)
	case ve.Field == "sequence_on_dead_letter":
		return v.fail(id+".SequenceOnDeadLetter", ve.Value, ve.Rule)
	}
	return err
}

// checkWorkerID applies the store's rules for a worker ID early, so a bad
// one fails at start-up rather than at the first claim.
func checkWorkerID(id string) string {
	if id == "" {
		return "" // DefaultWorkerID at run time
	}
	if !utf8.ValidString(id) {
		return "must be valid UTF-8"
	}
	n := 0
	for _, r := range id {
		if unicode.IsControl(r) {
			return "must not contain control characters"
		}
		n += utf16.RuneLen(r)
	}
	if n > jobs.MaxWorkerIDLen {
		return "must be at most " + strconv.Itoa(jobs.MaxWorkerIDLen) + " characters"
	}
	return ""
}

// schemaRule is the rule part of a schema.ValidateName error, which reads
// `schema: invalid schema name "x": rule`.
func schemaRule(err error) string {
	if _, rule, ok := strings.Cut(strings.TrimPrefix(err.Error(), schema.ErrInvalidName.Error()), ": "); ok {
		return rule
	}
	return err.Error()
}

// queueRule is the rule of a jobs.ValidateQueueName error.
func queueRule(err error) string {
	if ve, ok := errors.AsType[*jobs.ValidationError](err); ok {
		return ve.Rule
	}
	return err.Error()
}

// formatValue renders a typed value for a message.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, ",")
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
