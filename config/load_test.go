package config

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"
)

// loadCase is a configuration source and how the loaded Config differs
// from Default.
type loadCase struct {
	name string
	src  source
	want func(c *Config)
}

func runLoadCases(t *testing.T, tests []loadCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustLoad(t, tt.src)
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestLegacyAliases(t *testing.T) {
	tests := []loadCase{
		{"FetchedJobTimeoutSeconds alone", source{yaml: "ChokaQ:\n  FetchedJobTimeoutSeconds: 120\n"},
			func(c *Config) { c.Recovery.FetchedJobTimeout = 2 * time.Minute }},
		{"ZombieTimeoutSeconds alone", source{yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 900\n"},
			func(c *Config) { c.Recovery.ProcessingZombieTimeout = 15 * time.Minute }},
		{"MaxRetries alone", source{yaml: "ChokaQ:\n  MaxRetries: 6\n"},
			func(c *Config) { c.Retry.MaxAttempts = 6 }},
		{"RetryDelaySeconds alone", source{yaml: "ChokaQ:\n  RetryDelaySeconds: 7\n"},
			func(c *Config) { c.Retry.BaseDelay = 7 * time.Second }},
		{"alias as a duration", source{yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 00:15:00\n"},
			func(c *Config) { c.Recovery.ProcessingZombieTimeout = 15 * time.Minute }},
		{"alias from the environment", source{env: []string{"CHOKAQ__RETRYDELAYSECONDS=8"}},
			func(c *Config) { c.Retry.BaseDelay = 8 * time.Second }},
		{"alias from an override", source{overrides: map[string]string{"MaxRetries": "2"}},
			func(c *Config) { c.Retry.MaxAttempts = 2 }},
		{"same value, same file", source{yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 900\n  Recovery:\n    ProcessingZombieTimeout: 15m\n"},
			func(c *Config) { c.Recovery.ProcessingZombieTimeout = 15 * time.Minute }},
		{"same value, all four", source{yaml: "ChokaQ:\n  FetchedJobTimeoutSeconds: 600\n  ZombieTimeoutSeconds: 600\n  MaxRetries: 3\n  RetryDelaySeconds: 3\n" +
			"  Recovery:\n    FetchedJobTimeout: 00:10:00\n    ProcessingZombieTimeout: 10m\n  Retry:\n    MaxAttempts: 3\n    BaseDelay: 3s\n"},
			func(c *Config) {}},
		{"same value, file and environment", source{
			yaml: "ChokaQ:\n  MaxRetries: 5\n",
			env:  []string{"CHOKAQ__RETRY__MAXATTEMPTS=5"}},
			func(c *Config) { c.Retry.MaxAttempts = 5 }},
		// Both forms are merged across sources before they are compared, so
		// changing the value of one form in a later source means changing
		// the other too.
		{"both forms moved together by the environment", source{
			yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 900\n  Recovery:\n    ProcessingZombieTimeout: 15m\n",
			env:  []string{"CHOKAQ__ZOMBIETIMEOUTSECONDS=1200", "CHOKAQ__RECOVERY__PROCESSINGZOMBIETIMEOUT=20m"}},
			func(c *Config) { c.Recovery.ProcessingZombieTimeout = 20 * time.Minute }},
		{"alias replaced in the environment file", source{
			yaml:  "ChokaQ:\n  MaxRetries: 5\n",
			files: map[string]string{"appsettings.Prod.yaml": "ChokaQ:\n  MaxRetries: 8\n"},
			opts:  Options{Environment: "Prod"}},
			func(c *Config) { c.Environment = "Prod"; c.Retry.MaxAttempts = 8 }},
	}
	runLoadCases(t, tests)
}

func TestLegacyAliasConflicts(t *testing.T) {
	tests := []struct {
		name string
		src  source
		want []string // each in the message: both keys, both values
	}{
		{"file vs file", source{yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 600\n  Recovery:\n    ProcessingZombieTimeout: 5m\n"},
			[]string{"ChokaQ.ZombieTimeoutSeconds = 600", "ChokaQ.Recovery.ProcessingZombieTimeout = 5m", "set only one of them"}},
		{"MaxRetries vs MaxAttempts", source{yaml: "ChokaQ:\n  MaxRetries: 5\n  Retry:\n    MaxAttempts: 4\n"},
			[]string{"ChokaQ.MaxRetries = 5", "ChokaQ.Retry.MaxAttempts = 4"}},
		{"FetchedJobTimeoutSeconds vs FetchedJobTimeout", source{yaml: "ChokaQ:\n  FetchedJobTimeoutSeconds: 60\n  Recovery:\n    FetchedJobTimeout: 00:02:00\n"},
			[]string{"ChokaQ.FetchedJobTimeoutSeconds = 60", "ChokaQ.Recovery.FetchedJobTimeout = 00:02:00"}},
		{"RetryDelaySeconds vs BaseDelay", source{yaml: "ChokaQ:\n  RetryDelaySeconds: 5\n  Retry:\n    BaseDelay: 3s\n"},
			[]string{"ChokaQ.RetryDelaySeconds = 5", "ChokaQ.Retry.BaseDelay = 3s"}},
		{"file alias vs environment", source{
			yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 600\n",
			env:  []string{"CHOKAQ__RECOVERY__PROCESSINGZOMBIETIMEOUT=5m"}},
			[]string{"ChokaQ.ZombieTimeoutSeconds = 600", "ChokaQ.Recovery.ProcessingZombieTimeout = 5m",
				"(environment (CHOKAQ__RECOVERY__PROCESSINGZOMBIETIMEOUT))"}},
		{"file new key vs environment alias", source{
			yaml: "ChokaQ:\n  Retry:\n    MaxAttempts: 4\n",
			env:  []string{"CHOKAQ__MAXRETRIES=6"}},
			[]string{"ChokaQ.MaxRetries = 6 (environment (CHOKAQ__MAXRETRIES))", "ChokaQ.Retry.MaxAttempts = 4"}},
		{"environment changes only one of two agreeing forms", source{
			yaml: "ChokaQ:\n  ZombieTimeoutSeconds: 900\n  Recovery:\n    ProcessingZombieTimeout: 15m\n",
			env:  []string{"CHOKAQ__RECOVERY__PROCESSINGZOMBIETIMEOUT=20m"}},
			[]string{"ChokaQ.ZombieTimeoutSeconds = 900", "ChokaQ.Recovery.ProcessingZombieTimeout = 20m"}},
		{"base file vs environment file", source{
			yaml:  "ChokaQ:\n  MaxRetries: 5\n",
			files: map[string]string{"appsettings.Prod.yaml": "ChokaQ:\n  Retry:\n    MaxAttempts: 6\n"},
			opts:  Options{Environment: "Prod"}},
			[]string{"ChokaQ.MaxRetries = 5", "ChokaQ.Retry.MaxAttempts = 6", "appsettings.Prod.yaml"}},
		{"override vs file", source{
			yaml:      "ChokaQ:\n  RetryDelaySeconds: 5\n",
			overrides: map[string]string{"Retry.BaseDelay": "6s"}},
			[]string{"ChokaQ.RetryDelaySeconds = 5", "ChokaQ.Retry.BaseDelay = 6s (override)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := load(t, tt.src)
			wantInvalid(t, err, tt.want...)
			if tt.src.yaml != "" && !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1m30s", 90 * time.Second},
		{"1.5h", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{" 2s ", 2 * time.Second},
		{"00:01:30", 90 * time.Second},
		{"0:1:30", 90 * time.Second},
		{"01:30", 90 * time.Minute},
		{"1.02:03:04", 26*time.Hour + 3*time.Minute + 4*time.Second},
		{"30.00:00:00", 30 * 24 * time.Hour},
		{"00:00:01.500", 1500 * time.Millisecond},
		{"00:00:00.5", 500 * time.Millisecond},
		{"00:00:00.0000001", 100 * time.Nanosecond},
		{"1.00:00:00.25", 24*time.Hour + 250*time.Millisecond},
		{"-00:00:05", -5 * time.Second},
		{"7d", 7 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"0d", 0},
		{"30d", 30 * 24 * time.Hour},
	}
	for _, tt := range valid {
		if got, ok := parseDuration(tt.in); !ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, ok, tt.want)
		}
	}
	for _, in := range []string{"", "abc", "90", "1:60:00", "24:00:00", "00:00:60", "00:00:01.12345678", "1.2.03:00:00",
		"x.01:00:00", "00:01:02:03", "00::00", "00:00:", "123456789.00:00:00", "106751.00:00:00", "d", "1.5d", "-1d", "1d-1h", "1d+1h", "106751d", "7 d", "1dd"} {
		if got, ok := parseDuration(in); ok {
			t.Errorf("parseDuration(%q) = %v; want a failure", in, got)
		}
	}
}

func TestDurationForms(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		want       func(c *Config)
		wantErr    []string
	}{
		{name: "Go form", yaml: nested("Recovery.ScanInterval", "1m30s"),
			want: func(c *Config) { c.Recovery.ScanInterval = 90 * time.Second }},
		{name: ".NET form", yaml: nested("Recovery.ScanInterval", "00:01:30"),
			want: func(c *Config) { c.Recovery.ScanInterval = 90 * time.Second }},
		{name: ".NET form, quoted", yaml: nested("Recovery.ScanInterval", `"00:01:30"`),
			want: func(c *Config) { c.Recovery.ScanInterval = 90 * time.Second }},
		{name: ".NET form with days", yaml: nested("Execution.DefaultTimeout", "1.02:03:04"),
			want: func(c *Config) { c.Execution.DefaultTimeout = 26*time.Hour + 3*time.Minute + 4*time.Second }},
		{name: ".NET form with a fraction", yaml: nested("Execution.PollInterval", "00:00:01.500"),
			want: func(c *Config) { c.Execution.PollInterval = 1500 * time.Millisecond }},
		{name: "integer for a Seconds alias", yaml: "ChokaQ:\n  FetchedJobTimeoutSeconds: 90\n",
			want: func(c *Config) { c.Recovery.FetchedJobTimeout = 90 * time.Second }},
		{name: "integer string for a Seconds alias", yaml: "ChokaQ:\n  RetryDelaySeconds: \"4\"\n",
			want: func(c *Config) { c.Retry.BaseDelay = 4 * time.Second }},
		{name: "Go form for a Seconds alias", yaml: "ChokaQ:\n  RetryDelaySeconds: 1500ms\n",
			want: func(c *Config) { c.Retry.BaseDelay = 1500 * time.Millisecond }},
		{name: "integer for a queue Seconds key", yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      ZombieTimeoutSeconds: 90\n",
			want: func(c *Config) {
				c.QueueSettings["mail"] = QueueSetting{ZombieTimeout: ptr(time.Duration(90) * time.Second)}
			}},
		{name: "Go form for a queue Seconds key", yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      ExecutionTimeoutSeconds: 1m30s\n",
			want: func(c *Config) {
				c.QueueSettings["mail"] = QueueSetting{ExecutionTimeout: ptr(time.Duration(90) * time.Second)}
			}},
		{name: ".NET form for a queue Seconds key", yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      ZombieTimeoutSeconds: 1.00:00:00\n",
			want: func(c *Config) {
				c.QueueSettings["mail"] = QueueSetting{ZombieTimeout: ptr(time.Duration(86400) * time.Second)}
			}},
		{name: "environment, .NET form", env: []string{"CHOKAQ__EXECUTION__SHUTDOWNTIMEOUT=00:02:00"},
			want: func(c *Config) { c.Execution.ShutdownTimeout = 2 * time.Minute }},
		{name: "environment, integer for a queue Seconds key", env: []string{"CHOKAQ__QUEUESETTINGS__MAIL__ZOMBIETIMEOUTSECONDS=120"},
			want: func(c *Config) {
				c.QueueSettings["mail"] = QueueSetting{ZombieTimeout: ptr(time.Duration(120) * time.Second)}
			}},

		{name: "integer refused for a duration key", yaml: nested("Execution.PollInterval", "90"),
			wantErr: []string{"ChokaQ.Execution.PollInterval = 90", "90s", "00:01:30"}},
		{name: "decimal refused for a duration key", yaml: nested("Retry.MaxDelay", "1.5"),
			wantErr: []string{"ChokaQ.Retry.MaxDelay = 1.5", "90s", "00:01:30"}},
		{name: "integer from the environment refused for a duration key", env: []string{"CHOKAQ__RECOVERY__SCANINTERVAL=30"},
			wantErr: []string{"ChokaQ.Recovery.ScanInterval = 30 (environment (CHOKAQ__RECOVERY__SCANINTERVAL))", "90s", "00:01:30"}},
		{name: "fraction refused for a queue Seconds key", yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      ZombieTimeoutSeconds: 1500ms\n",
			wantErr: []string{"ChokaQ.QueueSettings.mail.ZombieTimeoutSeconds = 1500ms", "must be whole seconds"}},
		// YAML reads 1e3 as a float: still a number of seconds.
		{name: "float for a Seconds alias", yaml: "ChokaQ:\n  FetchedJobTimeoutSeconds: 1e3\n",
			want: func(c *Config) { c.Recovery.FetchedJobTimeout = 1000 * time.Second }},
		{name: "decimal for a Seconds alias", yaml: "ChokaQ:\n  RetryDelaySeconds: 1.5\n",
			want: func(c *Config) { c.Retry.BaseDelay = 1500 * time.Millisecond }},
		{name: "decimal refused for a queue Seconds key", yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      ZombieTimeoutSeconds: 90.5\n",
			wantErr: []string{"ChokaQ.QueueSettings.mail.ZombieTimeoutSeconds = 90.5", "must be whole seconds"}},
		{name: "bad .NET form", yaml: nested("Recovery.ScanInterval", "00:61:00"),
			wantErr: []string{"ChokaQ.Recovery.ScanInterval = 00:61:00", ruleDuration}},
		{name: "not a duration", yaml: nested("Recovery.ScanInterval", "soon"),
			wantErr: []string{"ChokaQ.Recovery.ScanInterval = soon", ruleDuration}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := load(t, source{yaml: tt.yaml, env: tt.env})
			if tt.wantErr != nil {
				wantInvalid(t, err, tt.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(c, want) {
				t.Errorf("got\n%v\nwant\n%v", c, want)
			}
		})
	}
}

func TestEnvironmentFile(t *testing.T) {
	const base = "ChokaQ:\n  Schema: jobs\n  Execution:\n    Concurrency: 5\n"
	prod := map[string]string{"appsettings.Production.yaml": "ChokaQ:\n  Execution:\n    Concurrency: 50\n"}

	t.Run("Options.Environment", func(t *testing.T) {
		c := mustLoad(t, source{yaml: base, files: prod, opts: Options{Environment: "Production"}})
		if c.Environment != "Production" || c.Execution.Concurrency != 50 || c.Schema != "jobs" {
			t.Errorf("got Environment %q, Concurrency %d, Schema %q", c.Environment, c.Execution.Concurrency, c.Schema)
		}
	})
	t.Run("CHOKAQ_ENVIRONMENT", func(t *testing.T) {
		c := mustLoad(t, source{yaml: base, files: prod, env: []string{"CHOKAQ_ENVIRONMENT=Production"}})
		if c.Environment != "Production" || c.Execution.Concurrency != 50 {
			t.Errorf("got Environment %q, Concurrency %d", c.Environment, c.Execution.Concurrency)
		}
	})
	t.Run("Options.Environment beats CHOKAQ_ENVIRONMENT", func(t *testing.T) {
		files := map[string]string{"appsettings.Production.yaml": prod["appsettings.Production.yaml"],
			"appsettings.Staging.yaml": "ChokaQ:\n  Execution:\n    Concurrency: 7\n"}
		c := mustLoad(t, source{yaml: base, files: files, env: []string{"CHOKAQ_ENVIRONMENT=Production"}, opts: Options{Environment: "Staging"}})
		if c.Environment != "Staging" || c.Execution.Concurrency != 7 {
			t.Errorf("got Environment %q, Concurrency %d", c.Environment, c.Execution.Concurrency)
		}
	})
	t.Run("no environment ignores the overlay", func(t *testing.T) {
		c := mustLoad(t, source{yaml: base, files: prod})
		if c.Environment != "" || c.Execution.Concurrency != 5 {
			t.Errorf("got Environment %q, Concurrency %d", c.Environment, c.Execution.Concurrency)
		}
	})
	t.Run("environment file without base file", func(t *testing.T) {
		c := mustLoad(t, source{files: prod, opts: Options{Environment: "Production"}})
		if c.Execution.Concurrency != 50 {
			t.Errorf("Concurrency = %d", c.Execution.Concurrency)
		}
	})
	t.Run("named environment file missing", func(t *testing.T) {
		_, _, err := load(t, source{yaml: base, env: []string{"CHOKAQ_ENVIRONMENT=Staging"}})
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `environment "Staging" (CHOKAQ_ENVIRONMENT)`) ||
			!strings.Contains(err.Error(), "appsettings.Staging.yaml") {
			t.Errorf("err = %v; want a not-exist error naming the environment and file", err)
		}
	})
	t.Run("environment variable wins over the environment file", func(t *testing.T) {
		c := mustLoad(t, source{yaml: base, files: prod, opts: Options{Environment: "Production"},
			env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=9"}})
		if c.Execution.Concurrency != 9 {
			t.Errorf("Concurrency = %d", c.Execution.Concurrency)
		}
	})
	t.Run("syntax error in the environment file", func(t *testing.T) {
		files := map[string]string{"appsettings.Production.yaml": "ChokaQ:\n  Schema: [\n"}
		_, _, err := load(t, source{yaml: base, files: files, opts: Options{Environment: "Production"}})
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "appsettings.Production.yaml") {
			t.Errorf("err = %v; want ErrSyntax naming the environment file", err)
		}
	})
	t.Run("environment name may not leave the directory", func(t *testing.T) {
		_, _, err := load(t, source{yaml: base, env: []string{"CHOKAQ_ENVIRONMENT=../etc"}})
		wantInvalid(t, err, "CHOKAQ_ENVIRONMENT = ../etc", "letters, digits")
	})
	t.Run("explicit file", func(t *testing.T) {
		files := map[string]string{"custom.yaml": base, "custom.Production.yaml": prod["appsettings.Production.yaml"]}
		c := mustLoad(t, source{files: files, opts: Options{File: "custom.yaml", Environment: "Production"}})
		if c.Schema != "jobs" || c.Execution.Concurrency != 50 {
			t.Errorf("got Schema %q, Concurrency %d", c.Schema, c.Execution.Concurrency)
		}
	})
	t.Run("explicit file missing", func(t *testing.T) {
		_, _, err := load(t, source{opts: Options{File: "missing.yaml"}})
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
			t.Errorf("err = %v; want a not-exist error naming the file", err)
		}
	})
	t.Run("no file at all", func(t *testing.T) {
		if c := mustLoad(t, source{}); !reflect.DeepEqual(c, Default()) {
			t.Errorf("got %v, want the defaults", c)
		}
	})
}

func TestLayering(t *testing.T) {
	const file = "ChokaQ:\n  Execution:\n    Concurrency: 5\n    PrefetchSize: 60\n  Queues: [default]\n"
	tests := []loadCase{
		{"file", source{yaml: file},
			func(c *Config) { c.Execution.Concurrency, c.Execution.PrefetchSize = 5, 60 }},
		{"environment overrides file", source{yaml: file, env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=6"}},
			func(c *Config) { c.Execution.Concurrency, c.Execution.PrefetchSize = 6, 60 }},
		{"environment names are case-insensitive", source{yaml: file, env: []string{"ChokaQ__Execution__Concurrency=6"}},
			func(c *Config) { c.Execution.Concurrency, c.Execution.PrefetchSize = 6, 60 }},
		{"later environment variable wins", source{env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=6", "chokaq__execution__concurrency=8"}},
			func(c *Config) { c.Execution.Concurrency = 8 }},
		{"override beats environment", source{yaml: file, env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=6"},
			overrides: map[string]string{"execution.CONCURRENCY": "7"}},
			func(c *Config) { c.Execution.Concurrency, c.Execution.PrefetchSize = 7, 60 }},
		{"override may name the section", source{overrides: map[string]string{"ChokaQ.Execution.Concurrency": "7"}},
			func(c *Config) { c.Execution.Concurrency = 7 }},
		{"connection string from the environment", source{env: []string{"CHOKAQ__CONNECTIONSTRING=Server=db;Database=jobs"}},
			func(c *Config) { c.ConnectionString = "Server=db;Database=jobs" }},
		{"Queues from the environment", source{yaml: file, env: []string{"CHOKAQ__QUEUES=default, mail,reports"}},
			func(c *Config) {
				c.Execution.Concurrency, c.Execution.PrefetchSize = 5, 60
				c.Queues = []string{"default", "mail", "reports"}
			}},
		{"Queues from an override", source{env: []string{"CHOKAQ__QUEUES=a"}, overrides: map[string]string{"Queues": "b,c"}},
			func(c *Config) { c.Queues = []string{"b", "c"} }},
		{"Queues as a YAML string", source{yaml: "ChokaQ:\n  Queues: a, b\n"},
			func(c *Config) { c.Queues = []string{"a", "b"} }},
		{"unrelated and single-underscore variables are ignored", source{env: []string{"PATH=/bin", "CHOKAQ_OTHER=1", "CHOKAQ=1", "=C:=C:\\"}},
			func(c *Config) {}},
		{"bool from the environment", source{env: []string{"CHOKAQ__EXECUTION__CANCELONHEARTBEATFAILURE=True"}},
			func(c *Config) { c.Execution.CancelOnHeartbeatFailure = true }},
		{"float from the environment", source{env: []string{"CHOKAQ__RETRY__BACKOFFMULTIPLIER=1.25"}},
			func(c *Config) { c.Retry.BackoffMultiplier = 1.25 }},
	}
	runLoadCases(t, tests)
}

func TestQueueSettingNames(t *testing.T) {
	const file = "ChokaQ:\n  Queues: [Billing]\n  QueueSettings:\n    MailHigh:\n      Paused: true\n    mail.bulk:\n      MaxWorkers: 1\n"
	tests := []struct {
		name string
		src  source
		want map[string]QueueSetting
	}{
		{"case kept from YAML", source{yaml: file}, map[string]QueueSetting{
			"MailHigh": {Paused: ptr(true)}, "mail.bulk": {MaxWorkers: ptr(1)}}},
		{"environment matches a YAML queue case-insensitively", source{yaml: file,
			env: []string{"CHOKAQ__QUEUESETTINGS__MAILHIGH__MAXWORKERS=2", "CHOKAQ__QUEUESETTINGS__MAIL.BULK__MAXWORKERS=3"}},
			map[string]QueueSetting{"MailHigh": {Paused: ptr(true), MaxWorkers: ptr(2)}, "mail.bulk": {MaxWorkers: ptr(3)}}},
		{"environment matches a queue of the Queues list", source{yaml: file,
			env: []string{"CHOKAQ__QUEUESETTINGS__BILLING__PAUSED=true"}},
			map[string]QueueSetting{"MailHigh": {Paused: ptr(true)}, "mail.bulk": {MaxWorkers: ptr(1)}, "Billing": {Paused: ptr(true)}}},
		{"environment names an unknown queue in lower case", source{
			env: []string{"CHOKAQ__QUEUESETTINGS__REPORTS__MAXWORKERS=4"}},
			map[string]QueueSetting{"reports": {MaxWorkers: ptr(4)}}},
		{"environment queue name containing __", source{
			env: []string{"CHOKAQ__QUEUESETTINGS__A__B__MAXWORKERS=4"}},
			map[string]QueueSetting{"a__b": {MaxWorkers: ptr(4)}}},
		{"override matches YAML, else keeps its case", source{yaml: file,
			overrides: map[string]string{"QueueSettings.MAILHIGH.Paused": "false", "QueueSettings.Reports.MaxWorkers": "1",
				"QueueSettings.mail.bulk.MaxWorkers": "5"}},
			map[string]QueueSetting{"MailHigh": {Paused: ptr(false)}, "mail.bulk": {MaxWorkers: ptr(5)}, "Reports": {MaxWorkers: ptr(1)}}},
		{"environment file uses the base file's spelling", source{yaml: file,
			files: map[string]string{"appsettings.Dev.yaml": "ChokaQ:\n  QueueSettings:\n    mailhigh:\n      ZombieTimeoutSeconds: 120\n"},
			opts:  Options{Environment: "Dev"}},
			map[string]QueueSetting{"MailHigh": {Paused: ptr(true), ZombieTimeout: ptr(time.Duration(120) * time.Second)}, "mail.bulk": {MaxWorkers: ptr(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.src)
			if !reflect.DeepEqual(c.QueueSettings, tt.want) {
				t.Errorf("QueueSettings = %v, want %v", show(c.QueueSettings), show(tt.want))
			}
		})
	}
}

// show renders queue settings with their pointers followed.
func show(m map[string]QueueSetting) string {
	var b strings.Builder
	for name, s := range m {
		b.WriteString(name + ":{")
		for _, f := range []struct {
			n string
			p any
		}{{"Paused", s.Paused}, {"MaxWorkers", s.MaxWorkers}, {"Zombie", s.ZombieTimeout}, {"Exec", s.ExecutionTimeout}} {
			switch p := f.p.(type) {
			case *bool:
				if p != nil {
					b.WriteString(f.n + "=" + map[bool]string{true: "true", false: "false"}[*p] + " ")
				}
			case *time.Duration:
				if p != nil {
					b.WriteString(f.n + "=" + p.String() + " ")
				}
			case *int:
				if p != nil {
					b.WriteString(f.n + "=" + time.Duration(*p).String() + " ")
				}
			}
		}
		b.WriteString("} ")
	}
	return b.String()
}

func TestWrongTypes(t *testing.T) {
	tests := []struct {
		name string
		src  source
		want []string
	}{
		{"int", source{yaml: nested("Execution.Concurrency", "ten")}, []string{"ChokaQ.Execution.Concurrency = ten", ruleInt}},
		{"float for an int", source{yaml: nested("Execution.BatchSize", "2.5")}, []string{"ChokaQ.Execution.BatchSize = 2.5", ruleInt}},
		{"bool", source{yaml: nested("Execution.CancelOnHeartbeatFailure", "maybe")}, []string{"ChokaQ.Execution.CancelOnHeartbeatFailure = maybe", ruleBool}},
		{"YAML 1.1 bool", source{yaml: nested("Execution.CancelOnHeartbeatFailure", "yes")}, []string{"= yes", ruleBool}},
		{"float", source{yaml: nested("Retry.BackoffMultiplier", "fast")}, []string{"ChokaQ.Retry.BackoffMultiplier = fast", ruleFloat}},
		{"timestamp for a string", source{yaml: nested("WorkerId", "2024-01-01")}, []string{"ChokaQ.WorkerId = 2024-01-01 (", ruleTimestamp}},
		{"list for a string", source{yaml: nested("Schema", "[a, b]")}, []string{"ChokaQ.Schema = [a, b]", ruleString}},
		{"list for a duration", source{yaml: nested("Recovery.ScanInterval", "[1s]")}, []string{"ChokaQ.Recovery.ScanInterval = [1s]", ruleDuration}},
		{"nested list for Queues", source{yaml: "ChokaQ:\n  Queues: [[a]]\n"}, []string{"ChokaQ.Queues = [[a]]", ruleQueues}},
		{"queue setting", source{yaml: "ChokaQ:\n  QueueSettings:\n    mail:\n      MaxWorkers: two\n"}, []string{"ChokaQ.QueueSettings.mail.MaxWorkers = two", ruleInt}},
		{"environment", source{env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=ten"}},
			[]string{"ChokaQ.Execution.Concurrency = ten (environment (CHOKAQ__EXECUTION__CONCURRENCY))", ruleInt}},
		{"empty environment value", source{env: []string{"CHOKAQ__EXECUTION__CONCURRENCY="}},
			[]string{"ChokaQ.Execution.Concurrency (environment (CHOKAQ__EXECUTION__CONCURRENCY)): " + ruleInt}},
		{"override", source{overrides: map[string]string{"QueueSettings.mail.Paused": "nope"}},
			[]string{"ChokaQ.QueueSettings.mail.Paused = nope (override)", ruleBool}},
		// A bad value is an error even when a later source replaces it.
		{"overridden bad value", source{yaml: nested("Execution.Concurrency", "ten"), env: []string{"CHOKAQ__EXECUTION__CONCURRENCY=4"}},
			[]string{"ChokaQ.Execution.Concurrency = ten"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := load(t, tt.src)
			e := wantInvalid(t, err, tt.want...)
			if tt.src.yaml != "" && e.Source != path {
				t.Errorf("Source = %q, want %q", e.Source, path)
			}
		})
	}
}

func TestSyntaxError(t *testing.T) {
	// yaml.v3 alone names the line where the enclosing block or flow
	// starts, counted from 0, for every parser error: these cases pin the
	// line a reader has to fix, and the quote shows it to them.
	tests := []struct {
		name, yaml, want string
	}{
		{"unclosed flow sequence", "ChokaQ:\n  Execution:\n    Concurrency: 5\n  Queues: [default\n  Schema: x\n",
			`line 4: did not find expected ',' or ']': "  Queues: [default"`},
		{"unclosed flow sequence on the last line", "ChokaQ:\n  Execution:\n    Concurrency: [1,\n",
			`line 3: did not find expected node content: "    Concurrency: [1,"`},
		{"unclosed flow mapping", "ChokaQ:\n  Schema: x\n  Queues: {a: b\n  Storage: memory\n",
			`line 3: did not find expected ',' or '}': "  Queues: {a: b"`},
		{"bad indentation", "ChokaQ:\n  Execution:\n    Concurrency: 5\n   PrefetchSize: 5\n",
			`line 4: did not find expected key: "   PrefetchSize: 5"`},
		{"outdented sequence", "ChokaQ:\n  Schema: x\n - a\n", `line 3: did not find expected key: " - a"`},
		{"tab", "ChokaQ:\n\tSchema: x\n", `line 2: found character that cannot start any token: "\tSchema: x"`},
		{"unclosed quote", "ChokaQ:\n  Schema: \"abc\n  Storage: memory\n", `line 2: found unexpected end of stream: "  Schema: \"abc"`},
		{"mapping value in a plain scalar", "ChokaQ:\n  Schema: x\n  Storage: a: b\n", `line 3: mapping values are not allowed in this context: "  Storage: a: b"`},
		// Cut after its first line, the valid flow sequence fails with the
		// same problem as the broken one: it must not be blamed.
		{"after a multi-line flow sequence", "ChokaQ:\n  Queues: [a\n    , b]\n  Schema: x\n  Storage: [memory\n",
			`line 5: did not find expected ',' or ']': "  Storage: [memory"`},
		{"duplicate key", "ChokaQ:\n  Schema: a\n  Schema: b\n", "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := load(t, source{yaml: tt.yaml})
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v; want ErrSyntax", err)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("a syntax error also wraps ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), path+": ") {
				t.Errorf("error %q does not name the file", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\ndoes not say %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

// A line of a file that does not parse is quoted, unless it may hold the
// password: the file is broken, so its connection string may be too.
func TestSyntaxErrorHidesASecretLine(t *testing.T) {
	for _, line := range []string{
		`  ConnectionString: "Password=` + secret + `;Server=db`,
		`  ConnectionString: [sqlserver://sa:` + secret + `@db`,
	} {
		_, _, err := load(t, source{yaml: "ChokaQ:\n  Schema: x\n" + line + "\n"})
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 3: ") {
			t.Fatalf("err = %v; want a syntax error at line 3", err)
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "line not shown") {
			t.Errorf("error %q shows the line", err)
		}
	}
}
