package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schedule"
)

// schedules list, show, pause, resume, trigger and delete act on the
// store's schedules; an unknown name exits 3, a malformed one 2.
func TestSchedulesCommands(t *testing.T) {
	ctx := context.Background()
	clock := memstore.NewManualClock(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock.Now))
	sc, err := schedule.New(s, schedule.Config{Schedules: []schedule.Schedule{
		{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Job: schedule.Job{Type: "report.build", Queue: "reports", Payload: json.RawMessage(`{"period":"day"}`)}},
		{Name: "often", Cron: "@every 10m", MissedFire: schedule.CatchUp, Job: schedule.Job{Type: "cache.refresh"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
	if _, err := sc.Round(ctx); err != nil { // often fires its 10:10 tick
		t.Fatal(err)
	}

	r := runIn(t, s, "", "schedules", "list")
	wantExit(t, r, exitOK)
	for _, want := range []string{"NEXT FIRE (UTC)", "nightly", "0 2 * * *", "Europe/Berlin", "2026-12-08T01:00:00Z", "never",
		"often", "catch-up (up to 10)", "2026-12-07T10:20:00Z", "2026-12-07T10:10:00Z"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("schedules list lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runIn(t, s, "", "schedules", "show", "NIGHTLY", "-o", "json")
	wantExit(t, r, exitOK)
	var shown scheduleState
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Name != "nightly" || shown.Definition.Job.Queue != "reports" || strings.Join(strings.Fields(string(shown.Definition.Job.Payload)), "") != `{"period":"day"}` ||
		shown.NextFire == nil || !shown.NextFire.Equal(time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)) || shown.LastFiredAt != nil {
		t.Fatalf("schedules show -o json: %+v", shown)
	}

	wantExit(t, runIn(t, s, "", "schedules", "pause", "nightly"), exitOK)
	if st, _ := schedule.Find(ctx, s, "nightly"); !st.Paused {
		t.Fatal("pause did not pause")
	}
	r = runIn(t, s, "", "schedules", "show", "nightly")
	if !strings.Contains(r.stdout, "next fire                      paused") {
		t.Fatalf("a paused schedule's next fire:\n%s", r.stdout)
	}
	wantExit(t, runIn(t, s, "", "schedules", "resume", "nightly"), exitOK)
	if st, _ := schedule.Find(ctx, s, "nightly"); st.Paused {
		t.Fatal("resume did not resume")
	}

	r = runIn(t, s, "", "schedules", "trigger", "nightly")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "enqueued job") {
		t.Fatalf("trigger said %q", r.stdout)
	}
	page, _ := s.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Type: "report.build"}})
	if len(page.Jobs) != 1 || page.Jobs[0].Queue != "reports" || page.Jobs[0].Tags[0] != schedule.TriggerTag {
		t.Fatalf("triggered jobs %+v", page.Jobs)
	}

	// Overdue: the clock moved past the next tick and nobody fired it.
	clock.Advance(time.Hour)
	if r = runIn(t, s, "", "schedules", "show", "often"); !strings.Contains(r.stdout, "overdue") {
		t.Fatalf("an overdue tick is not marked:\n%s", r.stdout)
	}

	for _, cmd := range []string{"show", "pause", "resume", "trigger", "delete"} {
		wantExit(t, runIn(t, s, "", "schedules", cmd, "nope"), exitNotFound, `schedule not found: "nope"`)
		wantExit(t, runIn(t, s, "", "schedules", cmd, "bad name"), exitUsage, "bad name")
	}
	wantExit(t, runIn(t, s, "", "schedules", "delete", "often"), exitOK)
	if all, _ := s.Schedules(ctx); len(all) != 1 {
		t.Fatalf("after delete: %+v", all)
	}
	wantExit(t, runIn(t, s, "", "schedules", "list", "extra"), exitUsage)
}

// On the in-memory store the command shows the file's schedules as they
// would start, and refuses a broken one with its key.
func TestSchedulesFromTheFile(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "appsettings.yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ChokaQ:\n  Storage: memory\n  Schedules:\n    digest:\n      Cron: \"@hourly\"\n      Type: mail.digest\n")
	r := runBinary(t, dir, "", "schedules", "list")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "digest") || !strings.Contains(r.stdout, "mail.digest") {
		t.Fatalf("schedules list on memory:\n%s", r.stdout)
	}
	write("ChokaQ:\n  Storage: memory\n  Schedules:\n    digest:\n      Cron: \"0 24 * * *\"\n      Type: mail.digest\n")
	wantExit(t, runBinary(t, dir, "", "schedules", "list"), exitUsage, "ChokaQ.Schedules.digest.Cron", "0 24 * * *")
}

// queues set takes the two retentions, and queues list shows them.
func TestQueueRetentionFlags(t *testing.T) {
	s := memstore.New()
	r := runIn(t, s, "", "queues", "set", "audit", "--archive-retention", "3d", "--dead-letter-retention", "forever")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "3d") || !strings.Contains(r.stdout, "forever") {
		t.Fatalf("queues set:\n%s", r.stdout)
	}
	qs, _ := s.Queues(context.Background())
	if qs[0].ArchiveRetention != 72*time.Hour || qs[0].DeadLetterRetention != jobs.KeepForever {
		t.Fatalf("stored %+v", qs[0])
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "audit", "--archive-retention", "default"), exitOK)
	if qs, _ = s.Queues(context.Background()); qs[0].ArchiveRetention != 0 {
		t.Fatalf("default did not clear: %+v", qs[0])
	}
	wantExit(t, runIn(t, s, "", "queues", "set", "audit", "--archive-retention", "soon"), exitUsage, "--archive-retention")
	wantExit(t, runIn(t, s, "", "queues", "set", "audit", "--archive-retention", "500ms"), exitUsage, "archive_retention")
	r = runIn(t, s, "", "queues", "list")
	if !strings.Contains(r.stdout, "ARCHIVE RETENTION") || !strings.Contains(r.stdout, "default") {
		t.Fatalf("queues list:\n%s", r.stdout)
	}
}
