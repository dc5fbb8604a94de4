package memstore_test

import (
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// WithWorkflowEnded reports a workflow once, when its last unfinished task
// finishes, with its state: not while a task waits on a failed parent
// (DependencyWait), and again after a resurrected task finishes.
func TestWorkflowEndedIsReportedOnceWhenTheLastTaskFinishes(t *testing.T) {
	ctx := t.Context()
	var ended []jobs.Workflow
	s := memstore.New(memstore.WithWorkflowEnded(func(w jobs.Workflow) { ended = append(ended, w) }))
	job := jobs.EnqueueParams{Type: "step", Queue: "wf"}
	run := func(id int64) {
		t.Helper()
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"wf"}, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim of job %d: %v, %v", id, got, err)
		}
		if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, got[0].Ref()); err != nil {
			t.Fatal(err)
		}
	}
	cancel := func(id int64) {
		t.Helper()
		if _, err := s.Cancel(ctx, jobs.CancelParams{IDs: []int64{id}}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(n int, state jobs.WorkflowState, id int64) {
		t.Helper()
		if len(ended) != n {
			t.Fatalf("%d ends reported, want %d: %+v", len(ended), n, ended)
		}
		if last := ended[n-1]; last.ID != id || last.State != state {
			t.Fatalf("the last end reported = %+v, want workflow %d %s", last, id, state)
		}
	}

	// Succeeded: reported once, by the last task's move.
	a, err := s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "a", Tasks: []jobs.WorkflowTask{{Name: "x", Job: job}, {Name: "y", Job: job, After: []string{"x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	run(a.Jobs["x"])
	if len(ended) != 0 {
		t.Fatalf("a workflow with a task left reported its end: %+v", ended)
	}
	run(a.Jobs["y"])
	want(1, jobs.WorkflowSucceeded, a.ID)

	// Failed: the parent's cancel dead-letters its child in the same move,
	// one end.
	b, err := s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "b", Tasks: []jobs.WorkflowTask{{Name: "x", Job: job}, {Name: "y", Job: job, After: []string{"x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cancel(b.Jobs["x"])
	want(2, jobs.WorkflowFailed, b.ID)

	// DependencyWait keeps the workflow running until its task is settled.
	c, err := s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "c", Tasks: []jobs.WorkflowTask{
		{Name: "x", Job: job}, {Name: "y", Job: job, After: []string{"x"}, OnParentFailure: jobs.DependencyWait}}})
	if err != nil {
		t.Fatal(err)
	}
	cancel(c.Jobs["x"])
	if len(ended) != 2 {
		t.Fatalf("a workflow whose task waits on a failed parent reported its end: %+v", ended[2:])
	}
	// The parent resurrected and run: the child runs, the workflow ends
	// succeeded.
	if n, err := s.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{c.Jobs["x"]}}}); err != nil || n != 1 {
		t.Fatalf("Resurrect: %d, %v", n, err)
	}
	run(c.Jobs["x"])
	run(c.Jobs["y"])
	want(3, jobs.WorkflowSucceeded, c.ID)

	// A failed workflow's task resurrected runs it again; it ends again.
	if n, err := s.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{b.Jobs["x"]}}}); err != nil || n != 1 {
		t.Fatalf("Resurrect: %d, %v", n, err)
	}
	run(b.Jobs["x"])
	want(4, jobs.WorkflowFailed, b.ID) // y is still in the DLQ
}
