package storetest

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
)

// Workflows (ADR 0034): tasks inserted all or none, each claimable once
// every parent succeeded, a failed parent applying its children's policy.

// task builds a workflow task of the default queue.
func task(name string, after ...string) jobs.WorkflowTask {
	return jobs.WorkflowTask{Name: name, Job: jobs.EnqueueParams{Type: "wf." + name}, After: after}
}

// enqueueWorkflow enqueues the tasks as one workflow, skipping the case on
// a store without workflows.
func enqueueWorkflow(t *testing.T, h *Harness, tasks ...jobs.WorkflowTask) jobs.WorkflowResult {
	t.Helper()
	we, ok := h.Store.(jobs.WorkflowEnqueuer)
	if !ok {
		t.Skipf("%T has no jobs.WorkflowEnqueuer", h.Store)
	}
	r, err := we.EnqueueWorkflow(ctxOf(t), jobs.WorkflowParams{Name: t.Name(), Tasks: tasks})
	if errors.Is(err, jobs.ErrWorkflowsUnsupported) {
		t.Skipf("%T: %v", h.Store, err)
	}
	if err != nil {
		t.Fatalf("EnqueueWorkflow: %v", err)
	}
	return r
}

// addTasks adds tasks from the running job ref, skipping the case on a
// store that cannot.
func addTasks(t *testing.T, h *Harness, ref jobs.LeaseRef, tasks ...jobs.WorkflowTask) map[string]int64 {
	t.Helper()
	ext, ok := h.Store.(jobs.WorkflowExtender)
	if !ok {
		t.Skipf("%T has no jobs.WorkflowExtender", h.Store)
	}
	ids, err := ext.AddWorkflowTasks(ctxOf(t), jobs.AddTasksParams{Ref: ref, Tasks: tasks})
	if err != nil {
		t.Fatalf("AddWorkflowTasks: %v", err)
	}
	return ids
}

func workflowAdmin(t *testing.T, h *Harness) jobs.WorkflowAdmin {
	t.Helper()
	wa, ok := h.Store.(jobs.WorkflowAdmin)
	if !ok {
		t.Skipf("%T has no jobs.WorkflowAdmin", h.Store)
	}
	return wa
}

// claimable claims every claimable job and returns the task names of the
// claimed, sorted, with the jobs by task name.
func claimable(t *testing.T, h *Harness) ([]string, map[string]*jobs.Job) {
	t.Helper()
	got := claim(t, h, worker1, jobs.MaxClaimLimit)
	names, by := []string{}, map[string]*jobs.Job{}
	for _, j := range got {
		names = append(names, j.WorkflowTask)
		by[j.WorkflowTask] = j
	}
	slices.Sort(names)
	return names, by
}

// succeed starts and completes a claimed job.
func succeed(t *testing.T, h *Harness, j *jobs.Job) {
	t.Helper()
	start(t, h, j.Ref())
	if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
		t.Fatalf("Complete(%s): %v", j.WorkflowTask, err)
	}
}

// fail starts and dead-letters a claimed job.
func fail(t *testing.T, h *Harness, j *jobs.Job) {
	t.Helper()
	start(t, h, j.Ref())
	if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "boom"}); err != nil {
		t.Fatalf("DeadLetter(%s): %v", j.WorkflowTask, err)
	}
}

func wantClaimable(t *testing.T, h *Harness, want ...string) map[string]*jobs.Job {
	t.Helper()
	names, by := claimable(t, h)
	if slices.Sort(want); !slices.Equal(names, want) {
		t.Fatalf("claimable tasks %v, want %v", names, want)
	}
	return by
}

func wantDependencyFailed(t *testing.T, h *Harness, id int64) {
	t.Helper()
	settle(t, h)
	if j := get(t, h, id); j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonDependencyFailed {
		t.Fatalf("job %d (%s) is %v %v, want dead-lettered as DependencyFailed", id, j.WorkflowTask, j.Table, j.FailureReason)
	}
}

// settle runs h.Settle, if any.
func settle(t *testing.T, h *Harness) {
	t.Helper()
	if h.Settle != nil {
		h.Settle(t)
	}
}

// failedParent enqueues a -> b, b with policy, and dead-letters a.
func failedParent(t *testing.T, h *Harness, policy jobs.DependencyPolicy) jobs.WorkflowResult {
	t.Helper()
	b := task("b", "a")
	b.OnParentFailure = policy
	r := enqueueWorkflow(t, h, task("a"), b)
	fail(t, h, wantClaimable(t, h, "a")["a"])
	return r
}

var workflowCases = []testCase{
	{"Chain", func(t *testing.T, h *Harness) {
		r := enqueueWorkflow(t, h, task("a"), task("b", "a"), task("c", "b"))
		a := wantClaimable(t, h, "a")["a"]
		if j := get(t, h, r.Jobs["b"]); j.WorkflowID != r.ID || j.WorkflowTask != "b" || j.Status != jobs.StatusPending {
			t.Fatalf("task b: workflow %d task %q status %v", j.WorkflowID, j.WorkflowTask, j.Status)
		}
		if st := stats(t, h); st.WaitingOnParents != 2 {
			t.Errorf("waiting on parents: %d, want 2", st.WaitingOnParents)
		}
		succeed(t, h, a)
		succeed(t, h, wantClaimable(t, h, "b")["b"])
		succeed(t, h, wantClaimable(t, h, "c")["c"])
		wd, err := workflowAdmin(t, h).GetWorkflow(ctxOf(t), r.ID)
		if err != nil || wd.State != jobs.WorkflowSucceeded || wd.Succeeded != 3 || len(wd.Tasks) != 3 || wd.Tasks[2].Parents[0] != "b" {
			t.Fatalf("workflow after the chain: %+v, %v", wd, err)
		}
	}},
	{"DiamondWaitsForBothParents", func(t *testing.T, h *Harness) {
		enqueueWorkflow(t, h, task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"))
		succeed(t, h, wantClaimable(t, h, "a")["a"])
		bc := wantClaimable(t, h, "b", "c")
		succeed(t, h, bc["b"])
		wantClaimable(t, h) // d waits for c
		succeed(t, h, bc["c"])
		wantClaimable(t, h, "d")
	}},
	{"FanOutOf1000", func(t *testing.T, h *Harness) {
		tasks := []jobs.WorkflowTask{task("root")}
		for i := range 1000 {
			tasks = append(tasks, task(fmt.Sprintf("t%04d", i), "root"))
		}
		enqueueWorkflow(t, h, tasks...)
		succeed(t, h, wantClaimable(t, h, "root")["root"])
		if names, _ := claimable(t, h); len(names) != 1000 {
			t.Fatalf("after the root succeeded: %d of 1000 children claimable", len(names))
		}
	}},
	{"FanInOf50", func(t *testing.T, h *Harness) {
		var tasks []jobs.WorkflowTask
		var parents []string
		for i := range 50 {
			parents = append(parents, fmt.Sprintf("p%02d", i))
			tasks = append(tasks, task(parents[i]))
		}
		enqueueWorkflow(t, h, append(tasks, task("sink", parents...))...)
		ps := wantClaimable(t, h, parents...)
		for _, name := range parents[:49] {
			succeed(t, h, ps[name])
		}
		wantClaimable(t, h) // one parent left
		succeed(t, h, ps[parents[49]])
		wantClaimable(t, h, "sink")
	}},
	{"FailedParentCancelsItsDependentsDownTheGraph", func(t *testing.T, h *Harness) {
		r := enqueueWorkflow(t, h, task("a"), task("b", "a"), task("c", "b"), task("other"))
		by := wantClaimable(t, h, "a", "other")
		fail(t, h, by["a"])
		wantDependencyFailed(t, h, r.Jobs["b"])
		wantDependencyFailed(t, h, r.Jobs["c"])
		if st := stats(t, h); st.WaitingOnParents != 0 {
			t.Errorf("waiting on parents after the cancels: %d", st.WaitingOnParents)
		}
		succeed(t, h, by["other"])
		wd, err := workflowAdmin(t, h).GetWorkflow(ctxOf(t), r.ID)
		if err != nil || wd.State != jobs.WorkflowFailed || wd.Failed != 3 || wd.Succeeded != 1 {
			t.Fatalf("workflow: %+v, %v", wd.Workflow, err)
		}
	}},
	{"RunAnywayRunsAfterAFailedParent", func(t *testing.T, h *Harness) {
		failedParent(t, h, jobs.DependencyRunAnyway)
		wantClaimable(t, h, "b")
	}},
	{"WaitHoldsUntilTheParentIsResurrectedAndSucceeds", func(t *testing.T, h *Harness) {
		r := failedParent(t, h, jobs.DependencyWait)
		wantClaimable(t, h)
		wd, err := workflowAdmin(t, h).GetWorkflow(ctxOf(t), r.ID)
		if err != nil || wd.Waiting != 1 || wd.Tasks[1].WaitingOn != 1 || !wd.Tasks[1].WaitingOnFailed {
			t.Fatalf("b waits visibly on its failed parent: %+v, %v", wd, err)
		}
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{r.Jobs["a"]}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect: %d, %v", n, err)
		}
		succeed(t, h, wantClaimable(t, h, "a")["a"]) // b still waits while a runs again
		wantClaimable(t, h, "b")
	}},
	{"WaitingOnAPurgedParentIsCancelled", func(t *testing.T, h *Harness) {
		r := failedParent(t, h, jobs.DependencyWait)
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{r.Jobs["a"]}}}); err != nil || n != 1 {
			t.Fatalf("Purge: %d, %v", n, err)
		}
		wantDependencyFailed(t, h, r.Jobs["b"])
	}},
	{"ZombieParentAppliesThePolicy", func(t *testing.T, h *Harness) {
		r := enqueueWorkflow(t, h, task("a"), task("b", "a"))
		a := wantClaimable(t, h, "a")["a"]
		start(t, h, a.Ref())
		h.Advance(t, globalZombie+1)
		if rs := rescueZombies(t, h); len(rs) != 1 {
			t.Fatalf("rescued %v", rs)
		}
		wantDependencyFailed(t, h, r.Jobs["b"])
	}},
	{"CancelOfAWholeWorkflow", func(t *testing.T, h *Harness) {
		r := enqueueWorkflow(t, h, task("a"), task("b", "a"), task("c", "b"))
		start(t, h, wantClaimable(t, h, "a")["a"].Ref())
		res, err := workflowAdmin(t, h).CancelWorkflow(ctxOf(t), jobs.CancelWorkflowParams{ID: r.ID, By: "ops", Reason: "not needed"})
		if err != nil || len(res) != 3 {
			t.Fatalf("CancelWorkflow: %v, %v", res, err)
		}
		for _, name := range []string{"b", "c"} {
			if j := get(t, h, r.Jobs[name]); j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonCancelled {
				t.Errorf("%s: %v %v, want cancelled (the operator's cancel, not its parent's)", name, j.Table, j.FailureReason)
			}
		}
		if j := get(t, h, r.Jobs["a"]); j.CancelRequestedAt.IsZero() {
			t.Error("the running task's cancel was not requested")
		}
	}},
	// A running task fans out (issue 32): tasks after itself, one after
	// a sibling already archived, and a report after the new ones.
	{"FanOutAtRunTime", func(t *testing.T, h *Harness) {
		r := enqueueWorkflow(t, h, task("setup"), task("scan", "setup"))
		succeed(t, h, wantClaimable(t, h, "setup")["setup"])
		scan := wantClaimable(t, h, "scan")["scan"]
		start(t, h, scan.Ref())
		added := addTasks(t, h, scan.Ref(), task("file-1", "scan"), task("file-2", "scan"), task("after-setup", "setup"),
			task("report", "file-1", "file-2"))
		if len(added) != 4 {
			t.Fatalf("added %v", added)
		}
		wantClaimable(t, h, "after-setup") // its parent had succeeded already
		if err := h.Store.Complete(ctxOf(t), scan.Ref()); err != nil {
			t.Fatal(err)
		}
		files := wantClaimable(t, h, "file-1", "file-2")
		succeed(t, h, files["file-1"])
		succeed(t, h, files["file-2"])
		wantClaimable(t, h, "report")
		if j := get(t, h, added["report"]); j.WorkflowID != r.ID {
			t.Fatalf("the report is in workflow %d, want %d", j.WorkflowID, r.ID)
		}
	}},
	// A handler that has lost its job (rescued as a zombie) adds nothing;
	// nor does a refused addition (a name taken, a cycle).
	{"LostLeaseAddsNothing", func(t *testing.T, h *Harness) {
		enqueueWorkflow(t, h, task("scan"))
		scan := wantClaimable(t, h, "scan")["scan"]
		start(t, h, scan.Ref())
		ext, ok := h.Store.(jobs.WorkflowExtender)
		if !ok {
			t.Skipf("%T has no jobs.WorkflowExtender", h.Store)
		}
		for _, bad := range [][]jobs.WorkflowTask{{task("scan")}, {task("x", "y"), task("y", "x")}} {
			var we *jobs.WorkflowError
			if _, err := ext.AddWorkflowTasks(ctxOf(t), jobs.AddTasksParams{Ref: scan.Ref(), Tasks: bad}); !errors.As(err, &we) {
				t.Errorf("adding %v: %v, want a WorkflowError", bad, err)
			}
		}
		h.Advance(t, globalZombie+1)
		if rs := rescueZombies(t, h); len(rs) != 1 {
			t.Fatalf("rescued %v", rs)
		}
		if _, err := ext.AddWorkflowTasks(ctxOf(t), jobs.AddTasksParams{Ref: scan.Ref(), Tasks: []jobs.WorkflowTask{task("file-1")}}); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("adding from a lost lease: %v, want ErrLeaseLost", err)
		}
		if n, err := h.Store.CountJobs(ctxOf(t), jobs.TableHot, jobs.Filter{}); err != nil || n != 0 {
			t.Fatalf("%d hot jobs after the refused additions (%v), want none", n, err)
		}
	}},
	{"CancelOfAWorkflowOfMoreTasksThanOneCancelTakes", func(t *testing.T, h *Harness) {
		// A store may pass the hot tasks to its own Cancel, which takes at
		// most jobs.MaxCancelIDs at once: the workflow's cancel must not.
		tasks := make([]jobs.WorkflowTask, jobs.MaxCancelIDs+1)
		for i := range tasks {
			tasks[i] = task(fmt.Sprintf("t%04d", i))
		}
		r := enqueueWorkflow(t, h, tasks...)
		res, err := workflowAdmin(t, h).CancelWorkflow(ctxOf(t), jobs.CancelWorkflowParams{ID: r.ID, By: "ops", Reason: "not needed"})
		if err != nil || len(res) != len(tasks) {
			t.Fatalf("CancelWorkflow: %d results, %v", len(res), err)
		}
		for _, c := range res {
			if c.Outcome != jobs.CancelDone {
				t.Fatalf("job %d: %v, want cancelled", c.ID, c.Outcome)
			}
		}
	}},
	// Inside a caller's transaction (a store on database/sql that offers
	// it), a workflow exists if and only if the transaction commits.
	{"InsideARolledBackTransactionNothingExists", func(t *testing.T, h *Harness) {
		txs, ok := h.Store.(jobs.WorkflowTxEnqueuer)
		db, hasDB := h.Store.(interface{ DB() *sql.DB })
		if !ok || !hasDB {
			t.Skipf("%T has no jobs.WorkflowTxEnqueuer on a *sql.DB", h.Store)
		}
		for _, commit := range []bool{false, true} {
			tx, err := db.DB().BeginTx(ctxOf(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := txs.EnqueueWorkflowTx(ctxOf(t), tx, jobs.WorkflowParams{Name: t.Name(), Tasks: []jobs.WorkflowTask{task("a"), task("b", "a")}})
			if err != nil {
				tx.Rollback()
				t.Fatalf("EnqueueWorkflowTx: %v", err)
			}
			if !commit {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				if n, err := h.Store.CountJobs(ctxOf(t), jobs.TableHot, jobs.Filter{}); err != nil || n != 0 {
					t.Fatalf("%d tasks after the rollback (%v)", n, err)
				}
				if _, err := workflowAdmin(t, h).GetWorkflow(ctxOf(t), r.ID); !errors.Is(err, jobs.ErrWorkflowNotFound) {
					t.Fatalf("the workflow after the rollback: %v, want ErrWorkflowNotFound", err)
				}
				continue
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			succeed(t, h, wantClaimable(t, h, "a")["a"])
			wantClaimable(t, h, "b")
		}
	}},
	{"RefusedWorkflowWritesNothing", func(t *testing.T, h *Harness) {
		we, ok := h.Store.(jobs.WorkflowEnqueuer)
		if !ok {
			t.Skipf("%T has no jobs.WorkflowEnqueuer", h.Store)
		}
		for _, c := range []struct {
			tasks []jobs.WorkflowTask
			task  string
		}{
			{[]jobs.WorkflowTask{task("a", "c"), task("b", "a"), task("c", "b")}, "a"},
			{[]jobs.WorkflowTask{task("a"), task("b", "nope")}, "b"},
			{[]jobs.WorkflowTask{task("a"), task("a")}, "a"},
			{[]jobs.WorkflowTask{task("a"), {Name: "bad", Job: jobs.EnqueueParams{Type: ""}}}, "bad"},
		} {
			_, err := we.EnqueueWorkflow(ctxOf(t), jobs.WorkflowParams{Name: "w", Tasks: c.tasks})
			var we *jobs.WorkflowError
			if !errors.As(err, &we) || we.Task != c.task {
				t.Errorf("%v: %v, want a WorkflowError naming task %q", c.tasks, err, c.task)
			}
		}
		if n, err := h.Store.CountJobs(ctxOf(t), jobs.TableHot, jobs.Filter{}); err != nil || n != 0 {
			t.Fatalf("%d jobs written by refused workflows (%v)", n, err)
		}
	}},
}
