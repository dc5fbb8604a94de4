package config

import (
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

func TestValidationRules(t *testing.T) {
	const cs = "Server=db;Database=jobs"
	tests := []struct {
		name      string
		overrides map[string]string
		want      string // the whole message after "config: "
	}{
		{"Storage unknown", map[string]string{"Storage": "disk"},
			`ChokaQ.Storage = disk (override): must be "sqlserver", "memory" or empty (sqlserver when ConnectionString is set, else memory)`},
		{"Storage sqlserver without ConnectionString", map[string]string{"Storage": "sqlserver"},
			"ChokaQ.Storage = sqlserver (override): needs ConnectionString (set it with CHOKAQ__CONNECTIONSTRING)"},
		{"Schema not an identifier", map[string]string{"Schema": "1jobs"},
			"ChokaQ.Schema = 1jobs (override): use ASCII letters, digits and '_', not starting with a digit"},
		{"Schema reserved", map[string]string{"Schema": "select"},
			"ChokaQ.Schema = select (override): SELECT is a T-SQL reserved keyword"},
		{"Schema system", map[string]string{"Schema": "sys"},
			"ChokaQ.Schema = sys (override): sys is a system schema"},
		{"Schema empty", map[string]string{"Schema": ""},
			"ChokaQ.Schema (override): must be 1 to 124 characters (the application role <schema>_app must fit in 128)"},
		{"WorkerId control character", map[string]string{"WorkerId": "a\tb"},
			"ChokaQ.WorkerId = a\tb (override): must not contain control characters"},
		{"WorkerId too long", map[string]string{"WorkerId": strings.Repeat("w", 201)},
			"ChokaQ.WorkerId = " + strings.Repeat("w", 201) + " (override): must be at most 200 characters"},
		{"BatchLinger above 1ms", map[string]string{"Execution.BatchLinger": "5ms"},
			"ChokaQ.Execution.BatchLinger = 5ms (override): must be between 0s and 1ms"},
		{"Queues empty", map[string]string{"Queues": ""},
			"ChokaQ.Queues (override): must name at least one queue"},
		{"Queues bad name", map[string]string{"Queues": "default,bad name"},
			`ChokaQ.Queues = default,bad name (override): queue "bad name" may contain only ASCII letters, digits, '_', '-', '.' and ':'`},
		{"Queues empty name", map[string]string{"Queues": "default,"},
			`ChokaQ.Queues = default, (override): queue "" must not be empty`},
		{"Queues that differ only in case", map[string]string{"Queues": "orders,Orders"},
			"ChokaQ.Queues = orders,Orders (override): is the same queue as orders (queue names ignore case)"},
		{"Concurrency", map[string]string{"Execution.Concurrency": "0"},
			"ChokaQ.Execution.Concurrency = 0 (override): must be between 1 and 10000"},
		{"Concurrency huge", map[string]string{"Execution.Concurrency": "99999999999"},
			"ChokaQ.Execution.Concurrency = 99999999999 (override): must be between 1 and 10000"},
		{"Concurrency max int32", map[string]string{"Execution.Concurrency": "2147483647"},
			"ChokaQ.Execution.Concurrency = 2147483647 (override): must be between 1 and 10000"},
		{"Heartbeats of a nanosecond", map[string]string{"Execution.HeartbeatIntervalMin": "1ns", "Execution.HeartbeatIntervalMax": "1ns"},
			"ChokaQ.Execution.HeartbeatIntervalMin = 1ns (override): must be between 100ms and 1h0m0s"},
		{"MaxWorkersPerKey negative", map[string]string{"QueueSettings.mail.MaxWorkersPerKey": "-1"},
			"ChokaQ.QueueSettings.mail.MaxWorkersPerKey = -1 (override): must be between 0 (unlimited) and 100000"},
		{"MaxWorkersPerKey too large", map[string]string{"QueueSettings.mail.MaxWorkersPerKey": "100001"},
			"ChokaQ.QueueSettings.mail.MaxWorkersPerKey = 100001 (override): must be between 0 (unlimited) and 100000"},
		{"Weight zero", map[string]string{"QueueSettings.mail.Weight": "0"},
			"ChokaQ.QueueSettings.mail.Weight = 0 (override): must be between 1 (the default) and 1000"},
		{"Weight negative", map[string]string{"QueueSettings.mail.Weight": "-3"},
			"ChokaQ.QueueSettings.mail.Weight = -3 (override): must be between 1 (the default) and 1000"},
		{"Weight too large", map[string]string{"QueueSettings.mail.Weight": "1001"},
			"ChokaQ.QueueSettings.mail.Weight = 1001 (override): must be between 1 (the default) and 1000"},
		{"RateLimit zero count", map[string]string{"QueueSettings.mail.RateLimit": "0/1m"},
			`ChokaQ.QueueSettings.mail.RateLimit = 0/1m (override): the count must be between 1 and 1000000`},
		{"RateLimit negative", map[string]string{"QueueSettings.mail.RateLimit": "-5/1m"},
			`ChokaQ.QueueSettings.mail.RateLimit = -5/1m (override): the count must be between 1 and 1000000`},
		{"RateLimit count too large", map[string]string{"QueueSettings.mail.RateLimit": "1000001/1h"},
			`ChokaQ.QueueSettings.mail.RateLimit = 1000001/1h (override): the count must be between 1 and 1000000`},
		{"RateLimit window of 0s", map[string]string{"QueueSettings.mail.RateLimit": "100/0s"},
			`ChokaQ.QueueSettings.mail.RateLimit = 100/0s (override): the window must be between 100ms and 24h`},
		{"RateLimit window of 10ms", map[string]string{"QueueSettings.mail.RateLimit": "100/10ms"},
			`ChokaQ.QueueSettings.mail.RateLimit = 100/10ms (override): the window must be between 100ms and 24h`},
		{"RateLimit window of 48h", map[string]string{"QueueSettings.mail.RateLimit": "100/48h"},
			`ChokaQ.QueueSettings.mail.RateLimit = 100/48h (override): the window must be between 100ms and 24h`},
		{"RateLimit window not whole milliseconds", map[string]string{"QueueSettings.mail.RateLimit": "100/1500500us"},
			`ChokaQ.QueueSettings.mail.RateLimit = 100/1500500us (override): the window must be whole milliseconds`},
		{"RateLimit garbage", map[string]string{"QueueSettings.mail.RateLimit": "lots"},
			`ChokaQ.QueueSettings.mail.RateLimit = lots (override): must be "N/window", as "100/1m" or "20/s", or "none"`},
		{"RateLimit without a window", map[string]string{"QueueSettings.mail.RateLimit": "100"},
			`ChokaQ.QueueSettings.mail.RateLimit = 100 (override): must be "N/window", as "100/1m" or "20/s", or "none"`},
		{"MaxWorkersPerKey not a number", map[string]string{"QueueSettings.mail.MaxWorkersPerKey": "two"},
			"ChokaQ.QueueSettings.mail.MaxWorkersPerKey = two (override): must be a whole number"},
		{"KeyLimits negative", map[string]string{"QueueSettings.mail.KeyLimits.tenant-A": "-2"},
			"ChokaQ.QueueSettings.mail.KeyLimits.tenant-A = -2 (override): must be between 0 (remove the key's own limit) and 100000"},
		{"KeyLimits too large", map[string]string{"QueueSettings.mail.KeyLimits.tenant-A": "100001"},
			"ChokaQ.QueueSettings.mail.KeyLimits.tenant-A = 100001 (override): must be between 0 (remove the key's own limit) and 100000"},
		{"KeyLimits empty key name", map[string]string{"QueueSettings.mail.KeyLimits.": "2"},
			`ChokaQ.QueueSettings.mail.KeyLimits. = 2 (override): concurrency key "": a key must not be empty`},
		{"KeyLimits key too long", map[string]string{"QueueSettings.mail.KeyLimits." + strings.Repeat("k", 201): "2"},
			"ChokaQ.QueueSettings.mail.KeyLimits." + strings.Repeat("k", 201) + ` = 2 (override): concurrency key "` + strings.Repeat("k", 201) + `": must be at most 200 characters`},
		{"SequenceOnDeadLetter unknown", map[string]string{"QueueSettings.mail.SequenceOnDeadLetter": "pause"},
			"ChokaQ.QueueSettings.mail.SequenceOnDeadLetter = pause (override): must be continue or hold"},
		{"PrefetchSize", map[string]string{"Execution.PrefetchSize": "-1"},
			"ChokaQ.Execution.PrefetchSize = -1 (override): must be between 1 and 10000"},
		{"BatchSize low", map[string]string{"Execution.BatchSize": "0"},
			"ChokaQ.Execution.BatchSize = 0 (override): must be between 1 and 1000"},
		{"BatchSize high", map[string]string{"Execution.BatchSize": "1001"},
			"ChokaQ.Execution.BatchSize = 1001 (override): must be between 1 and 1000"},
		{"PollInterval", map[string]string{"Execution.PollInterval": "0s"},
			"ChokaQ.Execution.PollInterval = 0s (override): must be between 10ms and 1h0m0s"},
		{"PollJitter high", map[string]string{"Execution.PollJitter": "1.5"},
			"ChokaQ.Execution.PollJitter = 1.5 (override): must be between 0 and 1 (a fraction of each wait; 0 means no jitter)"},
		{"PollJitter negative", map[string]string{"Execution.PollJitter": "-0.1"},
			"ChokaQ.Execution.PollJitter = -0.1 (override): must be between 0 and 1 (a fraction of each wait; 0 means no jitter)"},
		{"DefaultTimeout", map[string]string{"Execution.DefaultTimeout": "-1s"},
			"ChokaQ.Execution.DefaultTimeout = -1s (override): must be between 10ms and 720h0m0s"},
		{"DefaultTimeout too long", map[string]string{"Execution.DefaultTimeout": "87601h"},
			"ChokaQ.Execution.DefaultTimeout = 87601h (override): must be between 10ms and 720h0m0s"},
		{"HeartbeatIntervalMin", map[string]string{"Execution.HeartbeatIntervalMin": "0s"},
			"ChokaQ.Execution.HeartbeatIntervalMin = 0s (override): must be between 100ms and 1h0m0s"},
		{"HeartbeatFailureThreshold", map[string]string{"Execution.HeartbeatFailureThreshold": "0"},
			"ChokaQ.Execution.HeartbeatFailureThreshold = 0 (override): must be between 1 and 1000"},
		{"ShutdownTimeout", map[string]string{"Execution.ShutdownTimeout": "00:00:00"},
			"ChokaQ.Execution.ShutdownTimeout = 00:00:00 (override): must be positive"},
		{"MaxAttempts low", map[string]string{"Retry.MaxAttempts": "0"},
			"ChokaQ.Retry.MaxAttempts = 0 (override): must be between 1 and 1000"},
		{"MaxAttempts high", map[string]string{"Retry.MaxAttempts": "1001"},
			"ChokaQ.Retry.MaxAttempts = 1001 (override): must be between 1 and 1000"},
		{"BaseDelay", map[string]string{"Retry.BaseDelay": "0s"},
			"ChokaQ.Retry.BaseDelay = 0s (override): must be positive"},
		{"MaxDelay too long", map[string]string{"Retry.MaxDelay": "100000h"},
			"ChokaQ.Retry.MaxDelay = 100000h (override): must be between 0s and 87600h0m0s"},
		{"JitterMaxDelay", map[string]string{"Retry.JitterMaxDelay": "-1ms"},
			"ChokaQ.Retry.JitterMaxDelay = -1ms (override): must not be negative (0s means no jitter)"},
		{"BackoffMultiplier", map[string]string{"Retry.BackoffMultiplier": "0.5"},
			"ChokaQ.Retry.BackoffMultiplier = 0.5 (override): must be between 1 and 1000"},
		{"ScanInterval", map[string]string{"Recovery.ScanInterval": "0s"},
			"ChokaQ.Recovery.ScanInterval = 0s (override): must be between 100ms and 24h0m0s"},
		{"FetchedJobTimeout negative", map[string]string{"Recovery.FetchedJobTimeout": "-5m"},
			"ChokaQ.Recovery.FetchedJobTimeout = -5m (override): must be between 1s and 24h0m0s"},
		{"ProcessingZombieTimeout negative", map[string]string{"Recovery.ProcessingZombieTimeout": "-5m"},
			"ChokaQ.Recovery.ProcessingZombieTimeout = -5m (override): must be between 1s and 720h0m0s"},

		// Rules between keys blame the key that was set.
		{"HeartbeatIntervalMin > Max, Min set", map[string]string{"Execution.HeartbeatIntervalMin": "20s"},
			"ChokaQ.Execution.HeartbeatIntervalMin = 20s (override): must be <= Execution.HeartbeatIntervalMax (12s)"},
		{"HeartbeatIntervalMin > Max, Max set", map[string]string{"Execution.HeartbeatIntervalMax": "5s"},
			"ChokaQ.Execution.HeartbeatIntervalMax = 5s (override): must be >= Execution.HeartbeatIntervalMin (8s)"},
		{"HeartbeatIntervalMin > Max, both set", map[string]string{"Execution.HeartbeatIntervalMin": "6s", "Execution.HeartbeatIntervalMax": "5s"},
			"ChokaQ.Execution.HeartbeatIntervalMin = 6s (override): must be <= Execution.HeartbeatIntervalMax (5s)"},
		{"BaseDelay > MaxDelay, BaseDelay set", map[string]string{"Retry.BaseDelay": "2h"},
			"ChokaQ.Retry.BaseDelay = 2h (override): must be <= Retry.MaxDelay (1h0m0s)"},
		{"BaseDelay > MaxDelay, MaxDelay set", map[string]string{"Retry.MaxDelay": "1s"},
			"ChokaQ.Retry.MaxDelay = 1s (override): must be >= Retry.BaseDelay (3s)"},
		{"FetchedJobTimeout <= 2 x PollInterval", map[string]string{"Recovery.FetchedJobTimeout": "1s"},
			"ChokaQ.Recovery.FetchedJobTimeout = 1s (override): must be more than 2 x Execution.PollInterval (2 x 500ms = 1s)"},
		{"FetchedJobTimeout <= 2 x PollInterval, PollInterval set", map[string]string{"Execution.PollInterval": "5m"},
			"ChokaQ.Execution.PollInterval = 5m (override): must be less than half of Recovery.FetchedJobTimeout (10m0s)"},
		{"ProcessingZombieTimeout <= 3 x HeartbeatIntervalMax", map[string]string{"Recovery.ProcessingZombieTimeout": "36s"},
			"ChokaQ.Recovery.ProcessingZombieTimeout = 36s (override): must be more than 3 x Execution.HeartbeatIntervalMax (3 x 12s = 36s), or live jobs are rescued"},
		{"ProcessingZombieTimeout <= 3 x HeartbeatIntervalMax, Max set", map[string]string{"Execution.HeartbeatIntervalMax": "4m"},
			"ChokaQ.Execution.HeartbeatIntervalMax = 4m (override): must be less than a third of Recovery.ProcessingZombieTimeout (10m0s), or live jobs are rescued"},
		{"legacy alias is named in a rule", map[string]string{"ZombieTimeoutSeconds": "20"},
			"ChokaQ.ZombieTimeoutSeconds = 20 (override): must be more than 3 x Execution.HeartbeatIntervalMax (3 x 12s = 36s), or live jobs are rescued"},

		{"queue name", map[string]string{"QueueSettings.bad name.Paused": "true"},
			"ChokaQ.QueueSettings.bad name = bad name (override): queue name may contain only ASCII letters, digits, '_', '-', '.' and ':'"},
		{"queue MaxWorkers low", map[string]string{"QueueSettings.mail.MaxWorkers": "-1"},
			"ChokaQ.QueueSettings.mail.MaxWorkers = -1 (override): must be between 0 (unlimited) and 100000"},
		{"queue MaxWorkers high", map[string]string{"QueueSettings.mail.MaxWorkers": "100001"},
			"ChokaQ.QueueSettings.mail.MaxWorkers = 100001 (override): must be between 0 (unlimited) and 100000"},
		{"queue ZombieTimeoutSeconds high", map[string]string{"QueueSettings.mail.ZombieTimeoutSeconds": "2592001"},
			"ChokaQ.QueueSettings.mail.ZombieTimeoutSeconds = 2592001 (override): must be between 0 (use Recovery.ProcessingZombieTimeout) and 2592000 (30 days)"},
		{"queue ZombieTimeoutSeconds <= 3 x HeartbeatIntervalMax", map[string]string{"QueueSettings.mail.ZombieTimeoutSeconds": "36"},
			"ChokaQ.QueueSettings.mail.ZombieTimeoutSeconds = 36 (override): must be more than 3 x Execution.HeartbeatIntervalMax (3 x 12s = 36s), or 0 to use Recovery.ProcessingZombieTimeout"},
		{"queue ExecutionTimeoutSeconds", map[string]string{"QueueSettings.mail.ExecutionTimeoutSeconds": "-1"},
			"ChokaQ.QueueSettings.mail.ExecutionTimeoutSeconds = -1 (override): must be between 0 (use Execution.DefaultTimeout) and 2592000 (30 days)"},
		{"queue ExecutionTimeoutSeconds high", map[string]string{"QueueSettings.mail.ExecutionTimeoutSeconds": "31.00:00:00"},
			"ChokaQ.QueueSettings.mail.ExecutionTimeoutSeconds = 31.00:00:00 (override): must be between 0 (use Execution.DefaultTimeout) and 2592000 (30 days)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := load(t, source{overrides: tt.overrides})
			wantInvalid(t, err)
			if got, want := err.Error(), "config: "+tt.want; got != want {
				t.Errorf("error\n got %q\nwant %q", got, want)
			}
		})
	}

	// Values at the edges of each rule are accepted.
	ok := map[string]string{
		"ConnectionString": cs, "Storage": "SqlServer", "Execution.BatchSize": "1000", "Retry.MaxAttempts": "1000",
		"Retry.BaseDelay": "1h", "Retry.BackoffMultiplier": "1", "Retry.JitterMaxDelay": "0s",
		"Execution.HeartbeatIntervalMin": "12s", "Recovery.ProcessingZombieTimeout": "37s", "Recovery.FetchedJobTimeout": "2001ms",
		"QueueSettings.mail.MaxWorkers": "0", "QueueSettings.mail.ZombieTimeoutSeconds": "0",
		"QueueSettings.bulk.ZombieTimeoutSeconds": "37", "QueueSettings.bulk.ExecutionTimeoutSeconds": "2592000",
		"QueueSettings.bulk.MaxWorkers": "100000",
	}
	c, _, err := load(t, source{overrides: ok})
	if err != nil {
		t.Fatalf("edge values: %v", err)
	}
	if c.Storage != "sqlserver" || c.StorageKind() != "sqlserver" {
		t.Errorf("Storage = %q", c.Storage)
	}
}

// A rule broken in a file names the file, in the documented format.
func TestValidationMessageFromFile(t *testing.T) {
	_, path, err := load(t, source{yaml: nested("Execution.HeartbeatIntervalMin", "20s")})
	wantInvalid(t, err)
	want := "config: ChokaQ.Execution.HeartbeatIntervalMin = 20s (" + path + "): must be <= Execution.HeartbeatIntervalMax (12s)"
	if err.Error() != want {
		t.Errorf("error\n got %q\nwant %q", err, want)
	}

	_, _, err = load(t, source{env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=0"}})
	e := wantInvalid(t, err, "ChokaQ.Execution.Concurrency = 0 (environment (CHOKAQ__EXECUTION__CONCURRENCY)): must be between 1 and 10000")
	if e.Key != "ChokaQ.Execution.Concurrency" || e.Value != "0" || e.Rule != "must be between 1 and 10000" ||
		e.Source != "environment (CHOKAQ__EXECUTION__CONCURRENCY)" {
		t.Errorf("Error fields = %+v", *e)
	}

	_, path, err = load(t, source{yaml: "ChokaQ:\n  QueueSettings:\n    Mail:\n      ZombieTimeoutSeconds: 00:00:30\n"})
	wantInvalid(t, err, "ChokaQ.QueueSettings.Mail.ZombieTimeoutSeconds = 00:00:30 ("+path+"): must be more than 3 x")
}

// Validate checks a Config built in code; its errors have no source.
func TestValidateInCode(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"Concurrency", func(c *Config) { c.Execution.Concurrency = 0 }, "config: ChokaQ.Execution.Concurrency = 0: must be between 1 and 10000"},
		{"Min > Max", func(c *Config) { c.Execution.HeartbeatIntervalMin = 20 * time.Second },
			"config: ChokaQ.Execution.HeartbeatIntervalMin = 20s: must be <= Execution.HeartbeatIntervalMax (12s)"},
		{"queue", func(c *Config) { c.QueueSettings["mail"] = QueueSetting{MaxWorkers: ptr(-1)} },
			"config: ChokaQ.QueueSettings.mail.MaxWorkers = -1: must be between 0 (unlimited) and 100000"},
		{"key limit", func(c *Config) { c.QueueSettings["mail"] = QueueSetting{KeyLimits: map[string]int{"big": -1}} },
			"config: ChokaQ.QueueSettings.mail.KeyLimits.big = -1: must be between 0 (remove the key's own limit) and 100000"},
		{"sequence policy", func(c *Config) {
			p := jobs.SequencePolicy(7)
			c.QueueSettings["mail"] = QueueSetting{SequenceOnDeadLetter: &p}
		},
			"config: ChokaQ.QueueSettings.mail.SequenceOnDeadLetter = SequencePolicy(7): must be continue or hold"},
		{"rate limit", func(c *Config) {
			c.QueueSettings["mail"] = QueueSetting{RateLimit: &jobs.RateLimit{Count: 100, Window: 10 * time.Millisecond}}
		},
			"config: ChokaQ.QueueSettings.mail.RateLimit = 100/10ms: the window must be between 100ms and 24h"},
		{"Storage case-insensitive", func(c *Config) { c.Storage = "Memory" }, ""},
		{"no Queues", func(c *Config) { c.Queues = nil }, "config: ChokaQ.Queues: must name at least one queue"},
		{"NaN multiplier", func(c *Config) { c.Retry.BackoffMultiplier = nan() }, "config: ChokaQ.Retry.BackoffMultiplier = NaN: must be between 1 and 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v", err)
				}
				return
			}
			e := wantInvalid(t, err)
			if err.Error() != tt.want || e.Source != "" {
				t.Errorf("Validate() = %q (source %q), want %q", err, e.Source, tt.want)
			}
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		src  source
		want string // after "config: "; "@" stands for the file's path
	}{
		{"file typo", source{yaml: "ChokaQ:\n  Execution:\n    Concurency: 5\n"},
			"ChokaQ.Execution.Concurency = 5 (@): unknown key (did you mean ChokaQ.Execution.Concurrency?)"},
		{"file, key in the wrong section", source{yaml: "ChokaQ:\n  Concurrency: 5\n"},
			"ChokaQ.Concurrency = 5 (@): unknown key (did you mean ChokaQ.Execution.Concurrency?)"},
		{"file, misspelled section", source{yaml: "ChokaQ:\n  Retyr:\n    MaxAttempts: 5\n"},
			"ChokaQ.Retyr.MaxAttempts = 5 (@): unknown key (did you mean ChokaQ.Retry.MaxAttempts?)"},
		{"file, nothing close", source{yaml: "ChokaQ:\n  Banana: 1\n"},
			"ChokaQ.Banana = 1 (@): unknown key"},
		{"file, queue setting typo", source{yaml: "ChokaQ:\n  QueueSettings:\n    Mail:\n      MaxWorker: 1\n"},
			"ChokaQ.QueueSettings.Mail.MaxWorker = 1 (@): unknown key (did you mean ChokaQ.QueueSettings.Mail.MaxWorkers?)"},
		{"file, section misspelled above a queue", source{yaml: "ChokaQ:\n  QueueSetting:\n    Mail:\n      Paused: true\n"},
			"ChokaQ.QueueSetting.Mail.Paused = true (@): unknown key (did you mean ChokaQ.QueueSettings.Mail.Paused?)"},
		{"file, outside the section", source{yaml: "Execution:\n  Concurrency: 5\n"},
			"Execution.Concurrency = 5 (@): unknown key (did you mean ChokaQ.Execution.Concurrency?)"},
		{"file, misspelled root", source{yaml: "ChokQ:\n  Schema: jobs\n"},
			"ChokQ.Schema = jobs (@): unknown key (did you mean ChokaQ.Schema?)"},
		{"file, misspelled root and key", source{yaml: "ChokQ:\n  Shema: jobs\n"},
			"ChokQ.Shema = jobs (@): unknown key (did you mean ChokaQ?)"},
		{"file, another section", source{yaml: "Logging:\n  Level: debug\nChokaQ:\n  Schema: jobs\n"},
			"Logging.Level = debug (@): unknown key (settings live under the ChokaQ section)"},
		{"file, value for a section", source{yaml: "ChokaQ:\n  Execution: 5\n"},
			"ChokaQ.Execution = 5 (@): must be a section of keys, not a value"},
		{"file, value for the root", source{yaml: "ChokaQ: 5\n"},
			"ChokaQ = 5 (@): must be a section of keys, not a value"},
		{"file, section for a value", source{yaml: "ChokaQ:\n  Execution:\n    Concurrency:\n      Min: 1\n"},
			"ChokaQ.Execution.Concurrency.Min = 1 (@): ChokaQ.Execution.Concurrency is a value, not a section"},
		{"file, value for QueueSettings", source{yaml: "ChokaQ:\n  QueueSettings: mail\n"},
			"ChokaQ.QueueSettings = mail (@): must be a section of queues, each a section of settings (e.g. ChokaQ.QueueSettings.default.MaxWorkers)"},
		{"file, value for a queue", source{yaml: "ChokaQ:\n  QueueSettings:\n    mail: 5\n"},
			"ChokaQ.QueueSettings.mail = 5 (@): must be a section of settings (Paused, MaxWorkers, ZombieTimeoutSeconds, ExecutionTimeoutSeconds, " +
				"ArchiveRetention, DeadLetterRetention, MaxWorkersPerKey, KeyLimits, SequenceOnDeadLetter, Weight, RateLimit)"},
		{"file, value for KeyLimits", source{yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      KeyLimits: 5\n"},
			"ChokaQ.QueueSettings.mail.KeyLimits = 5 (@): must be a section of concurrency keys, each with its cap (e.g. ChokaQ.QueueSettings.mail.KeyLimits.tenant-a: 2)"},
		{"file, keys differing only in case", source{yaml: "ChokaQ:\n  Schema: a\n  schema: b\n"},
			"ChokaQ.schema (@): is set twice, at lines 2 and 3 (keys are case-insensitive)"},
		{"file, queues differing only in case", source{yaml: "ChokaQ:\n  QueueSettings:\n    Mail:\n      Paused: true\n    mail:\n      Paused: false\n"},
			"ChokaQ.QueueSettings.mail (@): is set twice, at lines 3 and 5 (keys are case-insensitive)"},

		{"environment typo", source{env: []string{"CHOKAQ__EXECUTION__CONCURENCY=5"}},
			"ChokaQ.EXECUTION.CONCURENCY = 5 (environment (CHOKAQ__EXECUTION__CONCURENCY)): unknown key (did you mean ChokaQ.Execution.Concurrency?)"},
		{"environment, single underscore between keys", source{env: []string{"CHOKAQ__EXECUTION_CONCURRENCY=5"}},
			"ChokaQ.EXECUTION_CONCURRENCY = 5 (environment (CHOKAQ__EXECUTION_CONCURRENCY)): unknown key (did you mean ChokaQ.Execution.Concurrency?)"},
		{"environment, environment with two underscores", source{env: []string{"CHOKAQ__ENVIRONMENT=Production"}},
			"ChokaQ.ENVIRONMENT = Production (environment (CHOKAQ__ENVIRONMENT)): unknown key (the environment is chosen by CHOKAQ_ENVIRONMENT, with one underscore)"},
		{"environment, prefix only", source{env: []string{"CHOKAQ__=1"}},
			"ChokaQ. = 1 (environment (CHOKAQ__)): unknown key"},
		{"environment, queue setting typo", source{env: []string{"CHOKAQ__QUEUESETTINGS__MAIL__PAUSE=true"}},
			"ChokaQ.QUEUESETTINGS.MAIL.PAUSE = true (environment (CHOKAQ__QUEUESETTINGS__MAIL__PAUSE)): unknown key (did you mean ChokaQ.QueueSettings.MAIL.Paused?)"},
		{"override typo", source{overrides: map[string]string{"Retry.MaxAttempt": "5"}},
			"ChokaQ.Retry.MaxAttempt = 5 (override): unknown key (did you mean ChokaQ.Retry.MaxAttempts?)"},
		{"override legacy typo", source{overrides: map[string]string{"MaxRetry": "5"}},
			"ChokaQ.MaxRetry = 5 (override): unknown key (did you mean ChokaQ.MaxRetries?)"},
		{"override queue setting typo", source{overrides: map[string]string{"QueueSettings.mail.MaxWorker": "1"}},
			"ChokaQ.QueueSettings.mail.MaxWorker = 1 (override): unknown key (did you mean ChokaQ.QueueSettings.mail.MaxWorkers?)"},
		{"override set twice", source{overrides: map[string]string{"Execution.Concurrency": "1", "execution.concurrency": "2"}},
			"ChokaQ.execution.concurrency = 2 (override): is set twice (also as Execution.Concurrency)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := load(t, tt.src)
			wantInvalid(t, err)
			want := "config: " + strings.ReplaceAll(tt.want, "@", path)
			if err.Error() != want {
				t.Errorf("error\n got %q\nwant %q", err, want)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"concurency", "concurrency", 1}, {"abc", "abc", 0}} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
