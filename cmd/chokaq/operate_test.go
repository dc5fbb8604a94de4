package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// deadLetter moves one job of p to the dead-letter queue at the store's
// current time and returns its ID.
func deadLetter(t *testing.T, s jobs.Store, p jobs.EnqueueParams, reason jobs.FailureReason, details string) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{p.Queue}, Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(ctx, got[0].Ref(), jobs.DeadLetterParams{Reason: reason, Details: details}); err != nil {
		t.Fatal(err)
	}
	return got[0].ID
}

// listIDs runs `dlq list -o json` with flags and returns the IDs it lists.
func listIDs(t *testing.T, s jobs.Store, flags ...string) []int64 {
	t.Helper()
	r := runIn(t, s, "", append([]string{"dlq", "list", "-o", "json"}, flags...)...)
	wantExit(t, r, exitOK)
	var page jobs.JobPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatalf("dlq list %v: %v\n%s", flags, err, r.stdout)
	}
	ids := []int64{}
	for _, j := range page.Jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids
}

// Three dead letters two hours apart, differing in queue, type, error
// details and payload, so that every filter flag leaves some out.
func TestDLQListFilters(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := memstore.NewManualClock(t0)
	s := memstore.New(memstore.WithClock(clock.Now))
	smtp := deadLetter(t, s, jobs.EnqueueParams{Queue: "mail", Type: "mail.send", Payload: []byte(`{"to":"ann"}`)}, jobs.ReasonFatal, "smtp refused")
	clock.Advance(2 * time.Hour)
	digest := deadLetter(t, s, jobs.EnqueueParams{Queue: "mail", Type: "mail.digest", Payload: []byte(`{"to":"bob"}`)}, jobs.ReasonZombie, "template missing")
	clock.Advance(2 * time.Hour)
	card := deadLetter(t, s, jobs.EnqueueParams{Queue: "billing", Type: "invoice.pay", Payload: []byte(`{"invoice":42}`)}, jobs.ReasonFatal, "card declined")
	clock.Advance(time.Hour) // now t0+5h

	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	tests := []struct {
		name  string
		flags []string
		want  []int64
	}{
		{"no filter", nil, []int64{smtp, digest, card}},
		{"type", []string{"--type", "mail.digest"}, []int64{digest}},
		{"from is inclusive", []string{"--from", at(2 * time.Hour)}, []int64{digest, card}},
		{"to is exclusive", []string{"--to", at(2 * time.Hour)}, []int64{smtp}},
		{"from and to", []string{"--from", at(time.Hour), "--to", at(3 * time.Hour)}, []int64{digest}},
		{"from in another zone", []string{"--from", t0.Add(3 * time.Hour).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)}, []int64{card}},
		{"text in the error details", []string{"--text", "declined"}, []int64{card}},
		{"text in the payload", []string{"--text", `"bob"`}, []int64{digest}},
		{"text in the type", []string{"--text", "digest"}, []int64{digest}},
		{"older than", []string{"--older-than", "2h"}, []int64{smtp, digest}},
		{"older than, longer", []string{"--older-than", "4h30m"}, []int64{smtp}},
		{"filters combine", []string{"--queue", "mail", "--text", "smtp"}, []int64{smtp}},
		{"type and queue that never meet", []string{"--queue", "billing", "--type", "mail.send"}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listIDs(t, s, tt.flags...); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("dlq list %v = %v, want %v", tt.flags, got, tt.want)
			}
		})
	}

	bad := []struct {
		flags []string
		want  string
	}{
		{[]string{"--from", "yesterday"}, `--from "yesterday": want RFC 3339`},
		{[]string{"--to", "2026-03-01"}, `--to "2026-03-01": want RFC 3339`},
		{[]string{"--from", at(2 * time.Hour), "--to", at(time.Hour)}, "must be before to"},
		{[]string{"--older-than", "-1h"}, "must not be negative"},
		{[]string{"--older-than", "30"}, "--older-than"},
	}
	for _, b := range bad {
		wantExit(t, runIn(t, s, "", append([]string{"dlq", "list"}, b.flags...)...), exitUsage, b.want)
	}
}

// The flags become exactly the store's filter, IDs included; resurrect and
// purge build theirs the same way as list.
func TestFilterFlagsBuild(t *testing.T) {
	zombie := jobs.ReasonZombie
	tests := []struct {
		flags, ids []string
		want       jobs.Filter
	}{
		{nil, nil, jobs.Filter{}},
		{[]string{"--queue", "mail", "--type", "mail.send"}, nil, jobs.Filter{Queue: "mail", Type: "mail.send"}},
		{[]string{"--reason", "2"}, nil, jobs.Filter{Reason: &zombie}},
		{[]string{"--reason", "zombie"}, []string{"7", "9"}, jobs.Filter{Reason: &zombie, IDs: []int64{7, 9}}},
		{[]string{"--from", "2026-03-01T10:00:00Z", "--to", "2026-03-01T12:30:00+02:00"}, nil,
			jobs.Filter{From: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)}},
		{[]string{"--text", "smtp refused", "--older-than", "720h"}, nil, jobs.Filter{Text: "smtp refused", OlderThan: 720 * time.Hour}},
	}
	for _, tt := range tests {
		var ff filterFlags
		fs := pflag.NewFlagSet("dlq", pflag.ContinueOnError)
		ff.register(fs)
		if err := fs.Parse(tt.flags); err != nil {
			t.Fatal(err)
		}
		got, err := ff.build(tt.ids)
		if err != nil {
			t.Fatalf("%v %v: %v", tt.flags, tt.ids, err)
		}
		// Instants are compared as instants: the zone an operator typed does
		// not matter.
		if !got.From.Equal(tt.want.From) || !got.To.Equal(tt.want.To) {
			t.Fatalf("%v: from %v to %v, want %v and %v", tt.flags, got.From, got.To, tt.want.From, tt.want.To)
		}
		got.From, got.To, tt.want.From, tt.want.To = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("%v %v: filter %+v, want %+v", tt.flags, tt.ids, got, tt.want)
		}
	}
	for _, ids := range [][]string{{"0"}, {"-3"}, {"12a"}} {
		var ff filterFlags
		if _, err := ff.build(ids); !isUsage(err) || !strings.Contains(err.Error(), "job id") {
			t.Fatalf("ids %v: %v", ids, err)
		}
	}
}

func TestDLQResurrect(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	mail := deadLetters(t, s, "mail", 3, jobs.ReasonFatal)
	deadLetters(t, s, "billing", 2, jobs.ReasonZombie)
	dlq := func() int64 {
		n, err := s.CountJobs(ctx, jobs.TableDLQ, jobs.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Every dead letter at once needs --all, like purge.
	wantExit(t, runIn(t, s, "", "dlq", "resurrect"), exitUsage, "refusing to resurrect every dead letter", "--all")

	// By IDs, after the count is typed back; a wrong count moves nothing.
	wantExit(t, runIn(t, s, "3\n", "dlq", "resurrect", itoa(mail[0]), itoa(mail[1])), exitUsage, "resurrect not confirmed", "nothing changed")
	if n := dlq(); n != 5 {
		t.Fatalf("a refused resurrect moved jobs: %d dead letters left", n)
	}
	r := runIn(t, s, "2\n", "dlq", "resurrect", itoa(mail[0]), itoa(mail[1]))
	wantExit(t, r, exitOK, "This will resurrect 2 dead letters. Type 2 to confirm")
	if !strings.Contains(r.stdout, "resurrected 2 dead letters") {
		t.Fatalf("resurrect: %s", r.stdout)
	}
	for _, id := range mail[:2] {
		j, err := s.GetJob(ctx, id)
		if err != nil || j.Table != jobs.TableHot || j.Status != jobs.StatusPending || j.AttemptCount != 0 || string(j.Payload) != `{"to":"x"}` {
			t.Fatalf("job %d after resurrect: %+v %v", id, j, err)
		}
	}
	if j, _ := s.GetJob(ctx, mail[2]); j == nil || j.Table != jobs.TableDLQ {
		t.Fatalf("job %d, not named, was moved: %+v", mail[2], j)
	}

	// A replacement payload from stdin; stdin is taken, so --yes.
	r = runIn(t, s, `{"to":"fixed@example.com"}`, "dlq", "resurrect", "--queue", "billing", "--payload-file", "-", "--yes", "-o", "json")
	wantExit(t, r, exitOK)
	var res struct {
		Operation string `json:"operation"`
		Confirmed int64  `json:"confirmed"`
		Done      int    `json:"done"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Operation != "resurrect" || res.Confirmed != 2 || res.Done != 2 {
		t.Fatalf("resurrect -o json: %v %s", err, r.stdout)
	}
	page, _ := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Queue: "billing"}})
	if len(page.Jobs) != 2 || string(page.Jobs[0].Payload) != `{"to":"fixed@example.com"}` || string(page.Jobs[1].Payload) != `{"to":"fixed@example.com"}` {
		t.Fatalf("billing jobs after resurrect with a payload: %+v", page.Jobs)
	}
	wantExit(t, runIn(t, s, "{broken", "dlq", "resurrect", "--all", "--payload-file", "-", "--yes"), exitUsage, "payload from stdin is not valid JSON")

	wantExit(t, runIn(t, s, "", "dlq", "resurrect", "--all", "--yes"), exitOK)
	if n := dlq(); n != 0 {
		t.Fatalf("%d dead letters left after resurrect --all", n)
	}
}

// A resurrect whose second batch fails says how many jobs it moved, shows
// the progress it made, and moved exactly those.
func TestResurrectThatFailsMidwayReportsWhatItMoved(t *testing.T) {
	mem := memstore.New()
	deadLetters(t, mem, "bulk", 1200, jobs.ReasonFatal)
	r := runIn(t, &bulkFailsAfter{Store: mem, n: 1}, "", "dlq", "resurrect", "--queue", "bulk", "--yes")
	wantExit(t, r, exitRuntime, "resurrect: 500/1200", "resurrect stopped after 500 of 1200 dead letters", "connection reset")
	if strings.Contains(r.stderr, "resurrect: 1000/1200") {
		t.Fatalf("progress past the failure:\n%s", r.stderr)
	}
	ctx := context.Background()
	if n, _ := mem.CountJobs(ctx, jobs.TableDLQ, jobs.Filter{}); n != 700 {
		t.Fatalf("%d dead letters left, want 700", n)
	}
	if n, _ := mem.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 500 {
		t.Fatalf("%d jobs back in the queue, want 500", n)
	}
}

// One job in every state of one queue, on a clock the test holds, so that
// every column of stats has a value of its own.
func TestStatsCountsEveryState(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := memstore.NewManualClock(t0)
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	deadLetter(t, s, jobs.EnqueueParams{Queue: "mail", Type: "t"}, jobs.ReasonFatal, "boom")
	for range 5 {
		s.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "t"})
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 4})
	if err != nil || len(got) != 4 {
		t.Fatalf("claim: %v %v", got, err)
	}
	// got[0] stays Fetched; got[1] and got[2] run; got[3] runs and finishes.
	for _, j := range got[1:] {
		if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, got[3].Ref()); err != nil {
		t.Fatal(err)
	}
	s.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "t", Delay: time.Hour})
	s.Enqueue(ctx, jobs.EnqueueParams{Queue: "other", Type: "t"})
	// The one job left Pending in mail has waited 90s; other's, 30s.
	clock.Advance(60 * time.Second)
	s.Enqueue(ctx, jobs.EnqueueParams{Queue: "other", Type: "t"})
	clock.Advance(30 * time.Second)

	r := runIn(t, s, "", "stats", "-o", "json")
	wantExit(t, r, exitOK)
	var stats []jobs.QueueStats
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil || len(stats) != 2 {
		t.Fatalf("stats -o json: %v\n%s", err, r.stdout)
	}
	want := jobs.QueueStats{Queue: "mail", Pending: 1, Scheduled: 1, Fetched: 1, Processing: 2, Archived: 1, DeadLettered: 1,
		OldestDueAt: t0, Lag: 90 * time.Second}
	if m := stats[0]; m.Queue != want.Queue || m.Pending != want.Pending || m.Scheduled != want.Scheduled || m.Fetched != want.Fetched ||
		m.Processing != want.Processing || m.Archived != want.Archived || m.DeadLettered != want.DeadLettered ||
		m.Lag != want.Lag || !m.OldestDueAt.Equal(want.OldestDueAt) {
		t.Fatalf("mail stats %+v\nwant %+v", m, want)
	}
	if o := stats[1]; o.Queue != "other" || o.Pending != 2 || o.Lag != 90*time.Second {
		t.Fatalf("other stats %+v", o)
	}

	// The table shows the same numbers, in its columns.
	tab := runIn(t, s, "", "stats")
	wantExit(t, tab, exitOK)
	lines := strings.Split(strings.TrimSpace(tab.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("stats table:\n%s", tab.stdout)
	}
	if head, row := strings.Fields(lines[0]), strings.Fields(lines[1]); !reflect.DeepEqual(head,
		[]string{"QUEUE", "PAUSED", "PENDING", "SCHEDULED", "FETCHED", "PROCESSING", "ARCHIVED", "DEAD-LETTERED", "LAG", "WAITING-ON-KEY", "WAITING-ON-SEQUENCE",
			"WAITING-ON-RATE", "RATE-LIMIT", "WINDOW"}) ||
		!reflect.DeepEqual(row, []string{"mail", "false", "1", "1", "1", "2", "1", "1", "1m30s", "0", "0", "0", "none", "-"}) {
		t.Fatalf("stats table:\n%s", tab.stdout)
	}
}

func TestQueuesResumeExecutionTimeoutAndJSON(t *testing.T) {
	s := memstore.New()
	queues := func() []jobs.QueueSettings {
		t.Helper()
		r := runIn(t, s, "", "queues", "list", "-o", "json")
		wantExit(t, r, exitOK)
		var qs []jobs.QueueSettings
		if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil {
			t.Fatalf("queues list -o json: %v\n%s", err, r.stdout)
		}
		return qs
	}
	wantExit(t, runIn(t, s, "", "queues", "pause", "mail"), exitOK)
	if qs := queues(); len(qs) != 1 || qs[0].Name != "mail" || !qs[0].Paused {
		t.Fatalf("after pause: %+v", qs)
	}
	wantExit(t, runIn(t, s, "", "queues", "resume", "mail"), exitOK)
	if qs := queues(); len(qs) != 1 || qs[0].Paused {
		t.Fatalf("after resume: %+v", qs)
	}
	// A resumed queue is claimed from again.
	s.Enqueue(context.Background(), jobs.EnqueueParams{Queue: "mail", Type: "t"})
	if got, err := s.Claim(context.Background(), jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1}); err != nil || len(got) != 1 {
		t.Fatalf("claim after resume: %v %v", got, err)
	}

	set := runIn(t, s, "", "queues", "set", "mail", "--execution-timeout", "10m", "-o", "json")
	wantExit(t, set, exitOK)
	var q jobs.QueueSettings
	if err := json.Unmarshal([]byte(set.stdout), &q); err != nil || q.ExecutionTimeout != 10*time.Minute || q.Paused {
		t.Fatalf("queues set -o json: %v %s", err, set.stdout)
	}
	if qs := queues(); qs[0].ExecutionTimeout != 10*time.Minute || qs[0].ZombieTimeout != 0 || qs[0].MaxWorkers != 0 {
		t.Fatalf("after set --execution-timeout: %+v", qs)
	}
	if list := runIn(t, s, "", "queues", "list"); !strings.Contains(list.stdout, "10m0s") {
		t.Fatalf("queues list:\n%s", list.stdout)
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--execution-timeout", "0"), exitOK)
	if qs := queues(); qs[0].ExecutionTimeout != 0 {
		t.Fatalf("0 did not clear the execution timeout: %+v", qs)
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--execution-timeout", "2.5s"), exitUsage, "--execution-timeout", "whole seconds")
}

func TestShowAndRescueJSON(t *testing.T) {
	clock := memstore.NewManualClock(time.Now())
	s := memstore.New(memstore.WithClock(clock.Now))
	id := deadLetters(t, s, "mail", 1, jobs.ReasonTimeout)[0]
	show := runIn(t, s, "", "dlq", "show", itoa(id), "-o", "json")
	wantExit(t, show, exitOK)
	var j jobs.Job
	if err := json.Unmarshal([]byte(show.stdout), &j); err != nil {
		t.Fatalf("dlq show -o json: %v\n%s", err, show.stdout)
	}
	if j.ID != id || j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonTimeout || j.Queue != "mail" ||
		string(j.Payload) != `{"to":"x"}` || !strings.Contains(j.ErrorDetails, "smtp refused") {
		t.Fatalf("dlq show -o json: %+v", j)
	}

	s.Enqueue(context.Background(), jobs.EnqueueParams{Type: "t"})
	s.Enqueue(context.Background(), jobs.EnqueueParams{Type: "t"})
	s.Claim(context.Background(), jobs.ClaimParams{WorkerID: "gone", Queues: []string{"default"}, Limit: 2})
	clock.Advance(11 * time.Minute)
	r := runIn(t, s, "", "rescue", "-o", "json")
	wantExit(t, r, exitOK)
	var res struct{ Recovered, Zombies, Expired int }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Recovered != 2 || res.Zombies != 0 || res.Expired != 0 {
		t.Fatalf("rescue -o json: %v %s", err, r.stdout)
	}
}

// The built command reads the overlay named by --environment or
// CHOKAQ_ENVIRONMENT, and its sources win in the documented order: flag,
// then CHOKAQ__ variable, then overlay, then appsettings.yaml.
func TestEnvironmentOverlayAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("appsettings.yaml", "ChokaQ:\n  Schema: fromfile\n  Execution:\n    Concurrency: 3\n    BatchSize: 30\n")
	write("appsettings.Prod.yaml", "ChokaQ:\n  Execution:\n    Concurrency: 5\n")
	tests := []struct {
		name        string
		env, args   []string
		environment string
		concurrency int
		batch       int
		schema      string
	}{
		{"file", nil, nil, "", 3, 30, "fromfile"},
		{"--environment", nil, []string{"--environment", "Prod"}, "Prod", 5, 30, "fromfile"},
		{"CHOKAQ_ENVIRONMENT", []string{"CHOKAQ_ENVIRONMENT=Prod"}, nil, "Prod", 5, 30, "fromfile"},
		{"--environment beats CHOKAQ_ENVIRONMENT", []string{"CHOKAQ_ENVIRONMENT=Staging"}, []string{"--environment", "Prod"}, "Prod", 5, 30, "fromfile"},
		{"variable beats the overlay", []string{"CHOKAQ__EXECUTION__CONCURRENCY=7", "CHOKAQ__SCHEMA=fromenv"}, []string{"--environment", "Prod"}, "Prod", 7, 30, "fromenv"},
		{"flag beats the variable", []string{"CHOKAQ__EXECUTION__CONCURRENCY=7", "CHOKAQ__SCHEMA=fromenv"},
			[]string{"--environment", "Prod", "--set", "Execution.Concurrency=9", "--schema", "fromflag"}, "Prod", 9, 30, "fromflag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinaryEnv(t, dir, tt.env, append(tt.args, "config", "show", "-o", "json")...)
			wantExit(t, r, exitOK)
			var out struct {
				Environment string
				ChokaQ      struct {
					Schema    string
					Execution struct {
						Concurrency, BatchSize int
						PollInterval           string // Go's form, not nanoseconds
					}
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("config show -o json: %v\n%s", err, r.stdout)
			}
			c := out.ChokaQ
			if out.Environment != tt.environment || c.Execution.Concurrency != tt.concurrency || c.Execution.BatchSize != tt.batch || c.Schema != tt.schema {
				t.Fatalf("got environment %q, concurrency %d, batch %d, schema %q; want %q, %d, %d, %q",
					out.Environment, c.Execution.Concurrency, c.Execution.BatchSize, c.Schema, tt.environment, tt.concurrency, tt.batch, tt.schema)
			}
			if c.Execution.PollInterval != "500ms" {
				t.Fatalf("PollInterval shown as %q, want 500ms", c.Execution.PollInterval)
			}
		})
	}
	// A named environment without its file, like a --config file that is
	// not there, is a configuration mistake: exit 2, naming the file.
	wantExit(t, runBinaryEnv(t, dir, []string{"CHOKAQ_ENVIRONMENT=Staging"}, "stats"), exitUsage, `environment "Staging" (CHOKAQ_ENVIRONMENT)`, "appsettings.Staging.yaml")
	wantExit(t, runBinaryEnv(t, dir, nil, "--environment", "Staging", "stats"), exitUsage, `environment "Staging"`, "appsettings.Staging.yaml")
	wantExit(t, runBinaryEnv(t, dir, nil, "--config", "nowhere.yaml", "stats"), exitUsage, "nowhere.yaml")
}

// queues set --weight stores the queue's weight (ADR 0032), which queues
// list shows (1 for a queue that sets none); a weight out of 1-1000 is
// refused naming the queue and the value.
func TestQueuesSetWeightAndListShowsIt(t *testing.T) {
	s := memstore.New()
	set := runIn(t, s, "", "queues", "set", "mail", "--weight", "9", "-o", "json")
	wantExit(t, set, exitOK)
	var q jobs.QueueSettings
	if err := json.Unmarshal([]byte(set.stdout), &q); err != nil || q.Weight != 9 {
		t.Fatalf("queues set --weight 9 -o json: %+v, %v\n%s", q, err, set.stdout)
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "audit", "--max-workers", "2"), exitOK)
	list := runIn(t, s, "", "queues", "list")
	wantExit(t, list, exitOK)
	lines := strings.Split(strings.TrimSpace(list.stdout), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "WEIGHT  RATE LIMIT") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), " 1 none") || !strings.HasPrefix(lines[1], "audit") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[2]), " "), " 9 none") || !strings.HasPrefix(lines[2], "mail") {
		t.Fatalf("queues list, want WEIGHT then RATE LIMIT last, audit 1 none and mail 9 none:\n%s", list.stdout)
	}
	for _, bad := range []string{"0", "-1", "1001"} {
		wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--weight", bad), exitUsage, "queue mail", "weight "+bad, "between 1 (the default) and 1000")
	}
	if qs, _ := s.Queues(context.Background()); qs[1].Weight != 9 {
		t.Fatalf("after the refused weights: %+v", qs[1])
	}
}

// queues set --rate-limit stores the queue's rate limit (ADR 0033) and
// none removes it; queues list shows it, stats the open window's use and
// the jobs it holds; a limit out of bounds or not of the form is refused
// naming the queue and the value.
func TestQueuesSetRateLimitAndStatsShowTheWindow(t *testing.T) {
	s := memstore.New()
	set := runIn(t, s, "", "queues", "set", "mail", "--rate-limit", "3/1m", "-o", "json")
	wantExit(t, set, exitOK)
	var q jobs.QueueSettings
	if err := json.Unmarshal([]byte(set.stdout), &q); err != nil || q.RateLimit != (jobs.RateLimit{Count: 3, Window: time.Minute}) {
		t.Fatalf("queues set --rate-limit 3/1m -o json: %+v, %v\n%s", q, err, set.stdout)
	}
	list := runIn(t, s, "", "queues", "list")
	wantExit(t, list, exitOK)
	if lines := strings.Split(strings.TrimSpace(list.stdout), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], "RATE LIMIT") || !strings.HasSuffix(lines[1], " 3/1m") {
		t.Fatalf("queues list, want RATE LIMIT last and mail 3/1m:\n%s", list.stdout)
	}
	for _, bad := range []struct{ value, rule string }{
		{"0/1m", "the count must be between 1 and 1000000"},
		{"-2/1m", "the count must be between 1 and 1000000"},
		{"5/10ms", "the window must be between 100ms and 24h"},
		{"5/48h", "the window must be between 100ms and 24h"},
		{"lots", `must be "N/window"`},
	} {
		wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--rate-limit", bad.value), exitUsage, "queue mail", "rate_limit "+strconv.Quote(bad.value), bad.rule)
	}

	ctx := context.Background()
	for range 5 {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 10}); err != nil || len(got) != 3 {
		t.Fatalf("claim under 3/1m: %d jobs, %v; want 3", len(got), err)
	}
	r := runIn(t, s, "", "stats", "-o", "json")
	wantExit(t, r, exitOK)
	var stats []jobs.QueueStats
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil || len(stats) != 1 {
		t.Fatalf("stats -o json: %v\n%s", err, r.stdout)
	}
	if m := stats[0]; m.WindowUsed != 3 || m.WindowEndsAt.IsZero() || m.WaitingOnRate != 2 {
		t.Fatalf("stats %+v, want the window's 3 used, its end, and 2 waiting on it", m)
	}
	tab := runIn(t, s, "", "stats")
	wantExit(t, tab, exitOK)
	lines := strings.Split(strings.TrimSpace(tab.stdout), "\n")
	until := "until " + stats[0].WindowEndsAt.Local().Format(time.TimeOnly)
	if !strings.HasSuffix(lines[0], "WAITING-ON-RATE  RATE-LIMIT  WINDOW") || !strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), " 2 3/1m 3/3 "+until) {
		t.Fatalf("stats table, want 2 waiting on the rate and the window 3/3 %s:\n%s", until, tab.stdout)
	}

	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--rate-limit", "none"), exitOK)
	if qs, _ := s.Queues(ctx); !qs[0].RateLimit.IsZero() {
		t.Fatalf("after --rate-limit none: %+v", qs[0])
	}
}

// queues set takes the flow-control settings (ADR 0031), --key-limit N=0
// removes one key's own cap, the list shows them, and stats counts the
// jobs they hold back.
func TestQueuesSetFlowControlAndStatsCountWhatItHoldsBack(t *testing.T) {
	s := memstore.New()
	set := runIn(t, s, "", "queues", "set", "mail", "--max-workers-per-key", "1", "--key-limit", "big=3", "--key-limit", "a=b=2",
		"--sequence-on-dead-letter", "HOLD", "-o", "json")
	wantExit(t, set, exitOK)
	var q jobs.QueueSettings
	if err := json.Unmarshal([]byte(set.stdout), &q); err != nil {
		t.Fatalf("queues set -o json: %v\n%s", err, set.stdout)
	}
	if q.MaxWorkersPerKey != 1 || !reflect.DeepEqual(q.KeyLimits, map[string]int{"big": 3, "a=b": 2}) || q.SequenceOnDeadLetter != jobs.SequenceHold {
		t.Fatalf("after set: %+v", q)
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "mail", "--key-limit", "a=b=0"), exitOK)
	list := runIn(t, s, "", "queues", "list")
	wantExit(t, list, exitOK)
	lines := strings.Split(strings.TrimSpace(list.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "PER KEY") || !strings.Contains(lines[0], "KEY LIMITS") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), "1 big=3 hold 1 none") {
		t.Fatalf("queues list:\n%s", list.stdout)
	}

	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--key-limit", "big"}, "want KEY=N"},
		{[]string{"--key-limit", "big=two"}, `the cap "two" is not a whole number`},
		{[]string{"--key-limit", "big=1", "--key-limit", "big=2"}, `key "big" given twice`},
		{[]string{"--key-limit", "big=-1"}, "key_limits.big"},
		{[]string{"--key-limit", "=2"}, "must not be empty"},
		{[]string{"--max-workers-per-key", "-1"}, "max_workers_per_key"},
		{[]string{"--max-workers-per-key", "100001"}, "max_workers_per_key"},
		{[]string{"--sequence-on-dead-letter", "pause"}, "want continue or hold"},
		{[]string{"--sequence-on-dead-letter", ""}, "want continue or hold"},
	} {
		wantExit(t, runIn(t, s, "", append([]string{"queues", "set", "mail"}, tt.flags...)...), exitUsage, tt.want)
	}

	ctx := context.Background()
	for _, p := range []jobs.EnqueueParams{
		{Queue: "mail", Type: "t", ConcurrencyKey: "tenant"}, {Queue: "mail", Type: "t", ConcurrencyKey: "tenant"},
		{Queue: "mail", Type: "t", SequenceKey: "order-7"}, {Queue: "mail", Type: "t", SequenceKey: "order-7"},
	} {
		if _, err := s.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("claim: %v %v", got, err)
	}
	r := runIn(t, s, "", "stats", "-o", "json")
	wantExit(t, r, exitOK)
	var stats []jobs.QueueStats
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil || len(stats) != 1 {
		t.Fatalf("stats -o json: %v\n%s", err, r.stdout)
	}
	if m := stats[0]; m.WaitingOnKey != 1 || m.WaitingOnSequence != 1 || m.Pending != 2 {
		t.Fatalf("stats %+v, want 1 waiting on the key and 1 on the sequence", m)
	}
	tab := runIn(t, s, "", "stats")
	wantExit(t, tab, exitOK)
	if row := strings.Fields(strings.Split(strings.TrimSpace(tab.stdout), "\n")[1]); !reflect.DeepEqual(row[len(row)-5:], []string{"1", "1", "0", "none", "-"}) {
		t.Fatalf("stats table:\n%s", tab.stdout)
	}
}
