package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// demoWorkflowQueue is the queue of the demo's workflow (ADR 0034).
const demoWorkflowQueue = "demo-workflow"

// demoWorkflow is what the workflow part of the demo saw: import, then
// transform x 3 with transform-2 failing for good, then report, which
// waits (DependencyWait) for the failed transform until its resurrect
// with a fixed payload lets it succeed.
type demoWorkflow struct {
	Skipped string `json:"skipped,omitempty"`
	ID      int64  `json:"workflow_id"`
	// Ran is the order the tasks ran in (failed ones marked).
	Ran []string `json:"ran"`
	// WaitedOnFailed: the report waited, visibly, on the dead letter.
	WaitedOnFailed bool   `json:"report_waited_on_failed_parent"`
	State          string `json:"state"`
}

// runWorkflowDemo runs the workflow on a processor of its own.
func runWorkflowDemo(ctx context.Context, store jobs.Store, pcfg processor.Config) (demoWorkflow, error) {
	we, ok := store.(jobs.WorkflowEnqueuer)
	wa, ok2 := store.(jobs.WorkflowAdmin)
	if !ok || !ok2 {
		return demoWorkflow{Skipped: "this store does not run workflows (ADR 0034)"}, nil
	}
	var mu sync.Mutex
	var sum demoWorkflow
	reg := processor.NewRegistry()
	reg.MustHandle("demo.step", func(ctx context.Context, j *processor.Job) error {
		var a struct{ Fail bool }
		if err := json.Unmarshal(j.Payload, &a); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if a.Fail {
			sum.Ran = append(sum.Ran, j.WorkflowTask+" (failed)")
			return processor.Permanent(errors.New("demo: a transform that fails for good"))
		}
		sum.Ran = append(sum.Ran, j.WorkflowTask)
		return nil
	})
	step := func(name string, fail bool, after ...string) jobs.WorkflowTask {
		return jobs.WorkflowTask{Name: name, After: after, Job: jobs.EnqueueParams{Queue: demoWorkflowQueue, Type: "demo.step",
			CreatedBy: "chokaq demo", MaxAttempts: 1, Payload: fmt.Appendf(nil, `{"fail":%t}`, fail)}}
	}
	report := step("report", false, "transform-1", "transform-2", "transform-3")
	report.OnParentFailure = jobs.DependencyWait
	r, err := we.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "demo import", Tasks: []jobs.WorkflowTask{
		step("import", false), step("transform-1", false, "import"), step("transform-2", true, "import"),
		step("transform-3", false, "import"), report,
	}})
	if err != nil {
		return demoWorkflow{}, err
	}
	sum.ID = r.ID
	stop, err := startPart(ctx, store, reg, pcfg, "worker-workflow", demoWorkflowQueue)
	if err != nil {
		return demoWorkflow{}, err
	}
	defer stop()
	// Wait for the report to wait on the dead letter; then fix the
	// transform's payload as an operator would, resurrect it, and wait for
	// the workflow to end.
	if _, err := untilWorkflow(ctx, wa, r.ID, "the report waiting on its failed parent", func(wd jobs.WorkflowDetail) bool {
		t := wd.Tasks[len(wd.Tasks)-1]
		return t.Name == "report" && t.WaitingOnFailed
	}); err != nil {
		return demoWorkflow{}, err
	}
	sum.WaitedOnFailed = true
	if _, err := store.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{r.Jobs["transform-2"]}},
		Payload: []byte(`{"fail":false}`)}); err != nil {
		return demoWorkflow{}, err
	}
	wd, err := untilWorkflow(ctx, wa, r.ID, "the workflow's end", func(wd jobs.WorkflowDetail) bool { return wd.State != jobs.WorkflowRunning })
	if err != nil {
		return demoWorkflow{}, err
	}
	sum.State = wd.State.String()
	mu.Lock()
	defer mu.Unlock()
	return sum, nil
}

// line is the summary's line of the workflow part.
func (w demoWorkflow) line() string {
	if w.Skipped != "" {
		return "skipped: " + w.Skipped
	}
	return fmt.Sprintf("workflow %d ran %v; the report waited on the failed transform (%t) and ran after its resurrect: %s",
		w.ID, w.Ran, w.WaitedOnFailed, w.State)
}

// untilWorkflow reads workflow id until cond holds, or ctx ends (naming
// what it waited for).
func untilWorkflow(ctx context.Context, wa jobs.WorkflowAdmin, id int64, what string, cond func(jobs.WorkflowDetail) bool) (jobs.WorkflowDetail, error) {
	for {
		wd, err := wa.GetWorkflow(ctx, id)
		if err != nil || cond(wd) {
			return wd, err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return wd, fmt.Errorf("demo: %s never came: %w", what, err)
		}
	}
}
