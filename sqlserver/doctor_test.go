package sqlserver

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"database/sql/driver"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/schema"
)

// printReport logs a report as the command's table would show it.
func printReport(t *testing.T, r *DoctorReport) {
	t.Helper()
	var b strings.Builder
	for _, c := range r.Checks {
		b.WriteString(c.Status.String() + "\t" + c.Name + "\t" + c.Detail)
		if c.Remedy != "" {
			b.WriteString("\n\t\tremedy: " + c.Remedy)
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}

func checkNamed(t *testing.T, r *DoctorReport, name string) DoctorCheck {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	printReport(t, r)
	t.Fatalf("no check %q in the report", name)
	return DoctorCheck{}
}

// TestDoctorPassesOnAHealthyServer: every check passes, every statement of
// the families goes out inside the doctor's transaction, and that
// transaction is rolled back, never committed.
func TestDoctorPassesOnAHealthyServer(t *testing.T) {
	srv := newDoctorServer(t)
	var events []string
	srv.rec.onTx = func(e string) error { events = append(events, e); return srv.onTx(e) }
	r := srv.run()
	for _, c := range r.Checks {
		if c.Status != CheckOK {
			printReport(t, r)
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	if r.Status() != CheckOK || len(r.NotExercised) == 0 {
		t.Errorf("status %s, %d entries not exercised", r.Status(), len(r.NotExercised))
	}
	if !slices.Equal(events, []string{"begin", "rollback"}) {
		t.Errorf("transactions: %v, want one begun and rolled back", events)
	}
	names := statementNames(srv.s.q)
	for _, c := range srv.rec.calls {
		if strings.HasPrefix(c.method, "statements: ") != c.inTx {
			t.Errorf("%s sent %s with inTx %v: the families run in the doctor's transaction, and nothing else does", c.method, names[c.query], c.inTx)
		}
	}
	if len(checkNamed(t, r, "clock").Detail) == 0 || checkNamed(t, r, "claim locks").Status != CheckOK {
		t.Error("the clock and the claim's locks are reported")
	}
	// Every call, with the arguments the doctor gave it, binds as SQL
	// Server would bind it (ADR 0015).
	checkCalls(t, srv.s, srv.rec, migratedTableTypes(t, "chokaq_t"))
}

// TestDoctorNamesEveryStatement is how every statement the SQL Server store
// has takes its place in the doctor: each one of render's is sent by a
// family, by one of the doctor's checks, or listed as not exercised with
// the reason. A new statement fails here until it is given one, and a
// listing that no longer names a statement fails too.
func TestDoctorNamesEveryStatement(t *testing.T) {
	q := render("chokaq_t")
	names := statementNames(q)
	placed := map[string][]string{}
	place := func(where string, stmts []string) {
		for _, s := range stmts {
			name, ok := names[s]
			if !ok {
				t.Errorf("%s names a statement that is not in render's registry: %s", where, firstLine(s))
				continue
			}
			if !slices.Contains(placed[name], where) {
				placed[name] = append(placed[name], where)
			}
		}
	}
	for _, f := range doctorFamilies {
		place("family "+f.name, f.statements(q))
	}
	place("the doctor's checks", doctorCheckStatements(q))
	for _, n := range doctorNotExercised {
		for _, s := range n.statements(q) {
			if where := placed[names[s]]; len(where) > 0 {
				t.Errorf("%s is listed as not exercised (%s), and %v exercises it", names[s], n.what, where)
			}
		}
		if n.why == "" {
			t.Errorf("%s: not exercised without a reason", n.what)
		}
		place("not exercised: "+n.what, n.statements(q))
	}
	for _, name := range sortedValues(names) {
		if len(placed[name]) == 0 {
			t.Errorf("statement %s has no place in chokaq doctor: add it to a family in doctorFamilies (or to doctorCheckStatements), "+
				"or to doctorNotExercised with the reason", name)
		}
	}
}

// TestDoctorFamiliesSendTheirStatements: each family sends, inside the
// doctor's transaction, every statement it names.
func TestDoctorFamiliesSendTheirStatements(t *testing.T) {
	srv := newDoctorServer(t)
	srv.run()
	names := statementNames(srv.s.q)
	sent := map[string]map[string]bool{}
	for _, c := range srv.rec.calls {
		if sent[c.method] == nil {
			sent[c.method] = map[string]bool{}
		}
		sent[c.method][c.query] = c.inTx
	}
	for _, f := range doctorFamilies {
		for _, s := range f.statements(srv.s.q) {
			inTx, ok := sent["statements: "+f.name][s]
			if !ok || !inTx {
				t.Errorf("family %s names %s, which it did not send inside the transaction (sent %v, in it %v)", f.name, names[s], ok, inTx)
			}
		}
	}
	var checks []string
	for _, s := range doctorCheckStatements(srv.s.q) {
		found := false
		for _, c := range srv.rec.calls {
			found = found || c.query == s
		}
		if !found {
			checks = append(checks, names[s])
		}
	}
	if len(checks) > 0 {
		t.Errorf("the checks name statements they never sent: %v", checks)
	}
}

// TestDoctorProbesEveryRightTheStatementsUse reads, from every statement of
// the store, which tables it inserts into, updates and deletes from, and
// holds tableRights to them: a statement that starts to write a table in a
// new way makes the doctor try that right too. Every table type of the
// migrations is probed as well.
func TestDoctorProbesEveryRightTheStatementsUse(t *testing.T) {
	q := render("my_schema")
	used := map[string]map[string]bool{}
	use := func(table, right string) {
		table = unbracket(table)
		if used[table] == nil {
			used[table] = map[string]bool{"SELECT": true}
		}
		used[table][right] = true
	}
	for stmt, name := range statementNames(q) {
		if strings.HasPrefix(name, "probes[") || name == "ageForTest" || name == "resetForTest" {
			continue
		}
		toks := lexTSQL(stmt)
		aliases := map[string]string{}
		for i := 0; i+4 < len(toks); i++ {
			if toks[i].text == "[my_schema]" && toks[i+1].text == "." && isWord(toks[i+3], "AS") {
				aliases[toks[i+4].text] = toks[i+2].text
			}
		}
		for i := 0; i+1 < len(toks); i++ {
			for _, right := range []string{"INSERT", "UPDATE", "DELETE"} {
				if !isWord(toks[i], right) {
					continue
				}
				j := i + 1
				if isWord(toks[j], "INTO") || isWord(toks[j], "FROM") {
					j++
				}
				switch {
				case j+2 < len(toks) && toks[j].text == "[my_schema]":
					use(toks[j+2].text, right)
				case aliases[toks[j].text] != "":
					use(aliases[toks[j].text], right)
				}
			}
			if isWord(toks[i], "INTO") && i+2 < len(toks) && toks[i+1].text == "[my_schema]" {
				use(toks[i+3].text, "INSERT") // OUTPUT ... INTO a table
			}
		}
	}
	probed := map[string][]string{}
	for _, tr := range tableRights {
		probed[tr.table] = tr.rights
	}
	for table, rights := range used {
		for right := range rights {
			if !slices.Contains(probed[table], right) {
				t.Errorf("a statement uses %s on %s, which the doctor does not try: add it to tableRights", right, table)
			}
		}
	}
	if len(used) < 5 {
		t.Fatalf("found writes to only %v: the scanner no longer reads the statements", used)
	}
	var types []string
	for _, tt := range doctorTypes {
		types = append(types, tt.name)
	}
	for name := range migratedTableTypes(t, "my_schema") {
		if !slices.Contains(types, strings.TrimPrefix(name, "my_schema.")) {
			t.Errorf("table type %s is not probed: add it to doctorTypes", name)
		}
	}
	t.Logf("rights the statements use: %v", used)
}

func denied(n int32) error {
	return mssql.Error{Number: n, Message: "The permission was denied on the object."}
}

// TestDoctorReportsEachFailure drives every check into its failing (or
// warning) form: what the report says, the server's error number and the
// remedy.
func TestDoctorReportsEachFailure(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(srv *doctorServer)
		check  string
		status CheckStatus
		number int32
		remedy string
	}{
		{"an engine older than SQL Server 2019", func(srv *doctorServer) { srv.set(srv.s.q.serverLevel, int64(140), int64(14), int64(3)) },
			"engine", CheckFailed, 0, "SQL Server 2019 or later"},
		{"an engine whose version cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.serverLevel, denied(229)) },
			"engine", CheckFailed, 229, "ALTER ROLE [chokaq_t_app] ADD MEMBER"},
		{"the session cannot be described", func(srv *doctorServer) { srv.fail(srv.s.q.doctorServer, denied(297)) },
			"engine", CheckFailed, 297, "server's message"},
		{"the level is reported when the session cannot be described", func(srv *doctorServer) {
			srv.fail(srv.s.q.doctorServer, denied(297))
			srv.set(srv.s.q.serverLevel, int64(120), int64(16), int64(3))
		}, "compatibility level", CheckFailed, 0, "COMPATIBILITY_LEVEL = 150"},
		{"Express", func(srv *doctorServer) { srv.set(srv.s.q.serverLevel, int64(160), int64(16), int64(4)) },
			"engine", CheckWarning, 0, "Retention"},
		{"an edition the store is not written for", func(srv *doctorServer) { srv.set(srv.s.q.serverLevel, int64(160), int64(16), int64(9)) },
			"engine", CheckWarning, 0, "Azure SQL Database"},
		{"an old compatibility level", func(srv *doctorServer) { srv.set(srv.s.q.serverLevel, int64(120), int64(16), int64(3)) },
			"compatibility level", CheckFailed, 0, "COMPATIBILITY_LEVEL = 150"},
		{"read committed snapshot cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.doctorDatabase, denied(229)) },
			"read committed snapshot", CheckFailed, 229, "ALTER ROLE"},
		{"snapshot isolation cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.doctorDatabase, denied(229)) },
			"snapshot isolation", CheckFailed, 229, "ALTER ROLE"},
		{"accelerated database recovery cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.doctorDatabase, denied(229)) },
			"accelerated database recovery", CheckFailed, 229, "ALTER ROLE"},
		{"optimized locking cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.doctorDatabase, denied(229)) },
			"optimized locking", CheckFailed, 229, "ALTER ROLE"},
		{"the database options are not read on an engine too old", func(srv *doctorServer) {
			srv.set(srv.s.q.serverLevel, int64(140), int64(14), int64(3))
		}, "optimized locking", CheckWarning, 0, "fix the failed checks"},
		{"the round trip cannot be measured", func(srv *doctorServer) { srv.fail(srv.s.q.now, errors.New("connection reset")) },
			"round trip", CheckFailed, 0, "store's own finding"},
		{"the statements do not run on a schema that is not migrated", func(srv *doctorServer) {
			srv.set(srv.schemaStatus(), int64(schema.Latest()-1), false)
		}, "statements", CheckWarning, 0, "fix the failed checks"},
		{"the rights are not tried on a schema that is not migrated", func(srv *doctorServer) {
			srv.set(srv.schemaStatus(), int64(schema.Latest()-1), false)
		}, "permissions", CheckWarning, 0, "fix the failed checks"},
		{"snapshot isolation changing", func(srv *doctorServer) { srv.set(srv.s.q.doctorDatabase, false, int64(3), false, nil) },
			"snapshot isolation", CheckWarning, 0, "ALLOW_SNAPSHOT_ISOLATION"},
		{"a dirty schema", func(srv *doctorServer) { srv.set(srv.schemaStatus(), int64(schema.Latest()), true) },
			"schema version", CheckFailed, 0, "chokaq migrate force"},
		{"an outdated schema", func(srv *doctorServer) { srv.set(srv.schemaStatus(), int64(schema.Latest()-1), false) },
			"schema version", CheckFailed, 0, "chokaq migrate up"},
		{"a schema never migrated", func(srv *doctorServer) {
			srv.fail(srv.schemaStatus(), mssql.Error{Number: 208, Message: "Invalid object name"})
		},
			"schema version", CheckFailed, 0, "chokaq migrate up"},
		{"a schema newer than the binary", func(srv *doctorServer) { srv.set(srv.schemaStatus(), int64(schema.Latest()+1), false) },
			"schema version", CheckFailed, 0, "deploy the version"},
		{"the migrations table cannot be read", func(srv *doctorServer) { srv.fail(srv.schemaStatus(), denied(229)) },
			"schema version", CheckFailed, 229, "ALTER ROLE"},
		{"name columns that compare case by case", func(srv *doctorServer) {
			srv.set(srv.s.q.caseSensitiveNames, int64(2), "Latin1_General_100_CS_AS")
		}, "name collation", CheckFailed, 0, "collation ignores case"},
		{"the name collation cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.caseSensitiveNames, denied(229)) },
			"name collation", CheckFailed, 229, "ALTER ROLE"},
		{"the owner's rights", func(srv *doctorServer) { srv.set(srv.s.q.doctorPrivileges, int64(1), int64(1), int64(1), int64(0)) },
			"least privilege", CheckWarning, 0, "holds only [chokaq_t_app]"},
		{"the rights cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.doctorPrivileges, denied(229)) },
			"least privilege", CheckFailed, 229, "ALTER ROLE"},
		{"the clock cannot be read", func(srv *doctorServer) { srv.fail(srv.s.q.now, errors.New("connection reset")) },
			"clock", CheckFailed, 0, "store's own finding"},
		{"no DELETE on the archive", func(srv *doctorServer) { srv.fail(srv.s.q.probes["JobsArchive DELETE"], denied(229)) },
			"table JobsArchive", CheckFailed, 229, "ALTER ROLE [chokaq_t_app] ADD MEMBER [svc]"},
		{"no SELECT on the migrations table", func(srv *doctorServer) { srv.fail(srv.s.q.probes["SchemaMigrations SELECT"], denied(229)) },
			"table SchemaMigrations", CheckFailed, 229, "ALTER ROLE"},
		{"no EXECUTE on a table type", func(srv *doctorServer) {
			srv.answer[srv.s.q.probeType] = func(c recordedCall) ([][]driver.Value, error) {
				if argsOf(c)["list"].(mssql.TVP).TypeName == "chokaq_t.RetryList" {
					return nil, denied(229)
				}
				return one(int64(0)), nil
			}
		}, "table types", CheckFailed, 229, "ALTER ROLE"},
		{"no UPDATE on the sequence", func(srv *doctorServer) { srv.fail(srv.s.q.probeSequence, denied(229)) },
			"sequence", CheckFailed, 229, "ALTER ROLE"},
		{"an application lock refused", func(srv *doctorServer) { srv.set(srv.s.q.tryAppLock, int64(-999)) },
			"application locks", CheckFailed, 0, "store's own finding"},
		{"an application lock lost and then refused", func(srv *doctorServer) {
			calls := 0
			srv.answer[srv.s.q.tryAppLock] = func(recordedCall) ([][]driver.Value, error) {
				calls++
				return one(int64(min(0, 1-calls))), nil // granted (0), then taken by someone else (-1)
			}
			srv.set(srv.s.q.appLockMode, "NoLock")
		}, "application locks", CheckFailed, 0, "store's own finding"},
		{"no right to read locks", func(srv *doctorServer) {
			srv.fail(srv.s.q.doctorLocks, mssql.Error{Number: 300, Message: "VIEW SERVER PERFORMANCE STATE permission was denied"})
		}, "claim locks", CheckWarning, 300, "VIEW SERVER PERFORMANCE STATE"},
		{"no right to read locks on SQL Server 2019", func(srv *doctorServer) {
			srv.set(srv.s.q.serverLevel, int64(150), int64(15), int64(2))
			srv.fail(srv.s.q.doctorLocks, mssql.Error{Number: 300, Message: "VIEW SERVER STATE permission was denied"})
		}, "claim locks", CheckWarning, 300, "with VIEW SERVER STATE"},
		{"no right to read locks on Azure SQL Database", func(srv *doctorServer) {
			srv.set(srv.s.q.serverLevel, int64(160), int64(12), int64(5))
			srv.fail(srv.s.q.doctorLocks, mssql.Error{Number: 297, Message: "The user does not have permission to perform this action."})
		}, "claim locks", CheckWarning, 297, "VIEW DATABASE STATE"},
		{"a claim that escalates to a table lock", func(srv *doctorServer) {
			srv.answer[srv.s.q.doctorLocks] = func(c recordedCall) ([][]driver.Value, error) {
				if srv.claimed > 0 {
					return [][]driver.Value{{"OBJECT", "X", "JobsHot", int64(1)}}, nil
				}
				return [][]driver.Value{{"OBJECT", "IX", "JobsHot", int64(1)}}, nil
			}
		}, "claim locks", CheckFailed, 0, "escalation"},
		{"a claim that locks too many keys", func(srv *doctorServer) {
			srv.answer[srv.s.q.doctorLocks] = func(c recordedCall) ([][]driver.Value, error) {
				return [][]driver.Value{{"KEY", "U", "IX_JobsHot_Claim", int64(1 + 300*srv.claimed)}}, nil
			}
		}, "claim locks", CheckFailed, 0, "read more rows"},
		{"the lock query fails otherwise", func(srv *doctorServer) {
			srv.fail(srv.s.q.doctorLocks, mssql.Error{Number: 8152, Message: "truncated"})
		},
			"claim locks", CheckFailed, 8152, "server's message"},
		{"the transaction cannot begin", func(srv *doctorServer) {
			srv.rec.onTx = func(e string) error {
				if e == "begin" {
					return denied(3906)
				}
				return srv.onTx(e)
			}
		}, "statements", CheckFailed, 3906, "server's message"},
		{"a statement left a transaction of its own open", func(srv *doctorServer) { srv.set(srv.s.q.doctorTranState, int64(2), int64(1)) },
			"statements: enqueue", CheckFailed, 0, "store's own finding"},
		{"a deadlock ends the doctor's transaction", func(srv *doctorServer) {
			srv.failIn.step, srv.failIn.query, srv.failIn.err = "statements: complete", srv.s.q.complete, mssql.Error{Number: 1205, Message: "deadlock victim"}
		}, "statements: complete", CheckFailed, 1205, "run the doctor again"},
		{"the families after an ended transaction do not run", func(srv *doctorServer) {
			srv.failIn.step, srv.failIn.query, srv.failIn.err = "statements: complete", srv.s.q.complete, mssql.Error{Number: 1205, Message: "deadlock victim"}
		}, "statements: schedules", CheckWarning, 0, "fix the failed checks"},
		{"a family that has nothing to work on", func(srv *doctorServer) {
			srv.failIn.step, srv.failIn.query, srv.failIn.err = "statements: start", srv.s.q.start, denied(229)
		}, "statements: heartbeat", CheckWarning, 0, "fix the failed checks"},
		{"the rollback fails", func(srv *doctorServer) { srv.rollbackErr = errors.New("connection reset") },
			"rollback", CheckFailed, 0, ""},
		{"something is left after the rollback", func(srv *doctorServer) { srv.keepOnRollback = true },
			"nothing left", CheckFailed, 0, "chokaq dlq purge --queue chokaq-doctor-0123456789ab"},
		{"the leftovers cannot be counted", func(srv *doctorServer) {
			srv.failIn.step, srv.failIn.query, srv.failIn.err = "nothing left", srv.s.q.count[1], denied(229)
		}, "nothing left", CheckFailed, 229, "ALTER ROLE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newDoctorServer(t)
			c.setup(srv)
			r := srv.run()
			got := checkNamed(t, r, c.check)
			if got.Status != c.status || got.ErrorNumber != c.number || !strings.Contains(got.Remedy, c.remedy) {
				printReport(t, r)
				t.Fatalf("%s: %s, error %d, remedy %q; want %s, error %d, a remedy with %q", c.check, got.Status, got.ErrorNumber, got.Remedy,
					c.status, c.number, c.remedy)
			}
			if r.Status() < c.status {
				t.Fatalf("the report's status is %s with a check %s", r.Status(), c.status)
			}
		})
	}
}

// TestDoctorReportsEachFamilyFailing fails, for every family, the first
// statement it names while it runs: the family's check fails with the
// server's error number, whatever the statement.
func TestDoctorReportsEachFamilyFailing(t *testing.T) {
	for _, f := range doctorFamilies {
		t.Run(f.name, func(t *testing.T) {
			srv := newDoctorServer(t)
			name := "statements: " + f.name
			srv.failIn.step, srv.failIn.query, srv.failIn.err = name, f.statements(srv.s.q)[0], denied(229)
			r := srv.run()
			got := checkNamed(t, r, name)
			if got.Status != CheckFailed || got.ErrorNumber != 229 || !strings.Contains(got.Remedy, "ALTER ROLE [chokaq_t_app]") {
				printReport(t, r)
				t.Fatalf("%s: %s, error %d, remedy %q", name, got.Status, got.ErrorNumber, got.Remedy)
			}
			if left := checkNamed(t, r, "nothing left"); left.Status != CheckOK {
				t.Fatalf("after a failed %s: %s", f.name, left.Detail)
			}
		})
	}
}

// TestDoctorDescribesEachDatabaseOption: the options' other settings are
// reported as what they mean, not as failures.
func TestDoctorDescribesEachDatabaseOption(t *testing.T) {
	srv := newDoctorServer(t)
	srv.set(srv.s.q.doctorDatabase, true, int64(1), true, int64(1))
	r := srv.run()
	for check, want := range map[string]string{"read committed snapshot": "on:", "snapshot isolation": "allowed:",
		"accelerated database recovery": "on:", "optimized locking": "on:"} {
		if got := checkNamed(t, r, check); got.Status != CheckOK || !strings.HasPrefix(got.Detail, want) {
			t.Errorf("%s: %s %q, want ok %q...", check, got.Status, got.Detail, want)
		}
	}
	srv = newDoctorServer(t)
	srv.set(srv.s.q.doctorDatabase, false, int64(0), false, int64(0))
	if got := checkNamed(t, srv.run(), "optimized locking"); got.Status != CheckOK || !strings.HasPrefix(got.Detail, "off:") {
		t.Errorf("optimized locking off: %s %q", got.Status, got.Detail)
	}
}

// TestDoctorMeasuresTheClockOnThisHost: the host clock is injectable, and
// the difference to the server's is reported with its sign.
func TestDoctorMeasuresTheClockOnThisHost(t *testing.T) {
	srv := newDoctorServer(t)
	server := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	srv.set(srv.s.q.now, server)
	host := server.Add(-2 * time.Second)
	r := srv.s.doctor(t.Context(), doctorOptions{suffix: "0123456789ab", now: func() time.Time {
		host = host.Add(time.Millisecond)
		return host
	}})
	if got := checkNamed(t, r, "clock").Detail; !strings.Contains(got, "2026-03-04T05:06:07Z") || !strings.Contains(got, "behind it") {
		t.Fatalf("clock: %s", got)
	}
	if got := checkNamed(t, r, "round trip").Detail; !strings.Contains(got, "median 1ms") {
		t.Fatalf("round trip: %s", got)
	}
}

// TestDoctorStoppedMidwayLeavesNothing: a doctor stopped in the middle
// (Ctrl-C, its --timeout) has its transaction rolled back by database/sql,
// reports where it stopped, runs nothing more on the transaction, and
// still looks for leftovers.
func TestDoctorStoppedMidwayLeavesNothing(t *testing.T) {
	srv := newDoctorServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	claim := srv.handlers[srv.s.q.claim]
	srv.answer[srv.s.q.claim] = func(c recordedCall) ([][]driver.Value, error) {
		if c.method == "statements: queue settings" {
			cancel()
			return nil, context.Canceled
		}
		return claim(c)
	}
	var events []string
	srv.rec.onTx = func(e string) error { events = append(events, e); return srv.onTx(e) }
	r := srv.s.doctor(ctx, doctorOptions{suffix: "0123456789ab", step: func(name string) { srv.rec.start(name) }})
	got := checkNamed(t, r, "statements: queue settings")
	if got.Status != CheckFailed || !strings.Contains(got.Remedy, "stopped or ran out of time") {
		printReport(t, r)
		t.Fatalf("queue settings: %s %q", got.Status, got.Remedy)
	}
	if s := checkNamed(t, r, "statements: schedules"); s.Status != CheckWarning {
		t.Fatalf("schedules after the stop: %s %s", s.Status, s.Detail)
	}
	if left := checkNamed(t, r, "nothing left"); left.Status != CheckOK {
		t.Fatalf("nothing left: %s %s", left.Status, left.Detail)
	}
	if !slices.Equal(events, []string{"begin", "rollback"}) {
		t.Fatalf("transactions: %v", events)
	}
}

// TestOperationsDocListsEveryDoctorCheck: docs/operations.md names every
// check the doctor can report, with its remedy.
func TestOperationsDocListsEveryDoctorCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"statements": true, "permissions": true, "rollback": true, "configuration": true}
	for _, c := range newDoctorServer(t).run().Checks {
		names[c.Name] = true
	}
	for _, f := range doctorFamilies {
		names["statements: "+f.name] = true
	}
	for name := range names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/operations.md does not list the doctor's check %q", name)
		}
	}
}
