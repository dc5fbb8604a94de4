package processor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// Config configures a Processor. Zero fields take the defaults (see
// DefaultConfig and docs/design.md (Configuration defaults)).
type Config struct {
	// WorkerID names this processor in the store (default host-pid-random).
	WorkerID string
	// Queues served (default ["default"]). Each claim asks them in the
	// order of their stored weights (jobs.QueueSettings.Weight, ADR 0032):
	// a queue of weight 9 beside one of weight 1 is asked first in nine
	// claims of ten; queues of equal weight take turns.
	Queues []string

	Concurrency  int // worker goroutines (10)
	PrefetchSize int // buffer of claimed jobs (100)
	BatchSize    int // most jobs per claim (20)
	// PollInterval is the longest wait between polls when idle (500ms): a
	// job enqueued by another process waits up to about this long (ADR
	// 0027). An idle poll probes when the store can (jobs.Prober) and
	// claims only when the probe sees work; each costs one store call.
	PollInterval time.Duration
	// PollJitter stretches each wait between polls by a random part of up
	// to this fraction of it (0.2), so a fleet started together does not
	// poll in step; at most MaxPollJitter. NoPollJitter, or any negative
	// value, polls exactly on time.
	PollJitter float64
	// DefaultTimeout is the execution timeout of a queue that sets none (15m).
	DefaultTimeout time.Duration

	HeartbeatIntervalMin time.Duration // (8s)
	HeartbeatIntervalMax time.Duration // (12s)
	// HeartbeatFailureThreshold consecutive failed beats of a job log a
	// degraded state (10).
	HeartbeatFailureThreshold int
	// CancelOnHeartbeatFailure cancels a job at the threshold and
	// dead-letters it with reason HeartbeatFailure.
	CancelOnHeartbeatFailure bool
	// ShutdownTimeout is how long Stop lets running handlers finish (30s);
	// it then cancels them and waits as long again for their outcomes, so
	// Stop takes up to twice ShutdownTimeout.
	ShutdownTimeout time.Duration
	// BatchLinger is how long a start or an outcome that finds no store
	// call in flight waits for others to go with it (0: it goes at once;
	// at most MaxBatchLinger). It applies when the store offers batch forms
	// (jobs.BatchWorker): requests that arrive while a call is in flight
	// always go together in the next one (ADR 0018).
	BatchLinger time.Duration
	// ReleaseAfter is how long a claimed job may wait in the prefetch
	// buffer: one that waited longer is released rather than started (5m).
	// Keep it at most half of the rescue loop's FetchedJobTimeout, so rescue
	// phase 1 never takes back a job a live worker is about to start;
	// chokaq.New derives it so, and chokaq.CheckConfig checks it.
	ReleaseAfter time.Duration

	Retry RetryPolicy

	// MaxSnoozes is how many times a job may snooze (Snooze) before it is
	// dead-lettered with reason SnoozeLimitExceeded (100): a handler that
	// snoozes forever would otherwise never end.
	MaxSnoozes int

	// Observer sees every claim, start and outcome (metrics); nil for none.
	Observer Observer

	// Logger receives stable messages with job_id, queue, type, lease and
	// worker_id fields. Nil means no logging.
	Logger *zap.Logger

	// TracerProvider, when set, runs every attempt in a consumer span
	// linked to the enqueuer's span (TraceParentFromEnqueue: parented by
	// it), from the W3C trace context an enqueue inside a span keeps in the
	// job's metadata; nil for none (no span, no cost). The library pulls
	// no exporter.
	TracerProvider trace.TracerProvider
	// TraceParentFromEnqueue makes the enqueuer's span the parent of each
	// attempt's span, not a link.
	TraceParentFromEnqueue bool
}

// RetryPolicy computes the delay before a failed job runs again.
type RetryPolicy struct {
	BaseDelay         time.Duration // (3s)
	MaxDelay          time.Duration // (1h)
	BackoffMultiplier float64       // (2)
	// JitterMaxDelay is the most random delay added to a retry (1s; zero
	// takes the default; NoJitter, or any negative value, adds none).
	JitterMaxDelay time.Duration
}

// NoJitter as RetryPolicy.JitterMaxDelay retries exactly on the backoff
// schedule. Zero cannot mean "none" there: it takes the default, like every
// zero field of Config.
const NoJitter time.Duration = -1

// NoPollJitter as Config.PollJitter polls exactly every wait; zero takes
// the default, like every zero field of Config.
const NoPollJitter float64 = -1

// DefaultConfig returns the processor's defaults, as listed in docs/design.md
// (Configuration defaults).
func DefaultConfig() Config {
	return Config{
		Queues:                    []string{jobs.DefaultQueue},
		Concurrency:               10,
		PrefetchSize:              100,
		BatchSize:                 20,
		PollInterval:              500 * time.Millisecond,
		PollJitter:                0.2,
		DefaultTimeout:            15 * time.Minute,
		HeartbeatIntervalMin:      8 * time.Second,
		HeartbeatIntervalMax:      jobs.DefaultHeartbeatIntervalMax,
		HeartbeatFailureThreshold: 10,
		ShutdownTimeout:           30 * time.Second,
		ReleaseAfter:              5 * time.Minute,
		MaxSnoozes:                100,
		Retry: RetryPolicy{
			BaseDelay:         3 * time.Second,
			MaxDelay:          time.Hour,
			BackoffMultiplier: 2,
			JitterMaxDelay:    time.Second,
		},
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID()
	}
	if len(c.Queues) == 0 {
		c.Queues = d.Queues
	}
	setInt(&c.Concurrency, d.Concurrency)
	setInt(&c.PrefetchSize, d.PrefetchSize)
	setInt(&c.BatchSize, d.BatchSize)
	setInt(&c.HeartbeatFailureThreshold, d.HeartbeatFailureThreshold)
	setInt(&c.MaxSnoozes, d.MaxSnoozes)
	setDur(&c.PollInterval, d.PollInterval)
	setDur(&c.DefaultTimeout, d.DefaultTimeout)
	setDur(&c.HeartbeatIntervalMin, d.HeartbeatIntervalMin)
	setDur(&c.HeartbeatIntervalMax, d.HeartbeatIntervalMax)
	setDur(&c.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&c.ReleaseAfter, d.ReleaseAfter)
	setDur(&c.Retry.BaseDelay, d.Retry.BaseDelay)
	setDur(&c.Retry.MaxDelay, d.Retry.MaxDelay)
	setDur(&c.Retry.JitterMaxDelay, d.Retry.JitterMaxDelay)
	if c.Retry.BackoffMultiplier == 0 {
		c.Retry.BackoffMultiplier = d.Retry.BackoffMultiplier
	}
	if c.PollJitter == 0 {
		c.PollJitter = d.PollJitter
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

func setInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func setDur(v *time.Duration, d time.Duration) {
	if *v == 0 {
		*v = d
	}
}

// Bounds of Config. Each keeps a typo or a unit mistake (1ns for 1s, a
// count of many digits) from melting the store: an interval below its
// minimum would make a store call per job every few milliseconds, a count
// above its maximum would start that many goroutines or buffer that many
// payloads (each up to a MiB).
const (
	MaxConcurrency               = 10_000
	MaxPrefetchSize              = 10_000
	MaxBatchSize                 = 1000
	MaxQueues                    = 1000
	MinPollInterval              = 10 * time.Millisecond
	MaxPollInterval              = time.Hour
	MinDefaultTimeout            = 10 * time.Millisecond
	MaxDefaultTimeout            = 30 * 24 * time.Hour
	MinHeartbeatInterval         = 100 * time.Millisecond
	MaxHeartbeatInterval         = jobs.MaxHeartbeatInterval
	MaxHeartbeatFailureThreshold = 1000
	MaxShutdownTimeout           = time.Hour
	MaxReleaseAfter              = 12 * time.Hour
	MaxBackoffMultiplier         = 1000
	MaxBatchLinger               = time.Millisecond
	MaxPollJitter                = 1.0
	MaxMaxSnoozes                = 1_000_000
)

// Validate checks c as New would use it, defaults applied, and returns the
// first broken rule as a *jobs.SettingError naming the setting, its value
// and the rule.
func (c Config) Validate() error { return c.withDefaults().validate() }

// validate checks a config whose defaults are applied.
func (c Config) validate() error {
	bad := func(key string, v any, rule string) error {
		return &jobs.SettingError{Component: "processor", Key: key, Value: v, Rule: rule}
	}
	between := func(key string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return bad(key, d, fmt.Sprintf("must be between %v and %v", lo, hi))
		}
		return nil
	}
	count := func(key string, n, hi int) error {
		if n < 1 || n > hi {
			return bad(key, n, fmt.Sprintf("must be between 1 and %d", hi))
		}
		return nil
	}
	if len(c.Queues) > MaxQueues {
		return bad("Queues", len(c.Queues), fmt.Sprintf("at most %d queues per processor", MaxQueues))
	}
	if err := (jobs.ClaimParams{WorkerID: c.WorkerID, Queues: c.Queues}).Validate(); err != nil {
		key := "Queues"
		if ve, ok := errors.AsType[*jobs.ValidationError](err); ok && ve.Field == "worker_id" {
			key = "WorkerID"
		}
		return bad(key, err, "is not valid")
	}
	if err := jobs.DistinctQueueNames("queue", c.Queues); err != nil {
		ve, _ := errors.AsType[*jobs.ValidationError](err)
		return bad("Queues", ve.Value, ve.Rule)
	}
	// In the order of appsettings.yaml, so the first mistake in a file is
	// the one reported.
	for _, err := range []error{
		count("Concurrency", c.Concurrency, MaxConcurrency),
		count("PrefetchSize", c.PrefetchSize, MaxPrefetchSize),
		count("BatchSize", c.BatchSize, MaxBatchSize),
		between("PollInterval", c.PollInterval, MinPollInterval, MaxPollInterval),
		between("DefaultTimeout", c.DefaultTimeout, MinDefaultTimeout, MaxDefaultTimeout),
		between("HeartbeatIntervalMin", c.HeartbeatIntervalMin, MinHeartbeatInterval, MaxHeartbeatInterval),
		between("HeartbeatIntervalMax", c.HeartbeatIntervalMax, MinHeartbeatInterval, MaxHeartbeatInterval),
		count("HeartbeatFailureThreshold", c.HeartbeatFailureThreshold, MaxHeartbeatFailureThreshold),
		count("MaxSnoozes", c.MaxSnoozes, MaxMaxSnoozes),
		between("ShutdownTimeout", c.ShutdownTimeout, 0, MaxShutdownTimeout),
		between("ReleaseAfter", c.ReleaseAfter, 0, MaxReleaseAfter),
		between("BatchLinger", c.BatchLinger, 0, MaxBatchLinger),
		between("Retry.BaseDelay", c.Retry.BaseDelay, 0, jobs.MaxDelay),
		between("Retry.MaxDelay", c.Retry.MaxDelay, 0, jobs.MaxDelay),
	} {
		if err != nil {
			return err
		}
	}
	if f := c.PollJitter; !(f <= MaxPollJitter) { // also refuses NaN; a negative value means none
		return bad("PollJitter", f, fmt.Sprintf("must be at most %v (a fraction of the wait; negative for none)", MaxPollJitter))
	}
	if f := c.Retry.BackoffMultiplier; !(f >= 1 && f <= MaxBackoffMultiplier) { // also refuses NaN
		return bad("Retry.BackoffMultiplier", f, fmt.Sprintf("must be between 1 and %d", MaxBackoffMultiplier))
	}
	// Rules between settings.
	if c.HeartbeatIntervalMin > c.HeartbeatIntervalMax {
		e := bad("HeartbeatIntervalMin", c.HeartbeatIntervalMin, fmt.Sprintf("must be <= {processor.HeartbeatIntervalMax} (%v)", c.HeartbeatIntervalMax))
		e.(*jobs.SettingError).Other = bad("HeartbeatIntervalMax", c.HeartbeatIntervalMax, fmt.Sprintf("must be >= {processor.HeartbeatIntervalMin} (%v)", c.HeartbeatIntervalMin)).(*jobs.SettingError)
		return e
	}
	if c.ReleaseAfter <= c.PollInterval {
		e := bad("ReleaseAfter", c.ReleaseAfter, fmt.Sprintf("must be more than {processor.PollInterval} (%v): a buffered job is released only between polls", c.PollInterval))
		e.(*jobs.SettingError).Other = bad("PollInterval", c.PollInterval, fmt.Sprintf("must be less than {processor.ReleaseAfter} (%v)", c.ReleaseAfter)).(*jobs.SettingError)
		return e
	}
	if c.Retry.MaxDelay < c.Retry.BaseDelay {
		e := bad("Retry.MaxDelay", c.Retry.MaxDelay, fmt.Sprintf("must be >= {processor.Retry.BaseDelay} (%v)", c.Retry.BaseDelay))
		e.(*jobs.SettingError).Other = bad("Retry.BaseDelay", c.Retry.BaseDelay, fmt.Sprintf("must be <= {processor.Retry.MaxDelay} (%v)", c.Retry.MaxDelay)).(*jobs.SettingError)
		return e
	}
	if c.Retry.JitterMaxDelay > c.Retry.MaxDelay {
		return bad("Retry.JitterMaxDelay", c.Retry.JitterMaxDelay, fmt.Sprintf("must be at most {processor.Retry.MaxDelay} (%v)", c.Retry.MaxDelay))
	}
	return nil
}

// DefaultWorkerID is host-pid-random, unique enough to tell processes apart
// in the store and in logs.
func DefaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	if len(host) > 100 {
		host = host[:100]
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + randomSuffix()
}
