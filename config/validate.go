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

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// origin is where a configured value came from, so that a rule broken by
// the merged result is reported against what the user wrote.
type origin struct {
	key    string // e.g. "ChokaQ.ZombieTimeoutSeconds", as reported
	value  string // as written
	source string
}

// Validate checks every rule of DESIGN section 8 and returns the first
// broken one as an *Error. Load calls it; call it after changing a Config
// in code.
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

// maxDuration bounds every duration, as the store bounds delays and
// timeouts; it also keeps the multiplications below far from overflow.
const maxDuration = jobs.MaxDelay

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

	type intCheck struct {
		id       string
		n        int
		min, max int
	}
	type durCheck struct {
		id  string
		d   time.Duration
		min time.Duration
	}
	// Checked in appsettings.yaml order, so the first mistake in the file
	// is the one reported.
	checks := []any{
		intCheck{"Execution.Concurrency", e.Concurrency, 1, noLimit},
		intCheck{"Execution.PrefetchSize", e.PrefetchSize, 1, noLimit},
		intCheck{"Execution.BatchSize", e.BatchSize, 1, 1000},
		durCheck{"Execution.PollInterval", e.PollInterval, time.Millisecond},
		durCheck{"Execution.DefaultTimeout", e.DefaultTimeout, 1},
		durCheck{"Execution.HeartbeatIntervalMin", e.HeartbeatIntervalMin, 1},
		durCheck{"Execution.HeartbeatIntervalMax", e.HeartbeatIntervalMax, 1},
		intCheck{"Execution.HeartbeatFailureThreshold", e.HeartbeatFailureThreshold, 1, noLimit},
		// Zero would silently become the processor's default of 30s.
		durCheck{"Execution.ShutdownTimeout", e.ShutdownTimeout, 1},
		intCheck{"Retry.MaxAttempts", r.MaxAttempts, 1, jobs.MaxMaxAttempts},
		// Zero would silently become the processor's default of 3s.
		durCheck{"Retry.BaseDelay", r.BaseDelay, 1},
		durCheck{"Retry.MaxDelay", r.MaxDelay, 1},
		durCheck{"Retry.JitterMaxDelay", r.JitterMaxDelay, 0},
		durCheck{"Recovery.ScanInterval", rc.ScanInterval, time.Millisecond},
		durCheck{"Recovery.FetchedJobTimeout", rc.FetchedJobTimeout, 1},
		durCheck{"Recovery.ProcessingZombieTimeout", rc.ProcessingZombieTimeout, 1},
	}
	for _, ch := range checks {
		switch ch := ch.(type) {
		case intCheck:
			if ch.n < ch.min || ch.n > ch.max {
				rule := fmt.Sprintf("must be between %d and %d", ch.min, ch.max)
				if ch.max == noLimit {
					rule = fmt.Sprintf("must be at least %d", ch.min)
					if ch.n > ch.max {
						rule = fmt.Sprintf("must be at most %d", ch.max)
					}
				}
				return v.fail(ch.id, ch.n, rule)
			}
		case durCheck:
			switch {
			case ch.d < ch.min && ch.min == 0:
				return v.fail(ch.id, ch.d, "must not be negative")
			case ch.d < ch.min && ch.min == 1:
				return v.fail(ch.id, ch.d, "must be positive")
			case ch.d < ch.min:
				return v.fail(ch.id, ch.d, "must be at least "+ch.min.String())
			case ch.d > maxDuration:
				return v.fail(ch.id, ch.d, "must be at most "+maxDuration.String()+" (10 years)")
			}
		}
	}
	if f := r.BackoffMultiplier; !(f >= 1) || f > 1000 { // also refuses NaN
		return v.fail("Retry.BackoffMultiplier", f, "must be between 1 and 1000")
	}

	// Rules between keys.
	const hbMin, hbMax = "Execution.HeartbeatIntervalMin", "Execution.HeartbeatIntervalMax"
	if e.HeartbeatIntervalMin > e.HeartbeatIntervalMax {
		if v.blameFirst(hbMin, hbMax) {
			return v.fail(hbMin, e.HeartbeatIntervalMin, fmt.Sprintf("must be <= %s (%v)", hbMax, e.HeartbeatIntervalMax))
		}
		return v.fail(hbMax, e.HeartbeatIntervalMax, fmt.Sprintf("must be >= %s (%v)", hbMin, e.HeartbeatIntervalMin))
	}
	const base, maxDelay = "Retry.BaseDelay", "Retry.MaxDelay"
	if r.BaseDelay > r.MaxDelay {
		if v.blameFirst(base, maxDelay) {
			return v.fail(base, r.BaseDelay, fmt.Sprintf("must be <= %s (%v)", maxDelay, r.MaxDelay))
		}
		return v.fail(maxDelay, r.MaxDelay, fmt.Sprintf("must be >= %s (%v)", base, r.BaseDelay))
	}
	// A buffered job older than half of FetchedJobTimeout is released
	// rather than started (see processor.Config), so the timeout must
	// leave room for at least one poll.
	const fetched, poll = "Recovery.FetchedJobTimeout", "Execution.PollInterval"
	if rc.FetchedJobTimeout <= 2*e.PollInterval {
		if v.blameFirst(fetched, poll) {
			return v.fail(fetched, rc.FetchedJobTimeout, fmt.Sprintf("must be more than 2 x %s (2 x %v = %v)", poll, e.PollInterval, 2*e.PollInterval))
		}
		return v.fail(poll, e.PollInterval, fmt.Sprintf("must be less than half of %s (%v)", fetched, rc.FetchedJobTimeout))
	}
	// A live job misses a beat or two under load; rescue must not
	// dead-letter it for that.
	const zombie = "Recovery.ProcessingZombieTimeout"
	if rc.ProcessingZombieTimeout <= 3*e.HeartbeatIntervalMax {
		if v.blameFirst(zombie, hbMax) {
			return v.fail(zombie, rc.ProcessingZombieTimeout, fmt.Sprintf("must be more than 3 x %s (3 x %v = %v)", hbMax, e.HeartbeatIntervalMax, 3*e.HeartbeatIntervalMax))
		}
		return v.fail(hbMax, e.HeartbeatIntervalMax, fmt.Sprintf("must be less than a third of %s (%v)", zombie, rc.ProcessingZombieTimeout))
	}

	for _, name := range slices.Sorted(maps.Keys(c.QueueSettings)) {
		if err := c.validateQueue(v, name); err != nil {
			return err
		}
	}
	return nil
}

// noLimit bounds the counts that have no limit of their own, so that a
// typo of many digits is still caught.
const noLimit = 1<<31 - 1

func (c *Config) validateQueue(v checker, name string) error {
	id := queueSection + "." + name
	if err := jobs.ValidateQueueName(name); err != nil {
		return v.fail(id, name, "queue name "+queueRule(err))
	}
	s := c.QueueSettings[name]
	limit := strconv.Itoa(jobs.MaxQueueTimeoutSeconds) + " (30 days)"
	if n := s.MaxWorkers; n != nil && (*n < 0 || *n > jobs.MaxQueueWorkers) {
		return v.fail(id+".MaxWorkers", *n, "must be between 0 (unlimited) and "+strconv.Itoa(jobs.MaxQueueWorkers))
	}
	if n := s.ZombieTimeoutSeconds; n != nil {
		hb := c.Execution.HeartbeatIntervalMax
		switch {
		case *n < 0 || *n > jobs.MaxQueueTimeoutSeconds:
			return v.fail(id+".ZombieTimeoutSeconds", *n, "must be between 0 (use Recovery.ProcessingZombieTimeout) and "+limit)
		case *n > 0 && time.Duration(*n)*time.Second <= 3*hb:
			return v.fail(id+".ZombieTimeoutSeconds", *n, fmt.Sprintf("must be more than 3 x Execution.HeartbeatIntervalMax (3 x %v = %v), or 0 to use Recovery.ProcessingZombieTimeout", hb, 3*hb))
		}
	}
	if n := s.ExecutionTimeoutSeconds; n != nil && (*n < 0 || *n > jobs.MaxQueueTimeoutSeconds) {
		return v.fail(id+".ExecutionTimeoutSeconds", *n, "must be between 0 (use Execution.DefaultTimeout) and "+limit)
	}
	return nil
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
