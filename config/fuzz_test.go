package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/internal/redact"
)

// FuzzParseDuration: the duration parser (Go's form, Go's form after whole
// days, .NET's form) never panics, agrees with time.ParseDuration on Go's
// form and on what follows the days ("1d12h" is 24h + 12h), and reads the
// days and .NET's forms within time.Duration's range, never wrapping
// around.
func FuzzParseDuration(f *testing.F) {
	for _, seed := range []string{
		"90s", "1m30s", "1.5h", "-2m", "00:01:30", "1.02:03:04", "00:00:01.500", "-00:00:05", "106750.23:59:59.9999999",
		"106751.00:00:00", "99999999.00:00:00", "00:61:00", "24:00:00", "1:2", "1::2", ".1:2:3", "1.:2:3", "00:00:01.12345678",
		"", ":", "9223372036854775807ns", "9223372036854775808ns", " 5s ", "1e3", "\u0660:\u0661",
		"0d", "7d", "1d12h", "106750d", "106751d", "106750d23h59m59s", "106750d48h", "1d-1h", "1d+1h", "+1d", "1.5d", "d", "1dd",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDuration(s)
		if !ok {
			return
		}
		trimmed := strings.TrimSpace(s)
		// No unit of Go's form holds a 'd': one starts the days form.
		if n, rest, ok := strings.Cut(trimmed, "d"); ok && !strings.Contains(trimmed, ":") {
			days, err := strconv.ParseUint(n, 10, 64)
			if err != nil || n[0] == '+' || days > 106750 {
				t.Fatalf("parseDuration(%q) = %v: %q is not a number of days it may accept", s, d, n)
			}
			want := time.Duration(days) * 24 * time.Hour
			if rest != "" {
				r, err := time.ParseDuration(rest)
				if err != nil || r < 0 {
					t.Fatalf("parseDuration(%q) = %v, but after the days time.ParseDuration(%q) = %v, %v", s, d, rest, r, err)
				}
				want += r
			}
			if d != want || d < 0 {
				t.Fatalf("parseDuration(%q) = %v, want %v (wrapped around?)", s, d, want)
			}
			return
		}
		if !strings.Contains(trimmed, ":") {
			if want, err := time.ParseDuration(trimmed); err != nil || want != d {
				t.Fatalf("parseDuration(%q) = %v, time.ParseDuration = %v, %v", s, d, want, err)
			}
			return
		}
		if neg := strings.HasPrefix(trimmed, "-"); neg != (d < 0) && d != 0 {
			t.Fatalf("parseDuration(%q) = %v: the sign is wrong (overflow?)", s, d)
		}
		if d > 106751*24*time.Hour || d < -106751*24*time.Hour {
			t.Fatalf("parseDuration(%q) = %v: beyond .NET's form as documented", s, d)
		}
	})
}

// FuzzLoad: any appsettings.yaml gives a configuration that validates, or
// one clear error (a configuration mistake or a syntax error, on one
// line); it never panics, and never hides a mistake behind defaults.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"ChokaQ:\n  Execution:\n    Concurrency: 4\n",
		"ChokaQ:\n  Execution:\n    Concurrency: [1,\n",
		"ChokaQ:\n  Queues: [default\n  Schema: x\n",
		"ChokaQ:\n  FetchedJobTimeoutSeconds: 1e3\n",
		"ChokaQ:\n  ZombieTimeoutSeconds: 600\n  Recovery:\n    ProcessingZombieTimeout: 5m\n",
		"ChokaQ:\n  QueueSettings:\n    mail:\n      MaxWorkers: 2\n      ZombieTimeoutSeconds: 1.00:00:00\n",
		"ChokaQ:\n  Execution:\n    HeartbeatIntervalMin: 1ns\n    HeartbeatIntervalMax: 1ns\n",
		"ChokaQ:\n  ConnectionString: sqlserver://sa:S3cr3t@db?database=x\n",
		"chokaq:\n  execution:\n    concurrency: 2\n  Execution:\n    Concurrency: 3\n",
		"a: &x {b: 1}\nChokaQ:\n  <<: *x\n",
		"ChokaQ: [1, 2]\n", "ChokaQ:\n", "---\n...\n", "\t", "ChokaQ:\n  Retry:\n    BackoffMultiplier: .nan\n",
		"ChokaQ:\n  WorkerId: 2024-01-02\n", "ChokaQ:\n  Storage: disk\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, baseFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Options{Dir: dir, Env: []string{}})
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Load accepted a configuration that Validate refuses: %v\n%s", verr, content)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrSyntax) && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load error is neither ErrInvalid nor ErrSyntax: %v\n%s", err, content)
		}
		if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
			t.Fatalf("Load error is not one line: %q", msg)
		}
		if msg := err.Error(); redact.DSN(msg) != msg {
			t.Fatalf("Load error shows what may be a password: %v", err)
		}
	})
}
