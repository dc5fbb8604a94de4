package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
)

// The show* types give String the layout of appsettings.yaml: same key
// names, same order, so its output can be pasted back into a file.
type showFile struct {
	ChokaQ showChokaQ `yaml:"ChokaQ" json:"ChokaQ"`
}

type showChokaQ struct {
	ConnectionString string                  `yaml:"ConnectionString" json:"ConnectionString"`
	Schema           string                  `yaml:"Schema" json:"Schema"`
	Storage          string                  `yaml:"Storage" json:"Storage"`
	WorkerID         string                  `yaml:"WorkerId" json:"WorkerId"`
	Queues           []string                `yaml:"Queues" json:"Queues"`
	Execution        showExecution           `yaml:"Execution" json:"Execution"`
	Retry            showRetry               `yaml:"Retry" json:"Retry"`
	Recovery         showRecovery            `yaml:"Recovery" json:"Recovery"`
	Retention        showRetention           `yaml:"Retention" json:"Retention"`
	QueueSettings    map[string]showQueue    `yaml:"QueueSettings,omitempty" json:"QueueSettings,omitempty"`
	Schedules        map[string]showSchedule `yaml:"Schedules,omitempty" json:"Schedules,omitempty"`
	Kinds            map[string]showKind     `yaml:"Kinds,omitempty" json:"Kinds,omitempty"`
}

// showKind is a kind's policy as the file writes it: only what is set.
type showKind struct {
	Queue                 string  `yaml:"Queue,omitempty" json:"Queue,omitempty"`
	Priority              int     `yaml:"Priority,omitempty" json:"Priority,omitempty"`
	MaxAttempts           int     `yaml:"MaxAttempts,omitempty" json:"MaxAttempts,omitempty"`
	Timeout               string  `yaml:"Timeout,omitempty" json:"Timeout,omitempty"`
	ZombieRetries         int     `yaml:"ZombieRetries,omitempty" json:"ZombieRetries,omitempty"`
	BackoffBaseDelay      string  `yaml:"BackoffBaseDelay,omitempty" json:"BackoffBaseDelay,omitempty"`
	BackoffMaxDelay       string  `yaml:"BackoffMaxDelay,omitempty" json:"BackoffMaxDelay,omitempty"`
	BackoffMultiplier     float64 `yaml:"BackoffMultiplier,omitempty" json:"BackoffMultiplier,omitempty"`
	BackoffJitterMaxDelay string  `yaml:"BackoffJitterMaxDelay,omitempty" json:"BackoffJitterMaxDelay,omitempty"`
}

// setDuration is shortDuration of d, "" for unset.
func setDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return shortDuration(d)
}

type showRetention struct {
	Archive     string `yaml:"Archive" json:"Archive"`
	DeadLetters string `yaml:"DeadLetters" json:"DeadLetters"`
}

type showSchedule struct {
	Cron         string `yaml:"Cron" json:"Cron"`
	TimeZone     string `yaml:"TimeZone,omitempty" json:"TimeZone,omitempty"`
	Type         string `yaml:"Type" json:"Type"`
	Queue        string `yaml:"Queue" json:"Queue"`
	Payload      string `yaml:"Payload,omitempty" json:"Payload,omitempty"`
	Priority     int    `yaml:"Priority,omitempty" json:"Priority,omitempty"`
	MaxAttempts  int    `yaml:"MaxAttempts,omitempty" json:"MaxAttempts,omitempty"`
	MissedFire   string `yaml:"MissedFire" json:"MissedFire"`
	CatchUpLimit int    `yaml:"CatchUpLimit,omitempty" json:"CatchUpLimit,omitempty"`
	Paused       bool   `yaml:"Paused" json:"Paused"`
}

type showExecution struct {
	Concurrency               int     `yaml:"Concurrency" json:"Concurrency"`
	PrefetchSize              int     `yaml:"PrefetchSize" json:"PrefetchSize"`
	BatchSize                 int     `yaml:"BatchSize" json:"BatchSize"`
	PollInterval              string  `yaml:"PollInterval" json:"PollInterval"`
	PollJitter                float64 `yaml:"PollJitter" json:"PollJitter"`
	DefaultTimeout            string  `yaml:"DefaultTimeout" json:"DefaultTimeout"`
	HeartbeatIntervalMin      string  `yaml:"HeartbeatIntervalMin" json:"HeartbeatIntervalMin"`
	HeartbeatIntervalMax      string  `yaml:"HeartbeatIntervalMax" json:"HeartbeatIntervalMax"`
	HeartbeatFailureThreshold int     `yaml:"HeartbeatFailureThreshold" json:"HeartbeatFailureThreshold"`
	CancelOnHeartbeatFailure  bool    `yaml:"CancelOnHeartbeatFailure" json:"CancelOnHeartbeatFailure"`
	ShutdownTimeout           string  `yaml:"ShutdownTimeout" json:"ShutdownTimeout"`
	BatchLinger               string  `yaml:"BatchLinger" json:"BatchLinger"`
	MaxSnoozes                int     `yaml:"MaxSnoozes" json:"MaxSnoozes"`
}

type showRetry struct {
	MaxAttempts       int     `yaml:"MaxAttempts" json:"MaxAttempts"`
	BaseDelay         string  `yaml:"BaseDelay" json:"BaseDelay"`
	MaxDelay          string  `yaml:"MaxDelay" json:"MaxDelay"`
	BackoffMultiplier float64 `yaml:"BackoffMultiplier" json:"BackoffMultiplier"`
	JitterMaxDelay    string  `yaml:"JitterMaxDelay" json:"JitterMaxDelay"`
}

type showRecovery struct {
	ScanInterval            string `yaml:"ScanInterval" json:"ScanInterval"`
	FetchedJobTimeout       string `yaml:"FetchedJobTimeout" json:"FetchedJobTimeout"`
	ProcessingZombieTimeout string `yaml:"ProcessingZombieTimeout" json:"ProcessingZombieTimeout"`
}

type showQueue struct {
	Paused                  *bool          `yaml:"Paused,omitempty" json:"Paused,omitempty"`
	MaxWorkers              *int           `yaml:"MaxWorkers,omitempty" json:"MaxWorkers,omitempty"`
	ZombieTimeoutSeconds    *int           `yaml:"ZombieTimeoutSeconds,omitempty" json:"ZombieTimeoutSeconds,omitempty"`
	ExecutionTimeoutSeconds *int           `yaml:"ExecutionTimeoutSeconds,omitempty" json:"ExecutionTimeoutSeconds,omitempty"`
	ArchiveRetention        *string        `yaml:"ArchiveRetention,omitempty" json:"ArchiveRetention,omitempty"`
	DeadLetterRetention     *string        `yaml:"DeadLetterRetention,omitempty" json:"DeadLetterRetention,omitempty"`
	MaxWorkersPerKey        *int           `yaml:"MaxWorkersPerKey,omitempty" json:"MaxWorkersPerKey,omitempty"`
	KeyLimits               map[string]int `yaml:"KeyLimits,omitempty" json:"KeyLimits,omitempty"`
	SequenceOnDeadLetter    *string        `yaml:"SequenceOnDeadLetter,omitempty" json:"SequenceOnDeadLetter,omitempty"`
	Weight                  *int           `yaml:"Weight,omitempty" json:"Weight,omitempty"`
	RateLimit               *string        `yaml:"RateLimit,omitempty" json:"RateLimit,omitempty"`
}

// String renders the configuration as appsettings.yaml would hold it, with
// the connection string's password replaced, after a comment naming the
// environment and the resolved storage. It is meant for `chokaq config
// show`-style output.
func (c *Config) String() string {
	env := c.Environment
	if env == "" {
		env = "(none)"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# environment: %s; storage: %s\n", env, c.StorageKind())
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c.shown()); err != nil {
		// Only plain strings, numbers and maps of them are encoded, which
		// cannot fail; say so rather than hide it if that ever changes.
		fmt.Fprintf(&b, "# cannot render: %v\n", err)
	}
	_ = enc.Close()
	return b.String()
}

// MarshalJSON renders the configuration in String's layout, as JSON: the
// appsettings keys, durations in Go's form ("15m"), the connection string's
// password replaced, and the environment and resolved storage beside the
// ChokaQ section.
func (c *Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Environment string     `json:"Environment"`
		Storage     string     `json:"ResolvedStorage"`
		ChokaQ      showChokaQ `json:"ChokaQ"`
	}{c.Environment, c.StorageKind(), c.shown().ChokaQ})
}

// shown is the configuration in the layout of appsettings.yaml.
func (c *Config) shown() showFile {
	d := shortDuration
	f := showFile{ChokaQ: showChokaQ{
		ConnectionString: c.RedactedConnectionString(),
		Schema:           c.Schema,
		Storage:          c.Storage,
		WorkerID:         c.WorkerID,
		Queues:           c.Queues,
		Execution: showExecution{
			Concurrency:               c.Execution.Concurrency,
			PrefetchSize:              c.Execution.PrefetchSize,
			BatchSize:                 c.Execution.BatchSize,
			PollInterval:              d(c.Execution.PollInterval),
			PollJitter:                c.Execution.PollJitter,
			DefaultTimeout:            d(c.Execution.DefaultTimeout),
			HeartbeatIntervalMin:      d(c.Execution.HeartbeatIntervalMin),
			HeartbeatIntervalMax:      d(c.Execution.HeartbeatIntervalMax),
			HeartbeatFailureThreshold: c.Execution.HeartbeatFailureThreshold,
			CancelOnHeartbeatFailure:  c.Execution.CancelOnHeartbeatFailure,
			ShutdownTimeout:           d(c.Execution.ShutdownTimeout),
			BatchLinger:               d(c.Execution.BatchLinger),
			MaxSnoozes:                c.Execution.MaxSnoozes,
		},
		Retry: showRetry{
			MaxAttempts:       c.Retry.MaxAttempts,
			BaseDelay:         d(c.Retry.BaseDelay),
			MaxDelay:          d(c.Retry.MaxDelay),
			BackoffMultiplier: c.Retry.BackoffMultiplier,
			JitterMaxDelay:    d(c.Retry.JitterMaxDelay),
		},
		Recovery: showRecovery{
			ScanInterval:            d(c.Recovery.ScanInterval),
			FetchedJobTimeout:       d(c.Recovery.FetchedJobTimeout),
			ProcessingZombieTimeout: d(c.Recovery.ProcessingZombieTimeout),
		},
		Retention: showRetention{Archive: retention.Text(c.Retention.Archive), DeadLetters: retention.Text(c.Retention.DeadLetters)},
	}}
	if len(c.QueueSettings) > 0 {
		f.ChokaQ.QueueSettings = make(map[string]showQueue, len(c.QueueSettings))
		for name, s := range c.QueueSettings {
			f.ChokaQ.QueueSettings[name] = showQueue{Paused: s.Paused, MaxWorkers: s.MaxWorkers,
				ZombieTimeoutSeconds: wholeSeconds(s.ZombieTimeout), ExecutionTimeoutSeconds: wholeSeconds(s.ExecutionTimeout),
				ArchiveRetention: queueRetentionText(s.ArchiveRetention), DeadLetterRetention: queueRetentionText(s.DeadLetterRetention),
				MaxWorkersPerKey: s.MaxWorkersPerKey, KeyLimits: s.KeyLimits, SequenceOnDeadLetter: policyText(s.SequenceOnDeadLetter),
				Weight: s.Weight, RateLimit: rateText(s.RateLimit)}
		}
	}
	if len(c.Schedules) > 0 {
		f.ChokaQ.Schedules = make(map[string]showSchedule, len(c.Schedules))
		for name, s := range c.Schedules {
			n := s.Def() // the definition as stored: defaults filled
			back, _ := schedule.Decode(name, n.Definition)
			f.ChokaQ.Schedules[name] = showSchedule{Cron: back.Cron, TimeZone: back.TimeZone, Type: back.Job.Type, Queue: back.Job.Queue,
				Payload: string(back.Job.Payload), Priority: back.Job.Priority, MaxAttempts: back.Job.MaxAttempts,
				MissedFire: string(back.MissedFire), CatchUpLimit: back.CatchUpLimit, Paused: back.Paused}
		}
	}
	if len(c.Kinds) > 0 {
		f.ChokaQ.Kinds = make(map[string]showKind, len(c.Kinds))
		for name, p := range c.Kinds {
			k := showKind{Queue: p.Queue, Priority: p.Priority, MaxAttempts: p.MaxAttempts, Timeout: setDuration(p.Timeout), ZombieRetries: p.ZombieRetryCap}
			if b := p.Backoff; b != nil {
				k.BackoffBaseDelay, k.BackoffMaxDelay, k.BackoffMultiplier, k.BackoffJitterMaxDelay =
					setDuration(b.BaseDelay), setDuration(b.MaxDelay), b.BackoffMultiplier, setDuration(b.JitterMaxDelay)
			}
			f.ChokaQ.Kinds[name] = k
		}
	}
	return f
}

// queueRetentionText is a queue's retention override as the file writes
// it (retention.Text: "7d", "forever", "default").
func queueRetentionText(d *time.Duration) *string {
	if d == nil {
		return nil
	}
	t := retention.Text(*d)
	return &t
}

// policyText shows a sequence policy as the file writes it.
func policyText(p *jobs.SequencePolicy) *string {
	if p == nil {
		return nil
	}
	t := p.String()
	return &t
}

// rateText shows a rate limit as the file writes it ("100/1m", "none").
func rateText(r *jobs.RateLimit) *string {
	if r == nil {
		return nil
	}
	t := r.String()
	return &t
}

// wholeSeconds shows a queue timeout as the file writes it, in seconds.
func wholeSeconds(d *time.Duration) *int {
	if d == nil {
		return nil
	}
	n := int(*d / time.Second)
	return &n
}

// shortDuration is d.String() without its trailing zero units: "15m"
// rather than "15m0s", as a person writes it. Both forms load.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
