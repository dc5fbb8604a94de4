package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// nightly enqueues import -> (t1, t2) -> report on s, report waiting for a
// failed parent's resurrect (DependencyWait); runs import and cancels t1,
// so report waits on t2 and on t1 in the DLQ.
func nightly(t *testing.T, s *memstore.Store) jobs.WorkflowResult {
	t.Helper()
	ctx := t.Context()
	job := jobs.EnqueueParams{Type: "step", Queue: "wf"}
	r, err := s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "nightly", Tasks: []jobs.WorkflowTask{
		{Name: "import", Job: job},
		{Name: "t1", Job: job, After: []string{"import"}},
		{Name: "t2", Job: job, After: []string{"import"}, OnParentFailure: jobs.DependencyRunAnyway},
		{Name: "report", Job: job, After: []string{"t1", "t2"}, OnParentFailure: jobs.DependencyWait},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"wf"}, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != r.Jobs["import"] {
		t.Fatalf("claim of import: %v, %v", got, err)
	}
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, got[0].Ref()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, jobs.CancelParams{IDs: []int64{r.Jobs["t1"]}, Reason: "bad file"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// workflows list pages newest first; workflows show gives each task's job,
// parents, policy and place, in JSON as in the table, and a waiting task's
// count of parents and its failed one; workflows cancel cancels the rest.
func TestWorkflowsCommandsListShowAndCancel(t *testing.T) {
	s := memstore.New()
	older := nightly(t, s)
	newer, err := s.EnqueueWorkflow(t.Context(), jobs.WorkflowParams{Name: "other", Tasks: []jobs.WorkflowTask{{Name: "only", Job: jobs.EnqueueParams{Type: "step"}}}})
	if err != nil {
		t.Fatal(err)
	}

	list := func(flags ...string) workflowPage {
		t.Helper()
		r := runIn(t, s, "", append([]string{"workflows", "list", "-o", "json"}, flags...)...)
		wantExit(t, r, exitOK)
		var page workflowPage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("workflows list %v: %v\n%s", flags, err, r.stdout)
		}
		return page
	}
	if p := list(); len(p.Workflows) != 2 || p.Workflows[0].ID != newer.ID || p.Workflows[1].ID != older.ID || p.NextBeforeID != 0 {
		t.Fatalf("workflows list = %+v, want %d then %d and no next page", p, newer.ID, older.ID)
	}
	first := list("--limit", "1")
	if len(first.Workflows) != 1 || first.NextBeforeID != newer.ID {
		t.Fatalf("workflows list --limit 1 = %+v, want %d and a next page", first, newer.ID)
	}
	second := list("--limit", "1", "--before", itoa(first.NextBeforeID))
	want := workflowCounts{Tasks: 4, Pending: 1, Waiting: 1, Succeeded: 1, Failed: 1}
	if len(second.Workflows) != 1 || second.Workflows[0].ID != older.ID || second.NextBeforeID != 0 ||
		second.Workflows[0].Name != "nightly" || second.Workflows[0].State != "running" || second.Workflows[0].Counts != want {
		t.Fatalf("workflows list --before %d = %+v, want nightly, running, %+v, the last page", first.NextBeforeID, second, want)
	}
	table := runIn(t, s, "", "workflows", "list")
	wantExit(t, table, exitOK)
	if !strings.Contains(table.stdout, "SUCCEEDED") || !strings.Contains(table.stdout, "nightly") {
		t.Errorf("workflows list table:\n%s", table.stdout)
	}

	// show, JSON: the keys, and each task.
	r := runIn(t, s, "", "workflows", "show", itoa(older.ID), "-o", "json")
	wantExit(t, r, exitOK)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(raw)); !slices.Equal(keys, []string{"counts", "created_at", "id", "name", "state", "tasks"}) {
		t.Errorf("workflows show's keys = %v", keys)
	}
	var d workflowDetailView
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	wantTasks := []taskView{
		{Name: "import", JobID: older.Jobs["import"], Parents: []string{}, OnParentFailure: "cancel", Where: "archive"},
		{Name: "t1", JobID: older.Jobs["t1"], Parents: []string{"import"}, OnParentFailure: "cancel", Where: "dlq", FailureReason: "Cancelled"},
		{Name: "t2", JobID: older.Jobs["t2"], Parents: []string{"import"}, OnParentFailure: "run_anyway", Where: "pending"},
		{Name: "report", JobID: older.Jobs["report"], Parents: []string{"t1", "t2"}, OnParentFailure: "wait", Where: "waiting", WaitingOn: 2, WaitingOnFailed: true},
	}
	if len(d.Tasks) != len(wantTasks) {
		t.Fatalf("workflows show: %d tasks, want %d:\n%s", len(d.Tasks), len(wantTasks), r.stdout)
	}
	for i, w := range wantTasks {
		got := d.Tasks[i]
		if got.Name != w.Name || got.JobID != w.JobID || !slices.Equal(got.Parents, w.Parents) || got.OnParentFailure != w.OnParentFailure ||
			got.Where != w.Where || got.WaitingOn != w.WaitingOn || got.WaitingOnFailed != w.WaitingOnFailed || got.FailureReason != w.FailureReason {
			t.Errorf("task %d = %+v, want %+v", i, got, w)
		}
	}
	if d.ID != older.ID || d.State != "running" || d.Counts != want {
		t.Errorf("workflows show's workflow = %+v", d.workflowView)
	}
	if !strings.Contains(r.stdout, `"parents": []`) {
		t.Errorf("a task without parents shows no empty list:\n%s", r.stdout)
	}

	// show, table.
	show := runIn(t, s, "", "workflows", "show", itoa(older.ID))
	wantExit(t, show, exitOK)
	words := strings.Join(strings.Fields(show.stdout), " ")
	for _, want := range []string{"state running", "report 4 t1,t2 wait waiting on 2 parent(s), one in the DLQ", "t1 2 import cancel dlq: Cancelled",
		"import 1 - cancel archive (succeeded)", "t2 3 import run_anyway pending"} {
		if !strings.Contains(words, want) {
			t.Errorf("workflows show lacks %q:\n%s", want, show.stdout)
		}
	}

	// cancel: the hot tasks, children first.
	c := runIn(t, s, "", "workflows", "cancel", itoa(older.ID), "--reason", "redo tomorrow", "-o", "json")
	wantExit(t, c, exitOK)
	var outcomes []struct {
		ID      int64  `json:"id"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &outcomes); err != nil {
		t.Fatal(err)
	}
	if len(outcomes) != 2 || outcomes[0].ID != older.Jobs["report"] || outcomes[1].ID != older.Jobs["t2"] ||
		outcomes[0].Outcome != "cancelled" || outcomes[1].Outcome != "cancelled" {
		t.Fatalf("workflows cancel = %+v, want report then t2 cancelled", outcomes)
	}
	j, err := s.GetJob(t.Context(), older.Jobs["report"])
	if err != nil || j.FailureReason != jobs.ReasonCancelled || !strings.Contains(j.ErrorDetails, "redo tomorrow") {
		t.Errorf("report after the cancel: %+v, %v", j, err)
	}
	if p := list("--limit", "1", "--before", itoa(newer.ID)); p.Workflows[0].State != "failed" {
		t.Errorf("a cancelled workflow is %q, want failed", p.Workflows[0].State)
	}
	again := runIn(t, s, "", "workflows", "cancel", itoa(older.ID))
	wantExit(t, again, exitOK)
	if !strings.Contains(again.stdout, "no task left to cancel") {
		t.Errorf("a second cancel:\n%s", again.stdout)
	}
}

// A workflow ID that names none exits 3, nothing changed; a bad argument
// exits 2.
func TestWorkflowsCommandsRefuseAMissingWorkflowOrABadArgument(t *testing.T) {
	s := memstore.New()
	nightly(t, s)
	wantExit(t, runIn(t, s, "", "workflows", "show", "999"), exitNotFound, "workflow 999 not found")
	wantExit(t, runIn(t, s, "", "workflows", "cancel", "999"), exitNotFound, "workflow 999 not found")
	wantExit(t, runIn(t, s, "", "workflows", "show", "x"), exitUsage, "want a positive integer")
	wantExit(t, runIn(t, s, "", "workflows", "cancel", "0"), exitUsage, "want a positive integer")
	wantExit(t, runIn(t, s, "", "workflows", "list", "--limit", "0"), exitUsage, "--limit 0")
	wantExit(t, runIn(t, s, "", "workflows", "list", "--before", "-1"), exitUsage, "--before -1")
	wantExit(t, runIn(t, s, "", "workflows", "show"), exitUsage)
	if n, err := s.CountJobs(t.Context(), jobs.TableDLQ, jobs.Filter{}); err != nil || n != 1 {
		t.Errorf("%d dead letters after refused commands, want 1 (t1): %v", n, err)
	}
}

// A store that keeps no workflows (a store of one's own) makes
// every workflows command say so and exit 2, as a command that needs a
// store the configuration does not give.
func TestWorkflowsCommandsOnAStoreWithoutWorkflowsSaySoAndExit2(t *testing.T) {
	bare := struct{ jobs.Store }{memstore.New()} // the memory store, its workflows hidden
	for _, args := range [][]string{{"workflows", "list"}, {"workflows", "show", "1"}, {"workflows", "cancel", "1"}, {"workflows", "list", "-o", "json"}} {
		r := runIn(t, bare, "", args...)
		wantExit(t, r, exitUsage, "this store does not run workflows", "the configured store keeps no workflows")
		if r.stdout != "" {
			t.Errorf("%v printed on stdout: %s", args, r.stdout)
		}
	}
}
