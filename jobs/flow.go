package jobs

import (
	"errors"
	"maps"
	"slices"
	"strconv"
)

// Flow control (ADR 0031): a job's concurrency key caps how many jobs of
// the key a queue runs at once, across every process; its sequence key
// runs the jobs of one sequence one at a time, in enqueue order. Both are
// enforced where jobs are claimed: a job held back stays Pending, spends no
// attempt and is not rescheduled, and the claim fills its batch from the
// jobs behind it. Keys are compared byte for byte, scoped to the job's
// queue.

// Limits of flow control.
const (
	// MaxFlowKeyLen bounds a concurrency or sequence key, in UTF-16 code
	// units as SQL Server counts NVARCHAR.
	MaxFlowKeyLen = 200
	// MaxKeyLimits bounds how many keys a queue names a limit of its own for.
	MaxKeyLimits = 1000
)

// ErrFlowControlUnsupported refuses a job with a concurrency or sequence
// key, or a queue setting of flow control, on a store that does not
// enforce them yet: letting them through would run the jobs as if they
// had none.
var ErrFlowControlUnsupported = errors.New("jobs: this store does not enforce concurrency keys and sequences (ADR 0031)")

// SequencePolicy says what a dead-lettered job does to its sequence.
type SequencePolicy uint8

const (
	// SequenceContinue (the default) lets the next job of the sequence run
	// once the dead-lettered one left the hot table.
	SequenceContinue SequencePolicy = iota
	// SequenceHold keeps the sequence waiting behind a dead letter until
	// it is resurrected (and then finishes) or leaves the DLQ (purge,
	// retention). A cancelled job never holds its sequence: cancelling is
	// the caller's decision that it is done.
	SequenceHold
)

// String returns "continue" or "hold", as the appsettings key spells it.
func (p SequencePolicy) String() string {
	switch p {
	case SequenceContinue:
		return "continue"
	case SequenceHold:
		return "hold"
	}
	return "SequencePolicy(" + strconv.Itoa(int(p)) + ")"
}

// ParseSequencePolicy reads "continue" or "hold" (any case).
func ParseSequencePolicy(s string) (SequencePolicy, error) {
	switch {
	case equalFold(s, "continue"), s == "":
		return SequenceContinue, nil
	case equalFold(s, "hold"):
		return SequenceHold, nil
	}
	return 0, &ValidationError{Field: "sequence_on_dead_letter", Value: s, Rule: "must be continue or hold"}
}

// KeyLimit returns how many Fetched and Processing jobs of concurrency key
// k the queue allows: the key's own limit if it names one, else
// MaxWorkersPerKey; 0 is unlimited.
func (s QueueSettings) KeyLimit(k string) int {
	if n, ok := s.KeyLimits[k]; ok {
		return n
	}
	return s.MaxWorkersPerKey
}

// FlowControlled reports whether s sets any flow control a store must
// enforce at claim (a per-key limit or the hold policy).
func (s QueueSettings) FlowControlled() bool {
	return s.MaxWorkersPerKey != 0 || len(s.KeyLimits) > 0 || s.SequenceOnDeadLetter != SequenceContinue
}

// FlowControlled reports whether u changes a setting of flow control.
func (u QueueUpdate) FlowControlled() bool {
	return u.MaxWorkersPerKey != nil || u.KeyLimits != nil || u.SequenceOnDeadLetter != nil
}

func checkFlowKey(field, k string) error {
	return checkText(field, k, MaxFlowKeyLen)
}

// checkFlowUpdate validates the flow-control fields of a queue update.
func (u QueueUpdate) checkFlow() error {
	if n := u.MaxWorkersPerKey; n != nil && (*n < 0 || *n > MaxQueueWorkers) {
		return &ValidationError{Field: "max_workers_per_key", Value: *n, Rule: "must be between 0 (unlimited) and " + itoa(MaxQueueWorkers)}
	}
	if len(u.KeyLimits) > MaxKeyLimits {
		return &ValidationError{Field: "key_limits", Value: len(u.KeyLimits), Rule: "must name at most " + itoa(MaxKeyLimits) + " keys"}
	}
	for _, k := range slices.Sorted(maps.Keys(u.KeyLimits)) {
		if k == "" {
			return &ValidationError{Field: "key_limits", Value: k, Rule: "a key must not be empty"}
		}
		if err := checkFlowKey("key_limits", k); err != nil {
			return err
		}
		if n := u.KeyLimits[k]; n < 0 || n > MaxQueueWorkers {
			return &ValidationError{Field: "key_limits." + k, Value: n, Rule: "must be between 0 (remove the key's own limit) and " + itoa(MaxQueueWorkers)}
		}
	}
	if p := u.SequenceOnDeadLetter; p != nil && *p > SequenceHold {
		return &ValidationError{Field: "sequence_on_dead_letter", Value: *p, Rule: "must be continue or hold"}
	}
	return nil
}

// applyFlow applies the flow-control fields of u to s. A key limit of 0
// removes the key's own limit (the key then follows MaxWorkersPerKey).
func (u QueueUpdate) applyFlow(s QueueSettings) QueueSettings {
	if u.MaxWorkersPerKey != nil {
		s.MaxWorkersPerKey = *u.MaxWorkersPerKey
	}
	if u.KeyLimits != nil {
		limits := maps.Clone(s.KeyLimits)
		if limits == nil {
			limits = map[string]int{}
		}
		for k, n := range u.KeyLimits {
			if n == 0 {
				delete(limits, k)
			} else {
				limits[k] = n
			}
		}
		s.KeyLimits = limits
		if len(limits) == 0 {
			s.KeyLimits = nil
		}
	}
	if u.SequenceOnDeadLetter != nil {
		s.SequenceOnDeadLetter = *u.SequenceOnDeadLetter
	}
	return s
}

// Equal reports whether s and o are the same settings (KeyLimits compared
// by content: the map makes QueueSettings not comparable with ==).
func (s QueueSettings) Equal(o QueueSettings) bool {
	return s.Name == o.Name && s.Paused == o.Paused && s.MaxWorkers == o.MaxWorkers &&
		s.ZombieTimeout == o.ZombieTimeout && s.ExecutionTimeout == o.ExecutionTimeout &&
		s.ArchiveRetention == o.ArchiveRetention && s.DeadLetterRetention == o.DeadLetterRetention &&
		s.MaxWorkersPerKey == o.MaxWorkersPerKey && maps.Equal(s.KeyLimits, o.KeyLimits) &&
		s.SequenceOnDeadLetter == o.SequenceOnDeadLetter && s.Weight == o.Weight && s.RateLimit == o.RateLimit
}

// IsZero reports whether u changes nothing.
func (u QueueUpdate) IsZero() bool {
	return u.Paused == nil && u.MaxWorkers == nil && u.ZombieTimeout == nil && u.ExecutionTimeout == nil &&
		u.ArchiveRetention == nil && u.DeadLetterRetention == nil && u.Weight == nil && u.RateLimit == nil && !u.FlowControlled()
}
