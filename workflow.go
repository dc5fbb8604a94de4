package chokaq

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/chokaq/chokaq-go/jobs"
)

// WorkflowTask is one task of EnqueueWorkflow: its job (Args, Opts, as
// EnqueueMany's items), the names of the tasks it runs after, and what it
// does when one of them ends in the DLQ (ADR 0034).
type WorkflowTask struct {
	Name            string
	Args            Args
	Opts            *EnqueueOpts
	After           []string
	OnParentFailure jobs.DependencyPolicy
}

// EnqueueWorkflow adds a workflow: every task at once, all or none. A task
// is claimable once each task it runs after has succeeded; a refused
// workflow (a cycle, a task it names that is not there, a bad job) writes
// nothing and names the task (jobs.WorkflowError). Each task's job goes
// through its kind's policy and the enqueue middleware as an enqueue's
// does. The store must keep dependencies (jobs.WorkflowEnqueuer), else
// the error wraps jobs.ErrWorkflowsUnsupported.
func (c *Client) EnqueueWorkflow(ctx context.Context, name string, tasks ...WorkflowTask) (jobs.WorkflowResult, error) {
	we, ok := c.store.(jobs.WorkflowEnqueuer)
	if !ok {
		return jobs.WorkflowResult{}, fmt.Errorf("chokaq: workflow %q: %w", name, jobs.ErrWorkflowsUnsupported)
	}
	ts, err := c.workflowTasks(ctx, name, tasks)
	if err != nil {
		return jobs.WorkflowResult{}, err
	}
	r, err := we.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: name, Tasks: ts})
	if err != nil {
		return r, err // the store names itself
	}
	c.countTasks(ts, r.Jobs)
	if c.cfg.Telemetry != nil {
		c.cfg.Telemetry.RecordWorkflowStarted()
	}
	c.notify()
	return r, nil
}

// EnqueueWorkflowTx is EnqueueWorkflow inside the caller's transaction:
// the workflow exists if and only if tx commits (a rolled-back tx leaves no
// task and no workflow). The store must offer jobs.WorkflowTxEnqueuer, as
// the SQL Server store does; else the error wraps ErrTxUnsupported. As
// EnqueueTx's jobs, its tasks and the started metric are counted at
// insert, since the Client never sees the commit; local workers are not
// woken (the tasks are not visible until then), and find them at their
// next poll.
func (c *Client) EnqueueWorkflowTx(ctx context.Context, tx *sql.Tx, name string, tasks ...WorkflowTask) (jobs.WorkflowResult, error) {
	we, ok := c.store.(jobs.WorkflowTxEnqueuer)
	if !ok {
		return jobs.WorkflowResult{}, fmt.Errorf("chokaq: workflow %q: %w (this store is a %T)", name, ErrTxUnsupported, c.store)
	}
	ts, err := c.workflowTasks(ctx, name, tasks)
	if err != nil {
		return jobs.WorkflowResult{}, err
	}
	r, err := we.EnqueueWorkflowTx(ctx, tx, jobs.WorkflowParams{Name: name, Tasks: ts})
	if err != nil {
		return r, err
	}
	c.countTasks(ts, r.Jobs)
	if c.cfg.Telemetry != nil {
		c.cfg.Telemetry.RecordWorkflowStarted()
	}
	return r, nil
}

// workflowAdmin is the store's WorkflowAdmin, or an error wrapping
// jobs.ErrWorkflowsUnsupported.
func (c *Client) workflowAdmin() (jobs.WorkflowAdmin, error) {
	wa, ok := c.store.(jobs.WorkflowAdmin)
	if !ok {
		return nil, fmt.Errorf("chokaq: %w", jobs.ErrWorkflowsUnsupported)
	}
	return wa, nil
}

// Workflows lists workflows, newest first (jobs.WorkflowAdmin).
func (c *Client) Workflows(ctx context.Context, beforeID int64, limit int) ([]jobs.Workflow, error) {
	wa, err := c.workflowAdmin()
	if err != nil {
		return nil, err
	}
	return wa.Workflows(ctx, beforeID, limit)
}

// GetWorkflow returns one workflow and its tasks (jobs.ErrWorkflowNotFound).
func (c *Client) GetWorkflow(ctx context.Context, id int64) (jobs.WorkflowDetail, error) {
	wa, err := c.workflowAdmin()
	if err != nil {
		return jobs.WorkflowDetail{}, err
	}
	return wa.GetWorkflow(ctx, id)
}

// CancelWorkflow cancels every task of the workflow not finished yet, as
// CancelWith does, naming who and why.
func (c *Client) CancelWorkflow(ctx context.Context, p jobs.CancelWorkflowParams) ([]jobs.CancelResult, error) {
	wa, err := c.workflowAdmin()
	if err != nil {
		return nil, err
	}
	return wa.CancelWorkflow(ctx, p)
}

// BatchCallback says when a batch's callback runs (EnqueueBatch).
type BatchCallback uint8

const (
	// OnAllFinished runs the callback once every member has finished,
	// whatever its outcome.
	OnAllFinished BatchCallback = iota
	// OnAllSucceeded runs it only if every member succeeded; a member in
	// the DLQ dead-letters the callback as jobs.ReasonDependencyFailed.
	OnAllSucceeded
)

// BatchCallbackTask names a batch's callback task in its workflow.
const BatchCallbackTask = "callback"

// EnqueueBatch adds a batch: members, and a callback job that runs once
// after all of them, as when says (ADR 0034: a batch is a workflow whose
// callback task runs after every member). The members are the tasks
// "member-0", "member-1", ...; the callback reads the members' outcomes
// from GetWorkflow(ctx, job.WorkflowID) (Succeeded and Failed count the
// members, the callback itself is Running).
func (c *Client) EnqueueBatch(ctx context.Context, name string, when BatchCallback, callback EnqueueItem, members ...EnqueueItem) (jobs.WorkflowResult, error) {
	tasks := make([]WorkflowTask, 0, len(members)+1)
	after := make([]string, len(members))
	for i, m := range members {
		after[i] = fmt.Sprintf("member-%d", i)
		tasks = append(tasks, WorkflowTask{Name: after[i], Args: m.Args, Opts: m.Opts})
	}
	policy := jobs.DependencyRunAnyway
	if when == OnAllSucceeded {
		policy = jobs.DependencyCancel
	}
	tasks = append(tasks, WorkflowTask{Name: BatchCallbackTask, Args: callback.Args, Opts: callback.Opts, After: after, OnParentFailure: policy})
	return c.EnqueueWorkflow(ctx, name, tasks...)
}

// AddWorkflowTasks adds tasks to the workflow of job, which the calling
// handler runs: a fan-out decided at run time (one task per file found,
// and a report after them). The tasks may run after any task of the
// workflow, job itself included (they then wait for it to succeed). job's
// lease fences it: a handler that has lost its job adds nothing
// (jobs.ErrLeaseLost). Each task's job goes through its kind's policy and
// the enqueue middleware, as EnqueueWorkflow's do.
func (c *Client) AddWorkflowTasks(ctx context.Context, job *Job, tasks ...WorkflowTask) (map[string]int64, error) {
	ext, ok := c.store.(jobs.WorkflowExtender)
	if !ok {
		return nil, fmt.Errorf("chokaq: add tasks to workflow %d: %w", job.WorkflowID, jobs.ErrWorkflowsUnsupported)
	}
	ts, err := c.workflowTasks(ctx, "", tasks)
	if err != nil {
		return nil, err
	}
	ids, err := ext.AddWorkflowTasks(ctx, jobs.AddTasksParams{Ref: jobs.LeaseRef{ID: job.ID, Lease: job.Lease}, Tasks: ts})
	if err != nil {
		return nil, err
	}
	c.countTasks(ts, ids)
	c.notify()
	return ids, nil
}

// workflowTasks is tasks in the store's form, each job through its
// kind's policy and the enqueue middleware; an error names the task.
func (c *Client) workflowTasks(ctx context.Context, workflow string, tasks []WorkflowTask) ([]jobs.WorkflowTask, error) {
	out := make([]jobs.WorkflowTask, len(tasks))
	for i, t := range tasks {
		job, err := params(t.Args, t.Opts, c.reg)
		if err == nil {
			job, err = c.prepared(ctx, job)
		}
		if err != nil {
			return nil, &jobs.WorkflowError{Workflow: workflow, Task: t.Name, Err: err}
		}
		out[i] = jobs.WorkflowTask{Name: t.Name, Job: job, After: t.After, OnParentFailure: t.OnParentFailure}
	}
	return out, nil
}

// countTasks records the tasks' jobs as enqueued, ids by task name.
func (c *Client) countTasks(ts []jobs.WorkflowTask, ids map[string]int64) {
	ps, rs := make([]jobs.EnqueueParams, len(ts)), make([]jobs.EnqueueResult, len(ts))
	for i, t := range ts {
		ps[i], rs[i] = t.Job, jobs.EnqueueResult{ID: ids[t.Name]}
	}
	c.countEnqueued(ps, rs)
}
