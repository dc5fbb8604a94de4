package processor

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// Config configures a Processor. Zero fields take the defaults of DESIGN
// section 8 (see DefaultConfig).
type Config struct {
	// WorkerID names this processor in the store (default host-pid-random).
	WorkerID string
	// Queues served, tried in rotating order (default ["default"]).
	Queues []string

	Concurrency  int           // worker goroutines (10)
	PrefetchSize int           // buffer of claimed jobs (100)
	BatchSize    int           // most jobs per claim (20)
	PollInterval time.Duration // longest wait between claims when idle (1s)
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
	// ShutdownTimeout is how long Stop lets running handlers finish (30s).
	ShutdownTimeout time.Duration
	// FetchedJobTimeout is rescue phase 1's timeout (10m). A buffered job
	// older than half of it is released instead of started, so phase 1
	// never races a live worker.
	FetchedJobTimeout time.Duration

	Retry RetryPolicy

	// Observer sees every claim, start and outcome (metrics); nil for none.
	Observer Observer

	// Logger receives stable messages with job_id, queue, type, lease and
	// worker_id fields. Nil means no logging.
	Logger *zap.Logger
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

// DefaultConfig returns DESIGN section 8's defaults.
func DefaultConfig() Config {
	return Config{
		Queues:                    []string{jobs.DefaultQueue},
		Concurrency:               10,
		PrefetchSize:              100,
		BatchSize:                 20,
		PollInterval:              time.Second,
		DefaultTimeout:            15 * time.Minute,
		HeartbeatIntervalMin:      8 * time.Second,
		HeartbeatIntervalMax:      12 * time.Second,
		HeartbeatFailureThreshold: 10,
		ShutdownTimeout:           30 * time.Second,
		FetchedJobTimeout:         10 * time.Minute,
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
	setDur(&c.PollInterval, d.PollInterval)
	setDur(&c.DefaultTimeout, d.DefaultTimeout)
	setDur(&c.HeartbeatIntervalMin, d.HeartbeatIntervalMin)
	setDur(&c.HeartbeatIntervalMax, d.HeartbeatIntervalMax)
	setDur(&c.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&c.FetchedJobTimeout, d.FetchedJobTimeout)
	setDur(&c.Retry.BaseDelay, d.Retry.BaseDelay)
	setDur(&c.Retry.MaxDelay, d.Retry.MaxDelay)
	setDur(&c.Retry.JitterMaxDelay, d.Retry.JitterMaxDelay)
	if c.Retry.BackoffMultiplier == 0 {
		c.Retry.BackoffMultiplier = d.Retry.BackoffMultiplier
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

// Validate checks a config after defaults are applied.
func (c Config) Validate() error {
	bad := func(key string, v any, rule string) error {
		return fmt.Errorf("processor: %s = %v: %s", key, v, rule)
	}
	for _, q := range c.Queues {
		if err := jobs.ValidateQueueName(q); err != nil {
			return fmt.Errorf("processor: Queues: %w", err)
		}
	}
	switch {
	case c.Concurrency < 1:
		return bad("Concurrency", c.Concurrency, "must be at least 1")
	case c.PrefetchSize < 1:
		return bad("PrefetchSize", c.PrefetchSize, "must be at least 1")
	case c.BatchSize < 1 || c.BatchSize > 1000:
		return bad("BatchSize", c.BatchSize, "must be between 1 and 1000")
	case c.PollInterval < time.Millisecond:
		return bad("PollInterval", c.PollInterval, "must be at least 1ms")
	case c.DefaultTimeout <= 0 || c.DefaultTimeout > jobs.MaxDelay:
		return bad("DefaultTimeout", c.DefaultTimeout, "must be positive and at most "+jobs.MaxDelay.String())
	case c.HeartbeatIntervalMin <= 0:
		return bad("HeartbeatIntervalMin", c.HeartbeatIntervalMin, "must be positive")
	case c.HeartbeatIntervalMin > c.HeartbeatIntervalMax:
		return bad("HeartbeatIntervalMin", c.HeartbeatIntervalMin, fmt.Sprintf("must be <= HeartbeatIntervalMax (%v)", c.HeartbeatIntervalMax))
	case c.HeartbeatFailureThreshold < 1:
		return bad("HeartbeatFailureThreshold", c.HeartbeatFailureThreshold, "must be at least 1")
	case c.ShutdownTimeout < 0:
		return bad("ShutdownTimeout", c.ShutdownTimeout, "must not be negative")
	case c.FetchedJobTimeout <= 2*c.PollInterval:
		return bad("FetchedJobTimeout", c.FetchedJobTimeout, fmt.Sprintf("must be more than twice PollInterval (%v)", c.PollInterval))
	case c.Retry.BaseDelay < 0:
		return bad("Retry.BaseDelay", c.Retry.BaseDelay, "must not be negative")
	case c.Retry.MaxDelay < c.Retry.BaseDelay:
		return bad("Retry.MaxDelay", c.Retry.MaxDelay, fmt.Sprintf("must be >= Retry.BaseDelay (%v)", c.Retry.BaseDelay))
	case c.Retry.MaxDelay > jobs.MaxDelay:
		return bad("Retry.MaxDelay", c.Retry.MaxDelay, "must be at most "+jobs.MaxDelay.String())
	case !(c.Retry.BackoffMultiplier >= 1 && c.Retry.BackoffMultiplier <= 1000): // also refuses NaN
		return bad("Retry.BackoffMultiplier", c.Retry.BackoffMultiplier, "must be between 1 and 1000")
	case c.Retry.JitterMaxDelay > c.Retry.MaxDelay:
		return bad("Retry.JitterMaxDelay", c.Retry.JitterMaxDelay, fmt.Sprintf("must be at most Retry.MaxDelay (%v)", c.Retry.MaxDelay))
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
