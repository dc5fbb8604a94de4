package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// TestDoctorNeedsSQLServer: on the in-memory store there is nothing to
// check; the command says it needs SQL Server and exits 2.
func TestDoctorNeedsSQLServer(t *testing.T) {
	r := runIn(t, memstore.New(), "", "doctor")
	wantExit(t, r, exitUsage, "needs SQL Server")
	wantExit(t, runIn(t, memstore.New(), "", "doctor", "--timeout", "0s", "--connection-string", "sqlserver://u:p@127.0.0.1:1"), exitUsage, "--timeout")
	wantExit(t, runIn(t, memstore.New(), "", "doctor", "extra"), exitUsage)
	wantExit(t, runIn(t, memstore.New(), "", "doctor", "-o", "xml"), exitUsage, "--output")
}

// TestDoctorOnAnUnreachableServerFailsWithoutItsPassword: exit 1, and the
// password never shows.
func TestDoctorOnAnUnreachableServerFailsWithoutItsPassword(t *testing.T) {
	r := runIn(t, memstore.New(), "", "doctor", "--connection-string", "sqlserver://svc:Hunter2-secret@127.0.0.1:1?database=app", "--timeout", "5s")
	wantExit(t, r, exitRuntime, "cannot reach SQL Server")
	if strings.Contains(r.stdout+r.stderr, "Hunter2-secret") {
		t.Fatalf("the password reached the output:\n%s\n%s", r.stdout, r.stderr)
	}
}

func sampleReport() *sqlserver.DoctorReport {
	return &sqlserver.DoctorReport{Schema: "chokaq", Checks: []sqlserver.DoctorCheck{
		{Name: "engine", Status: sqlserver.CheckOK, Detail: "Developer Edition, version 16.0"},
		{Name: "least privilege", Status: sqlserver.CheckWarning, Detail: "a member of db_owner", Remedy: "run the service with a login whose user holds only [chokaq_app]"},
		{Name: "table JobsHot", Status: sqlserver.CheckFailed, ErrorNumber: 229, Detail: "INSERT: denied for sqlserver://svc:Hunter2-secret@db",
			Remedy: "ALTER ROLE [chokaq_app] ADD MEMBER [svc]"},
	}, NotExercised: []sqlserver.NotExercised{{Statements: "rescue phases 1, 2 and 3", Reason: "not queue-scoped"}}}
}

// TestDoctorPrintsATableOrJSON: the table has every check, a remedy under
// each one that is not ok, the error number and what was not exercised;
// JSON has the same and the overall status; neither shows a password.
func TestDoctorPrintsATableOrJSON(t *testing.T) {
	for _, output := range []string{"table", "json"} {
		var out bytes.Buffer
		a := &app{stdout: &out, output: output, connectionString: "sqlserver://svc:Hunter2-secret@db"}
		if err := a.printDoctor(sampleReport()); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if strings.Contains(text, "Hunter2-secret") {
			t.Fatalf("%s: the password reached the output:\n%s", output, text)
		}
		wants := []string{"engine", "least privilege", "table JobsHot", "ALTER ROLE [chokaq_app] ADD MEMBER [svc]", "229", "rescue phases 1, 2 and 3"}
		if output == "table" {
			wants = append(wants, "STATUS", "-> run the service with a login", "(error 229)", "Result: failed")
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%s output lacks %q:\n%s", output, want, text)
			}
		}
		if output == "json" {
			var got struct {
				Status string `json:"status"`
				Checks []struct {
					Name, Status string
					ErrorNumber  int32 `json:"error_number"`
				} `json:"checks"`
				NotExercised []struct{ Statements, Reason string } `json:"not_exercised"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("json: %v\n%s", err, text)
			}
			if got.Status != "failed" || len(got.Checks) != 3 || got.Checks[1].Status != "warning" || got.Checks[2].ErrorNumber != 229 || len(got.NotExercised) != 1 {
				t.Fatalf("json: %+v", got)
			}
		}
	}
}

// TestDoctorExitsByTheWorstCheck: 0 when all is ok, 3 with warnings only,
// 1 when a check failed.
func TestDoctorExitsByTheWorstCheck(t *testing.T) {
	r := sampleReport()
	code := func(r *sqlserver.DoctorReport) int {
		a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		return a.exitCode(doctorVerdict(r))
	}
	if got := code(r); got != exitRuntime {
		t.Errorf("with a failed check: exit %d", got)
	}
	r.Checks = r.Checks[:2]
	if got := code(r); got != exitWarnings {
		t.Errorf("with a warning: exit %d", got)
	}
	r.Checks = r.Checks[:1]
	if got := code(r); got != exitOK {
		t.Errorf("all ok: exit %d", got)
	}
}

// TestSQLServerDoctorCommand runs `chokaq doctor` as the server's own
// login on a fresh schema: everything passes but the warning that this
// login has more rights than a service needs (exit 3). Skipped without a
// server.
func TestSQLServerDoctorCommand(t *testing.T) {
	dsn := sqlservertest.DSN(t)
	name := sqlservertest.UniqueName("chokaq_doctor")
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })
	cli := func(args ...string) result {
		return runBinary(t, "", "", append([]string{"--connection-string", dsn, "--schema", name}, args...)...)
	}
	wantExit(t, cli("doctor"), exitRuntime, "checks failed")
	wantExit(t, cli("migrate", "up"), exitOK)
	r := cli("doctor", "-o", "json")
	var got struct {
		Checks []sqlserver.DoctorCheck `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("doctor -o json: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	for _, c := range got.Checks {
		if c.Status != sqlserver.CheckOK && c.Name != "least privilege" && !(c.Name == "engine" && strings.Contains(c.Detail, "Express")) {
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	wantExit(t, r, exitWarnings)
}

// failingQueues is a store whose Queues fails.
type failingQueues struct{ *memstore.Store }

func (failingQueues) Queues(context.Context) ([]jobs.QueueSettings, error) {
	return nil, errors.New("sqlserver: queues: connection reset")
}

// TestDoctorHoldsTheConfigurationToTheQueuesSettings: a zombie timeout an
// operator stored on a queue that this configuration's heartbeats would
// trip fails the configuration check; the file's own setting for the queue
// wins over the stored one, as it does when a service starts.
func TestDoctorHoldsTheConfigurationToTheQueuesSettings(t *testing.T) {
	ctx := t.Context()
	a := &app{configDir: t.TempDir(), env: []string{}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	if got := configurationCheck(ctx, s, cfg); got.Status != sqlserver.CheckOK {
		t.Fatalf("no queue settings: %+v", got)
	}
	short := 20 * time.Second // the default heartbeats are up to 12 s apart: 3 of them are 36 s
	if _, err := s.UpdateQueue(ctx, "mail", jobs.QueueUpdate{ZombieTimeout: &short}); err != nil {
		t.Fatal(err)
	}
	got := configurationCheck(ctx, s, cfg)
	if got.Status != sqlserver.CheckFailed || !strings.Contains(got.Detail, "queue mail") || !strings.Contains(got.Remedy, "chokaq queues set") {
		t.Fatalf("a stored zombie timeout of 20s: %+v", got)
	}
	long := time.Minute
	cfg.QueueSettings = map[string]config.QueueSetting{"mail": {ZombieTimeout: &long}}
	if got := configurationCheck(ctx, s, cfg); got.Status != sqlserver.CheckOK {
		t.Fatalf("the file sets the queue's timeout to a minute: %+v", got)
	}
	if got := configurationCheck(ctx, failingQueues{s}, cfg); got.Status != sqlserver.CheckWarning || !strings.Contains(got.Detail, "connection reset") {
		t.Fatalf("queues unreadable: %+v", got)
	}
}
