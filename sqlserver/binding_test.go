package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// TestQueryBinding drives every store method through a recording driver and
// checks each statement sent the way SQL Server would bind it, so a
// misspelt parameter, a stray argument or a table-valued parameter that no
// longer fits its table type fails here, without a server, instead of at
// the first call in production.
func TestQueryBinding(t *testing.T) {
	const schemaName = "chokaq_t"
	rec := &recorder{}
	s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema(schemaName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Only the statements whose answer decides whether a method goes on to
	// its next statement get a row; every other one answers with no rows.
	rec.rows = map[string][]driver.Value{
		s.q.enqueueKeyed:    {int64(1), false}, // EnqueueMany goes on to its plain jobs
		s.q.enqueueUnique:   {int64(2), false},
		s.q.enqueueUniqueTx: {int64(2), false},
		s.q.now:             {time.Now()},  // Resurrect and Purge read the clock first
		s.q.tryAppLock:      {int64(0)},    // the lock is granted, so TryLead keeps the connection
		s.q.appLockMode:     {"Exclusive"}, // ... and the next TryLead checks it
		s.q.fireSchedule:    {int64(1)},    // the tick is taken, so the fire enqueues its job
		// The job adding tasks holds its lease, in a workflow of its own.
		s.q.addTasksBegin: {true, int64(7), "import", "nightly"},
		// The doctor goes on to its probes and its transaction.
		s.q.serverLevel:        {int64(160), int64(16), int64(3)},
		s.q.caseSensitiveNames: {int64(0), nil},
		s.q.doctorServer:       {"16.0", "Developer Edition", "app", "login", "user"},
		s.q.doctorTranState:    {int64(1), int64(1)},
		"SELECT TOP (1) version, dirty FROM " + schema.Quote(schemaName) + "." + schema.Quote(schema.MigrationsTable): {int64(schema.Latest()), false},
	}
	rec.answer = func(q string) []driver.Value {
		if strings.Contains(q, "[SchemaMigrations]") {
			return []driver.Value{int64(schema.Latest()), false} // CheckSchema goes on to the collation
		}
		return nil
	}

	tableTypes := migratedTableTypes(t, schemaName)
	methods, _ := exerciseStore(t, s, rec) // errors expected: the fake has no rows

	stmtNames := statementNames(s.q)
	sent := checkCalls(t, s, rec, tableTypes)

	// The checks are only as good as what was sent: every statement and
	// every jobs.Store method must have been exercised.
	for _, name := range sortedValues(stmtNames) {
		if !sent[name] {
			t.Errorf("statement %s was never sent: call the method that runs it in exerciseStore", name)
		}
	}
	for _, port := range bindingPorts {
		for i := range port.NumMethod() {
			if m := port.Method(i).Name; !methods[m] {
				t.Errorf("%s method %s was not exercised: add it to exerciseStore", port, m)
			}
		}
	}
	t.Logf("checked %d calls of %d statements from %d methods", len(rec.calls), len(sent), len(methods))
}

// checkCalls checks the binding of every call rec recorded and returns the
// names of the statements sent.
func checkCalls(t *testing.T, s *Store, rec *recorder, tableTypes map[string][]typeColumn) map[string]bool {
	t.Helper()
	stmtNames := statementNames(s.q)
	filterTable := map[string]jobs.Table{s.q.resurrect: jobs.TableDLQ}
	for _, m := range []map[jobs.Table]string{s.q.list, s.q.count, s.q.purge} {
		for tb, stmt := range m {
			filterTable[stmt] = tb
		}
	}
	// filterArgs binds one set of filter parameters for every table, and
	// rescue one set for every phase; sp_executesql ignores the extra ones.
	unusedByDesign := func(stmt, arg string) bool {
		if tb, ok := filterTable[stmt]; ok {
			return arg == "status" && tb != jobs.TableHot || arg == "reason" && tb != jobs.TableDLQ
		}
		return stmt == s.q.rescueExpired && arg == "timeoutMs"
	}

	for _, r := range rec.refused {
		t.Error(r)
	}
	reported := map[string]bool{}
	sent := map[string]bool{}
	for _, c := range rec.calls {
		name, ok := stmtNames[c.query]
		if !ok {
			name = "(not in queries.go) " + firstLine(c.query)
		}
		sent[name] = true
		for _, p := range checkBinding(c, tableTypes, func(arg string) bool { return unusedByDesign(c.query, arg) }) {
			msg := fmt.Sprintf("%s: statement %s: %s", c.method, name, p)
			if !reported[msg] {
				reported[msg] = true
				t.Error(msg)
			}
		}
	}
	return sent
}

// bindingPorts are the store's ports whose every method TestQueryBinding
// must exercise: jobs.Store and each optional interface of package jobs the
// store implements (TestBindingPortsAreEveryInterfaceTheStoreImplements).
var bindingPorts = []reflect.Type{reflect.TypeFor[jobs.Store](), reflect.TypeFor[jobs.BatchWorker](), reflect.TypeFor[jobs.TxEnqueuer](), reflect.TypeFor[jobs.FinishedCounter](),
	reflect.TypeFor[jobs.Prober](), reflect.TypeFor[jobs.Reporter](), reflect.TypeFor[jobs.RateClaimer](),
	reflect.TypeFor[jobs.WorkflowEnqueuer](), reflect.TypeFor[jobs.WorkflowTxEnqueuer](), reflect.TypeFor[jobs.WorkflowExtender](),
	reflect.TypeFor[jobs.WorkflowAdmin]()}

// exerciseStore calls every method with plausible arguments and returns the
// names of the methods called. Errors are expected (the fake answers with
// no rows), but every call must reach the database.
func exerciseStore(t *testing.T, s *Store, rec *recorder) (map[string]bool, []stepError) {
	ctx := t.Context()
	s.sleep = func(context.Context, time.Duration) error { return nil } // retries at once
	ref := jobs.LeaseRef{ID: 42, Lease: 3}
	status, reason := jobs.StatusProcessing, jobs.ReasonFatal
	from := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	// fullFilter sets every field the table accepts, so every optional
	// filter parameter is bound with a value.
	fullFilter := func(tb jobs.Table) jobs.Filter {
		f := jobs.Filter{IDs: []int64{1, 2, 2}, Queue: "mail", Type: "send.email", From: from, To: from.Add(time.Hour),
			OlderThan: time.Minute, Text: "boom"}
		if tb == jobs.TableHot {
			f.Status = &status
		}
		if tb == jobs.TableDLQ {
			f.Reason = &reason
		}
		return f
	}
	plain := jobs.EnqueueParams{Queue: "mail", Type: "send.email", Payload: []byte(`{"to":"a@b"}`), Priority: 5,
		Delay: time.Second, MaxAttempts: 4, Tags: []string{"x", "y"}, CreatedBy: "test"}
	keyed := plain
	keyed.IdempotencyKey, keyed.Delay, keyed.RunAt = "order-1", 0, from
	unique := plain
	unique.Unique = &jobs.UniqueOpts{ByArgs: true, Period: time.Hour, States: jobs.UniqueActive | jobs.UniqueArchived}
	uniqueKeyed := keyed
	uniqueKeyed.Unique = &jobs.UniqueOpts{Fields: []string{"to"}}
	one, minute := 1, time.Minute
	paused := true
	leader := NewLeader(s, "rescue")

	type step struct {
		method string
		run    func() error
	}
	steps := []step{
		{"Enqueue", func() error { _, err := s.Enqueue(ctx, plain); return err }},
		{"Enqueue", func() error { _, err := s.Enqueue(ctx, keyed); return err }},
		{"Enqueue", func() error {
			// Resurrect took the key between the check and the insert.
			rec.failNext(s.q.enqueueKeyed, mssql.Error{Number: 2601, Message: "duplicate key"})
			_, err := s.Enqueue(ctx, keyed)
			return err
		}},
		{"EnqueueMany", func() error {
			_, err := s.EnqueueMany(ctx, []jobs.EnqueueParams{plain, keyed, keyed, {Type: "bare"}})
			return err
		}},
		{"Enqueue", func() error { _, err := s.Enqueue(ctx, unique); return err }},
		{"EnqueueMany", func() error {
			_, err := s.EnqueueMany(ctx, []jobs.EnqueueParams{plain, unique, uniqueKeyed, keyed, unique})
			return err
		}},
		{"EnqueueTx", func() error {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			_, err1 := s.EnqueueTx(ctx, tx, plain)
			_, err2 := s.EnqueueTx(ctx, tx, keyed)
			_, err3 := s.EnqueueTx(ctx, tx, uniqueKeyed)
			return errors.Join(err1, err2, err3)
		}},
		{"Claim", func() error {
			_, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail", "mail", "sms"}, Limit: 10})
			return err
		}},
		{"ClaimHeld", func() error {
			_, err := s.ClaimHeld(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail"}, Limit: 10})
			return err
		}},
		{"ClaimHeld", func() error {
			s.owed.Store(true) // a release is owed: the claim runs a release step first
			_, err := s.ClaimHeld(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail"}, Limit: 10})
			return err
		}},
		{"EnqueueWorkflow", func() error {
			_, err := s.EnqueueWorkflow(ctx, workflowOf(plain))
			return err
		}},
		{"EnqueueWorkflowTx", func() error {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			_, err = s.EnqueueWorkflowTx(ctx, tx, workflowOf(plain))
			return err
		}},
		{"AddWorkflowTasks", func() error {
			_, err := s.AddWorkflowTasks(ctx, jobs.AddTasksParams{Ref: ref, Tasks: workflowOf(plain).Tasks})
			return err
		}},
		{"Workflows", func() error { _, err := s.Workflows(ctx, 0, 10); return err }},
		{"GetWorkflow", func() error { _, err := s.GetWorkflow(ctx, 7); return err }},
		{"CancelWorkflow", func() error {
			_, err := s.CancelWorkflow(ctx, jobs.CancelWorkflowParams{ID: 7, By: "ops", Reason: "wrong input"})
			return err
		}},
		{"Claim", func() error {
			// The reply is lost: the retry first adopts the rows the lost
			// attempt may have taken.
			rec.failNext(s.q.claim, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")})
			_, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail"}, Limit: 10})
			return err
		}},
		{"Probe", func() error { _, err := s.Probe(ctx, []string{"mail", "Mail", "sms"}); return err }},
		{"Start", func() error { _, err := s.Start(ctx, ref, jobs.StartParams{DefaultTimeout: time.Minute}); return err }},
		{"Heartbeat", func() error { _, err := s.Heartbeat(ctx, []jobs.LeaseRef{ref, ref, {ID: 43, Lease: 1}}); return err }},
		{"HeartbeatProgress", func() error {
			_, err := s.HeartbeatProgress(ctx, []jobs.LeaseRef{ref, {ID: 43, Lease: 1}}, []jobs.ProgressItem{{Ref: ref, Fraction: 0.5, Message: "half"}})
			return err
		}},
		{"Complete", func() error { return s.Complete(ctx, ref) }},
		{"Retry", func() error {
			return s.Retry(ctx, ref, jobs.RetryParams{Delay: 1500 * time.Millisecond, Error: "boom"})
		}},
		{"DeadLetter", func() error {
			return s.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "stack"})
		}},
		{"StartMany", func() error {
			_, err := s.StartMany(ctx, []jobs.LeaseRef{ref, ref, {ID: 43, Lease: 1}}, jobs.StartParams{DefaultTimeout: time.Minute})
			return err
		}},
		{"CompleteMany", func() error { _, err := s.CompleteMany(ctx, []jobs.LeaseRef{ref, ref, {ID: 43, Lease: 1}}); return err }},
		{"RetryMany", func() error {
			_, err := s.RetryMany(ctx, []jobs.RetryItem{{Ref: ref, Params: jobs.RetryParams{Delay: 1500 * time.Millisecond, Error: "boom"}},
				{Ref: ref, Params: jobs.RetryParams{}}, {Ref: jobs.LeaseRef{ID: 43, Lease: 1}}})
			return err
		}},
		{"DeadLetterMany", func() error {
			_, err := s.DeadLetterMany(ctx, []jobs.DeadLetterItem{{Ref: ref, Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "stack"}},
				{Ref: jobs.LeaseRef{ID: 43, Lease: 1}, Params: jobs.DeadLetterParams{Reason: jobs.ReasonTimeout}}})
			return err
		}},
		{"Transition", func() error {
			_, err := s.Transition(ctx, jobs.Transitions{Starts: []jobs.LeaseRef{{ID: 44, Lease: 1}}, StartParams: jobs.StartParams{DefaultTimeout: time.Minute},
				Completes: []jobs.LeaseRef{ref}, Retries: []jobs.RetryItem{{Ref: jobs.LeaseRef{ID: 45, Lease: 2}, Params: jobs.RetryParams{Delay: time.Second}}},
				DeadLetters: []jobs.DeadLetterItem{{Ref: jobs.LeaseRef{ID: 46, Lease: 2}, Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal}}}})
			return err
		}},
		{"Snooze", func() error { return s.Snooze(ctx, ref, jobs.SnoozeParams{Delay: 90 * time.Second}) }},
		{"Cancel", func() error {
			_, err := s.Cancel(ctx, jobs.CancelParams{IDs: []int64{42, 43, 42}, By: "ops", Reason: "refunded"})
			return err
		}},
		{"Release", func() error { _, err := s.Release(ctx, []jobs.LeaseRef{ref, {ID: 43, Lease: 1}}); return err }},
		{"RescueFetched", func() error { _, err := s.RescueFetched(ctx, jobs.RescueParams{Timeout: time.Minute}); return err }},
		{"RescueZombies", func() error {
			_, err := s.RescueZombies(ctx, jobs.RescueParams{Timeout: time.Minute, Limit: 10})
			return err
		}},
		{"RescueExpired", func() error { _, err := s.RescueExpired(ctx, jobs.RescueParams{}); return err }},
		{"Resurrect", func() error {
			_, err := s.Resurrect(ctx, jobs.ResurrectParams{Filter: fullFilter(jobs.TableDLQ), Payload: []byte("{}")})
			return err
		}},
		{"Resurrect", func() error { _, err := s.Resurrect(ctx, jobs.ResurrectParams{All: true}); return err }},
		{"Purge", func() error {
			_, err := s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableArchive, Filter: fullFilter(jobs.TableArchive)})
			return err
		}},
		{"Purge", func() error {
			_, err := s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableDLQ, Filter: fullFilter(jobs.TableDLQ)})
			return err
		}},
		{"GetJob", func() error { _, err := s.GetJob(ctx, 42); return err }},
		{"Queues", func() error { _, err := s.Queues(ctx); return err }},
		{"UpdateQueue", func() error {
			_, err := s.UpdateQueue(ctx, "mail", jobs.QueueUpdate{Paused: &paused, MaxWorkers: &one,
				ZombieTimeout: &minute, ExecutionTimeout: &minute})
			return err
		}},
		{"UpdateQueue", func() error {
			week, forever, clear := 7*24*time.Hour, jobs.KeepForever, time.Duration(0)
			_, err := s.UpdateQueue(ctx, "audit", jobs.QueueUpdate{ArchiveRetention: &week, DeadLetterRetention: &forever})
			_, err2 := s.UpdateQueue(ctx, "audit", jobs.QueueUpdate{ArchiveRetention: &clear})
			rate := jobs.RateLimit{Count: 100, Window: time.Minute}
			_, err3 := s.UpdateQueue(ctx, "partner", jobs.QueueUpdate{RateLimit: &rate})
			return errors.Join(err, err2, err3)
		}},
		{"SyncSchedules", func() error {
			return s.SyncSchedules(ctx, []jobs.ScheduleDef{{Name: "nightly", Definition: []byte(`{"cron":"@daily"}`), Hash: "abc", Paused: true},
				{Name: "hourly", Definition: []byte(`{}`), Hash: "def"}})
		}},
		{"FireSchedule", func() error {
			_, err := s.FireSchedule(ctx, jobs.FireParams{Name: "nightly", Hash: "abc", Tick: from, Next: from.Add(24 * time.Hour), Job: keyed})
			return err
		}},
		{"FireSchedule", func() error {
			_, err := s.FireSchedule(ctx, jobs.FireParams{Name: "hourly", Hash: "def", Tick: from, Job: plain})
			return err
		}},
		{"Schedules", func() error { _, err := s.Schedules(ctx); return err }},
		{"PauseSchedule", func() error { _, err := s.PauseSchedule(ctx, "nightly", true); return err }},
		{"DeleteSchedule", func() error { return s.DeleteSchedule(ctx, "nightly") }},
		{"Trim", func() error {
			_, err := s.Trim(ctx, jobs.TrimParams{Table: jobs.TableArchive, Queue: "mail", OlderThan: 7 * 24 * time.Hour, Limit: 1000})
			_, err2 := s.Trim(ctx, jobs.TrimParams{Table: jobs.TableDLQ, Queue: "mail", OlderThan: time.Hour, Limit: 10,
				After: jobs.TrimKey{FinishedAt: from, ID: 42}})
			return errors.Join(err, err2)
		}},
		{"FinishedCounts", func() error {
			_, err := s.FinishedCounts(ctx, jobs.FinishedCountsParams{From: from, To: from.Add(time.Hour), Bucket: 2 * time.Second})
			_, err2 := s.FinishedCounts(ctx, jobs.FinishedCountsParams{From: from, To: from.Add(time.Hour), Bucket: time.Hour, Queue: "mail"})
			return errors.Join(err, err2)
		}},
		{"QueueStats", func() error { _, err := s.QueueStats(ctx); return err }},
		{"QueueDepths", func() error { _, err := s.QueueDepths(ctx, []string{"mail", "sms"}, 1000); return err }},
		{"Now", func() error { _, err := s.Now(ctx); return err }},
		{"CheckSchema", func() error { return s.CheckSchema(ctx) }},
		{"Doctor", func() error { s.Doctor(ctx); return nil }},
		{"Leader.TryLead", func() error { _, err := leader.TryLead(ctx); return err }},
		{"Leader.TryLead", func() error { _, err := leader.TryLead(ctx); return err }},
		{"Leader.Resign", func() error { return leader.Resign(ctx) }},
		// The contract tests' hooks run against a real server only; bind
		// them here too.
		{"harnessOn", func() error {
			harnessOn(s)(t).Advance(t, time.Hour)
			return nil
		}},
	}
	for _, tb := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		steps = append(steps,
			step{"ListJobs", func() error {
				_, err := s.ListJobs(ctx, jobs.ListParams{Table: tb, Filter: fullFilter(tb), Limit: 20, BeforeID: 99})
				return err
			}},
			step{"ListJobs", func() error { _, err := s.ListJobs(ctx, jobs.ListParams{Table: tb}); return err }},
			step{"CountJobs", func() error { _, err := s.CountJobs(ctx, tb, fullFilter(tb)); return err }},
			step{"TableQueues", func() error { _, err := s.TableQueues(ctx, tb, "mail"); return err }},
		)
	}

	methods := map[string]bool{}
	var errs []stepError
	for _, st := range steps {
		before := rec.start(st.method)
		err := st.run()
		if rec.count() == before {
			t.Errorf("%s sent no statement (error: %v): the checks below do not cover it", st.method, err)
		}
		if err != nil {
			errs = append(errs, stepError{st.method, rec.lastQuery(), err})
		}
		methods[st.method] = true
	}
	return methods, errs
}

// stepError is what one exercised method returned, and the last statement
// it sent.
type stepError struct {
	method, query string
	err           error
}

// checkBinding returns what SQL Server would reject, or what is almost
// certainly a mistake, in binding c's arguments to c's text.
func checkBinding(c recordedCall, types map[string][]typeColumn, unusedOK func(arg string) bool) []string {
	var problems []string
	args := map[string]bool{}
	for _, a := range c.args {
		switch {
		case a.Name == "":
			problems = append(problems, fmt.Sprintf("argument %d has no name: go-mssqldb would send it as @p%d", a.Ordinal, a.Ordinal))
		case args[a.Name]:
			problems = append(problems, fmt.Sprintf("@%s is passed twice", a.Name))
		}
		args[a.Name] = a.Name != ""
	}

	toks := lexTSQL(c.query)
	used := map[string]bool{}
	declared := map[string]bool{}
	const (
		normal = iota
		declaring
		executing
	)
	mode, modeDepth, depth := normal, 0, 0
	expectName, execFirst := false, false
	for i, tk := range toks {
		switch tk.kind {
		case tokWord:
			up := strings.ToUpper(tk.text)
			if mode != normal && depth == modeDepth && statementStart[up] {
				mode = normal
			}
			switch {
			case mode == normal && up == "DECLARE":
				mode, modeDepth, expectName = declaring, depth, true
			case mode == normal && (up == "EXEC" || up == "EXECUTE"):
				mode, modeDepth, execFirst = executing, depth, true
			default:
				execFirst = false
			}
		case tokPunct:
			switch tk.text {
			case "(":
				if mode == executing && execFirst {
					mode = normal // EXEC (N'...'): dynamic SQL, a string
				}
				depth++
			case ")":
				depth--
			case ";":
				if depth == modeDepth {
					mode = normal
				}
			case ",":
				if mode == declaring && depth == modeDepth {
					expectName = true
				}
			}
			execFirst = false
		case tokVar:
			v := tk.text
			next := ""
			if i+1 < len(toks) {
				next = toks[i+1].text
			}
			switch {
			case mode == declaring && expectName && depth == modeDepth:
				expectName = false
				if declared[v] {
					problems = append(problems, fmt.Sprintf("@%s is declared twice (line %d): SQL Server rejects the batch", v, tk.line))
				}
				if args[v] {
					problems = append(problems, fmt.Sprintf("@%s is declared (line %d) and also passed as an argument: SQL Server says the name is already declared", v, tk.line))
				}
				declared[v] = true
				continue
			case mode == executing && !execFirst && next == "=" && depth == modeDepth:
				continue // a procedure's own parameter name: EXEC p @Name = value
			}
			execFirst = false
			if !used[v] && !declared[v] && !args[v] {
				problems = append(problems, fmt.Sprintf("@%s is used (line %d) but neither passed nor declared before: \"Must declare the scalar variable\"", v, tk.line))
			}
			used[v] = true
		}
	}

	for _, a := range c.args {
		if a.Name != "" && !used[a.Name] && !declared[a.Name] && !unusedOK(a.Name) {
			problems = append(problems, fmt.Sprintf("@%s is passed but the text never uses it (a typo on either side?)", a.Name))
		}
		if tvp, ok := a.Value.(mssql.TVP); ok {
			problems = append(problems, checkTVP(a.Name, tvp, types, toks)...)
		}
	}
	return problems
}

// statementStart ends a DECLARE or EXEC that has no semicolon.
var statementStart = map[string]bool{
	"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "SET": true, "IF": true,
	"BEGIN": true, "WHILE": true, "RETURN": true, "DECLARE": true, "EXEC": true, "EXECUTE": true, "WITH": true,
	"COMMIT": true, "ROLLBACK": true, "THROW": true, "PRINT": true,
}

// checkTVP checks a table-valued argument against the table type the
// migrations create, by go-mssqldb's rules: the row struct's fields, less
// those tagged tvp:"-" (or, untagged, json:"-"), are the columns in order.
func checkTVP(arg string, tvp mssql.TVP, types map[string][]typeColumn, toks []token) []string {
	var problems []string
	bad := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("@%s (TVP %s): ", arg, tvp.TypeName)+fmt.Sprintf(format, a...))
	}
	cols, ok := types[unbracket(tvp.TypeName)]
	if !ok {
		bad("no migration creates this table type (types: %s)", strings.Join(sortedKeys(types), ", "))
		return problems
	}
	rt := reflect.TypeOf(tvp.Value)
	if rt == nil || rt.Kind() != reflect.Slice || rt.Elem().Kind() != reflect.Struct {
		bad("Value is %v; go-mssqldb needs a slice of structs", rt)
		return problems
	}
	var fields []reflect.StructField
	for i := range rt.Elem().NumField() {
		f := rt.Elem().Field(i)
		tvpTag, hasTVP := f.Tag.Lookup("tvp")
		jsonTag, hasJSON := f.Tag.Lookup("json")
		if mssql.IsSkipField(tvpTag, hasTVP, jsonTag, hasJSON) {
			continue
		}
		if !f.IsExported() {
			bad("field %s.%s is unexported and not tagged tvp:\"-\": go-mssqldb panics reading it", rt.Elem(), f.Name)
		}
		fields = append(fields, f)
	}
	if len(fields) != len(cols) {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		colNames := make([]string, len(cols))
		for i, c := range cols {
			colNames[i] = c.name
		}
		bad("%s has %d fields (%s), the type has %d columns (%s)", rt.Elem(), len(fields), strings.Join(names, ", "),
			len(cols), strings.Join(colNames, ", "))
	}
	for i := range min(len(fields), len(cols)) {
		f, col := fields[i], cols[i]
		// Columns bind by position; alike names make a swap visible.
		if !strings.EqualFold(f.Name, col.name) {
			bad("field %d is %s, column %d is %s", i+1, f.Name, i+1, col.name)
		}
		goFam, nullable := goFamily(f.Type)
		if sqlFam := sqlFamily(col.sqlType); goFam != "" && sqlFam != "" && goFam != sqlFam {
			bad("field %s is %s (%s), column %s is %s (%s)", f.Name, f.Type, goFam, col.name, col.sqlType, sqlFam)
		}
		if nullable && col.notNull {
			bad("field %s (%s) can be NULL, column %s is NOT NULL", f.Name, f.Type, col.name)
		}
	}
	// The text reads the table through an alias, @arg AS x; every x.Column
	// must be a column of the type.
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].kind != tokVar || toks[i].text != arg || !strings.EqualFold(toks[i+1].text, "AS") || toks[i+2].kind != tokWord {
			continue
		}
		alias := toks[i+2].text
		for j := 0; j+2 < len(toks); j++ {
			if toks[j].kind == tokWord && strings.EqualFold(toks[j].text, alias) && toks[j+1].text == "." && toks[j+2].kind == tokWord &&
				!slices.ContainsFunc(cols, func(c typeColumn) bool { return c.name == toks[j+2].text }) {
				bad("%s.%s (line %d) is not a column of the type", alias, toks[j+2].text, toks[j+2].line)
			}
		}
	}
	return problems
}

// familyOfType holds the struct types go-mssqldb sends as a given family.
var familyOfType = map[reflect.Type]string{
	reflect.TypeFor[time.Time](): "time", reflect.TypeFor[civil.Date](): "time", reflect.TypeFor[civil.DateTime](): "time",
	reflect.TypeFor[civil.Time](): "time", reflect.TypeFor[sql.NullTime](): "time", reflect.TypeFor[mssql.NullDate](): "time",
	reflect.TypeFor[mssql.NullDateTime](): "time", reflect.TypeFor[mssql.NullTime](): "time",
	reflect.TypeFor[sql.NullInt64](): "integer", reflect.TypeFor[sql.NullInt32](): "integer",
	reflect.TypeFor[sql.NullInt16](): "integer", reflect.TypeFor[sql.NullByte](): "integer",
	reflect.TypeFor[sql.NullString](): "string", reflect.TypeFor[sql.NullBool](): "bool", reflect.TypeFor[sql.NullFloat64](): "float",
}

// goFamily is the SQL family a Go field type is sent as ("" when this
// test cannot tell) and whether the field can carry NULL.
func goFamily(t reflect.Type) (family string, nullable bool) {
	if t.Kind() == reflect.Pointer {
		f, _ := goFamily(t.Elem())
		return f, true
	}
	if f, ok := familyOfType[t]; ok {
		return f, strings.HasPrefix(t.Name(), "Null")
	}
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint8:
		return "integer", false
	case reflect.String:
		return "string", false
	case reflect.Bool:
		return "bool", false
	case reflect.Float32, reflect.Float64:
		return "float", false
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", false // nil is NULL, but an empty payload is not
		}
	}
	return "", false
}

func sqlFamily(sqlType string) string {
	switch sqlType {
	case "BIGINT", "INT", "SMALLINT", "TINYINT":
		return "integer"
	case "NVARCHAR", "VARCHAR", "NCHAR", "CHAR", "NTEXT", "TEXT":
		return "string"
	case "VARBINARY", "BINARY", "IMAGE":
		return "bytes"
	case "DATETIME2", "DATETIME", "SMALLDATETIME", "DATE", "TIME", "DATETIMEOFFSET":
		return "time"
	case "BIT":
		return "bool"
	case "FLOAT", "REAL":
		return "float"
	}
	return ""
}

// typeColumn is one column of a user-defined table type.
type typeColumn struct {
	name, sqlType string
	notNull       bool
}

var (
	createType = regexp.MustCompile(`(?is)\bCREATE\s+TYPE\s+([^\s(]+)\s+AS\s+TABLE\s*\(`)
	dropType   = regexp.MustCompile(`(?is)\bDROP\s+TYPE\s+(?:IF\s+EXISTS\s+)?([^\s;')]+)`)
)

// migratedTableTypes replays the CREATE TYPE ... AS TABLE and DROP TYPE
// statements of the rendered up migrations, in order.
func migratedTableTypes(t *testing.T, schemaName string) map[string][]typeColumn {
	t.Helper()
	types := map[string][]typeColumn{}
	for name, text := range upMigrations(t, schemaName) {
		type event struct {
			at       int
			name     string
			body     string
			creating bool
		}
		var events []event
		for _, m := range createType.FindAllStringSubmatchIndex(text, -1) {
			open := m[1] - 1
			end := matchingParen(text, open)
			if end < 0 {
				t.Fatalf("%s: unbalanced parentheses after %s", name, text[m[0]:m[1]])
			}
			events = append(events, event{m[0], text[m[2]:m[3]], text[open+1 : end], true})
		}
		for _, m := range dropType.FindAllStringSubmatchIndex(text, -1) {
			events = append(events, event{at: m[0], name: text[m[2]:m[3]]})
		}
		sort.Slice(events, func(i, j int) bool { return events[i].at < events[j].at })
		for _, e := range events {
			if e.creating {
				types[unbracket(e.name)] = parseColumns(e.body)
			} else {
				delete(types, unbracket(e.name))
			}
		}
	}
	if len(types) == 0 {
		t.Fatal("no CREATE TYPE ... AS TABLE in the migrations: the parser no longer fits them")
	}
	return types
}

func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// parseColumns reads a table type's body; table constraints are skipped.
func parseColumns(body string) []typeColumn {
	var cols []typeColumn
	depth, start := 0, 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) {
			switch body[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		def := strings.Fields(strings.ToUpper(body[start:i]))
		orig := strings.Fields(body[start:i])
		start = i + 1
		if len(def) < 2 || slices.Contains([]string{"PRIMARY", "UNIQUE", "CONSTRAINT", "INDEX", "CHECK", "FOREIGN"}, def[0]) {
			continue
		}
		rest := " " + strings.Join(def[1:], " ") + " "
		sqlType, _, _ := strings.Cut(def[1], "(")
		cols = append(cols, typeColumn{name: unbracket(orig[0]), sqlType: unbracket(sqlType),
			notNull: strings.Contains(rest, " NOT NULL") || strings.Contains(rest, " PRIMARY KEY")})
	}
	return cols
}

func unbracket(name string) string { return strings.NewReplacer("[", "", "]", "").Replace(name) }

// statementNames names every statement of q by its field, so a failure
// says which one.
func statementNames(q *queries) map[string]string {
	names := map[string]string{}
	v := reflect.ValueOf(q).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			names[f.String()] = name
		case reflect.Map:
			for it := f.MapRange(); it.Next(); {
				key := it.Key().String()
				if it.Key().Kind() != reflect.String {
					key = jobs.Table(it.Key().Int()).String()
				}
				names[it.Value().String()] = name + "[" + key + "]"
			}
		}
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedValues(m map[string]string) []string {
	vals := make([]string, 0, len(m))
	for _, v := range m {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	return vals
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// A T-SQL token: a word (keyword, identifier, number), a @variable (text
// without the @) or one punctuation character. Strings, comments and
// @@functions are dropped.
type token struct {
	kind byte
	text string
	line int
}

const (
	tokWord  = 'w'
	tokVar   = 'v'
	tokPunct = 'p'
)

func lexTSQL(s string) []token {
	var toks []token
	isIdent := func(c byte) bool {
		return c == '_' || c == '#' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	identEnd := func(i int) int {
		for i < len(s) && isIdent(s[i]) {
			i++
		}
		return i
	}
	// quotedEnd returns the index after the quote that closes s[i], where
	// a doubled closing quote is an escaped one.
	quotedEnd := func(i int, closing byte) int {
		for j := i + 1; j < len(s); j++ {
			if s[j] == closing {
				if j+1 < len(s) && s[j+1] == closing {
					j++
					continue
				}
				return j + 1
			}
		}
		return len(s)
	}
	for i := 0; i < len(s); {
		line := 1 + strings.Count(s[:i], "\n")
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case strings.HasPrefix(s[i:], "--"):
			if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
				i += n
			} else {
				i = len(s)
			}
		case strings.HasPrefix(s[i:], "/*"):
			depth := 0
			for ; i < len(s); i++ {
				if strings.HasPrefix(s[i:], "/*") {
					depth, i = depth+1, i+1
				} else if strings.HasPrefix(s[i:], "*/") {
					if depth, i = depth-1, i+1; depth == 0 {
						i++
						break
					}
				}
			}
		case c == '\'':
			i = quotedEnd(i, '\'')
		case c == '[' || c == '"':
			end := quotedEnd(i, map[byte]byte{'[': ']', '"': '"'}[c])
			toks = append(toks, token{tokWord, s[i:end], line})
			i = end
		case c == '@' && strings.HasPrefix(s[i:], "@@"):
			i = identEnd(i + 2)
		case c == '@':
			end := identEnd(i + 1)
			toks = append(toks, token{tokVar, s[i+1 : end], line})
			i = end
		case isIdent(c):
			end := identEnd(i)
			toks = append(toks, token{tokWord, s[i:end], line})
			i = end
		default:
			toks = append(toks, token{tokPunct, s[i : i+1], line})
			i++
		}
	}
	return toks
}

// TestLexTSQL pins the cases the binding check depends on.
func TestLexTSQL(t *testing.T) {
	stmt := "DECLARE @rc INT; -- @notInComment\n/* @nor /* nested */ @here */ EXEC @rc = sp_x @Param = @val, @P2 = N'@notInString'''; SELECT @@ROWCOUNT, [@notVar], @rc;"
	var vars []string
	for _, tk := range lexTSQL(stmt) {
		if tk.kind == tokVar {
			vars = append(vars, tk.text)
		}
	}
	if want := []string{"rc", "rc", "Param", "val", "P2", "rc"}; !slices.Equal(vars, want) {
		t.Errorf("variables %v, want %v", vars, want)
	}
	call := recordedCall{method: "test", query: stmt, args: []driver.NamedValue{{Name: "val", Ordinal: 1}}}
	if p := checkBinding(call, nil, func(string) bool { return false }); len(p) != 0 {
		t.Errorf("unexpected problems: %q", p)
	}
	call.query = "DECLARE @a INT = @b, @c TABLE (x INT, y INT); SELECT @a, @c, @d; DECLARE @a INT;"
	call.args = []driver.NamedValue{{Name: "b", Ordinal: 1}, {Name: "c", Ordinal: 2}, {Name: "b", Ordinal: 3}, {Name: "e", Ordinal: 4}}
	got := strings.Join(checkBinding(call, nil, func(string) bool { return false }), "\n")
	for _, want := range []string{"@b is passed twice", "@c is declared (line 1) and also passed", "@d is used", "@a is declared twice", "@e is passed but"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not report %q:\n%s", want, got)
		}
	}
}

// recorder is the fake database's memory: what each method sent, and the
// one row, if any, a statement answers with.
// recordingStore returns a store on the recording driver, schema chokaq_t,
// closed when the test ends.
func recordingStore(t testing.TB) (*Store, *recorder) {
	t.Helper()
	rec := &recorder{}
	s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rec
}

type recorder struct {
	mu     sync.Mutex
	method string
	// fail holds errors a statement answers with, one per call, first.
	fail map[string][]error
	rows map[string][]driver.Value
	// answer, when set, gives the row of a statement rows does not name.
	answer func(query string) []driver.Value
	// serve, when set, answers every statement with its rows or error
	// (the doctor's tests, doctor_test.go); onTx hears "begin",
	// "commit" and "rollback".
	serve func(c recordedCall) ([][]driver.Value, error)
	onTx  func(event string) error
	calls []recordedCall
	// refused lists the arguments the real driver would not take.
	refused []string
}

type recordedCall struct {
	method, query string
	args          []driver.NamedValue
	// inTx: sent inside a transaction of database/sql's.
	inTx bool
}

// start labels the statements that follow and returns how many came before.
func (r *recorder) start(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.method = method
	return len(r.calls)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) record(query string, args []driver.NamedValue, inTx bool) []driver.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recordedCall{r.method, query, slices.Clone(args), inTx})
	if row, ok := r.rows[query]; ok || r.answer == nil {
		return row
	}
	return r.answer(query)
}

func (r *recorder) lastQuery() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return ""
	}
	return r.calls[len(r.calls)-1].query
}

type recordingConnector struct{ r *recorder }

func (c recordingConnector) Connect(context.Context) (driver.Conn, error) {
	return recordingConn{r: c.r, st: &connState{}}, nil
}
func (c recordingConnector) Driver() driver.Driver { return noDriver{} }

type noDriver struct{}

func (noDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("open through the connector")
}

type recordingConn struct {
	r  *recorder
	st *connState
}

// connState is one connection's: whether a transaction is open on it.
type connState struct{ inTx bool }

var (
	_ driver.QueryerContext    = recordingConn{}
	_ driver.ExecerContext     = recordingConn{}
	_ driver.ConnBeginTx       = recordingConn{}
	_ driver.NamedValueChecker = recordingConn{}
)

func (recordingConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("the store never prepares statements")
}
func (recordingConn) Close() error { return nil }
func (c recordingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c recordingConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	c.st.inTx = true
	if err := c.r.txEvent("begin"); err != nil {
		return nil, err
	}
	return recordingTx(c), nil
}

func (r *recorder) txEvent(event string) error {
	if r.onTx != nil {
		return r.onTx(event)
	}
	return nil
}

// CheckNamedValue keeps every value as it is, so the checks see the
// mssql.TVP, sql.Null* and mssql.* values the store passes, after noting
// any that go-mssqldb's own CheckNamedValue would refuse.
func (c recordingConn) CheckNamedValue(nv *driver.NamedValue) error {
	probe := *nv
	if err := (&mssql.Conn{}).CheckNamedValue(&probe); err != nil && !errors.Is(err, driver.ErrRemoveArgument) {
		c.r.mu.Lock()
		c.r.refused = append(c.r.refused, fmt.Sprintf("%s: go-mssqldb refuses @%s (%T): %v", c.r.method, nv.Name, nv.Value, err))
		c.r.mu.Unlock()
	}
	return nil
}

func (c recordingConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	row := c.r.record(query, args, c.st.inTx)
	if c.r.serve != nil {
		rows, err := c.r.serve(recordedCall{c.r.label(), query, args, c.st.inTx})
		if err != nil {
			return nil, err
		}
		return &manyRows{rows: rows}, nil
	}
	if err := c.r.failure(query); err != nil {
		return nil, err
	}
	return &oneRow{row: row}, nil
}

// failNext makes the next call of query fail with err.
func (r *recorder) failNext(query string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail == nil {
		r.fail = map[string][]error{}
	}
	r.fail[query] = append(r.fail[query], err)
}

func (r *recorder) failure(query string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.fail[query]
	if len(errs) == 0 {
		return nil
	}
	r.fail[query] = errs[1:]
	return errs[0]
}

func (c recordingConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.r.record(query, args, c.st.inTx)
	if c.r.serve != nil {
		if _, err := c.r.serve(recordedCall{c.r.label(), query, args, c.st.inTx}); err != nil {
			return nil, err
		}
	}
	return driver.RowsAffected(0), nil
}

func (r *recorder) label() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.method
}

type recordingTx recordingConn

func (t recordingTx) Commit() error {
	t.st.inTx = false
	return t.r.txEvent("commit")
}

func (t recordingTx) Rollback() error {
	t.st.inTx = false
	return t.r.txEvent("rollback")
}

// manyRows returns rows, one by one; a row of one nextResultSet value
// ends a result set, and the rows after it are the next set's.
type manyRows struct{ rows [][]driver.Value }

// nextResultSet ends a result set in manyRows' rows.
type nextResultSet struct{}

func isSetEnd(row []driver.Value) bool {
	if len(row) != 1 {
		return false
	}
	_, ok := row[0].(nextResultSet)
	return ok
}

func (r *manyRows) Columns() []string {
	if len(r.rows) == 0 || isSetEnd(r.rows[0]) {
		return []string{"x"}
	}
	return make([]string, len(r.rows[0]))
}
func (r *manyRows) Close() error { return nil }
func (r *manyRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 || isSetEnd(r.rows[0]) {
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}

// HasNextResultSet and NextResultSet implement driver.RowsNextResultSet.
func (r *manyRows) HasNextResultSet() bool {
	return slices.ContainsFunc(r.rows, isSetEnd)
}

func (r *manyRows) NextResultSet() error {
	i := slices.IndexFunc(r.rows, isSetEnd)
	if i < 0 {
		return io.EOF
	}
	r.rows = r.rows[i+1:]
	return nil
}

// oneRow returns row once, or no rows when row is nil.
type oneRow struct {
	row  []driver.Value
	done bool
}

func (r *oneRow) Columns() []string { return make([]string, len(r.row)) }
func (r *oneRow) Close() error      { return nil }
func (r *oneRow) Next(dest []driver.Value) error {
	if r.done || r.row == nil {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// workflowOf is a workflow of three tasks of job p: a diamond's fan-out
// and fan-in, every policy.
func workflowOf(p jobs.EnqueueParams) jobs.WorkflowParams {
	return jobs.WorkflowParams{Name: "nightly", Tasks: []jobs.WorkflowTask{
		{Name: "load", Job: p},
		{Name: "left", Job: p, After: []string{"load"}, OnParentFailure: jobs.DependencyWait},
		{Name: "report", Job: p, After: []string{"load", "left"}, OnParentFailure: jobs.DependencyRunAnyway},
	}}
}
