package sqlserver

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

// The server-free checks of the workflow statements (ADR 0034): what the
// release's durability, its bound and its lock order depend on.

// Every move out of JobsHot writes the ReleaseCursor of a workflow task's
// new row in its own statement, so no crash comes between a parent's
// finish and what it owes its children.
func TestEveryMoveOwesItsWorkflowRelease(t *testing.T) {
	into := regexp.MustCompile(`INTO \[my_schema\]\.(JobsArchive|JobsDLQ) \(([^)]*)\)`)
	moves := 0
	for name, stmt := range renderedStatements() {
		for _, m := range into.FindAllStringSubmatch(stmt, -1) {
			moves++
			if !strings.Contains(m[2], "ReleaseCursor") || !strings.Contains(m[2], "WorkflowId") {
				t.Errorf("%s: a move into %s that does not write the task's WorkflowId and ReleaseCursor", name, m[1])
			}
		}
	}
	if moves < 10 {
		t.Fatalf("found %d moves into the archive and the DLQ; has their form changed?", moves)
	}
	if !strings.Contains(workflowFromDeleted, "CASE WHEN deleted.WorkflowId IS NOT NULL THEN CAST(0 AS BIGINT) END") {
		t.Errorf("a task's move must open its release at cursor 0: %s", workflowFromDeleted)
	}
}

// A purge or trim of a task writes its WorkflowGone row in its own
// transaction, so a child waiting on a purged parent is settled, and the
// workflow's rows go with its last task.
func TestPurgeAndTrimLeaveWorkflowGoneRows(t *testing.T) {
	all := renderedStatements()
	for _, name := range []string{"purge.archive", "purge.dlq", "trim.archive", "trim.dlq"} {
		stmt := all[name]
		gone, commit := strings.Index(stmt, "INSERT INTO [my_schema].WorkflowGone"), strings.LastIndex(stmt, "COMMIT TRANSACTION")
		if gone < 0 || gone > commit {
			t.Errorf("%s: must write the WorkflowGone rows of the tasks it deleted before COMMIT", name)
		}
		failed := "0, 0 FROM @gone"
		if strings.HasSuffix(name, "dlq") {
			failed = "1, 0 FROM @gone"
		}
		if !strings.Contains(stmt, failed) {
			t.Errorf("%s: a gone task's Failed must be %q", name, failed[:1])
		}
	}
}

// One release step locks a bounded number of rows, below lock
// escalation, whatever the fan-out: TOP on every pick and a budget of
// edges; it reads past owed rows a move or purge holds, but never past a
// waiting child, which it must not skip; and it takes the workflow lock
// first, without waiting.
func TestReleaseStepIsBoundedAndSkipsNoChild(t *testing.T) {
	q := render("my_schema")
	step := q.releaseTasks
	if n := strings.Count(step, "SELECT TOP (@maxParents)"); n != 3 {
		t.Errorf("release step: %d picks of owed tasks bounded by @maxParents, want 3 (archive, DLQ, gone)", n)
	}
	for _, pick := range []string{"JobsArchive AS a", "JobsDLQ AS d", "WorkflowGone AS g"} {
		if !strings.Contains(step, "FROM [my_schema]."+pick+" WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)") {
			t.Errorf("release step: the owed pick of %s must read past held rows", pick)
		}
	}
	if !strings.Contains(step, "SELECT TOP (@budget) e.ParentId") || !strings.Contains(step, "WHILE @budget > 0") {
		t.Error("release step: the edges it walks must be bounded by one budget for the whole step")
	}
	child := "LEFT JOIN [my_schema].JobsHot AS h WITH (FORCESEEK, UPDLOCK, ROWLOCK, READCOMMITTEDLOCK) ON x.State = 0 AND h.Id = x.ChildId AND h.Status = 5"
	if !strings.Contains(step, child) {
		t.Errorf("release step: the waiting children of open edges only must be update-locked by seek, never read past: want %q", child)
	}
	// The walk reads past (only an open EnqueueWorkflowTx holds edges
	// under the workflow lock, of tasks of its own); marking an edge done
	// never does.
	walk := "FROM [my_schema].WorkflowEdges AS e WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)\n        WHERE e.ParentId = @p AND e.ChildId > @cur"
	if !strings.Contains(step, walk) || strings.Count(step, "WorkflowEdges AS e WITH (UPDLOCK, READPAST") != 1 {
		t.Errorf("release step: one walk of one parent's edges after its cursor reads past: want %q", walk)
	}
	if !strings.Contains(step, "UPDATE e SET State = 1\n    OUTPUT inserted.ChildId INTO @done (ChildId)\n    FROM [my_schema].WorkflowEdges AS e WITH (FORCESEEK, ROWLOCK)") {
		t.Error("release step: marking an edge done must not read past it")
	}
	// The cursor writes read past a row a purge or trim holds: waiting
	// would close a cycle through the row's IX_Release key (ADR 0016).
	for _, w := range []string{"JobsArchive AS a", "JobsDLQ AS d", "WorkflowGone AS g"} {
		if !strings.Contains(step, "FROM [my_schema]."+w+" WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)") {
			t.Errorf("release step: its cursor write of %s must read past a purge's lock", w)
		}
	}
	lock, firstRow := strings.Index(step, "@LockTimeout = 0"), strings.Index(step, "FROM [my_schema].JobsArchive")
	if lock < 0 || firstRow < lock {
		t.Error("release step: the workflow lock, without waiting, before any row")
	}
	// Parents of three sources, two locks each (the index key and the
	// row), the edges and the children they lead to, each one lock, and
	// the index keys the writes touch: well below 5,000.
	if n := 3*releaseMaxParents*2 + releaseMaxEdges*3; n >= 5000 {
		t.Errorf("release step: up to %d locks, at or past lock escalation's 5,000", n)
	}
}

// The statements that change the edges of tasks that exist take the
// workflow lock before any row, as the release step does, so none of
// them runs while a step walks the edges (ADR 0016).
func TestFanOutAndResurrectTakeTheWorkflowLockFirst(t *testing.T) {
	q := render("my_schema")
	for name, stmt := range map[string]string{"addTasksBegin": q.addTasksBegin, "resurrect": q.resurrect} {
		lock := strings.Index(stmt, "N'chokaq:MY_SCHEMA:workflows'")
		if lock < 0 {
			t.Errorf("%s: takes no workflow lock", name)
			continue
		}
		for _, row := range []string{"WITH (UPDLOCK, ROWLOCK)", "DELETE d"} {
			if i := strings.Index(stmt, row); i >= 0 && i < lock {
				t.Errorf("%s: locks a row (%s) before the workflow lock", name, row)
			}
		}
	}
	if !strings.Contains(q.addTasksBegin, "WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2") {
		t.Error("addTasksBegin: the fan-out is fenced by the adding job's lease: Id, RunLease and Status 2")
	}
	if strings.Contains(q.insertWorkflowTasks, "READPAST") || strings.Contains(q.insertWorkflowTasks, "BEGIN TRANSACTION") {
		t.Error("insertWorkflowTasks runs in its caller's transaction (maybe SNAPSHOT): no READPAST and no transaction of its own")
	}
}

// A workflow goes in parts of at most insertBatch tasks and
// workflowEdgeBatch edges, in one transaction: the first part takes the
// ID range of every task, the later ones use it; a task waits on as many
// parents as it names, and an edge names its parent by its place among the
// tasks.
func TestEnqueueWorkflowInsertsInBoundedParts(t *testing.T) {
	s, rec := recordingStore(t)
	rec.rows = map[string][]driver.Value{s.q.insertWorkflowTasks: {int64(9), int64(1000)}}
	const n = 1200
	p := jobs.WorkflowParams{Name: "fan", Tasks: []jobs.WorkflowTask{{Name: "root", Job: jobs.EnqueueParams{Type: "t"}}}}
	var all []string
	for i := 1; i < n-1; i++ {
		name := fmt.Sprint("leaf-", i)
		all = append(all, name)
		p.Tasks = append(p.Tasks, jobs.WorkflowTask{Name: name, Job: jobs.EnqueueParams{Type: "t"}, After: []string{"root"}})
	}
	p.Tasks = append(p.Tasks, jobs.WorkflowTask{Name: "report", Job: jobs.EnqueueParams{Type: "t"}, After: all, OnParentFailure: jobs.DependencyRunAnyway})
	r, err := s.EnqueueWorkflow(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != 9 || r.Jobs["root"] != 1000 || r.Jobs["report"] != 1000+n-1 {
		t.Errorf("result: workflow %d, root %d, report %d", r.ID, r.Jobs["root"], r.Jobs["report"])
	}
	var parts, tasks, edges int
	for _, c := range rec.calls {
		if c.query != s.q.insertWorkflowTasks {
			continue
		}
		a := argsOf(c)
		items, rows, es := a.tvp("items").([]insertRow), a.tvp("tasks").([]workflowTaskRow), a.tvp("edges").([]workflowEdgeRow)
		if len(items) > s.insertBatch || len(es) > workflowEdgeBatch || len(items) != len(rows) {
			t.Errorf("part %d: %d items, %d task rows, %d edges", parts, len(items), len(rows), len(es))
		}
		if first := a.i64("firstId"); (parts == 0) != (first == 0) || parts > 0 && (first != 1000 || a.i64("workflowId") != 9) {
			t.Errorf("part %d: firstId %d, workflowId %d", parts, first, a.i64("workflowId"))
		}
		if a.i64("base") != int64(tasks) || a.i64("total") != n {
			t.Errorf("part %d: base %d total %d, want %d %d", parts, a.i64("base"), a.i64("total"), tasks, n)
		}
		for _, row := range rows {
			want := 1
			switch name := row.WorkflowTask; name {
			case "root":
				want = 0
			case "report":
				want = n - 2
				if row.OnParentFailure != int32(jobs.DependencyRunAnyway) {
					t.Errorf("report: policy %d", row.OnParentFailure)
				}
			}
			if int(row.WaitingOn) != want {
				t.Errorf("task %s waits on %d, want %d", row.WorkflowTask, row.WaitingOn, want)
			}
		}
		for _, e := range es {
			if e.ParentOrd == nil || e.ParentID != nil || *e.ParentOrd >= e.ChildOrd {
				t.Errorf("edge %v: a new parent, by its place, before its child", e)
			}
		}
		parts, tasks, edges = parts+1, tasks+len(items), edges+len(es)
	}
	if tasks != n || edges != 2*(n-2) || parts != 3 {
		t.Errorf("%d parts, %d tasks, %d edges; want 3, %d, %d", parts, tasks, edges, n, 2*(n-2))
	}
}

// A release owed, as the probe reports it, is work, and the next claim runs
// release steps first: while a step says more is owed, up to
// releaseStepsPerClaim; once one says nothing is, the claims after it run
// none.
func TestAReleaseOwedRunsBeforeTheNextClaim(t *testing.T) {
	s, rec := recordingStore(t)
	rec.rows = map[string][]driver.Value{s.q.dueProbe: {false, true}, s.q.releaseTasks: {true, false}}
	ctx := t.Context()
	due, err := s.Probe(ctx, []string{"mail"})
	if err != nil || !due {
		t.Fatalf("probe with a release owed: %v %v, want work", due, err)
	}
	steps := func() int {
		n := 0
		for _, c := range rec.calls {
			if c.query == s.q.releaseTasks {
				n++
			}
		}
		rec.calls = nil
		return n
	}
	claim := func() {
		if _, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	claim()
	if n := steps(); n != releaseStepsPerClaim {
		t.Errorf("a claim with more owed ran %d release steps, want %d", n, releaseStepsPerClaim)
	}
	rec.rows[s.q.releaseTasks] = []driver.Value{false, false}
	claim()
	if n := steps(); n != 1 {
		t.Errorf("a claim ran %d release steps, want 1 (it says nothing more is owed)", n)
	}
	claim()
	if n := steps(); n != 0 {
		t.Errorf("a claim after the release was paid ran %d release steps, want 0", n)
	}
	rec.rows[s.q.releaseTasks] = []driver.Value{false, true} // another process holds the lock
	s.owed.Store(true)
	claim()
	if n := steps(); n != 1 || !s.owed.Load() {
		t.Errorf("a busy step: %d steps, owed %v; want 1 and still owed", n, s.owed.Load())
	}
	// A copy on a transaction (the doctor's) runs no step of every
	// workflow: it would lock an application's tasks until the rollback.
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	in := s.on(tx)
	in.owed.Store(true)
	if _, err := in.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if n := steps(); n != 0 {
		t.Errorf("a claim inside the doctor's transaction ran %d release steps, want 0", n)
	}
	if s.owed == in.owed {
		t.Error("the copy on a transaction shares the store's owed flag")
	}
}

// A fan-out is fenced by its job's lease at its last insert: the earlier
// parts carry no fence, the last the job's ID and lease, and the server's
// 51004 (the lease is gone) is ErrLeaseLost. A workflow without edges
// still sends an empty edge list, never a nil one, which the driver
// refuses.
func TestFanOutIsFencedAtItsLastInsert(t *testing.T) {
	s, rec := recordingStore(t)
	ref := jobs.LeaseRef{ID: 42, Lease: 3}
	rec.rows = map[string][]driver.Value{s.q.addTasksBegin: {true, int64(7), "import", "nightly"}, s.q.insertWorkflowTasks: {int64(7), int64(100)}}
	var tasks []jobs.WorkflowTask
	for i := range s.insertBatch + 1 {
		tasks = append(tasks, jobs.WorkflowTask{Name: fmt.Sprint("file-", i), Job: jobs.EnqueueParams{Type: "t"}})
	}
	if _, err := s.AddWorkflowTasks(t.Context(), jobs.AddTasksParams{Ref: ref, Tasks: tasks}); err != nil {
		t.Fatal(err)
	}
	var fences []jobs.LeaseRef
	for _, c := range rec.calls {
		if c.query == s.q.insertWorkflowTasks {
			a := argsOf(c)
			fences = append(fences, jobs.LeaseRef{ID: a.i64("fenceId"), Lease: a.i64("fenceLease")})
			if es, ok := a.tvp("edges").([]workflowEdgeRow); !ok || es == nil {
				t.Errorf("the edge list is %#v: nil is refused by the driver", a.tvp("edges"))
			}
		}
	}
	if len(fences) != 2 || fences[0] != (jobs.LeaseRef{}) || fences[1] != ref {
		t.Errorf("fences %v: want none on the first part, the job's lease on the last", fences)
	}
	rec.failNext(s.q.insertWorkflowTasks, mssql.Error{Number: 51004, Message: "lease lost"})
	if _, err := s.AddWorkflowTasks(t.Context(), jobs.AddTasksParams{Ref: ref, Tasks: tasks[:1]}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("a fence that fails: %v, want ErrLeaseLost", err)
	}
}

// The workflows a release step reports ended (its second result) reach
// WithWorkflowEnded once each, after the step, with their state; a copy
// on a transaction (the doctor's, rolled back) reports none.
func TestReleaseStepReportsTheWorkflowsThatEnded(t *testing.T) {
	var got []jobs.Workflow
	rec := &recorder{}
	s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"), WithWorkflowEnded(func(w jobs.Workflow) { got = append(got, w) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec.serve = func(c recordedCall) ([][]driver.Value, error) {
		if c.query == s.q.releaseTasks {
			return [][]driver.Value{{false, false}, {nextResultSet{}}, {int64(7), false}, {int64(8), true}}, nil
		}
		return nil, nil
	}
	if _, _, err := s.releaseStep(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	want := []jobs.Workflow{{ID: 7, State: jobs.WorkflowSucceeded}, {ID: 8, State: jobs.WorkflowFailed}}
	if !slices.Equal(got, want) {
		t.Errorf("ended %v, want %v", got, want)
	}
	tx, err := s.DB().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	got = nil
	if _, _, err := s.on(tx).releaseStep(t.Context(), 9); err != nil || got != nil {
		t.Errorf("the doctor's copy reported %v (%v), want none", got, err)
	}
	if !strings.Contains(s.q.releaseTasks, "WHERE o.Source IN (1, 2) AND o.Walked = 1 AND o.NewCursor IS NULL") {
		t.Error("only a finished task paid in full ends its workflow, never a gone one's row")
	}
}
