package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

var binary string

// TestMain builds the chokaq binary once; the bad-input and demo tests run
// it as a user would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chokaq-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "chokaq")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build chokaq: " + err.Error())
	}
	code := sqlservertest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// runBinary runs the built command in an empty directory with a clean
// environment (no CHOKAQ variables from the machine).
func runBinary(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	return runBinaryWith(t, dir, stdin, nil, args...)
}

// runBinaryEnv is runBinary with extra environment variables.
func runBinaryEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return runBinaryWith(t, dir, "", env, args...)
}

func runBinaryWith(t *testing.T, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// runIn runs the command in-process on a store the test keeps.
func runIn(t *testing.T, store jobs.Store, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	dir := t.TempDir()
	args = append([]string{"--config-dir", dir}, args...)
	code := runWith(context.Background(), args, strings.NewReader(stdin), &out, &errb, []string{}, func() jobs.Store { return store })
	return result{code, out.String(), errb.String()}
}

func wantExit(t *testing.T, r result, code int, inStderr ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range inStderr {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stderr does not mention %q:\n%s", s, r.stderr)
		}
	}
}

func TestBadInputGivesOneMessageAndTheRightExitCode(t *testing.T) {
	writeSettings := func(t *testing.T, yaml string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "appsettings.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cases := []struct {
		name string
		dir  func(t *testing.T) string
		args []string
		code int
		want []string
	}{
		{"UnknownCommand", nil, []string{"frobnicate"}, exitUsage, []string{`unknown command "frobnicate"`}},
		{"UnknownFlag", nil, []string{"stats", "--bogus"}, exitUsage, []string{"unknown flag: --bogus"}},
		{"MissingArgument", nil, []string{"dlq", "show"}, exitUsage, []string{"accepts 1 arg"}},
		{"BadOutputFormat", nil, []string{"stats", "-o", "xml"}, exitUsage, []string{"--output", "table or json"}},
		// The line is the one to fix, quoted; yaml.v3 alone says "line 3"
		// for the bracket and "line 1" for the indentation.
		{"YAMLSyntaxError", func(t *testing.T) string { return writeSettings(t, "ChokaQ:\n  Execution:\n    Concurrency: [1,\n") },
			[]string{"stats"}, exitUsage, []string{`appsettings.yaml: line 3: did not find expected node content: "    Concurrency: [1,"`}},
		{"YAMLUnclosedBracket", func(t *testing.T) string {
			return writeSettings(t, "ChokaQ:\n  Execution:\n    Concurrency: 5\n  Queues: [default\n  Schema: x\n")
		}, []string{"stats"}, exitUsage, []string{`appsettings.yaml: line 4: did not find expected ',' or ']': "  Queues: [default"`}},
		{"YAMLBadIndentation", func(t *testing.T) string {
			return writeSettings(t, "ChokaQ:\n  Execution:\n    Concurrency: 5\n   PrefetchSize: 5\n")
		}, []string{"stats"}, exitUsage, []string{`appsettings.yaml: line 4: did not find expected key: "   PrefetchSize: 5"`}},
		{"YAMLTab", func(t *testing.T) string { return writeSettings(t, "ChokaQ:\n  Schema: x\n\tStorage: memory\n") },
			[]string{"stats"}, exitUsage, []string{`appsettings.yaml: line 3: found a tab character that violates indentation: "\tStorage: memory"`}},
		{"WrongType", func(t *testing.T) string { return writeSettings(t, "ChokaQ:\n  Execution:\n    Concurrency: ten\n") }, []string{"stats"}, exitUsage, []string{"Concurrency", "ten"}},
		{"ValueOutOfRange", func(t *testing.T) string {
			return writeSettings(t, "ChokaQ:\n  Execution:\n    HeartbeatIntervalMin: 20s\n")
		}, []string{"stats"}, exitUsage, []string{"HeartbeatIntervalMin", "20s"}},
		{"UnknownKeyWithSuggestion", func(t *testing.T) string { return writeSettings(t, "ChokaQ:\n  Execution:\n    Concurency: 4\n") }, []string{"stats"}, exitUsage, []string{"did you mean", "Concurrency"}},
		{"MissingConnectionString", nil, []string{"migrate", "up"}, exitUsage, []string{"needs SQL Server", "CHOKAQ__CONNECTIONSTRING"}},
		{"UnreachableServer", nil, []string{"--connection-string", "sqlserver://sa:Sup3rSecret@127.0.0.1:1?dial+timeout=2&connection+timeout=3", "stats"}, exitRuntime, []string{"cannot reach SQL Server"}},
		{"UnreachableServerADOForm", nil, []string{"--connection-string", "Server=127.0.0.1;Port=1;User Id=sa;Password=Sup3rSecret;Dial Timeout=2;Connection Timeout=3", "stats"},
			exitRuntime, []string{"cannot reach SQL Server at Server=127.0.0.1;Port=1;User Id=sa;Password=xxxxx;"}},
		{"UnreachableServerQuotedPassword", nil, []string{"--connection-string", `Server=127.0.0.1;Port=1;Password="Sup3rSecret;x";Dial Timeout=2`, "stats"},
			exitRuntime, []string{"cannot reach SQL Server at Server=127.0.0.1;Port=1;Password=xxxxx;Dial Timeout=2"}},
		{"InvalidPayload", nil, []string{"enqueue", "--type", "t", "--payload", "{not json"}, exitUsage, []string{"not valid JSON"}},
		{"NegativeDelay", nil, []string{"enqueue", "--type", "t", "--delay", "-5s"}, exitUsage, []string{"delay", "must not be negative"}},
		{"BadReason", nil, []string{"dlq", "list", "--reason", "sleepy"}, exitUsage, []string{"--reason"}},
		{"PurgeWithoutFilter", nil, []string{"dlq", "purge"}, exitUsage, []string{"refusing to purge every dead letter", "--all"}},
		{"MigrateForceBadVersion", nil, []string{"migrate", "force", "latest"}, exitUsage, []string{"VERSION", "non-negative integer"}},
		{"MigrateDownWithoutServer", nil, []string{"migrate", "down"}, exitUsage, []string{"needs SQL Server"}},
		{"RescueLoopWithoutServer", nil, []string{"rescue", "--loop"}, exitUsage, []string{"needs SQL Server"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := ""
			if c.dir != nil {
				dir = c.dir(t)
			}
			r := runBinary(t, dir, "", c.args...)
			wantExit(t, r, c.code, c.want...)
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 && !strings.Contains(r.stderr, "error details") {
				t.Fatalf("want one line of error, got %d:\n%s", n+1, r.stderr)
			}
			if strings.Contains(r.stderr+r.stdout, "Sup3rSecret") {
				t.Fatalf("the password leaked:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

func TestDemoFinishesWithItsSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 15 seconds")
	}
	start := time.Now()
	r := runBinary(t, "", "", "demo")
	wantExit(t, r, exitOK)
	for _, want := range []string{
		"worker-doomed died while running job", "Summary", "processed (archived)", "retried",
		"recovered from Fetched\t", "dead-lettered as Zombie", "dead-lettered as Timeout", "succeeded on attempt 1",
		"cancelled before it ran", "cancelled while running",
		"schedule demo-every-2s (@every 2s)", "2 before its pause", "(2 ticks missed, fired as one on resume)",
		"tenant big (limit 1) ran at most 1 at once", "posted [1 2 3 4 5]",
		"12 jobs at 5/1s: claimed per window [5 5 2], at most 5 in any window",
	} {
		if !strings.Contains(strings.ReplaceAll(r.stdout, "  ", "\t"), strings.TrimSuffix(want, "\t")) {
			t.Fatalf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "zombie rescue: recovered") {
		t.Fatalf("the rescue loop's one-line sweep log is missing:\n%s", r.stderr)
	}
	// Two queues with their own zombie timeouts, and live progress while
	// the jobs settle.
	if !regexp.MustCompile(`enqueued \d+ jobs on \S+ \(zombie timeout 4s, execution timeout 5s\) and \S+ \(zombie timeout 6s\)`).MatchString(r.stdout) {
		t.Fatalf("demo does not say which queues and timeouts it uses:\n%s", r.stdout)
	}
	if n := len(regexp.MustCompile(`(?m)^ *\d+\.\ds  hot +\d+  archived +\d+  dead-lettered \d+  \|  rescue: `).FindAllString(r.stdout, -1)); n < 2 {
		t.Fatalf("%d live progress lines, want several:\n%s", n, r.stdout)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("demo took %v, want under a minute", took)
	}
}

func TestDemoJSONSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 15 seconds")
	}
	r := runBinary(t, "", "", "demo", "-o", "json")
	wantExit(t, r, exitOK)
	var sum demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, r.stdout)
	}
	if sum.DeadZombie != 1 || sum.DeadTimeout != 1 || sum.RecoveredFetched != 2 || sum.Retried < 10 ||
		sum.Processed != int64(sum.Enqueued)-3 || sum.ResurrectedOutcome != "succeeded on attempt 1" ||
		sum.CancelledPending == 0 || sum.CancelledRunning == 0 || sum.CancelLatency <= 0 || sum.CancelLatency > 2*time.Second ||
		sum.Schedule.FiredBeforePause != 2 || sum.Schedule.Missed != 2 || sum.Schedule.Fired != 4 || sum.Schedule.Handled != 4 ||
		sum.Schedule.Paused < 4500*time.Millisecond {
		t.Fatalf("summary %+v", sum)
	}
	// The rate-limited queue: its 12 jobs in windows of 1s, never more than
	// 5 claimed in one.
	if r := sum.Rate; r.Limit != "5/1s" || !reflect.DeepEqual(r.PerWindow, []int{5, 5, 2}) {
		t.Fatalf("rate-limit part %+v, want 5/1s claimed 5, 5, 2 per window", r)
	}
	// The workflow: the report waited on the failed transform and ran
	// last, after its resurrect.
	if w := sum.Workflow; !w.WaitedOnFailed || w.State != "succeeded" || len(w.Ran) != 6 || w.Ran[0] != "import" ||
		w.Ran[5] != "report" || slices.Index(w.Ran, "transform-2 (failed)") < 1 || slices.Index(w.Ran, "transform-2") < slices.Index(w.Ran, "transform-2 (failed)") {
		t.Fatalf("workflow part %+v, want import, the transforms (transform-2 failing), transform-2 again, then the report", w)
	}
}

func TestVersion(t *testing.T) {
	r := runBinary(t, "", "", "version")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "schema version") {
		t.Fatalf("version output: %s", r.stdout)
	}
}

func TestEnqueuePayloadSources(t *testing.T) {
	s := memstore.New()
	r := runIn(t, s, "", "enqueue", "--type", "mail", "--queue", "q1", "--payload", `{"a":1}`, "--priority", "5", "--tag", "x", "--key", "k1")
	wantExit(t, r, exitOK)
	file := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(file, []byte(`{"from":"file"}`), 0o644)
	wantExit(t, runIn(t, s, "", "enqueue", "--type", "mail", "--payload-file", file), exitOK)
	before := time.Now()
	wantExit(t, runIn(t, s, `{"from":"stdin"}`, "enqueue", "--type", "mail", "--payload-file", "-", "--delay", "1h"), exitOK)
	after := time.Now()
	dup := runIn(t, s, "", "enqueue", "--type", "mail", "--queue", "q1", "--key", "k1", "-o", "json")
	wantExit(t, dup, exitOK)
	var res jobs.EnqueueResult
	if err := json.Unmarshal([]byte(dup.stdout), &res); err != nil || !res.Duplicate {
		t.Fatalf("duplicate enqueue: %s %v", dup.stdout, err)
	}
	page, _ := s.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot})
	if len(page.Jobs) != 3 {
		t.Fatalf("%d jobs", len(page.Jobs))
	}
	byPayload := map[string]*jobs.Job{}
	for _, j := range page.Jobs {
		byPayload[string(j.Payload)] = j
	}
	for _, p := range []string{`{"a":1}`, `{"from":"file"}`, `{"from":"stdin"}`} {
		if byPayload[p] == nil {
			t.Fatalf("payload %s missing: %v", p, byPayload)
		}
	}
	// The flags reach the stored job, not only the command line.
	if j := byPayload[`{"a":1}`]; j.Queue != "q1" || j.Priority != 5 || j.IdempotencyKey != "k1" || !slices.Equal(j.Tags, []string{"x"}) ||
		j.CreatedBy != "chokaq-cli" || j.MaxAttempts != 3 || !j.ScheduledAt.Equal(j.CreatedAt) {
		t.Fatalf("enqueued with --queue q1 --priority 5 --tag x --key k1: %+v", j)
	}
	if j := byPayload[`{"from":"file"}`]; j.Queue != jobs.DefaultQueue || j.Priority != 0 || !j.ScheduledAt.Equal(j.CreatedAt) {
		t.Fatalf("enqueued with the defaults: %+v", j)
	}
	if j := byPayload[`{"from":"stdin"}`]; j.Status != jobs.StatusPending || j.ScheduledAt.Before(before.Add(time.Hour)) || j.ScheduledAt.After(after.Add(time.Hour)) {
		t.Fatalf("enqueued with --delay 1h between %v and %v: scheduled at %v, %+v", before, after, j.ScheduledAt, j)
	}
	// A delayed job is counted as scheduled, not due.
	if st, _ := s.QueueStats(context.Background()); len(st) != 2 || st[0].Queue != "default" || st[0].Pending != 1 || st[0].Scheduled != 1 {
		t.Fatalf("stats after enqueue: %+v", st)
	}
	wantExit(t, runIn(t, s, "", "enqueue", "--type", "mail", "--payload-file", "/no/such/file"), exitUsage, "--payload-file")
}

// deadLetters fills a store with n dead letters of queue q.
func deadLetters(t *testing.T, s jobs.Store, q string, n int, reason jobs.FailureReason) []int64 {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for range n {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: q, Type: "mail.send", Payload: []byte(`{"to":"x"}`)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{q}, Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatal(err)
		}
		if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeadLetter(ctx, got[0].Ref(), jobs.DeadLetterParams{Reason: reason, Details: "smtp refused\nstack..."}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got[0].ID)
	}
	return ids
}

func TestDLQCommands(t *testing.T) {
	s := memstore.New()
	fatal := deadLetters(t, s, "mail", 3, jobs.ReasonFatal)
	deadLetters(t, s, "billing", 2, jobs.ReasonZombie)

	list := runIn(t, s, "", "dlq", "list", "--queue", "mail")
	wantExit(t, list, exitOK)
	if strings.Count(list.stdout, "mail.send") != 3 || !strings.Contains(list.stdout, "Fatal") {
		t.Fatalf("list:\n%s", list.stdout)
	}
	var page jobs.JobPage
	js := runIn(t, s, "", "dlq", "list", "--reason", "zombie", "-o", "json")
	if err := json.Unmarshal([]byte(js.stdout), &page); err != nil || len(page.Jobs) != 2 {
		t.Fatalf("json list: %v %s", err, js.stdout)
	}
	show := runIn(t, s, "", "dlq", "show", itoa(fatal[0]))
	wantExit(t, show, exitOK)
	for _, want := range []string{"smtp refused", `{"to":"x"}`, "Fatal (6)", "attempts"} {
		if !strings.Contains(show.stdout, want) {
			t.Fatalf("show lacks %q:\n%s", want, show.stdout)
		}
	}
	wantExit(t, runIn(t, s, "", "dlq", "show", "999999"), exitNotFound, "job 999999 not found")
	wantExit(t, runIn(t, s, "", "dlq", "resurrect", "999999"), exitNotFound, "none of the 1 jobs named is a dead letter")
	wantExit(t, runIn(t, s, "", "dlq", "purge", "--queue", "nowhere", "--yes"), exitNotFound, "no dead letters match")

	// Resurrect by filter with --yes and an edited payload.
	res := runIn(t, s, "", "dlq", "resurrect", "--queue", "billing", "--payload", `{"fixed":true}`, "--yes")
	wantExit(t, res, exitOK)
	if !strings.Contains(res.stdout, "resurrected 2 dead letters") {
		t.Fatalf("resurrect: %s", res.stdout)
	}
	// Purge by IDs after a typed confirmation; a wrong one changes nothing.
	wantExit(t, runIn(t, s, "1\n", "dlq", "purge", itoa(fatal[0]), itoa(fatal[1])), exitUsage, `purge not confirmed (typed "1", not 2); nothing changed`)
	wantExit(t, runIn(t, s, "", "dlq", "purge", itoa(fatal[0]), itoa(fatal[1])), exitUsage, "purge not confirmed (no answer); nothing changed")
	if n, _ := s.CountJobs(context.Background(), jobs.TableDLQ, jobs.Filter{}); n != 3 {
		t.Fatalf("a refused purge removed jobs: %d left", n)
	}
	p := runIn(t, s, "2\n", "dlq", "purge", itoa(fatal[0]), itoa(fatal[1]))
	wantExit(t, p, exitOK, "Type 2 to confirm")
	if !strings.Contains(p.stdout, "purged 2") {
		t.Fatalf("purge: %s", p.stdout)
	}
	wantExit(t, runIn(t, s, "", "dlq", "purge", "--all", "-y"), exitOK)
	if n, _ := s.CountJobs(context.Background(), jobs.TableDLQ, jobs.Filter{}); n != 0 {
		t.Fatalf("%d left after purge --all", n)
	}
	hot, _ := s.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot})
	if len(hot.Jobs) != 2 || string(hot.Jobs[0].Payload) != `{"fixed":true}` || hot.Jobs[0].AttemptCount != 0 {
		t.Fatalf("resurrected jobs %+v", hot.Jobs)
	}
}

func TestBulkShowsProgress(t *testing.T) {
	s := memstore.New()
	deadLetters(t, s, "bulk", 1200, jobs.ReasonFatal)
	r := runIn(t, s, "", "dlq", "purge", "--queue", "bulk", "--yes")
	wantExit(t, r, exitOK, "purge: 500/1200", "purge: 1000/1200", "purge: 1200/1200")
}

func TestQueuesAndStats(t *testing.T) {
	s := memstore.New()
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--max-workers", "3", "--zombie-timeout", "2m"), exitOK)
	wantExit(t, runIn(t, s, "", "queues", "pause", "mail"), exitOK)
	list := runIn(t, s, "", "queues", "list")
	wantExit(t, list, exitOK)
	if !strings.Contains(list.stdout, "mail") || !strings.Contains(list.stdout, "true") || !strings.Contains(list.stdout, "2m0s") {
		t.Fatalf("queues list:\n%s", list.stdout)
	}
	wantExit(t, runIn(t, s, "", "queues", "resume", "mail"), exitOK)
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--zombie-timeout", "1500ms"), exitUsage, "whole seconds")
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--zombie-timeout", "1s"), exitUsage, "zombie_timeout 1s: must be more than 36s")
	wantExit(t, runIn(t, s, "", "queues", "set", "mail"), exitUsage, "nothing to set")
	wantExit(t, runIn(t, s, "", "queues", "set", "bad queue!", "--max-workers", "1"), exitUsage, "queue")
	deadLetters(t, s, "mail", 1, jobs.ReasonFatal)
	s.Enqueue(context.Background(), jobs.EnqueueParams{Queue: "mail", Type: "t"})
	st := runIn(t, s, "", "stats")
	wantExit(t, st, exitOK)
	if !strings.Contains(st.stdout, "DEAD-LETTERED") || !strings.Contains(st.stdout, "mail") {
		t.Fatalf("stats:\n%s", st.stdout)
	}
	var stats []jobs.QueueStats
	js := runIn(t, s, "", "stats", "-o", "json")
	if err := json.Unmarshal([]byte(js.stdout), &stats); err != nil || len(stats) != 1 || stats[0].DeadLettered != 1 || stats[0].Pending != 1 {
		t.Fatalf("stats json %v %s", err, js.stdout)
	}
}

func TestRescueOnce(t *testing.T) {
	clock := memstore.NewManualClock(time.Now())
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"})
	s.Claim(ctx, jobs.ClaimParams{WorkerID: "gone", Queues: []string{"default"}, Limit: 1})
	clock.Advance(11 * time.Minute)
	r := runIn(t, s, "", "rescue")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "recovered 1 abandoned") {
		t.Fatalf("rescue: %s", r.stdout)
	}
	wantExit(t, runIn(t, s, "", "rescue", "--loop"), exitUsage, "needs SQL Server")
}

func TestConfigShowRedactsPassword(t *testing.T) {
	r := runBinary(t, "", "", "--connection-string", "sqlserver://sa:Sup3rSecret@db:1433?database=app", "config", "show")
	wantExit(t, r, exitOK)
	if strings.Contains(r.stdout, "Sup3rSecret") || !strings.Contains(r.stdout, "db:1433") {
		t.Fatalf("config show:\n%s", r.stdout)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestSQLServerMigrateAndOperate runs the SQL Server commands against a
// real server (skipped without one).
func TestSQLServerMigrateAndOperate(t *testing.T) {
	dsn := sqlservertest.DSN(t)
	name := sqlservertest.UniqueName("chokaq_cli")
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })
	cli := func(args ...string) result {
		return runBinary(t, "", "", append([]string{"--connection-string", dsn, "--schema", name}, args...)...)
	}
	wantExit(t, cli("migrate", "status"), exitOK)
	wantExit(t, cli("stats"), exitRuntime, "not migrated")
	wantExit(t, cli("migrate", "up"), exitOK)
	st := cli("migrate", "status", "-o", "json")
	wantExit(t, st, exitOK)
	if !strings.Contains(st.stdout, `"state": "up to date"`) {
		t.Fatalf("status: %s", st.stdout)
	}
	wantExit(t, cli("enqueue", "--type", "t", "--payload", `{"a":1}`), exitOK)
	wantExit(t, cli("queues", "set", "default", "--max-workers", "2"), exitOK)
	wantExit(t, cli("rescue"), exitOK)
	stats := cli("stats")
	wantExit(t, stats, exitOK)
	if !strings.Contains(stats.stdout, "default") {
		t.Fatalf("stats: %s", stats.stdout)
	}
	wantExit(t, cli("migrate", "down"), exitOK)
}

// TestSQLServerRescueLoop runs `rescue --loop` as the standalone
// maintenance process it is meant to be: a job claimed by a worker that
// then vanished goes back to Pending while the loop runs, and Ctrl-C ends
// the loop cleanly (skipped without a server).
func TestSQLServerRescueLoop(t *testing.T) {
	dsn := sqlservertest.DSN(t)
	name := sqlservertest.UniqueName("chokaq_rescue")
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })
	wantExit(t, runBinary(t, "", "", "--connection-string", dsn, "--schema", name, "migrate", "up"), exitOK)

	ctx := context.Background()
	s, err := sqlserver.Open(ctx, dsn, sqlserver.WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t", Payload: []byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "vanished", Queues: []string{jobs.DefaultQueue}, Limit: 1})
	if err != nil || len(claimed) != 1 || claimed[0].Status != jobs.StatusFetched {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	id := claimed[0].ID

	b := startBinary(t, "--connection-string", dsn, "--schema", name,
		"--set", "Recovery.ScanInterval=1s", "--set", "Recovery.FetchedJobTimeout=3s", "rescue", "--loop")
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := s.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Table == jobs.TableHot && j.Status == jobs.StatusPending {
			break
		}
		if b.exited() {
			t.Fatalf("the rescue loop exited: %d", b.wait(t, time.Second))
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %v in %v after 30s of rescue --loop", id, j.Status, j.Table)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, 40*time.Second); code != exitOK {
		t.Fatalf("exit %d after interrupt\nstdout: %s\nstderr: %s", code, b.out, b.err)
	}
	if out := b.out.String(); !strings.Contains(out, "rescue loop stopped after") || !strings.Contains(out, "recovered 1,") {
		t.Fatalf("stdout: %s\nstderr: %s", out, b.err)
	}
}

// TestSQLServerDemo runs `chokaq demo` with the connection string in the
// environment, as make run does with one set: it migrates a schema that
// does not exist yet, then shows the same story as on the in-memory store
// (skipped without a server).
func TestSQLServerDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 15 seconds")
	}
	dsn := sqlservertest.DSN(t)
	name := sqlservertest.UniqueName("chokaq_demo")
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })
	env := []string{"CHOKAQ__CONNECTIONSTRING=" + dsn, "CHOKAQ__SCHEMA=" + name}
	dir := t.TempDir()

	r := runBinaryEnv(t, dir, env, "demo", "-o", "json")
	wantExit(t, r, exitOK, "migrating schema "+name)
	var sum demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, r.stdout)
	}
	if !strings.HasPrefix(sum.Store, "SQL Server (") || sum.Store != "SQL Server ("+redact.DSN(dsn)+")" {
		t.Fatalf("store %q", sum.Store)
	}
	if sum.DeadZombie != 1 || sum.DeadTimeout != 1 || sum.RecoveredFetched != 2 || sum.Retried < 10 ||
		sum.Processed != int64(sum.Enqueued)-3 || sum.ResurrectedOutcome != "succeeded on attempt 1" ||
		sum.CancelledPending == 0 || sum.CancelledRunning == 0 {
		t.Fatalf("summary %+v", sum)
	}
	if took := sum.Took; took > time.Minute {
		t.Fatalf("demo took %v, want under a minute", took)
	}

	// What the demo did is in the database, not only in its report.
	st := runBinaryEnv(t, dir, env, "migrate", "status", "-o", "json")
	wantExit(t, st, exitOK)
	if !strings.Contains(st.stdout, `"state": "up to date"`) {
		t.Fatalf("status: %s", st.stdout)
	}
	js := runBinaryEnv(t, dir, env, "stats", "-o", "json")
	wantExit(t, js, exitOK)
	var stats []jobs.QueueStats
	if err := json.Unmarshal([]byte(js.stdout), &stats); err != nil {
		t.Fatalf("stats: %v\n%s", err, js.stdout)
	}
	var archived, dead int64
	for _, q := range stats {
		archived += q.Archived
		dead += q.DeadLettered
	}
	if archived != sum.Processed || dead != sum.DeadZombie+sum.DeadTimeout-1+2 {
		t.Fatalf("stats %+v after summary %+v", stats, sum)
	}
}

// bulkFailsAfter lets the first n purge or resurrect batches through and
// fails the rest.
type bulkFailsAfter struct {
	jobs.Store
	n int
}

func (b *bulkFailsAfter) pass() error {
	if b.n == 0 {
		return errors.New("connection reset by peer")
	}
	b.n--
	return nil
}

func (b *bulkFailsAfter) Purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	if err := b.pass(); err != nil {
		return 0, err
	}
	return b.Store.Purge(ctx, p)
}

func (b *bulkFailsAfter) Resurrect(ctx context.Context, p jobs.ResurrectParams) (int, error) {
	if err := b.pass(); err != nil {
		return 0, err
	}
	return b.Store.Resurrect(ctx, p)
}

// TestBulkThatFailsMidwayReportsWhatItMoved: a purge whose second batch
// fails says exactly how many jobs it removed, and those are all it removed.
func TestBulkThatFailsMidwayReportsWhatItMoved(t *testing.T) {
	mem := memstore.New()
	deadLetters(t, mem, "bulk", 1200, jobs.ReasonFatal)
	r := runIn(t, &bulkFailsAfter{Store: mem, n: 1}, "", "dlq", "purge", "--all", "--yes")
	wantExit(t, r, exitRuntime, "purge stopped after 500 of 1200 dead letters", "connection reset")
	if n, _ := mem.CountJobs(context.Background(), jobs.TableDLQ, jobs.Filter{}); n != 700 {
		t.Fatalf("%d dead letters left, want 700", n)
	}
}

// A mistyped subcommand is a usage error at every level of the tree, as
// it is at the top: exit 2, "unknown command", and the near miss when
// there is one; nothing runs and help is not printed as if all were well.
func TestAMistypedSubcommandExits2AtEveryLevel(t *testing.T) {
	for _, c := range []struct{ args, suggestion string }{
		{"dlq resurect 5", `did you mean "resurrect"?`},
		{"jobs cancle 5", `did you mean "cancel"?`},
		{"schedules pasue x", `did you mean "pause"?`},
		{"migrate upp", `did you mean "up"?`},
		{"config bogus", ""},
		{"queues pase mail", `did you mean "pause"?`},
		{"bogus", ""},
		{"stat", `did you mean "stats"?`},
	} {
		r := runEnv(t, nil, strings.Fields(c.args)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "unknown command") || !strings.Contains(r.stderr, c.suggestion) || r.stdout != "" {
			t.Errorf("chokaq %s: exit %d, want %d with unknown command and %q\nstdout: %s\nstderr: %s", c.args, r.code, exitUsage, c.suggestion, r.stdout, r.stderr)
		}
	}
	// Every command that groups others, whatever is added later.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		r := runEnv(t, nil, append(path, "no-such-command")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `unknown command "no-such-command"`) {
			t.Errorf("%s no-such-command: exit %d, want %d\nstderr: %s", c.CommandPath(), r.code, exitUsage, r.stderr)
		}
		if r := runEnv(t, nil, path...); r.code != exitOK || !strings.Contains(r.stdout, "Available Commands") {
			t.Errorf("%s alone: exit %d, want its help and 0\nstderr: %s", c.CommandPath(), r.code, r.stderr)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCommand())
}

// config show prints a queue's flow-control keys as the file writes them,
// and a bad one is refused naming the key and the value (exit 2).
func TestConfigShowsFlowControlKeys(t *testing.T) {
	dir := t.TempDir()
	yaml := "ChokaQ:\n  QueueSettings:\n    mail:\n      MaxWorkersPerKey: 2\n      KeyLimits:\n        Tenant-A: 5\n      SequenceOnDeadLetter: hold\n"
	if err := os.WriteFile(filepath.Join(dir, "appsettings.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "config", "show")
	wantExit(t, r, exitOK)
	for _, want := range []string{"      MaxWorkersPerKey: 2\n", "      KeyLimits:\n        Tenant-A: 5\n", "      SequenceOnDeadLetter: hold\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("config show lacks %q:\n%s", want, r.stdout)
		}
	}
	wantExit(t, runBinary(t, dir, "", "--set", "QueueSettings.mail.KeyLimits.Tenant-A=-1", "config", "show"), exitUsage,
		"ChokaQ.QueueSettings.mail.KeyLimits.Tenant-A = -1")
	wantExit(t, runBinary(t, dir, "", "--set", "QueueSettings.mail.SequenceOnDeadLetter=later", "config", "show"), exitUsage,
		"ChokaQ.QueueSettings.mail.SequenceOnDeadLetter = later", "must be continue or hold")
}

// config show prints a queue's rate limit as the file writes it, and one
// out of bounds is refused naming the key and the value (exit 2).
func TestConfigShowsTheRateLimit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "appsettings.yaml"), []byte("ChokaQ:\n  QueueSettings:\n    partner:\n      RateLimit: 100/60s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "config", "show")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "    partner:\n      RateLimit: 100/1m\n") {
		t.Fatalf("config show lacks RateLimit: 100/1m:\n%s", r.stdout)
	}
	wantExit(t, runBinary(t, dir, "", "--set", "QueueSettings.partner.RateLimit=100/48h", "config", "show"), exitUsage,
		"ChokaQ.QueueSettings.partner.RateLimit = 100/48h", "the window must be between 100ms and 24h")
}
