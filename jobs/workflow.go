package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Workflows (ADR 0034): a set of named tasks, each a job, and the
// dependencies between them, a DAG. Every task is inserted at once, all or
// none; a task is claimable only once every parent succeeded (archived).
// A parent that ends in the DLQ (failed or cancelled) applies each
// child's DependencyPolicy. The release is the parent's own move: the
// store commits it with the move that finishes the parent, so no crash can
// come between the two.

// Limits of a workflow.
const (
	MaxWorkflowTasks   = 100_000
	MaxTaskParents     = 10_000
	MaxWorkflowNameLen = 200
	MaxTaskNameLen     = 200
)

// DependencyPolicy says what a task does when a parent of it ends in the
// DLQ (dead-lettered or cancelled).
type DependencyPolicy uint8

const (
	// DependencyCancel (the default) dead-letters the task with
	// ReasonDependencyFailed, and so on down its own dependents.
	DependencyCancel DependencyPolicy = iota
	// DependencyRunAnyway counts the failed parent as done: the task runs
	// once its other parents are.
	DependencyRunAnyway
	// DependencyWait keeps the task waiting, visibly, until the parent is
	// resurrected and succeeds (or an operator cancels the task); a parent
	// purged or trimmed from the DLQ cancels it as DependencyCancel does.
	DependencyWait
)

// String returns "cancel", "run_anyway" or "wait".
func (p DependencyPolicy) String() string {
	switch p {
	case DependencyCancel:
		return "cancel"
	case DependencyRunAnyway:
		return "run_anyway"
	case DependencyWait:
		return "wait"
	}
	return "DependencyPolicy(" + strconv.Itoa(int(p)) + ")"
}

// WorkflowParams is a workflow to enqueue.
type WorkflowParams struct {
	// Name names the workflow for operators (1 to MaxWorkflowNameLen
	// characters); it need not be unique.
	Name  string
	Tasks []WorkflowTask
}

// WorkflowTask is one task of a workflow: its job, and the names of the
// tasks it runs after.
type WorkflowTask struct {
	Name            string
	Job             EnqueueParams
	After           []string
	OnParentFailure DependencyPolicy
}

// WorkflowError names the task a workflow was refused for (Task empty:
// the workflow as a whole).
type WorkflowError struct {
	Workflow, Task string
	Err            error
}

// Error names the workflow, the task and the reason.
func (e *WorkflowError) Error() string {
	if e.Task == "" {
		return fmt.Sprintf("jobs: workflow %q: %v", e.Workflow, e.Err)
	}
	return fmt.Sprintf("jobs: workflow %q, task %q: %v", e.Workflow, e.Task, e.Err)
}

// Unwrap returns the reason.
func (e *WorkflowError) Unwrap() error { return e.Err }

// ErrWorkflowCycle is wrapped by the error for a workflow whose
// dependencies loop.
var ErrWorkflowCycle = errors.New("jobs: the workflow's dependencies form a cycle")

// ErrWorkflowsUnsupported refuses a workflow on a store that does not
// keep dependencies.
var ErrWorkflowsUnsupported = errors.New("jobs: this store does not run workflows (ADR 0034)")

// Normalize validates p, each task's job by EnqueueParams.Normalize with
// limits, and returns it with the jobs normalized and the tasks in an
// order where every parent comes before its children (ties in the order
// given). Nothing is written by a refused workflow: the error names the
// task (WorkflowError), and a cycle wraps ErrWorkflowCycle.
func (p WorkflowParams) Normalize(l Limits) (WorkflowParams, error) {
	return p.NormalizeWithin(l, nil)
}

// NormalizeWithin is Normalize of tasks added to a workflow that holds
// tasks already (AddWorkflowTasks): After may also name a task existing
// reports, and no added task may take an existing one's name. An existing
// task cannot wait for an added one, so a cycle can only be among the
// added tasks. existing nil is a new workflow.
func (p WorkflowParams) NormalizeWithin(l Limits, existing func(name string) bool) (WorkflowParams, error) {
	if existing == nil {
		existing = func(string) bool { return false }
	}
	fail := func(task string, err error) (WorkflowParams, error) {
		return WorkflowParams{}, &WorkflowError{Workflow: p.Name, Task: task, Err: err}
	}
	switch {
	case p.Name == "" || len(p.Name) > MaxWorkflowNameLen:
		return fail("", &ValidationError{Field: "workflow_name", Value: p.Name, Rule: "must be 1 to " + itoa(MaxWorkflowNameLen) + " characters"})
	case len(p.Tasks) == 0 || len(p.Tasks) > MaxWorkflowTasks:
		return fail("", &ValidationError{Field: "tasks", Value: len(p.Tasks), Rule: "a workflow has 1 to " + itoa(MaxWorkflowTasks) + " tasks"})
	}
	// A copy: the loop below writes each normalized task back, and the
	// caller's slice is not ours to change.
	p.Tasks = slices.Clone(p.Tasks)
	index := make(map[string]int, len(p.Tasks))
	for i, t := range p.Tasks {
		if t.Name == "" || len(t.Name) > MaxTaskNameLen {
			return fail(t.Name, &ValidationError{Field: "task_name", Value: t.Name, Rule: "must be 1 to " + itoa(MaxTaskNameLen) + " characters"})
		}
		if _, dup := index[t.Name]; dup || existing(t.Name) {
			return fail(t.Name, &ValidationError{Field: "task_name", Value: t.Name, Rule: "names one task only"})
		}
		index[t.Name] = i
	}
	out := WorkflowParams{Name: p.Name, Tasks: make([]WorkflowTask, 0, len(p.Tasks))}
	children := make([][]int, len(p.Tasks))
	waiting := make([]int, len(p.Tasks))
	for i, t := range p.Tasks {
		if len(t.After) > MaxTaskParents {
			return fail(t.Name, &ValidationError{Field: "after", Value: len(t.After), Rule: "a task has at most " + itoa(MaxTaskParents) + " parents"})
		}
		if t.OnParentFailure > DependencyWait {
			return fail(t.Name, &ValidationError{Field: "on_parent_failure", Value: t.OnParentFailure, Rule: "must be cancel, run_anyway or wait"})
		}
		seen := map[string]bool{}
		for _, parent := range t.After {
			j, ok := index[parent]
			switch {
			case !ok && existing(parent):
				continue // finished or not, the store judges the edge
			case !ok:
				return fail(t.Name, &ValidationError{Field: "after", Value: parent, Rule: "names no task of the workflow"})
			case j == i:
				return fail(t.Name, &ValidationError{Field: "after", Value: parent, Rule: "a task cannot wait for itself"})
			case seen[parent]:
				return fail(t.Name, &ValidationError{Field: "after", Value: parent, Rule: "names a parent twice"})
			}
			seen[parent] = true
			children[j] = append(children[j], i)
			waiting[i]++
		}
		job, err := t.Job.Normalize(l)
		if err != nil {
			return fail(t.Name, err)
		}
		if job.IdempotencyKey != "" || job.Unique != nil {
			// A key that resolves to another job would insert the
			// workflow in part.
			return fail(t.Name, &ValidationError{Field: "job", Value: t.Name, Rule: "a workflow's task has no idempotency or unique key: the workflow is inserted whole or not at all"})
		}
		t.Job, t.After = job, slices.Clone(t.After)
		p.Tasks[i] = t
	}
	// Kahn's order; what is left at the end is on a cycle.
	var ready []int
	for i := range p.Tasks {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		out.Tasks = append(out.Tasks, p.Tasks[i])
		for _, c := range children[i] {
			if waiting[c]--; waiting[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	if len(out.Tasks) < len(p.Tasks) {
		for i, n := range waiting {
			if n > 0 {
				return fail(p.Tasks[i].Name, ErrWorkflowCycle)
			}
		}
	}
	return out, nil
}

// WorkflowResult is an enqueued workflow: its ID and each task's job ID,
// by task name.
type WorkflowResult struct {
	ID   int64
	Jobs map[string]int64
}

// AddTasksParams adds tasks to the workflow of the job Ref names, which
// must be Processing under that lease: a handler fanning out at run time
// (one task per file found, and a report after them). A handler that has
// lost its job adds nothing (ErrLeaseLost).
type AddTasksParams struct {
	Ref   LeaseRef
	Tasks []WorkflowTask
}

// WorkflowExtender is an optional capability of a store that keeps
// dependencies: tasks added to a running workflow by one of its tasks.
type WorkflowExtender interface {
	// AddWorkflowTasks validates the tasks (WorkflowParams.NormalizeWithin)
	// and inserts them all or none; a task's edge to an existing parent
	// counts it as it stands: archived is done, in the DLQ applies the
	// task's policy, hot waits. It returns the new tasks' job IDs by name.
	AddWorkflowTasks(ctx context.Context, p AddTasksParams) (map[string]int64, error)
}

// WorkflowEnqueuer is an optional capability of a store that keeps
// dependencies: enqueueing a workflow, all of its tasks or none.
type WorkflowEnqueuer interface {
	// EnqueueWorkflow validates p (WorkflowParams.Normalize) and inserts
	// every task: the tasks without parents Pending, the others waiting
	// for them.
	EnqueueWorkflow(ctx context.Context, p WorkflowParams) (WorkflowResult, error)
}

// WorkflowTxEnqueuer is an optional capability of a store on a
// database/sql database that keeps dependencies: EnqueueWorkflow inside
// the caller's transaction, so the workflow exists if and only if tx
// commits.
type WorkflowTxEnqueuer interface {
	// EnqueueWorkflowTx is EnqueueWorkflow as part of tx: it neither
	// commits nor rolls back, and retries nothing (tx is the caller's).
	EnqueueWorkflowTx(ctx context.Context, tx *sql.Tx, p WorkflowParams) (WorkflowResult, error)
}

// WorkflowState is where a workflow stands, from its tasks.
type WorkflowState uint8

const (
	// WorkflowRunning has a task not finished (hot).
	WorkflowRunning WorkflowState = iota
	// WorkflowSucceeded has every task archived.
	WorkflowSucceeded
	// WorkflowFailed has every task finished, one or more in the DLQ.
	WorkflowFailed
)

// String returns "running", "succeeded" or "failed".
func (s WorkflowState) String() string {
	switch s {
	case WorkflowRunning:
		return "running"
	case WorkflowSucceeded:
		return "succeeded"
	case WorkflowFailed:
		return "failed"
	}
	return "WorkflowState(" + strconv.Itoa(int(s)) + ")"
}

// Workflow is an operator's view of one workflow.
type Workflow struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	State     WorkflowState
	// Total counts the tasks (not Tasks: WorkflowDetail.Tasks lists
	// them); Pending, Waiting, Running, Succeeded and Failed count them by
	// where they are: Pending (claimable or not yet due), Waiting (for a
	// parent), Running (Fetched or Processing), archived, and in the DLQ.
	Total, Pending, Waiting, Running, Succeeded, Failed int
}

// WithState returns w with Total and State derived from its counts by
// place: running while a task is Pending, Waiting or Running, else failed
// when one is in the DLQ, else succeeded. Every store sums a workflow so.
func (w Workflow) WithState() Workflow {
	w.Total = w.Pending + w.Waiting + w.Running + w.Succeeded + w.Failed
	switch {
	case w.Pending+w.Waiting+w.Running > 0:
		w.State = WorkflowRunning
	case w.Failed > 0:
		w.State = WorkflowFailed
	default:
		w.State = WorkflowSucceeded
	}
	return w
}

// CancelChildrenFirst cancels a workflow's hot tasks, ids in children-first
// order (a task's ID is above its parents', so descending), through
// cancel, in chunks of MaxCancelIDs: so no parent's cancel dead-letters a
// child as DependencyFailed before the child's own cancel names the
// operator. A task that finishes between two chunks is reported as Cancel
// reports it (already finished). It is CancelWorkflow's common part.
func CancelChildrenFirst(ctx context.Context, cancel func(context.Context, CancelParams) ([]CancelResult, error), ids []int64, p CancelWorkflowParams) ([]CancelResult, error) {
	var out []CancelResult
	for chunk := range slices.Chunk(ids, MaxCancelIDs) {
		rs, err := cancel(ctx, CancelParams{IDs: chunk, By: p.By, Reason: strings.TrimSpace(p.Reason)})
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// WorkflowTaskState is one task of a workflow as an operator sees it.
type WorkflowTaskState struct {
	Name  string
	JobID int64
	// Parents names the tasks it runs after.
	Parents         []string
	OnParentFailure DependencyPolicy
	Table           Table
	Status          Status // hot tasks only
	// WaitingOn counts the parents it still waits for (hot tasks only);
	// WaitingOnFailed is true when one of them is in the DLQ and the task
	// waits for its resurrect (DependencyWait).
	WaitingOn       int
	WaitingOnFailed bool
	FailureReason   FailureReason // DLQ only
}

// WorkflowDetail is one workflow with its tasks, parents before children.
type WorkflowDetail struct {
	Workflow
	Tasks []WorkflowTaskState
}

// WorkflowAdmin is an optional capability of a store that keeps
// dependencies: what operators see of workflows, and cancelling one.
type WorkflowAdmin interface {
	// Workflows lists workflows, newest first, at most limit (1 to 1,000)
	// with an ID below beforeID (0: from the newest).
	Workflows(ctx context.Context, beforeID int64, limit int) ([]Workflow, error)
	// GetWorkflow returns one workflow and its tasks (ErrWorkflowNotFound).
	GetWorkflow(ctx context.Context, id int64) (WorkflowDetail, error)
	// CancelWorkflow cancels every task not finished, as Admin.Cancel
	// does (a running one is asked to stop), naming who and why.
	CancelWorkflow(ctx context.Context, p CancelWorkflowParams) ([]CancelResult, error)
}

// CancelWorkflowParams cancels workflow ID's unfinished tasks; By and
// Reason are a cancel's (CancelParams).
type CancelWorkflowParams struct {
	ID         int64
	By, Reason string
}

// Validate checks the ID and the texts as CancelParams.Validate does.
func (p CancelWorkflowParams) Validate() error {
	if p.ID <= 0 {
		return &ValidationError{Field: "workflow_id", Value: p.ID, Rule: "must be a workflow's ID (1 or more)"}
	}
	return CancelParams{IDs: []int64{p.ID}, By: p.By, Reason: p.Reason}.Validate()
}

// ErrNotAWorkflowTask is wrapped by the error of AddWorkflowTasks from a
// job of no workflow.
var ErrNotAWorkflowTask = errors.New("jobs: the job is no workflow's task")

// ErrWorkflowNotFound is returned for a workflow ID that names none.
var ErrWorkflowNotFound = errors.New("jobs: workflow not found")
