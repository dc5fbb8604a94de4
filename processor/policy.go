package processor

import (
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// KindPolicy is what a job kind declares about its jobs (docs/design.md,
// Policy per kind): where they go and in what order (Queue, Priority,
// MaxAttempts, applied at enqueue), how long one execution may run
// (Timeout, applied by the store at start and recorded with the job), how
// long a failed one waits (NextRetry, else Backoff) and whether rescue may
// run it again when its worker dies mid-run (ZombieRetryCap). A zero field
// is "not set": the next level of the precedence applies, the queue's
// setting for Timeout, the processor's or Client's default for the rest.
type KindPolicy struct {
	Queue       string
	Priority    int
	MaxAttempts int
	// Timeout is the execution timeout of one execution of the kind's
	// jobs: it wins over the queue's ExecutionTimeout and DefaultTimeout.
	Timeout time.Duration
	// NextRetry returns the delay before a failed job of the kind runs
	// again; attempt is the execution that just failed (from 1), err the
	// handler's error. A negative delay is 0, one beyond jobs.MaxDelay is
	// capped at it; a panic in it falls back to Backoff (else the
	// processor's Retry) and is logged. It wins over Backoff.
	NextRetry func(attempt int, err error) time.Duration
	// Backoff replaces the processor's Retry for the kind (zero fields take
	// the processor's), nil for none.
	Backoff *RetryPolicy
	// ZombieRetryCap opts the kind into recovery of crashed jobs: rescue
	// phase 2 returns a job whose worker went silent to Pending, its
	// attempt spent, at most this many times, then dead-letters it as
	// Zombie. 0 (the default) dead-letters at once: only a kind whose
	// handler is safe to run again (idempotent, or fenced by its lease)
	// should set it (I4). Phase 3 (deadline passed) always dead-letters.
	ZombieRetryCap int
	// Unique makes every job of the kind unique (jobs.UniqueOpts, ADR
	// 0030) unless its EnqueueOpts.Unique says otherwise: "at most one
	// sync per customer per hour" as a property of the kind.
	Unique *jobs.UniqueOpts
}

// IsZero reports whether p sets nothing.
func (p KindPolicy) IsZero() bool {
	return p.Queue == "" && p.Priority == 0 && p.MaxAttempts == 0 && p.Timeout == 0 &&
		p.NextRetry == nil && p.Backoff == nil && p.ZombieRetryCap == 0 && p.Unique == nil
}

// Over returns p with every field o sets written over it: o is the higher
// level (an operator's Kinds.<kind>.* over the code's own policy).
func (o KindPolicy) Over(p KindPolicy) KindPolicy {
	if o.Queue != "" {
		p.Queue = o.Queue
	}
	if o.Priority != 0 {
		p.Priority = o.Priority
	}
	if o.MaxAttempts != 0 {
		p.MaxAttempts = o.MaxAttempts
	}
	if o.Timeout != 0 {
		p.Timeout = o.Timeout
	}
	if o.NextRetry != nil {
		p.NextRetry = o.NextRetry
	}
	if o.Backoff != nil {
		p.Backoff = o.Backoff
	}
	if o.ZombieRetryCap != 0 {
		p.ZombieRetryCap = o.ZombieRetryCap
	}
	if o.Unique != nil {
		p.Unique = o.Unique
	}
	return p
}

// Validate checks p, naming the kind and the field in its error.
func (p KindPolicy) Validate(kind string) error {
	bad := func(field string, v any, rule string) error {
		return fmt.Errorf("processor: kind %q: %w", kind, &jobs.ValidationError{Field: field, Value: v, Rule: rule})
	}
	if p.Queue != "" {
		if err := jobs.ValidateQueueName(p.Queue); err != nil {
			return fmt.Errorf("processor: kind %q: %w", kind, err)
		}
	}
	if p.Priority < jobs.MinPriority || p.Priority > jobs.MaxPriority {
		return bad("priority", p.Priority, fmt.Sprintf("must be between %d and %d", jobs.MinPriority, jobs.MaxPriority))
	}
	if p.MaxAttempts < 0 || p.MaxAttempts > jobs.MaxMaxAttempts {
		return bad("max_attempts", p.MaxAttempts, fmt.Sprintf("must be between 0 (the default) and %d", jobs.MaxMaxAttempts))
	}
	if p.Timeout != 0 && (p.Timeout < MinDefaultTimeout || p.Timeout > MaxDefaultTimeout) {
		return bad("timeout", p.Timeout, fmt.Sprintf("must be 0 (the queue's, else the default) or between %v and %v", MinDefaultTimeout, MaxDefaultTimeout))
	}
	if p.ZombieRetryCap < 0 || p.ZombieRetryCap > jobs.MaxZombieRetries {
		return bad("zombie_retry_cap", p.ZombieRetryCap, fmt.Sprintf("must be between 0 (dead-letter, the default) and %d", jobs.MaxZombieRetries))
	}
	if p.Unique != nil {
		if err := p.Unique.Validate(); err != nil {
			return fmt.Errorf("processor: kind %q: %w", kind, err)
		}
	}
	if p.Backoff != nil {
		c := DefaultConfig()
		c.WorkerID = "kind-policy-check" // only Retry is checked here
		c.Retry = p.Backoff.or(c.Retry)
		if err := c.validate(); err != nil {
			return fmt.Errorf("processor: kind %q: backoff: %w", kind, err)
		}
	}
	return nil
}

// or is p with each zero field taken from d.
func (p RetryPolicy) or(d RetryPolicy) RetryPolicy {
	setDur(&p.BaseDelay, d.BaseDelay)
	setDur(&p.MaxDelay, d.MaxDelay)
	setDur(&p.JitterMaxDelay, d.JitterMaxDelay)
	if p.BackoffMultiplier == 0 {
		p.BackoffMultiplier = d.BackoffMultiplier
	}
	return p
}

// SetPolicy declares the policy of a job kind, replacing any it had; a
// zero policy removes it. A kind need not have a handler here: a process
// that only enqueues applies its Queue, Priority and MaxAttempts.
func (r *Registry) SetPolicy(kind string, p KindPolicy) error {
	if err := (jobs.EnqueueParams{Type: kind}).ValidateType(); err != nil {
		return err
	}
	if err := p.Validate(kind); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.IsZero() {
		delete(r.policies, kind)
		return nil
	}
	r.policies[kind] = p
	return nil
}

// Policy returns the policy of a kind (exact match: kinds are
// case-sensitive), and whether it has one.
func (r *Registry) Policy(kind string) (KindPolicy, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.policies[kind]
	return p, ok
}

// startParams are the start parameters of a job of kind: the processor's,
// with the kind's timeout and zombie policy.
func (p *Processor) startParams(kind string) jobs.StartParams {
	sp := p.cfg.startParams()
	if kp, ok := p.reg.Policy(kind); ok {
		if kp.Timeout > 0 {
			sp.Timeout, sp.TimeoutFrom = kp.Timeout, jobs.SourceKind
		}
		sp.ZombieRetryCap = kp.ZombieRetryCap
	}
	return sp
}

// retryDelay is the wait before job j runs again after its attempt failed
// with err, and its source: the kind's NextRetry, else its Backoff, else
// the processor's Retry.
func (p *Processor) retryDelay(log jobLogger, j *Job, err error) (d time.Duration, from jobs.PolicySource) {
	kp, _ := p.reg.Policy(j.Type)
	policy, from := p.cfg.Retry, jobs.SourceDefault
	if kp.Backoff != nil {
		policy, from = kp.Backoff.or(p.cfg.Retry), jobs.SourceKind
	}
	if kp.NextRetry != nil {
		if d, ok := p.nextRetry(log, kp.NextRetry, j.Attempt, err); ok {
			return min(max(d, 0), jobs.MaxDelay), jobs.SourceKind
		}
	}
	return policy.Delay(j.Attempt, rand.Float64()), from
}

// nextRetry calls a kind's NextRetry, its panic contained: the job is
// then retried on the backoff, not lost.
func (p *Processor) nextRetry(log jobLogger, f func(int, error) time.Duration, attempt int, err error) (d time.Duration, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("the kind's NextRetry panicked; using the backoff", zap.Any("panic", r))
			ok = false
		}
	}()
	return f(attempt, err), true
}
