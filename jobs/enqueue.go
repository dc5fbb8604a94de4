package jobs

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits and defaults applied to every enqueue. The SQL Server columns are
// sized to these limits, so raising one needs a migration.
const (
	DefaultQueue           = "default"
	DefaultMaxAttempts     = 3
	DefaultMaxPayloadBytes = 1 << 20

	MaxQueueLen          = 100
	MaxTypeLen           = 200
	MaxIdempotencyKeyLen = 200
	MaxCreatedByLen      = 100
	MaxTags              = 16
	MaxTagLen            = 50
	MinPriority          = -1000
	MaxPriority          = 1000
	MaxMaxAttempts       = 1000
	// MaxDelay keeps server-side date arithmetic far from overflow.
	MaxDelay = 10 * 365 * 24 * time.Hour
)

// EnqueueParams describes a new job.
type EnqueueParams struct {
	// Queue defaults to DefaultQueue. Letters, digits, '_', '-', '.', ':'.
	Queue string
	// Type selects the handler. Required.
	Type    string
	Payload []byte
	// Priority: higher runs first among due jobs of a queue. Default 0.
	Priority int
	// Delay postpones the job by this long on the store's clock.
	Delay time.Duration
	// RunAt schedules the job at an absolute instant. Set Delay or RunAt, not both.
	RunAt time.Time
	// MaxAttempts is the number of executions allowed; 0 means DefaultMaxAttempts.
	MaxAttempts int
	Tags        []string
	// IdempotencyKey is unique among active (hot) jobs: enqueueing it again
	// while the first is active returns the first job's ID.
	IdempotencyKey string
	CreatedBy      string
	// ConcurrencyKey counts the job against its queue's limit for the key
	// (MaxWorkersPerKey, KeyLimits): a claim never takes a key above it,
	// across every process, and takes other keys' jobs instead (ADR 0031).
	ConcurrencyKey string
	// SequenceKey runs the queue's jobs of one key one at a time, in
	// enqueue order: the next is claimable once the one before finished.
	SequenceKey string
	// Metadata is kept with the job in every table, copied by resurrect,
	// seen by its handler and shown to operators (no secrets): at most
	// MaxMetadataBytes as JSON, keys as ValidateMetadata says. Enqueue
	// middleware may add to it; tracing keeps the W3C trace context in it.
	Metadata map[string]string
	// Unique, when set, makes the job unique by its type and what the
	// options name (see UniqueOpts); a duplicate returns the holder's ID.
	Unique *UniqueOpts

	// unique is the key's hash Normalize computed, with what it was
	// computed from, so the store's UniqueHash does not hash the payload
	// again (see uniqueMemo).
	unique *uniqueMemo
}

// EnqueueResult reports the job's ID and whether a job holding the same
// idempotency key or unique key already existed (in which case nothing was
// inserted and ID is that job's).
type EnqueueResult struct {
	ID        int64
	Duplicate bool
}

// Limits holds the enqueue limits a caller may tune.
type Limits struct {
	// MaxPayloadBytes caps a payload; 0 means DefaultMaxPayloadBytes. At
	// most MaxPayloadLimit.
	MaxPayloadBytes int
}

// MaxPayloadLimit is the largest MaxPayloadBytes: what a VARBINARY(MAX)
// column holds (2 GiB - 1).
const MaxPayloadLimit = 1<<31 - 1

// Validate refuses a negative MaxPayloadBytes or one above
// MaxPayloadLimit: a -1 would silently mean the default.
func (l Limits) Validate() error {
	if l.MaxPayloadBytes < 0 || l.MaxPayloadBytes > MaxPayloadLimit {
		return &ValidationError{Field: "max_payload_bytes", Value: l.MaxPayloadBytes,
			Rule: "must be between 1 and " + itoa(MaxPayloadLimit) + " (0 takes " + itoa(DefaultMaxPayloadBytes) + ")"}
	}
	return nil
}

// MaxPayload returns the effective payload limit.
func (l Limits) MaxPayload() int {
	if l.MaxPayloadBytes <= 0 {
		return DefaultMaxPayloadBytes
	}
	return l.MaxPayloadBytes
}

// Normalize validates p and returns it with defaults filled in. The error is a
// *ValidationError naming the field, the value and the limit.
func (p EnqueueParams) Normalize(l Limits) (EnqueueParams, error) {
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := ValidateQueueName(p.Queue); err != nil {
		return p, err
	}
	if err := p.ValidateType(); err != nil {
		return p, err
	}
	if max := l.MaxPayload(); len(p.Payload) > max {
		return p, &ValidationError{Field: "payload", Value: p.Payload, Rule: "must be at most " + itoa(max) + " bytes"}
	}
	if p.Priority < MinPriority || p.Priority > MaxPriority {
		return p, &ValidationError{Field: "priority", Value: p.Priority, Rule: "must be between " + itoa(MinPriority) + " and " + itoa(MaxPriority)}
	}
	if p.Delay < 0 {
		return p, &ValidationError{Field: "delay", Value: p.Delay, Rule: "must not be negative"}
	}
	if p.Delay > MaxDelay {
		return p, &ValidationError{Field: "delay", Value: p.Delay, Rule: "must be at most " + MaxDelay.String()}
	}
	if p.Delay > 0 && !p.RunAt.IsZero() {
		return p, &ValidationError{Field: "run_at", Value: p.RunAt, Rule: "set either delay or run_at, not both"}
	}
	if !p.RunAt.IsZero() {
		p.RunAt = p.RunAt.UTC()
		if p.RunAt.Year() < 1970 || p.RunAt.Year() > 9000 {
			return p, &ValidationError{Field: "run_at", Value: p.RunAt, Rule: "must be between years 1970 and 9000"}
		}
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts {
		return p, &ValidationError{Field: "max_attempts", Value: p.MaxAttempts, Rule: "must be between 1 and " + itoa(MaxMaxAttempts)}
	}
	if len(p.Tags) > MaxTags {
		return p, &ValidationError{Field: "tags", Value: len(p.Tags), Rule: "at most " + itoa(MaxTags) + " tags"}
	}
	for _, tag := range p.Tags {
		if tag == "" {
			return p, &ValidationError{Field: "tag", Value: tag, Rule: "must not be empty"}
		}
		if strings.Contains(tag, ",") {
			return p, &ValidationError{Field: "tag", Value: tag, Rule: "must not contain ','"}
		}
		if err := checkText("tag", tag, MaxTagLen); err != nil {
			return p, err
		}
	}
	if err := checkText("idempotency_key", p.IdempotencyKey, MaxIdempotencyKeyLen); err != nil {
		return p, err
	}
	if err := checkText("created_by", p.CreatedBy, MaxCreatedByLen); err != nil {
		return p, err
	}
	if err := checkFlowKey("concurrency_key", p.ConcurrencyKey); err != nil {
		return p, err
	}
	if err := checkFlowKey("sequence_key", p.SequenceKey); err != nil {
		return p, err
	}
	if err := ValidateMetadata(p.Metadata); err != nil {
		return p, err
	}
	if p.Unique != nil {
		h, _, err := p.UniqueHash()
		if err != nil {
			return p, err
		}
		p.unique = p.memo(h)
	}
	return p, nil
}

// ValidateType checks only the job type, for handler registration.
func (p EnqueueParams) ValidateType() error {
	if p.Type == "" {
		return &ValidationError{Field: "type", Value: p.Type, Rule: "must not be empty"}
	}
	return checkText("type", p.Type, MaxTypeLen)
}

// ValidateQueueName checks a queue name: 1 to MaxQueueLen characters from
// letters, digits, '_', '-', '.' and ':'. Queue names end up in metric labels,
// URLs and command lines, so the set is deliberately small.
func ValidateQueueName(q string) error {
	if q == "" {
		return &ValidationError{Field: "queue", Value: q, Rule: "must not be empty"}
	}
	if len(q) > MaxQueueLen {
		return &ValidationError{Field: "queue", Value: q, Rule: "must be at most " + itoa(MaxQueueLen) + " characters"}
	}
	if !queueNameChars(q) {
		return &ValidationError{Field: "queue", Value: q, Rule: "may contain only ASCII letters, digits, '_', '-', '.' and ':'"}
	}
	return nil
}

// queueNameChars reports whether s holds only the characters of a queue
// name (schedule names take the same).
func queueNameChars(s string) bool {
	for _, r := range s {
		if !(r < utf8.RuneSelf && (r == '_' || r == '-' || r == '.' || r == ':' || unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// checkText enforces valid UTF-8, no control characters and a length in
// UTF-16 code units (the unit of an NVARCHAR column).
func checkText(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return &ValidationError{Field: field, Value: s, Rule: "must be valid UTF-8"}
	}
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) {
			return &ValidationError{Field: field, Value: s, Rule: "must not contain control characters"}
		}
		if utf16.RuneLen(r) == 2 {
			n += 2
		} else {
			n++
		}
	}
	if n > max {
		return &ValidationError{Field: field, Value: s, Rule: "must be at most " + itoa(max) + " characters"}
	}
	return nil
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// NormalizeBatch normalizes every item of a batch; an error names the item.
func NormalizeBatch(ps []EnqueueParams, l Limits) ([]EnqueueParams, error) {
	out := make([]EnqueueParams, len(ps))
	for i, p := range ps {
		n, err := p.Normalize(l)
		if err != nil {
			return nil, &BatchItemError{Index: i, Err: err}
		}
		out[i] = n
	}
	return out, nil
}

// BatchItemError says which item of a batch was refused.
type BatchItemError struct {
	Index int
	Err   error
}

// Error names the item and says why it was refused.
func (e *BatchItemError) Error() string { return "batch item " + itoa(e.Index) + ": " + e.Err.Error() }

// Unwrap returns why the item was refused.
func (e *BatchItemError) Unwrap() error { return e.Err }
