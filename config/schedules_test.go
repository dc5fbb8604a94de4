package config

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schedule"
)

const schedulesYAML = `ChokaQ:
  Schedules:
    NightlyReport:
      Cron: "30 2 * * *"
      TimeZone: America/New_York
      Type: reports.nightly
      Queue: reports
      Payload:
        Period: day
        Recipients: [ops@example.com, cfo@example.com]
        Nested: {CamelCase: 1, flag: true}
      Priority: 5
      MaxAttempts: 2
      MissedFire: Catch-Up
      CatchUpLimit: 4
    every.ten:
      Cron: "@every 10m"
      Type: cache.refresh
      Payload: '{"scope":"all"}'
      Paused: true
`

// Every key of a schedule, from a file, with the environment overriding
// one of them: the payload mapping keeps its keys' case and its shape,
// the names keep theirs, and a schedule name may contain a dot.
func TestSchedulesFromYAML(t *testing.T) {
	c := mustLoad(t, source{yaml: schedulesYAML, env: []string{"CHOKAQ__SCHEDULES__NIGHTLYREPORT__PAUSED=true"}})
	if len(c.Schedules) != 2 {
		t.Fatalf("schedules %+v", c.Schedules)
	}
	n := c.Schedules["NightlyReport"]
	var payload map[string]any
	if err := json.Unmarshal(n.Job.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	nested, _ := payload["Nested"].(map[string]any)
	if n.Name != "NightlyReport" || n.Cron != "30 2 * * *" || n.TimeZone != "America/New_York" || n.Job.Type != "reports.nightly" ||
		n.Job.Queue != "reports" || n.Job.Priority != 5 || n.Job.MaxAttempts != 2 || n.MissedFire != schedule.CatchUp ||
		n.CatchUpLimit != 4 || !n.Paused || payload["Period"] != "day" || len(payload["Recipients"].([]any)) != 2 || nested["CamelCase"] != 1.0 {
		t.Fatalf("NightlyReport = %+v, payload %s", n, n.Job.Payload)
	}
	e := c.Schedules["every.ten"]
	if e.Name != "every.ten" || e.Cron != "@every 10m" || string(e.Job.Payload) != `{"scope":"all"}` || !e.Paused {
		t.Fatalf("every.ten = %+v", e)
	}
	cc := c.ClientConfig()
	if len(cc.RawSchedules) != 2 || cc.RawSchedules[0].Name != "NightlyReport" {
		t.Fatalf("ClientConfig schedules %+v", cc.RawSchedules)
	}
	if err := schedule.Check(cc.RawSchedules, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// A broken schedule fails the load, naming the key, the value as written
// and what is wrong; an invalid cron expression says what is wrong in it.
func TestScheduleErrorsNameTheKey(t *testing.T) {
	base := func(extra string) string {
		return "ChokaQ:\n  Schedules:\n    nightly:\n      Type: report\n" + extra
	}
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"minute out of range", base("      Cron: \"61 * * * *\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "61 * * * *", "above maximum"}},
		{"too few fields", base("      Cron: \"* * *\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "expected exactly 5 fields"}},
		{"a date that never comes", base("      Cron: \"0 0 30 2 *\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "matches no date"}},
		{"no cron", base(""), []string{"ChokaQ.Schedules.nightly.Cron", "must be set"}},
		{"an empty section", "ChokaQ:\n  Schedules:\n    nightly: {}\n", []string{"ChokaQ.Schedules.nightly.Cron", "must be set"}},
		{"a section left blank", "ChokaQ:\n  Schedules:\n    nightly:\n    other:\n      Cron: \"@daily\"\n      Type: t\n", []string{"ChokaQ.Schedules.nightly.Cron", "must be set"}},
		{"@every 0s", base("      Cron: \"@every 0s\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "@every 0s", "at least 1s"}},
		{"@every -1m", base("      Cron: \"@every -1m\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "at least 1s"}},
		{"@every 1ns", base("      Cron: \"@every 1ns\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "at least 1s"}},
		{"@every 1500ms", base("      Cron: \"@every 1500ms\"\n"), []string{"ChokaQ.Schedules.nightly.Cron", "whole seconds"}},
		{"the host's zone", base("      Cron: \"@daily\"\n      TimeZone: Local\n"), []string{"ChokaQ.Schedules.nightly.TimeZone", "Local", "IANA"}},
		{"no type", "ChokaQ:\n  Schedules:\n    nightly:\n      Cron: \"@daily\"\n", []string{"ChokaQ.Schedules.nightly.Type", "must be set"}},
		{"time zone", base("      Cron: \"@daily\"\n      TimeZone: Mars/Olympus\n"), []string{"ChokaQ.Schedules.nightly.TimeZone", "Mars/Olympus", "IANA"}},
		{"policy", base("      Cron: \"@daily\"\n      MissedFire: later\n"), []string{"ChokaQ.Schedules.nightly.MissedFire", "later", "coalesce, catch-up or skip"}},
		{"payload text", base("      Cron: \"@daily\"\n      Payload: not json\n"), []string{"ChokaQ.Schedules.nightly.Payload", "not json", "must be JSON"}},
		{"queue", base("      Cron: \"@daily\"\n      Queue: bad queue\n"), []string{"ChokaQ.Schedules.nightly.Queue", "bad queue"}},
		{"priority", base("      Cron: \"@daily\"\n      Priority: 5000\n"), []string{"ChokaQ.Schedules.nightly.Priority", "5000"}},
		{"catch-up limit", base("      Cron: \"@daily\"\n      CatchUpLimit: 5000\n"), []string{"ChokaQ.Schedules.nightly.CatchUpLimit", "5000"}},
		{"name", "ChokaQ:\n  Schedules:\n    has space:\n      Cron: \"@daily\"\n      Type: t\n", []string{"ChokaQ.Schedules.has space", "schedule name"}},
		{"unknown key", base("      Cron: \"@daily\"\n      Crn: x\n"), []string{"ChokaQ.Schedules.nightly.Crn", "did you mean ChokaQ.Schedules.nightly.Cron"}},
		{"a value where the section goes", "ChokaQ:\n  Schedules: 5\n", []string{"ChokaQ.Schedules", "section of schedules"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, source{yaml: c.yaml})
			wantInvalid(t, err, c.want...)
		})
	}
}

// An oversized payload is named by its size: the error is one short line,
// not the megabytes the file holds (config show printed a 2 MB line).
func TestAnOversizedPayloadIsNotEchoed(t *testing.T) {
	yaml := "ChokaQ:\n  Schedules:\n    nightly:\n      Cron: \"@daily\"\n      Type: t\n      Payload: '\"" + strings.Repeat("x", 2<<20) + "\"'\n"
	_, _, err := load(t, source{yaml: yaml})
	wantInvalid(t, err, "ChokaQ.Schedules.nightly.Payload", "(2097154 bytes)", "must be at most 1048576 bytes")
	if err != nil && len(err.Error()) > 500 {
		t.Errorf("the error is %d bytes long", len(err.Error()))
	}
}

// A schedule section left empty in a file is still defined when a later
// source fills it in: the error is for a schedule nothing defines.
func TestAnEmptyScheduleSectionFilledByTheEnvironmentLoads(t *testing.T) {
	c := mustLoad(t, source{yaml: "ChokaQ:\n  Schedules:\n    nightly: {}\n",
		env: []string{"CHOKAQ__SCHEDULES__NIGHTLY__CRON=@daily", "CHOKAQ__SCHEDULES__NIGHTLY__TYPE=report"}})
	if n := c.Schedules["nightly"]; n.Cron != "@daily" || n.Job.Type != "report" {
		t.Fatalf("nightly = %+v", n)
	}
}

// Retention keys: days, 0 for forever, a queue's override and "default".
func TestRetentionKeys(t *testing.T) {
	c := mustLoad(t, source{yaml: "ChokaQ:\n  Retention:\n    Archive: 2d\n    DeadLetters: forever\n  QueueSettings:\n    audit:\n      ArchiveRetention: 0\n      DeadLetterRetention: 365d\n"})
	if c.Retention.Archive != 48*time.Hour || c.Retention.DeadLetters != jobs.KeepForever {
		t.Fatalf("Retention = %+v", c.Retention)
	}
	rc := c.RetentionConfig()
	if rc.Archive != 48*time.Hour || rc.DeadLetters != jobs.KeepForever || rc.Validate() != nil {
		t.Fatalf("RetentionConfig = %+v", rc)
	}
	u := c.QueueUpdates()["audit"]
	if *u.ArchiveRetention != jobs.KeepForever || *u.DeadLetterRetention != 365*24*time.Hour {
		t.Fatalf("audit update %+v", u)
	}
	for _, bad := range []struct{ yaml, key, rule string }{
		{"ChokaQ:\n  Retention:\n    Archive: -1d\n", "ChokaQ.Retention.Archive", "to keep forever"},
		{"ChokaQ:\n  Retention:\n    Archive: 500ms\n", "ChokaQ.Retention.Archive", "between 1s"},
		{"ChokaQ:\n  Retention:\n    DeadLetters: soon\n", "ChokaQ.Retention.DeadLetters", "7d"},
		{"ChokaQ:\n  QueueSettings:\n    audit:\n      ArchiveRetention: 1500ms\n", "ChokaQ.QueueSettings.audit.ArchiveRetention", "whole seconds"},
		{"ChokaQ:\n  QueueSettings:\n    audit:\n      DeadLetterRetention: never\n", "ChokaQ.QueueSettings.audit.DeadLetterRetention", "default for Retention's"},
	} {
		_, _, err := load(t, source{yaml: bad.yaml})
		wantInvalid(t, err, bad.key, bad.rule)
	}
}

// config show prints retention and the schedules as a file holds them,
// and what it prints loads back to the same configuration.
func TestShowRetentionAndSchedules(t *testing.T) {
	c := mustLoad(t, source{yaml: schedulesYAML + "  Retention:\n    Archive: 36h\n    DeadLetters: 0\n  QueueSettings:\n    audit:\n      ArchiveRetention: default\n"})
	out := c.String()
	for _, want := range []string{"Retention:", "Archive: 36h", "DeadLetters: forever", "ArchiveRetention: default", "NightlyReport:",
		"Cron: 30 2 * * *", "MissedFire: catch-up", "CatchUpLimit: 4", "every.ten:", "MissedFire: coalesce"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q:\n%s", want, out)
		}
	}
	back := mustLoad(t, source{yaml: out})
	if back.Retention != c.Retention || len(back.Schedules) != 2 ||
		back.Schedules["NightlyReport"].Def().Hash != c.Schedules["NightlyReport"].Def().Hash ||
		back.Schedules["every.ten"].Def().Hash != c.Schedules["every.ten"].Def().Hash {
		t.Fatalf("config show does not load back the same:\n%s", out)
	}
}

// A schedule whose definition changes in the file takes effect when a
// process with the new file starts: from then on its ticks follow the new
// cadence and carry the new payload, and none fires twice. (On a fake
// clock: the Client's scheduler runs on real timers.)
func TestAScheduleChangedInTheFileTakesEffectOnTheNextStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		store := memstore.New() // the bubble's clock
		run := func(cron, payload string, d time.Duration) {
			writeFile(t, dir, baseFile, "ChokaQ:\n  Storage: memory\n  Schedules:\n    report:\n      Cron: \""+cron+"\"\n      Type: report\n      Payload: '"+payload+"'\n")
			c, err := Load(Options{Dir: dir, Env: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			cc := c.ClientConfig()
			cc.Store, cc.DisableProcessor, cc.DisableRescue = store, true, true
			client, err := chokaq.New(context.Background(), cc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(d)
			if err := client.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		begin := time.Now()
		run("@every 1s", `{"v":1}`, 3500*time.Millisecond)
		restart := time.Now()
		run("@every 2s", `{"v":2}`, 6*time.Second) // to 9.5s: ticks at 4, 6 and 8

		page, err := store.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var before, after int
		seen := map[time.Time]bool{}
		for _, j := range page.Jobs {
			if seen[j.ScheduledAt] {
				t.Fatalf("tick %s fired twice", j.ScheduledAt)
			}
			seen[j.ScheduledAt] = true
			switch {
			case j.ScheduledAt.Before(restart) && string(j.Payload) == `{"v":1}`:
				before++
			case j.ScheduledAt.After(restart) && string(j.Payload) == `{"v":2}` && j.ScheduledAt.Sub(begin)%(2*time.Second) == 0:
				after++
			default:
				t.Fatalf("job at %s with %s", j.ScheduledAt.Sub(begin), j.Payload)
			}
		}
		if before != 3 || after != 3 {
			t.Fatalf("%d fires of the first definition, %d of the changed one; want 3 and 3", before, after)
		}
	})
}
