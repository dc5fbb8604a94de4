package config

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

func TestDefault(t *testing.T) {
	c := Default()
	tests := []struct {
		key  string
		got  any
		want any
	}{
		{"Environment", c.Environment, ""},
		{"ConnectionString", c.ConnectionString, ""},
		{"Schema", c.Schema, "chokaq"},
		{"Storage", c.Storage, ""},
		{"WorkerId", c.WorkerID, ""},
		{"Queues", c.Queues, []string{"default"}},
		{"Execution.Concurrency", c.Execution.Concurrency, 10},
		{"Execution.PrefetchSize", c.Execution.PrefetchSize, 100},
		{"Execution.BatchSize", c.Execution.BatchSize, 20},
		{"Execution.PollInterval", c.Execution.PollInterval, 500 * time.Millisecond},
		{"Execution.PollJitter", c.Execution.PollJitter, 0.2},
		{"Execution.DefaultTimeout", c.Execution.DefaultTimeout, 15 * time.Minute},
		{"Execution.HeartbeatIntervalMin", c.Execution.HeartbeatIntervalMin, 8 * time.Second},
		{"Execution.HeartbeatIntervalMax", c.Execution.HeartbeatIntervalMax, 12 * time.Second},
		{"Execution.HeartbeatFailureThreshold", c.Execution.HeartbeatFailureThreshold, 10},
		{"Execution.CancelOnHeartbeatFailure", c.Execution.CancelOnHeartbeatFailure, false},
		{"Execution.ShutdownTimeout", c.Execution.ShutdownTimeout, 30 * time.Second},
		{"Execution.BatchLinger", c.Execution.BatchLinger, time.Duration(0)},
		{"Execution.MaxSnoozes", c.Execution.MaxSnoozes, 100},
		{"Retry.MaxAttempts", c.Retry.MaxAttempts, 3},
		{"Retry.BaseDelay", c.Retry.BaseDelay, 3 * time.Second},
		{"Retry.MaxDelay", c.Retry.MaxDelay, time.Hour},
		{"Retry.BackoffMultiplier", c.Retry.BackoffMultiplier, 2.0},
		{"Retry.JitterMaxDelay", c.Retry.JitterMaxDelay, time.Second},
		{"Recovery.ScanInterval", c.Recovery.ScanInterval, time.Minute},
		{"Recovery.FetchedJobTimeout", c.Recovery.FetchedJobTimeout, 10 * time.Minute},
		{"Recovery.ProcessingZombieTimeout", c.Recovery.ProcessingZombieTimeout, 10 * time.Minute},
		{"QueueSettings", len(c.QueueSettings), 0},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("default %s = %v, want %v", tt.key, tt.got, tt.want)
			}
		})
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	// Each call returns its own values.
	c.Queues[0] = "changed"
	c.QueueSettings["x"] = QueueSetting{}
	if d := Default(); d.Queues[0] != "default" || len(d.QueueSettings) != 0 {
		t.Errorf("Default shares state between calls: %v %v", d.Queues, d.QueueSettings)
	}
}

// The defaults agree with the packages they configure.
func TestDefaultMatchesPackages(t *testing.T) {
	got := Default().ProcessorConfig()
	if want := processor.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default().ProcessorConfig() = %+v\nprocessor.DefaultConfig() = %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("processor Validate: %v", err)
	}
	if Default().Retry.MaxAttempts != jobs.DefaultMaxAttempts {
		t.Errorf("MaxAttempts default differs from jobs.DefaultMaxAttempts")
	}
}

// The repository's appsettings.yaml lists every key with its default.
func TestAppsettingsYAML(t *testing.T) {
	c, err := Load(Options{Dir: "..", Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("appsettings.yaml loads as\n%v\nwant Default()\n%v", c, want)
	}

	b, err := os.ReadFile("../appsettings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	section, _ := doc["ChokaQ"].(map[string]any)
	for _, k := range keys {
		if k.alias != "" {
			if !strings.Contains(string(b), "#   "+k.name) {
				t.Errorf("appsettings.yaml does not mention legacy key %s in a comment", k.name)
			}
			continue
		}
		var v any = section
		for _, seg := range strings.Split(k.name, ".") {
			m, _ := v.(map[string]any)
			var ok bool
			if v, ok = m[seg]; !ok {
				t.Errorf("appsettings.yaml lacks ChokaQ.%s", k.name)
				break
			}
		}
	}
	for _, k := range queueKeys {
		if !strings.Contains(string(b), "#     "+k.name+":") {
			t.Errorf("appsettings.yaml's QueueSettings example lacks %s", k.name)
		}
	}
	for _, k := range scheduleKeys {
		if !strings.Contains(string(b), "#     "+k.name+":") {
			t.Errorf("appsettings.yaml's Schedules example lacks %s", k.name)
		}
	}
}

// yamlCases sets every key from YAML to a value other than its default.
var yamlCases = []struct {
	key   string
	value string
	want  func(c *Config)
}{
	{"ConnectionString", "sqlserver://app@db:1433?database=jobs", func(c *Config) { c.ConnectionString = "sqlserver://app@db:1433?database=jobs" }},
	{"Schema", "jobs", func(c *Config) { c.Schema = "jobs" }},
	{"Storage", "Memory", func(c *Config) { c.Storage = "memory" }},
	{"WorkerId", "worker-7", func(c *Config) { c.WorkerID = "worker-7" }},
	{"Queues", "[default, mail]", func(c *Config) { c.Queues = []string{"default", "mail"} }},
	{"Execution.Concurrency", "4", func(c *Config) { c.Execution.Concurrency = 4 }},
	{"Execution.PrefetchSize", "50", func(c *Config) { c.Execution.PrefetchSize = 50 }},
	{"Execution.BatchSize", "1000", func(c *Config) { c.Execution.BatchSize = 1000 }},
	{"Execution.PollInterval", "250ms", func(c *Config) { c.Execution.PollInterval = 250 * time.Millisecond }},
	{"Execution.PollJitter", "0.5", func(c *Config) { c.Execution.PollJitter = 0.5 }},
	{"Execution.DefaultTimeout", "01:00:00", func(c *Config) { c.Execution.DefaultTimeout = time.Hour }},
	{"Execution.HeartbeatIntervalMin", "5s", func(c *Config) { c.Execution.HeartbeatIntervalMin = 5 * time.Second }},
	{"Execution.HeartbeatIntervalMax", "20s", func(c *Config) { c.Execution.HeartbeatIntervalMax = 20 * time.Second }},
	{"Execution.HeartbeatFailureThreshold", "3", func(c *Config) { c.Execution.HeartbeatFailureThreshold = 3 }},
	{"Execution.CancelOnHeartbeatFailure", "true", func(c *Config) { c.Execution.CancelOnHeartbeatFailure = true }},
	{"Execution.ShutdownTimeout", "2m", func(c *Config) { c.Execution.ShutdownTimeout = 2 * time.Minute }},
	{"Execution.BatchLinger", "200us", func(c *Config) { c.Execution.BatchLinger = 200 * time.Microsecond }},
	{"Execution.MaxSnoozes", "7", func(c *Config) { c.Execution.MaxSnoozes = 7 }},
	{"Retry.MaxAttempts", "7", func(c *Config) { c.Retry.MaxAttempts = 7 }},
	{"Retry.BaseDelay", "500ms", func(c *Config) { c.Retry.BaseDelay = 500 * time.Millisecond }},
	{"Retry.MaxDelay", "2h", func(c *Config) { c.Retry.MaxDelay = 2 * time.Hour }},
	{"Retry.BackoffMultiplier", "1.5", func(c *Config) { c.Retry.BackoffMultiplier = 1.5 }},
	{"Retry.JitterMaxDelay", "0s", func(c *Config) { c.Retry.JitterMaxDelay = 0 }},
	{"Recovery.ScanInterval", "30s", func(c *Config) { c.Recovery.ScanInterval = 30 * time.Second }},
	{"Recovery.FetchedJobTimeout", "5m", func(c *Config) { c.Recovery.FetchedJobTimeout = 5 * time.Minute }},
	{"Recovery.ProcessingZombieTimeout", "1.00:00:00", func(c *Config) { c.Recovery.ProcessingZombieTimeout = 24 * time.Hour }},
	{"QueueSettings.Mail.Paused", "true", func(c *Config) { c.QueueSettings["Mail"] = QueueSetting{Paused: ptr(true)} }},
	{"QueueSettings.Mail.MaxWorkers", "2", func(c *Config) { c.QueueSettings["Mail"] = QueueSetting{MaxWorkers: ptr(2)} }},
	{"QueueSettings.Mail.ZombieTimeoutSeconds", "300", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{ZombieTimeout: ptr(time.Duration(300) * time.Second)}
	}},
	{"QueueSettings.Mail.ExecutionTimeoutSeconds", "0", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{ExecutionTimeout: ptr(time.Duration(0) * time.Second)}
	}},
	{"Retention.Archive", "14d", func(c *Config) { c.Retention.Archive = 14 * 24 * time.Hour }},
	{"Retention.DeadLetters", "0", func(c *Config) { c.Retention.DeadLetters = jobs.KeepForever }},
	{"QueueSettings.Mail.ArchiveRetention", "1d12h", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{ArchiveRetention: ptr(36 * time.Hour)}
	}},
	{"QueueSettings.Mail.DeadLetterRetention", "default", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{DeadLetterRetention: ptr(time.Duration(0))}
	}},
	{"QueueSettings.Mail.MaxWorkersPerKey", "3", func(c *Config) { c.QueueSettings["Mail"] = QueueSetting{MaxWorkersPerKey: ptr(3)} }},
	// A concurrency key keeps its case: keys compare exactly.
	{"QueueSettings.Mail.KeyLimits.Tenant-A", "5", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{KeyLimits: map[string]int{"Tenant-A": 5}}
	}},
	{"QueueSettings.Mail.SequenceOnDeadLetter", "Hold", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{SequenceOnDeadLetter: ptr(jobs.SequenceHold)}
	}},
	{"QueueSettings.Mail.Weight", "9", func(c *Config) { c.QueueSettings["Mail"] = QueueSetting{Weight: ptr(9)} }},
	{"QueueSettings.Mail.RateLimit", "20/s", func(c *Config) {
		c.QueueSettings["Mail"] = QueueSetting{RateLimit: &jobs.RateLimit{Count: 20, Window: time.Second}}
	}},
	{"FetchedJobTimeoutSeconds", "300", func(c *Config) { c.Recovery.FetchedJobTimeout = 5 * time.Minute }},
	{"ZombieTimeoutSeconds", "1200", func(c *Config) { c.Recovery.ProcessingZombieTimeout = 20 * time.Minute }},
	{"MaxRetries", "5", func(c *Config) { c.Retry.MaxAttempts = 5 }},
	{"RetryDelaySeconds", "10", func(c *Config) { c.Retry.BaseDelay = 10 * time.Second }},
}

func TestEachKeyFromYAML(t *testing.T) {
	covered := map[string]bool{}
	for _, tt := range yamlCases {
		covered[tt.key] = true
		t.Run(tt.key, func(t *testing.T) {
			got := mustLoad(t, source{yaml: nested(tt.key, tt.value)})
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s loads as\n%v\nwant\n%v", tt.key, tt.value, got, want)
			}
		})
	}
	for _, k := range keys {
		if !covered[k.name] {
			t.Errorf("no case sets %s", k.name)
		}
	}
	for _, k := range queueKeys {
		name := "QueueSettings.Mail." + k.name
		if k.section {
			name += ".Tenant-A"
		}
		if !covered[name] {
			t.Errorf("no case sets QueueSettings.*.%s", k.name)
		}
	}
}

// KeyLimits merge key by key across sources, and a concurrency key keeps
// the case each source writes: Big and big are two keys.
func TestKeyLimitsMergeKeyByKeyAndKeepTheirCase(t *testing.T) {
	c := mustLoad(t, source{
		yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      KeyLimits:\n        Big: 5\n        tenant.a: 2\n",
		env:  []string{"CHOKAQ__QUEUESETTINGS__mail__KEYLIMITS__big=3", "CHOKAQ__QUEUESETTINGS__mail__KEYLIMITS__tenant.a=4"},
	})
	want := map[string]int{"Big": 5, "big": 3, "tenant.a": 4}
	if got := c.QueueSettings["mail"].KeyLimits; !reflect.DeepEqual(got, want) {
		t.Errorf("KeyLimits = %v, want %v", got, want)
	}
	if got := c.QueueUpdates()["mail"].KeyLimits; !reflect.DeepEqual(got, want) {
		t.Errorf("QueueUpdates KeyLimits = %v, want %v", got, want)
	}
}

// Keys, sections and the root are matched in any case.
func TestKeysAreCaseInsensitive(t *testing.T) {
	c := mustLoad(t, source{yaml: "chokaq:\n  EXECUTION:\n    concurrency: 3\n  retry:\n    MAXATTEMPTS: 4\n"})
	if c.Execution.Concurrency != 3 || c.Retry.MaxAttempts != 4 {
		t.Errorf("got Concurrency %d, MaxAttempts %d", c.Execution.Concurrency, c.Retry.MaxAttempts)
	}
}

func TestEmptyValuesAreNotSet(t *testing.T) {
	for _, y := range []string{"", "# only a comment\n", "ChokaQ:\n", "ChokaQ:\n  Execution:\n  QueueSettings:\n", "ChokaQ:\n  Schema: ~\n"} {
		c := mustLoad(t, source{yaml: y})
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("%q loads as %v, want the defaults", y, c)
		}
	}
}

func TestStorageKind(t *testing.T) {
	tests := []struct {
		storage, conn, want string
	}{
		{"", "", "memory"},
		{"", "sqlserver://db", "sqlserver"},
		{"memory", "sqlserver://db", "memory"},
		{"sqlserver", "sqlserver://db", "sqlserver"},
		{"SQLServer", "sqlserver://db", "sqlserver"},
	}
	for _, tt := range tests {
		c := Default()
		c.Storage, c.ConnectionString = tt.storage, tt.conn
		if got := c.StorageKind(); got != tt.want {
			t.Errorf("Storage %q, ConnectionString %q: StorageKind() = %q, want %q", tt.storage, tt.conn, got, tt.want)
		}
	}
}

func custom() *Config {
	c := Default()
	c.WorkerID = "w1"
	c.Queues = []string{"mail", "default"}
	c.Execution = Execution{
		Concurrency: 4, PrefetchSize: 40, BatchSize: 8, PollInterval: 2 * time.Second,
		DefaultTimeout: time.Hour, HeartbeatIntervalMin: 5 * time.Second, HeartbeatIntervalMax: 7 * time.Second,
		HeartbeatFailureThreshold: 4, CancelOnHeartbeatFailure: true, ShutdownTimeout: time.Minute, MaxSnoozes: 12,
	}
	c.Retry = Retry{MaxAttempts: 9, BaseDelay: time.Second, MaxDelay: time.Minute, BackoffMultiplier: 3, JitterMaxDelay: 0}
	c.Recovery = Recovery{ScanInterval: 10 * time.Second, FetchedJobTimeout: 3 * time.Minute, ProcessingZombieTimeout: 4 * time.Minute}
	c.QueueSettings = map[string]QueueSetting{
		"Mail": {Paused: ptr(false), MaxWorkers: ptr(2), Weight: ptr(9), RateLimit: &jobs.RateLimit{Count: 100, Window: time.Minute}},
		"reports": {ZombieTimeout: ptr(time.Duration(600) * time.Second), ExecutionTimeout: ptr(time.Duration(3600) * time.Second),
			MaxWorkersPerKey: ptr(2), KeyLimits: map[string]int{"Big": 5, "small": 1}, SequenceOnDeadLetter: ptr(jobs.SequenceHold)},
	}
	return c
}

func TestProcessorConfig(t *testing.T) {
	c := custom()
	want := processor.Config{
		WorkerID: "w1", Queues: []string{"mail", "default"},
		Concurrency: 4, PrefetchSize: 40, BatchSize: 8, PollInterval: 2 * time.Second,
		DefaultTimeout: time.Hour, HeartbeatIntervalMin: 5 * time.Second, HeartbeatIntervalMax: 7 * time.Second,
		HeartbeatFailureThreshold: 4, CancelOnHeartbeatFailure: true, ShutdownTimeout: time.Minute, MaxSnoozes: 12,
		ReleaseAfter: 90 * time.Second,       // half of Recovery.FetchedJobTimeout
		PollJitter:   processor.NoPollJitter, // custom() leaves it at 0, which in a file means none
		// custom() leaves JitterMaxDelay at 0s, which in a file means no jitter.
		Retry: processor.RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Minute, BackoffMultiplier: 3, JitterMaxDelay: processor.NoJitter},
	}
	got := c.ProcessorConfig()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ProcessorConfig() =\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("processor Validate: %v", err)
	}
	got.Queues[0] = "changed"
	if c.Queues[0] != "mail" {
		t.Error("ProcessorConfig shares Queues with the Config")
	}
}

func TestRescueConfig(t *testing.T) {
	got := custom().RescueConfig()
	want := zombie.Config{ScanInterval: 10 * time.Second, FetchedJobTimeout: 3 * time.Minute, ProcessingZombieTimeout: 4 * time.Minute}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RescueConfig() = %+v, want %+v", got, want)
	}
}

func TestQueueUpdates(t *testing.T) {
	c := custom()
	got := c.QueueUpdates()
	want := map[string]jobs.QueueUpdate{
		"Mail": {Paused: ptr(false), MaxWorkers: ptr(2), Weight: ptr(9), RateLimit: &jobs.RateLimit{Count: 100, Window: time.Minute}},
		"reports": {ZombieTimeout: ptr(time.Duration(600) * time.Second), ExecutionTimeout: ptr(time.Duration(3600) * time.Second),
			MaxWorkersPerKey: ptr(2), KeyLimits: map[string]int{"Big": 5, "small": 1}, SequenceOnDeadLetter: ptr(jobs.SequenceHold)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("QueueUpdates() = %+v, want %+v", got, want)
	}
	for name, u := range got {
		if err := u.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	*got["Mail"].MaxWorkers = 99
	if *c.QueueSettings["Mail"].MaxWorkers != 2 {
		t.Error("QueueUpdates shares pointers with the Config")
	}
	got["reports"].KeyLimits["Big"] = 99
	if c.QueueSettings["reports"].KeyLimits["Big"] != 5 {
		t.Error("QueueUpdates shares KeyLimits with the Config")
	}
	if n := len(Default().QueueUpdates()); n != 0 {
		t.Errorf("Default().QueueUpdates() has %d entries", n)
	}
}

// String renders a file that loads back to the same configuration.
func TestStringRoundTrip(t *testing.T) {
	c := custom()
	c.Environment = "Production"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s := c.String()
	for _, want := range []string{"# environment: Production; storage: memory", "ChokaQ:", "  Execution:", "    PollInterval: 2s", "    DefaultTimeout: 1h\n", "    Concurrency: 4", "  QueueSettings:", "    Mail:",
		"      MaxWorkersPerKey: 2", "      Weight: 9", "      RateLimit: 100/1m", "      KeyLimits:\n        Big: 5\n        small: 1", "      SequenceOnDeadLetter: hold"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q:\n%s", want, s)
		}
	}
	got := mustLoad(t, source{yaml: s})
	got.Environment = c.Environment
	if !reflect.DeepEqual(got, c) {
		t.Errorf("String() loads back as\n%v\nwant\n%v", got, c)
	}
	if !strings.Contains(Default().String(), "# environment: (none); storage: memory") {
		t.Errorf("Default().String() header:\n%s", Default().String())
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 15 * time.Minute: "15m", 90 * time.Second: "1m30s", 61 * time.Minute: "1h1m",
		time.Second: "1s", 250 * time.Millisecond: "250ms", 0: "0s", 26*time.Hour + 3*time.Second: "26h0m3s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestClientConfig(t *testing.T) {
	s := Default()
	s.Retry.MaxAttempts = 7
	s.Execution.Concurrency = 3
	s.Queues = []string{"mail"}
	c := s.ClientConfig()
	if c.Store != nil {
		t.Fatal("no storage configured, yet ClientConfig chose one")
	}
	s.Storage = StorageMemory
	c = s.ClientConfig()
	if c.Store == nil || c.ConnectionString != "" || c.DefaultMaxAttempts != 7 || c.Processor.Concurrency != 3 || c.Processor.Queues[0] != "mail" {
		t.Fatalf("ClientConfig = %+v", c)
	}
	reg := processor.NewRegistry()
	client, err := chokaq.New(context.Background(), c, reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.EnqueueRaw(context.Background(), jobs.EnqueueParams{Type: "t", Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := client.GetJob(context.Background(), r.ID); j.MaxAttempts != 7 {
		t.Fatalf("Retry.MaxAttempts did not become the enqueue default: %d", j.MaxAttempts)
	}
}

// RateLimit "none" loads as the zero limit, which the queue's update
// carries to remove the queue's limit (ADR 0033), and config show writes
// it back as none.
func TestRateLimitNoneRemovesTheQueuesLimit(t *testing.T) {
	c := mustLoad(t, source{yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      RateLimit: None\n"})
	u := c.QueueUpdates()["mail"]
	if u.RateLimit == nil || !u.RateLimit.IsZero() {
		t.Fatalf("QueueUpdates()[mail].RateLimit = %v, want a pointer to the zero limit", u.RateLimit)
	}
	if s := c.String(); !strings.Contains(s, "      RateLimit: none\n") {
		t.Errorf("String() lacks RateLimit: none:\n%s", s)
	}
}
