package config

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The show* types give String the layout of appsettings.yaml: same key
// names, same order, so its output can be pasted back into a file.
type showFile struct {
	ChokaQ showChokaQ `yaml:"ChokaQ"`
}

type showChokaQ struct {
	ConnectionString string               `yaml:"ConnectionString"`
	Schema           string               `yaml:"Schema"`
	Storage          string               `yaml:"Storage"`
	WorkerID         string               `yaml:"WorkerId"`
	Queues           []string             `yaml:"Queues"`
	Execution        showExecution        `yaml:"Execution"`
	Retry            showRetry            `yaml:"Retry"`
	Recovery         showRecovery         `yaml:"Recovery"`
	QueueSettings    map[string]showQueue `yaml:"QueueSettings,omitempty"`
}

type showExecution struct {
	Concurrency               int    `yaml:"Concurrency"`
	PrefetchSize              int    `yaml:"PrefetchSize"`
	BatchSize                 int    `yaml:"BatchSize"`
	PollInterval              string `yaml:"PollInterval"`
	DefaultTimeout            string `yaml:"DefaultTimeout"`
	HeartbeatIntervalMin      string `yaml:"HeartbeatIntervalMin"`
	HeartbeatIntervalMax      string `yaml:"HeartbeatIntervalMax"`
	HeartbeatFailureThreshold int    `yaml:"HeartbeatFailureThreshold"`
	CancelOnHeartbeatFailure  bool   `yaml:"CancelOnHeartbeatFailure"`
	ShutdownTimeout           string `yaml:"ShutdownTimeout"`
}

type showRetry struct {
	MaxAttempts       int     `yaml:"MaxAttempts"`
	BaseDelay         string  `yaml:"BaseDelay"`
	MaxDelay          string  `yaml:"MaxDelay"`
	BackoffMultiplier float64 `yaml:"BackoffMultiplier"`
	JitterMaxDelay    string  `yaml:"JitterMaxDelay"`
}

type showRecovery struct {
	ScanInterval            string `yaml:"ScanInterval"`
	FetchedJobTimeout       string `yaml:"FetchedJobTimeout"`
	ProcessingZombieTimeout string `yaml:"ProcessingZombieTimeout"`
}

type showQueue struct {
	Paused                  *bool `yaml:"Paused,omitempty"`
	MaxWorkers              *int  `yaml:"MaxWorkers,omitempty"`
	ZombieTimeoutSeconds    *int  `yaml:"ZombieTimeoutSeconds,omitempty"`
	ExecutionTimeoutSeconds *int  `yaml:"ExecutionTimeoutSeconds,omitempty"`
}

// String renders the configuration as appsettings.yaml would hold it, with
// the connection string's password replaced, after a comment naming the
// environment and the resolved storage. It is meant for `chokaq config
// show`-style output.
func (c *Config) String() string {
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
			DefaultTimeout:            d(c.Execution.DefaultTimeout),
			HeartbeatIntervalMin:      d(c.Execution.HeartbeatIntervalMin),
			HeartbeatIntervalMax:      d(c.Execution.HeartbeatIntervalMax),
			HeartbeatFailureThreshold: c.Execution.HeartbeatFailureThreshold,
			CancelOnHeartbeatFailure:  c.Execution.CancelOnHeartbeatFailure,
			ShutdownTimeout:           d(c.Execution.ShutdownTimeout),
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
	}}
	if len(c.QueueSettings) > 0 {
		f.ChokaQ.QueueSettings = make(map[string]showQueue, len(c.QueueSettings))
		for name, s := range c.QueueSettings {
			f.ChokaQ.QueueSettings[name] = showQueue(s)
		}
	}
	env := c.Environment
	if env == "" {
		env = "(none)"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# environment: %s; storage: %s\n", env, c.StorageKind())
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		// Only plain strings, numbers and maps of them are encoded, which
		// cannot fail; say so rather than hide it if that ever changes.
		fmt.Fprintf(&b, "# cannot render: %v\n", err)
	}
	_ = enc.Close()
	return b.String()
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
