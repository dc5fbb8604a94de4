package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/internal/redact/redacttest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// runEnv runs the command in-process with env as its whole environment.
func runEnv(t testing.TB, env []string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWith(context.Background(), args, strings.NewReader(""), &out, &errb, env, func() jobs.Store { return memstore.New() })
	return result{code, out.String(), errb.String()}
}

// The security review's connection strings: each printed all or part of its
// password from `stats`, `migrate status` or `dlq list`. Port 1 on loopback
// refuses at once, so the well-formed ones fail fast as unreachable (exit 1)
// and the malformed ones as bad input (exit 2).
func TestNoPasswordInAnyOutput(t *testing.T) {
	cases := []struct {
		dsn  string
		code int
	}{
		{"sqlserver://sa:S3cr3t@bad host name:1?database=app", exitUsage},
		{"sqlserver://sa:S3cr3t@[::1:1", exitUsage},
		{"sqlserver://sa:S3cr3t%zz@127.0.0.1:1", exitUsage},
		{"sqlserver://sa:S3cr3t@127.0.0.1:1?database=app&encrypt=maybe", exitUsage},
		{"server=127.0.0.1,1;user id=sa;password={S3cr3t;TAILSECRET};database=app", exitRuntime},
		{`server=127.0.0.1,1;user id=sa;Password="S3cr3t;""TAILSECRET";database=app`, exitRuntime},
		{"server=127.0.0.1,1;user id=sa;Password={;00000}", exitRuntime},
		{"odbc:server=127.0.0.1,1;uid=sa;pwd={S3cr3t;}}TAILSECRET}", exitRuntime},
		{"sqlserver://sa:S3cr3t@127.0.0.1:1?database=app", exitRuntime},
		// A '#' in the password: the driver took a piece of it for the host
		// or the port, resolved it and printed it.
		{"sqlserver://sa:P@ssw0rd#1@127.0.0.1:1?database=app", exitUsage},
		{"sqlserver://sa:20261202#@127.0.0.1:1", exitUsage},
	}
	for _, c := range cases {
		for _, args := range [][]string{{"stats"}, {"migrate", "status"}, {"dlq", "list"}, {"config", "show"}, {"config", "show", "-o", "json"}} {
			r := runEnv(t, []string{"CHOKAQ__CONNECTIONSTRING=" + c.dsn}, append([]string{"--config-dir", t.TempDir()}, args...)...)
			for _, secret := range []string{"S3cr3t", "TAILSECRET", "00000", "ssw0rd", "20261202"} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("%v with %q shows %q:\nstdout: %s\nstderr: %s", args, c.dsn, secret, r.stdout, r.stderr)
				}
			}
			want := c.code
			if args[0] == "config" {
				want = exitOK
			}
			if r.code != want {
				t.Errorf("%v with %q: exit %d, want %d\nstderr: %s", args, c.dsn, r.code, want, r.stderr)
			}
		}
	}
}

// No command dials or resolves a connection string before checking it: a
// password holding '#' or '?', unescaped, would make the driver connect to
// the trap (and, with a host name, resolve a piece of the password). Each
// command refuses it with exit 2 and a message that says to percent-encode
// and shows no part of the password.
func TestNoCommandDialsAConnectionStringItRefuses(t *testing.T) {
	dsns, dials := redacttest.Trap(t)
	commands := [][]string{
		{"stats"}, {"migrate", "up"}, {"migrate", "down"}, {"migrate", "status"}, {"migrate", "force", "1"},
		{"dlq", "list"}, {"dlq", "show", "1"}, {"dlq", "resurrect", "1", "--yes"}, {"dlq", "purge", "1", "--yes"},
		{"jobs", "list"}, {"jobs", "show", "1"}, {"jobs", "cancel", "1"},
		{"workflows", "list"}, {"workflows", "show", "1"}, {"workflows", "cancel", "1"},
		{"queues", "list"}, {"queues", "pause", "mail"}, {"queues", "resume", "mail"}, {"queues", "set", "mail", "--max-workers", "2"},
		{"schedules", "list"}, {"schedules", "show", "s"}, {"schedules", "pause", "s"}, {"schedules", "trigger", "s"},
		{"enqueue", "--type", "t"}, {"rescue"}, {"rescue", "--loop"},
		{"dashboard", "--addr", "127.0.0.1:0"}, {"dashboard", "--addr", "127.0.0.1:0", "--demo"},
		{"serve-metrics", "--addr", "127.0.0.1:0"}, {"demo"},
	}
	for _, dsn := range dsns {
		for _, args := range commands {
			r := runEnv(t, []string{"CHOKAQ__CONNECTIONSTRING=" + dsn}, append([]string{"--config-dir", t.TempDir()}, args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "percent-encode") || strings.Contains(r.stdout+r.stderr, "Tr4pS3cret") {
				t.Errorf("%v: exit %d, want %d with a message saying to percent-encode and no password\nstdout: %s\nstderr: %s", args, r.code, exitUsage, r.stdout, r.stderr)
			}
		}
	}
	if n := dials(); n != 0 {
		t.Errorf("the trap was dialled %d times", n)
	}
}

// FuzzCommandNeverPrintsPassword plants a password in every connection
// string form and runs `chokaq stats` with it: whatever the command prints,
// on stdout or stderr, shows no piece of the password.
func FuzzCommandNeverPrintsPassword(f *testing.F) {
	for _, seed := range []string{"S3cr3t", "S3cr3t;TAILSECRET", `S3cr3t;"TAILSECRET`, "{;00000}", "p@ss:w/rd?x", "S3cr3t%zz", "ab&cdef=ghij", "P@ssw0rd#1", "20261202#"} {
		f.Add(seed)
	}
	template := func(args ...string) []string {
		var out []string
		for _, dsn := range redacttest.Forms("PLACEHOLDER") {
			r := runEnv(f, []string{"CHOKAQ__CONNECTIONSTRING=" + dsn}, args...)
			out = append(out, r.stdout+r.stderr)
		}
		return out
	}
	dir := f.TempDir()
	stats := template("--config-dir", dir, "stats")
	f.Fuzz(func(t *testing.T, password string) {
		if strings.ContainsAny(password, "\x00\r\n") {
			t.Skip()
		}
		for i, dsn := range redacttest.Forms(password) {
			r := runEnv(t, []string{"CHOKAQ__CONNECTIONSTRING=" + dsn}, "--config-dir", dir, "stats")
			if got := redacttest.Leaks(r.stdout+r.stderr, stats[i], password); len(got) > 0 {
				t.Fatalf("stats with %q shows %q:\nstdout: %s\nstderr: %s", dsn, got, r.stdout, r.stderr)
			}
		}
	})
}
