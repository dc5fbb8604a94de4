package config

import (
	"maps"
	"slices"
	"strings"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/zombie"
)

// Storage kinds.
const (
	StorageSQLServer = "sqlserver"
	StorageMemory    = "memory"
)

// Config is the ChokaQ section, merged from every source. Load returns it
// validated; a Config built in code should be checked with Validate.
type Config struct {
	// Environment is the environment whose overlay file was applied, ""
	// if none. It is not a key: it selects a file.
	Environment string

	ConnectionString string
	Schema           string // default "chokaq"
	// Storage is "sqlserver", "memory", or "" to choose by whether
	// ConnectionString is set; see StorageKind.
	Storage string
	// WorkerID names this process in the store; "" means
	// processor.DefaultWorkerID() at run time (key WorkerId).
	WorkerID string
	// Queues are the queues served; default ["default"]. The environment
	// form is a comma-separated list, and a list from a later source
	// replaces an earlier one rather than merging with it.
	Queues []string

	Execution Execution
	Retry     Retry
	Recovery  Recovery
	Retention Retention

	// QueueSettings are applied to the named queues' rows at start-up
	// (QueueUpdates). The key is the queue name as first written in YAML.
	QueueSettings map[string]QueueSetting

	// Schedules are the recurring jobs of ChokaQ.Schedules, by name as
	// first written in YAML; Name is filled in.
	Schedules map[string]schedule.Schedule

	// Kinds are the policies per job kind of ChokaQ.Kinds.<kind>.*, by kind
	// as written (kinds compare exactly; two that differ only by case are
	// refused). chokaq.New writes them over the code's own policies.
	Kinds map[string]processor.KindPolicy
}

// Retention says how long finished jobs are kept (retention.Config);
// jobs.KeepForever (0 in the file) keeps them. A queue's own
// ArchiveRetention and DeadLetterRetention win.
type Retention struct {
	Archive     time.Duration // archived (succeeded) jobs (7d)
	DeadLetters time.Duration // dead letters (30d)
}

// Execution configures the processor's workers.
type Execution struct {
	Concurrency  int           // worker goroutines (10)
	PrefetchSize int           // buffer of claimed jobs (100)
	BatchSize    int           // most jobs per claim, 1 to 1000 (20)
	PollInterval time.Duration // longest idle wait between polls (500ms)
	// PollJitter stretches each wait between polls by up to this fraction
	// of it, 0 to 1 (0.2; 0 means none).
	PollJitter           float64
	DefaultTimeout       time.Duration // execution timeout of a queue that sets none (15m)
	HeartbeatIntervalMin time.Duration // (8s)
	HeartbeatIntervalMax time.Duration // (12s)
	// HeartbeatFailureThreshold consecutive failed beats mark a job
	// degraded (10).
	HeartbeatFailureThreshold int
	// CancelOnHeartbeatFailure cancels a job at the threshold and
	// dead-letters it (false).
	CancelOnHeartbeatFailure bool
	ShutdownTimeout          time.Duration // how long Stop lets handlers finish (30s)
	// BatchLinger is how long a start or an outcome that finds no store
	// call in flight waits for others to share it (0s, at most 1ms).
	BatchLinger time.Duration
	// MaxSnoozes is how many times a job may snooze before it is
	// dead-lettered as SnoozeLimitExceeded (100).
	MaxSnoozes int
}

// Retry is the default retry policy.
type Retry struct {
	// MaxAttempts is the default number of executions of a job, 1 to 1000
	// (3). It is an enqueue default, so ProcessorConfig does not carry it.
	MaxAttempts       int
	BaseDelay         time.Duration // (3s)
	MaxDelay          time.Duration // (1h)
	BackoffMultiplier float64       // (2)
	JitterMaxDelay    time.Duration // (1s)
}

// Recovery configures the rescue of jobs whose worker died.
type Recovery struct {
	ScanInterval            time.Duration // (1m)
	FetchedJobTimeout       time.Duration // claimed but never started (10m)
	ProcessingZombieTimeout time.Duration // started, heartbeat lost (10m)
}

// QueueSetting is one queue's settings. A nil field is not configured and
// leaves the stored value alone.
type QueueSetting struct {
	Paused     *bool
	MaxWorkers *int // 0 means unlimited
	// ZombieTimeout (key ZombieTimeoutSeconds, whole seconds) overrides
	// Recovery.ProcessingZombieTimeout for the queue; 0 clears the override.
	ZombieTimeout *time.Duration
	// ExecutionTimeout (key ExecutionTimeoutSeconds, whole seconds)
	// overrides Execution.DefaultTimeout for the queue; 0 clears the
	// override.
	ExecutionTimeout *time.Duration
	// ArchiveRetention and DeadLetterRetention override Retention for the
	// queue: jobs.KeepForever (0 in the file) keeps its jobs, 0 ("default"
	// in the file) clears the override.
	ArchiveRetention    *time.Duration
	DeadLetterRetention *time.Duration
	// MaxWorkersPerKey caps the running jobs of each concurrency key of the
	// queue (ADR 0031); 0 clears the cap.
	MaxWorkersPerKey *int
	// KeyLimits (keys KeyLimits.<key>) sets named concurrency keys' own
	// caps; a cap of 0 removes the key's own (it then follows
	// MaxWorkersPerKey). Keys keep the case written: they compare exactly.
	// A key left out keeps its stored cap.
	KeyLimits map[string]int
	// SequenceOnDeadLetter (continue or hold) says whether a dead-lettered
	// job holds its sequence.
	SequenceOnDeadLetter *jobs.SequencePolicy
	// Weight is the queue's share of the claims of a processor serving it
	// beside other queues (ADR 0032): 1 (the default) to 1000.
	Weight *int
	// RateLimit lets at most Count of the queue's jobs be claimed per
	// Window, fleet-wide (ADR 0033): "100/1m" in the file; "none" (the
	// zero limit) removes the queue's.
	RateLimit *jobs.RateLimit
}

// Default returns every default of docs/design.md (Configuration defaults).
// The values come from the packages that use them (processor, zombie, jobs),
// so there is one source for each default.
func Default() *Config {
	p, r, ret := processor.DefaultConfig(), zombie.DefaultConfig(), retention.DefaultConfig()
	return &Config{
		Schema: schema.DefaultName,
		Queues: p.Queues,
		Execution: Execution{
			Concurrency:               p.Concurrency,
			PrefetchSize:              p.PrefetchSize,
			BatchSize:                 p.BatchSize,
			PollInterval:              p.PollInterval,
			PollJitter:                p.PollJitter,
			DefaultTimeout:            p.DefaultTimeout,
			HeartbeatIntervalMin:      p.HeartbeatIntervalMin,
			HeartbeatIntervalMax:      p.HeartbeatIntervalMax,
			HeartbeatFailureThreshold: p.HeartbeatFailureThreshold,
			CancelOnHeartbeatFailure:  p.CancelOnHeartbeatFailure,
			ShutdownTimeout:           p.ShutdownTimeout,
			BatchLinger:               p.BatchLinger,
			MaxSnoozes:                p.MaxSnoozes,
		},
		Retry: Retry{
			MaxAttempts:       jobs.DefaultMaxAttempts,
			BaseDelay:         p.Retry.BaseDelay,
			MaxDelay:          p.Retry.MaxDelay,
			BackoffMultiplier: p.Retry.BackoffMultiplier,
			JitterMaxDelay:    p.Retry.JitterMaxDelay,
		},
		Recovery: Recovery{
			ScanInterval:            r.ScanInterval,
			FetchedJobTimeout:       r.FetchedJobTimeout,
			ProcessingZombieTimeout: r.ProcessingZombieTimeout,
		},
		Retention: Retention{
			Archive:     ret.Archive,
			DeadLetters: ret.DeadLetters,
		},
		QueueSettings: map[string]QueueSetting{},
		Schedules:     map[string]schedule.Schedule{},
		Kinds:         map[string]processor.KindPolicy{},
	}
}

// StorageKind is the storage to use: Storage when set, else "sqlserver"
// when a connection string is configured and "memory" when not.
func (c *Config) StorageKind() string {
	if c.Storage != "" {
		return strings.ToLower(c.Storage)
	}
	if c.ConnectionString != "" {
		return StorageSQLServer
	}
	return StorageMemory
}

// ProcessorConfig maps the configuration onto processor.Config. Logger is
// left nil for the caller; WorkerID stays "" when not configured, which the
// processor turns into DefaultWorkerID.
func (c *Config) ProcessorConfig() processor.Config {
	return processor.Config{
		WorkerID:                  c.WorkerID,
		Queues:                    slices.Clone(c.Queues),
		Concurrency:               c.Execution.Concurrency,
		PrefetchSize:              c.Execution.PrefetchSize,
		BatchSize:                 c.Execution.BatchSize,
		PollInterval:              c.Execution.PollInterval,
		PollJitter:                pollJitter(c.Execution.PollJitter),
		DefaultTimeout:            c.Execution.DefaultTimeout,
		HeartbeatIntervalMin:      c.Execution.HeartbeatIntervalMin,
		HeartbeatIntervalMax:      c.Execution.HeartbeatIntervalMax,
		HeartbeatFailureThreshold: c.Execution.HeartbeatFailureThreshold,
		CancelOnHeartbeatFailure:  c.Execution.CancelOnHeartbeatFailure,
		ShutdownTimeout:           c.Execution.ShutdownTimeout,
		BatchLinger:               c.Execution.BatchLinger,
		MaxSnoozes:                c.Execution.MaxSnoozes,
		// Recovery.FetchedJobTimeout is the rescue loop's; the buffer
		// releases a job at half of it, before phase 1 would take it back.
		ReleaseAfter: c.Recovery.FetchedJobTimeout / 2,
		Retry: processor.RetryPolicy{
			BaseDelay:         c.Retry.BaseDelay,
			MaxDelay:          c.Retry.MaxDelay,
			BackoffMultiplier: c.Retry.BackoffMultiplier,
			JitterMaxDelay:    jitter(c.Retry.JitterMaxDelay),
		},
	}
}

// jitter maps the configured Retry.JitterMaxDelay onto the processor's: in
// the file 0s means no jitter, while a zero processor field takes the
// default.
func jitter(d time.Duration) time.Duration {
	if d == 0 {
		return processor.NoJitter
	}
	return d
}

// pollJitter maps the configured Execution.PollJitter onto the
// processor's: in the file 0 means none, while a zero processor field
// takes the default.
func pollJitter(f float64) float64 {
	if f == 0 {
		return processor.NoPollJitter
	}
	return f
}

// ClientConfig turns the configuration into a chokaq.Config for chokaq.New:
// storage, connection, processor, rescue and queue settings. Fields that
// appsettings do not cover (Logger, Migrate, SingleRescuer, Telemetry) are
// left for the caller. Storage "memory" gives a fresh in-memory store; with
// neither that nor a connection string the Config names no store, and
// chokaq.New refuses it rather than run on memory by accident.
func (c *Config) ClientConfig() chokaq.Config {
	out := chokaq.Config{
		Schema:             c.Schema,
		Processor:          c.ProcessorConfig(),
		Rescue:             c.RescueConfig(),
		Queues:             c.QueueUpdates(),
		DefaultMaxAttempts: c.Retry.MaxAttempts,
		Retention:          c.RetentionConfig(),
		RawSchedules:       c.ScheduleList(),
		Kinds:              maps.Clone(c.Kinds),
	}
	switch {
	case c.StorageKind() == StorageSQLServer:
		out.ConnectionString = c.ConnectionString
	case strings.EqualFold(c.Storage, StorageMemory):
		out.Store = memstore.New()
	}
	return out
}

// RescueConfig maps Recovery onto zombie.Config. Logger, Leader and the
// batch sizes are left for the caller.
func (c *Config) RescueConfig() zombie.Config {
	return zombie.Config{
		ScanInterval:            c.Recovery.ScanInterval,
		FetchedJobTimeout:       c.Recovery.FetchedJobTimeout,
		ProcessingZombieTimeout: c.Recovery.ProcessingZombieTimeout,
	}
}

// RetentionConfig maps Retention onto retention.Config. Logger, Leader
// and the hooks are left for the caller.
func (c *Config) RetentionConfig() retention.Config {
	return retention.Config{Archive: c.Retention.Archive, DeadLetters: c.Retention.DeadLetters}
}

// ScheduleList returns Schedules in name order, a MaxAttempts left out
// filled with Retry.MaxAttempts: the default of every job, and written
// into the definition so the stored one says what runs.
func (c *Config) ScheduleList() []schedule.Schedule {
	out := make([]schedule.Schedule, 0, len(c.Schedules))
	for _, name := range slices.Sorted(maps.Keys(c.Schedules)) {
		s := c.Schedules[name]
		if s.Job.MaxAttempts == 0 {
			s.Job.MaxAttempts = c.Retry.MaxAttempts
		}
		out = append(out, s)
	}
	return out
}

// QueueUpdates returns QueueSettings as store updates, one per queue. The
// pointers are fresh copies, so changing an update leaves c alone.
func (c *Config) QueueUpdates() map[string]jobs.QueueUpdate {
	out := make(map[string]jobs.QueueUpdate, len(c.QueueSettings))
	for _, name := range slices.Sorted(maps.Keys(c.QueueSettings)) {
		s := c.QueueSettings[name]
		out[name] = jobs.QueueUpdate{
			Paused:               clonePtr(s.Paused),
			MaxWorkers:           clonePtr(s.MaxWorkers),
			ZombieTimeout:        clonePtr(s.ZombieTimeout),
			ExecutionTimeout:     clonePtr(s.ExecutionTimeout),
			ArchiveRetention:     clonePtr(s.ArchiveRetention),
			DeadLetterRetention:  clonePtr(s.DeadLetterRetention),
			MaxWorkersPerKey:     clonePtr(s.MaxWorkersPerKey),
			KeyLimits:            maps.Clone(s.KeyLimits),
			SequenceOnDeadLetter: clonePtr(s.SequenceOnDeadLetter),
			Weight:               clonePtr(s.Weight),
			RateLimit:            clonePtr(s.RateLimit),
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// RedactedConnectionString is the connection string with its password
// replaced by "xxxxx", for display and logs; "" when none is set.
func (c *Config) RedactedConnectionString() string {
	return redact.DSN(c.ConnectionString)
}
