package chokaq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/telemetry"
)

// StepArgs is one step of a test workflow.
type StepArgs struct{ Step string }

func (StepArgs) Kind() string { return "wf.step" }

// An import -> transform x 3 -> report workflow runs its steps in order
// through the Client and its processor; the report starts after every
// transform finished.
func TestEnqueueWorkflowRunsItsTasksInDependencyOrder(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var order []string
	reg := chokaq.NewRegistry()
	var tasks map[string]string // a job's task name, as its handler saw it
	if err := chokaq.Handle(reg, func(_ context.Context, j *chokaq.Job, a StepArgs) error {
		mu.Lock()
		if j.WorkflowID == 0 {
			tasks = nil
		} else if tasks != nil {
			tasks[a.Step] = j.WorkflowTask
		}
		order = append(order, a.Step)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableRescue: true}, reg)
	if err != nil {
		t.Fatal(err)
	}
	tasks = map[string]string{}
	wfTasks := []chokaq.WorkflowTask{{Name: "import", Args: StepArgs{"import"}}}
	for _, n := range []string{"t1", "t2", "t3"} {
		wfTasks = append(wfTasks, chokaq.WorkflowTask{Name: n, Args: StepArgs{n}, After: []string{"import"}})
	}
	wfTasks = append(wfTasks, chokaq.WorkflowTask{Name: "report", Args: StepArgs{"report"}, After: []string{"t1", "t2", "t3"}})
	r, err := c.EnqueueWorkflow(ctx, "nightly import", wfTasks...)
	if err != nil || len(r.Jobs) != 5 {
		t.Fatalf("EnqueueWorkflow: %+v, %v", r, err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.WithoutCancel(ctx))
	waitFor(t, func() bool {
		wf, err := c.GetWorkflow(ctx, r.ID)
		return err == nil && wf.State == jobs.WorkflowSucceeded
	})
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 5 || order[0] != "import" || order[4] != "report" {
		t.Fatalf("steps ran in the order %v, want import first and report last", order)
	}
	if len(tasks) != 5 || tasks["t2"] != "t2" || tasks["report"] != "report" {
		t.Fatalf("the handlers saw the tasks %v, want each its own workflow task", tasks)
	}
}

// A workflow refused for a task writes nothing and names the task; a
// store without workflows says so.
func TestEnqueueWorkflowRefusals(t *testing.T) {
	ctx := t.Context()
	c := enqueueOnly(t)
	_, err := c.EnqueueWorkflow(ctx, "w", chokaq.WorkflowTask{Name: "a", Args: StepArgs{"a"}, After: []string{"b"}},
		chokaq.WorkflowTask{Name: "b", Args: StepArgs{"b"}, After: []string{"a"}})
	var we *jobs.WorkflowError
	if !errors.As(err, &we) || !errors.Is(err, jobs.ErrWorkflowCycle) || we.Task == "" {
		t.Fatalf("a cycle: %v", err)
	}
	if n, _ := c.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("%d jobs written by a refused workflow", n)
	}
	bare, err := chokaq.New(ctx, chokaq.Config{Store: storeWithoutWorkflows{memstore.New()}, DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.EnqueueWorkflow(ctx, "w", chokaq.WorkflowTask{Name: "a", Args: StepArgs{"a"}}); !errors.Is(err, jobs.ErrWorkflowsUnsupported) {
		t.Fatalf("a store without workflows: %v", err)
	}
	// The memory store keeps workflows but has no transaction to join.
	if _, err := c.EnqueueWorkflowTx(ctx, nil, "w", chokaq.WorkflowTask{Name: "a", Args: StepArgs{"a"}}); !errors.Is(err, chokaq.ErrTxUnsupported) {
		t.Fatalf("EnqueueWorkflowTx on the memory store: %v, want ErrTxUnsupported", err)
	}
}

// storeWithoutWorkflows hides the memory store's optional capabilities.
type storeWithoutWorkflows struct{ jobs.Store }

// The Client counts each workflow it enqueues as started; the memory
// store's hook, wired to the same telemetry.Metrics, counts each end as
// finished or failed, once, and none for a workflow still running.
func TestWorkflowMetricsCountEachStartAndEachEnd(t *testing.T) {
	ctx := t.Context()
	reader := sdkmetric.NewManualReader()
	m, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.WithWorkflowEnded(m.RecordWorkflowEnded))
	c, err := chokaq.New(ctx, chokaq.Config{Store: store, Telemetry: m, DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each workflow in a queue of its own, so each claim takes the task meant.
	pair := func(name string) jobs.WorkflowResult {
		t.Helper()
		opts := &chokaq.EnqueueOpts{Queue: name}
		r, err := c.EnqueueWorkflow(ctx, name, chokaq.WorkflowTask{Name: "x", Args: StepArgs{"x"}, Opts: opts},
			chokaq.WorkflowTask{Name: "y", Args: StepArgs{"y"}, Opts: opts, After: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	run := func(queue string, id int64) {
		t.Helper()
		got, err := store.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim of job %d: %v, %v", id, got, err)
		}
		if _, err := store.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := store.Complete(ctx, got[0].Ref()); err != nil {
			t.Fatal(err)
		}
	}
	ok, bad, running := pair("ok"), pair("bad"), pair("running")
	run("ok", ok.Jobs["x"])
	run("ok", ok.Jobs["y"])
	run("running", running.Jobs["x"]) // its y still Pending
	// bad's x cancelled, and its y with it (DependencyFailed): one end.
	if _, err := c.Cancel(ctx, bad.Jobs["x"]); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, isSum := mt.Data.(metricdata.Sum[int64]); isSum && strings.HasPrefix(mt.Name, "chokaq.workflows.") {
				for _, dp := range sum.DataPoints {
					if dp.Attributes.Len() != 0 {
						t.Errorf("%s has labels %v", mt.Name, dp.Attributes.ToSlice())
					}
					got[mt.Name] += dp.Value
				}
			}
		}
	}
	want := map[string]int64{"chokaq.workflows.started": 3, "chokaq.workflows.finished": 1, "chokaq.workflows.failed": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("workflow counters = %v, want %v", got, want)
	}
}

// BatchArgs is a batch member or callback of the batch tests.
type BatchArgs struct {
	Fail bool
}

func (BatchArgs) Kind() string { return "batch.job" }

// A batch's callback runs once after every member, on all finished (it
// sees the counts by outcome) or only on all succeeded; a member
// resurrected after the callback ran does not run the callback again.
func TestEnqueueBatchRunsItsCallbackOnce(t *testing.T) {
	batchCallbackCases(t, func(*testing.T) chokaq.Config { return chokaq.Config{Store: memstore.New(), DisableRescue: true} })
}

// batchCallbackCases runs the batch callback cases on the stores cfg
// gives (a fresh one per case): the memory store here, SQL Server in
// TestSQLServerBatchRunsItsCallbackOnce.
func batchCallbackCases(t *testing.T, cfg func(*testing.T) chokaq.Config) {
	for _, c := range []struct {
		name        string
		when        chokaq.BatchCallback
		wantRuns    int
		wantOutcome jobs.FailureReason
	}{
		{"OnAllFinished", chokaq.OnAllFinished, 1, 0},
		{"OnAllSucceeded", chokaq.OnAllSucceeded, 0, jobs.ReasonDependencyFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			var client *chokaq.Client
			var mu sync.Mutex
			runs, seen := 0, jobs.Workflow{}
			reg := chokaq.NewRegistry()
			if err := chokaq.Handle(reg, func(ctx context.Context, j *chokaq.Job, a BatchArgs) error {
				if j.WorkflowTask == chokaq.BatchCallbackTask {
					wf, err := client.GetWorkflow(ctx, j.WorkflowID)
					mu.Lock()
					runs++
					seen = wf.Workflow
					mu.Unlock()
					return err
				}
				if a.Fail {
					return chokaq.Permanent(errors.New("member failed"))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var err error
			client, err = chokaq.New(ctx, cfg(t), reg)
			if err != nil {
				t.Fatal(err)
			}
			members := []chokaq.EnqueueItem{{Args: BatchArgs{}}, {Args: BatchArgs{}}, {Args: BatchArgs{Fail: true}}}
			r, err := client.EnqueueBatch(ctx, "nightly", c.when, chokaq.EnqueueItem{Args: BatchArgs{}}, members...)
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer client.Stop(context.WithoutCancel(ctx))
			finished := func() bool {
				wf, err := client.GetWorkflow(ctx, r.ID)
				return err == nil && wf.State != jobs.WorkflowRunning
			}
			waitFor(t, finished)
			cb, err := client.GetJob(ctx, r.Jobs[chokaq.BatchCallbackTask])
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if runs != c.wantRuns || (c.wantRuns == 1 && (seen.Succeeded != 2 || seen.Failed != 1)) {
				t.Fatalf("callback ran %d times, saw %+v; want %d, 2 succeeded and 1 failed", runs, seen, c.wantRuns)
			}
			mu.Unlock()
			if c.wantRuns == 0 && (cb.Table != jobs.TableDLQ || cb.FailureReason != c.wantOutcome) {
				t.Fatalf("callback %v %v, want dead-lettered as %v", cb.Table, cb.FailureReason, c.wantOutcome)
			}
			// A member resurrected after the callback ran: it runs again
			// (and fails again), the callback does not.
			if _, err := client.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{r.Jobs["member-2"]}}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, finished)
			mu.Lock()
			defer mu.Unlock()
			if runs != c.wantRuns {
				t.Fatalf("after the resurrect the callback ran %d times, want %d", runs, c.wantRuns)
			}
		})
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not done in 10 s")
		}
	}
}

// ScanArgs finds "files" and fans out: one task per file, then a report.
type ScanArgs struct{ Files int }

func (ScanArgs) Kind() string { return "wf.scan" }

// A handler fans out at run time (issue 32): it adds one task per file it
// found and a report after them, to its own workflow; they run after it.
func TestAHandlerAddsTasksToItsWorkflow(t *testing.T) {
	ctx := t.Context()
	var client *chokaq.Client
	var mu sync.Mutex
	var ran []string
	reg := chokaq.NewRegistry()
	if err := chokaq.Handle(reg, func(ctx context.Context, j *chokaq.Job, a ScanArgs) error {
		var tasks []chokaq.WorkflowTask
		var files []string
		for i := range a.Files {
			files = append(files, fmt.Sprintf("file-%d", i))
			tasks = append(tasks, chokaq.WorkflowTask{Name: files[i], Args: StepArgs{files[i]}, After: []string{j.WorkflowTask}})
		}
		tasks = append(tasks, chokaq.WorkflowTask{Name: "report", Args: StepArgs{"report"}, After: files})
		_, err := client.AddWorkflowTasks(ctx, j, tasks...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := chokaq.Handle(reg, func(_ context.Context, _ *chokaq.Job, a StepArgs) error {
		mu.Lock()
		ran = append(ran, a.Step)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var err error
	client, err = chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableRescue: true}, reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.EnqueueWorkflow(ctx, "import", chokaq.WorkflowTask{Name: "scan", Args: ScanArgs{Files: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	waitFor(t, func() bool {
		wf, err := client.GetWorkflow(ctx, r.ID)
		return err == nil && wf.State == jobs.WorkflowSucceeded && len(wf.Tasks) == 5
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 4 || ran[3] != "report" {
		t.Fatalf("ran %v, want three files, then the report", ran)
	}
}

// A member cancelled before it ran counts as finished, not succeeded: the
// OnAllFinished callback becomes claimable once the others are done, and
// sees one failed member.
func TestABatchMemberCancelledLetsTheCallbackRun(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	c, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.EnqueueBatch(ctx, "b", chokaq.OnAllFinished, chokaq.EnqueueItem{Args: BatchArgs{}},
		chokaq.EnqueueItem{Args: BatchArgs{}}, chokaq.EnqueueItem{Args: BatchArgs{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, r.Jobs["member-0"]); err != nil {
		t.Fatal(err)
	}
	claim := func() []*jobs.Job {
		got, err := store.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := claim()
	if len(got) != 1 || got[0].WorkflowTask != "member-1" {
		t.Fatalf("claimed %v, want member-1 alone (the callback waits for it)", got)
	}
	if _, err := store.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, got[0].Ref()); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 1 || got[0].WorkflowTask != chokaq.BatchCallbackTask {
		t.Fatalf("claimed %v, want the callback", got)
	}
	wf, err := c.GetWorkflow(ctx, r.ID)
	if err != nil || wf.Succeeded != 1 || wf.Failed != 1 || wf.Running != 1 {
		t.Fatalf("the callback's view: %+v, %v; want 1 succeeded, 1 failed, itself running", wf.Workflow, err)
	}
}
