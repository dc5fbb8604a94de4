package memstore

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Workflows (ADR 0034), the reference: a task's release is part of the
// move that finishes its parent, under the store's one lock, so nothing
// can come between them. A task waiting for a parent is hot and Pending to
// readers, but in no claim index and in no queue's Pending count: the
// queue counts it as WaitingOnParents.

var (
	_ jobs.WorkflowEnqueuer = (*Store)(nil)
	_ jobs.WorkflowAdmin    = (*Store)(nil)
)

type workflow struct {
	id      int64
	name    string
	created time.Time
	tasks   []*task // parents before children
	// hot counts the tasks in the hot table: the workflow ends when the
	// last leaves it (WithWorkflowEnded).
	hot int
}

// WithWorkflowEnded calls ended with a workflow's summary each time its
// last unfinished task finishes (archived or dead-lettered), its State
// WorkflowSucceeded or WorkflowFailed; telemetry.Metrics.RecordWorkflowEnded
// counts them. It runs under the store's lock, in the move that finished
// the task, so a workflow's end is reported once per end and never early:
// ended must be cheap and must not call the store. A workflow with a task
// resurrected runs again, and ends again. The SQL Server store's is
// sqlserver.WithWorkflowEnded (a release step of any process sees the end).
func WithWorkflowEnded(ended func(jobs.Workflow)) Option {
	return func(s *Store) { s.workflowEnded = ended }
}

// leftHot counts job j's task (if any) out of its workflow's hot tasks,
// and reports the workflow's end when it was the last.
func (s *Store) leftHot(j *jobs.Job) {
	t := s.tasks[j.ID]
	if t == nil {
		return
	}
	if t.wf.hot--; t.wf.hot == 0 && s.workflowEnded != nil {
		s.workflowEnded(s.summary(t.wf))
	}
}

// edge states of a task's parent.
type edge uint8

const (
	edgeWaiting edge = iota // the parent has not finished
	edgeDone                // it succeeded, or failed under DependencyRunAnyway
	edgeFailed              // it is in the DLQ and the task waits for its resurrect
)

type task struct {
	wf       *workflow
	name     string
	job      int64
	parents  []*task
	edges    []edge // by parent
	children []childEdge
	policy   jobs.DependencyPolicy
	blocked  bool // hot, Pending and waiting for a parent: in no claim index
	// open and failed count the edges not done and those failed, kept as
	// edges change (set), so a fan-in of 10,000 parents costs each
	// parent's move one step, not a walk of 10,000 edges.
	open, failed int
}

// childEdge is a child of a task and the index of the task among its
// parents.
type childEdge struct {
	c *task
	i int
}

// set moves edge i of t to e.
func (t *task) set(i int, e edge) {
	old := t.edges[i]
	if old != edgeDone {
		t.open--
	}
	if old == edgeFailed {
		t.failed--
	}
	if e != edgeDone {
		t.open++
	}
	if e == edgeFailed {
		t.failed++
	}
	t.edges[i] = e
}

func (t *task) waitingOn() (n int, onFailed bool) { return t.open, t.failed > 0 }

// EnqueueWorkflow implements jobs.WorkflowEnqueuer: every task at once.
func (s *Store) EnqueueWorkflow(ctx context.Context, p jobs.WorkflowParams) (jobs.WorkflowResult, error) {
	if err := ctx.Err(); err != nil {
		return jobs.WorkflowResult{}, err
	}
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.WorkflowResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.nextWorkflow++
	wf := &workflow{id: s.nextWorkflow, name: p.Name, created: now}
	s.workflows[wf.id] = wf
	return jobs.WorkflowResult{ID: wf.id, Jobs: s.addTasks(wf, p.Tasks, now)}, nil
}

// addTasks inserts tasks (normalized: parents first) into wf and returns
// their job IDs by name. A parent that already exists counts as it
// stands: archived is done, hot waits, in the DLQ (or gone) applies the
// task's policy at once.
func (s *Store) addTasks(wf *workflow, tasks []jobs.WorkflowTask, now time.Time) map[string]int64 {
	byName := make(map[string]*task, len(wf.tasks)+len(tasks))
	for _, t := range wf.tasks {
		byName[t.name] = t
	}
	ids := make(map[string]int64, len(tasks))
	for _, pt := range tasks {
		t := &task{wf: wf, name: pt.Name, policy: pt.OnParentFailure}
		var failedParent *task
		for _, name := range pt.After {
			parent := byName[name]
			e := edgeWaiting
			switch pj := s.jobOf(parent.job); {
			case pj != nil && pj.Table == jobs.TableHot:
			case pj != nil && pj.Table == jobs.TableArchive, pt.OnParentFailure == jobs.DependencyRunAnyway:
				e = edgeDone
			case pt.OnParentFailure == jobs.DependencyWait && pj != nil:
				e = edgeFailed
			default:
				failedParent = parent
			}
			t.parents, t.edges = append(t.parents, parent), append(t.edges, edgeDone) // counted by set
			t.set(len(t.edges)-1, e)
			parent.children = append(parent.children, childEdge{t, len(t.parents) - 1})
		}
		j := s.newJob(pt.Job, now)
		j.WorkflowID, j.WorkflowTask = wf.id, t.name
		t.job = j.ID
		s.enter(j)
		byName[t.name], s.tasks[j.ID] = t, t
		wf.tasks = append(wf.tasks, t)
		wf.hot++
		ids[t.name] = j.ID
		t.blocked = true
		s.queue(j.Queue).waitingOnParents++
		if failedParent != nil {
			s.failDependent(t, slices.Index(t.parents, failedParent), s.jobOf(failedParent.job), now)
		} else {
			s.release(t, now)
		}
	}
	return ids
}

// AddWorkflowTasks implements jobs.WorkflowExtender.
func (s *Store) AddWorkflowTasks(ctx context.Context, p jobs.AddTasksParams) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.owned(p.Ref, jobs.StatusProcessing)
	if j == nil {
		return nil, fmt.Errorf("memstore: add workflow tasks from job %d lease %d: %w", p.Ref.ID, p.Ref.Lease, jobs.ErrLeaseLost)
	}
	t := s.tasks[j.ID]
	if t == nil {
		return nil, fmt.Errorf("memstore: add workflow tasks from job %d: %w", j.ID, jobs.ErrNotAWorkflowTask)
	}
	wp := jobs.WorkflowParams{Name: t.wf.name, Tasks: p.Tasks}
	wp, err := wp.NormalizeWithin(s.limits, func(name string) bool {
		return slices.ContainsFunc(t.wf.tasks, func(o *task) bool { return o.name == name })
	})
	if err != nil {
		return nil, err
	}
	if len(t.wf.tasks)+len(wp.Tasks) > jobs.MaxWorkflowTasks {
		return nil, &jobs.WorkflowError{Workflow: t.wf.name, Err: &jobs.ValidationError{Field: "tasks", Value: len(t.wf.tasks) + len(wp.Tasks),
			Rule: "a workflow has at most " + strconv.Itoa(jobs.MaxWorkflowTasks) + " tasks"}}
	}
	return s.addTasks(t.wf, wp.Tasks, s.now()), nil
}

// release makes a blocked task whose parents are all done claimable.
func (s *Store) release(t *task, now time.Time) {
	if n, _ := t.waitingOn(); n > 0 || !t.blocked {
		return
	}
	j := s.hot[t.job]
	t.blocked = false
	s.queue(j.Queue).waitingOnParents--
	s.pushPending(j, now)
}

// children yields the children of job j's task (none for a job of no
// workflow), each with the index of j's edge among its parents.
func (s *Store) children(j *jobs.Job) iter.Seq2[*task, int] {
	return func(yield func(*task, int) bool) {
		t := s.tasks[j.ID]
		if t == nil {
			return
		}
		for _, ce := range t.children {
			if !yield(ce.c, ce.i) {
				return
			}
		}
	}
}

// taskSucceeded releases the children of an archived task.
func (s *Store) taskSucceeded(j *jobs.Job, now time.Time) {
	s.leftHot(j)
	for c, i := range s.children(j) {
		c.set(i, edgeDone)
		if c.blocked {
			s.release(c, now)
		}
	}
}

// taskFailed applies each waiting child's policy for a task that entered
// the DLQ; a cancelled child does the same to its own, down the graph.
func (s *Store) taskFailed(j *jobs.Job, now time.Time) {
	s.leftHot(j) // before its children: the last of them to finish ends the workflow
	for c, i := range s.children(j) {
		if !c.blocked || c.edges[i] == edgeDone {
			continue // running or finished already, or run anyway
		}
		switch c.policy {
		case jobs.DependencyRunAnyway:
			c.set(i, edgeDone)
			s.release(c, now)
		case jobs.DependencyWait:
			c.set(i, edgeFailed)
		default:
			s.failDependent(c, i, j, now)
		}
	}
}

// failDependent dead-letters blocked task c for its parent of edge i (job
// pj).
func (s *Store) failDependent(c *task, i int, pj *jobs.Job, now time.Time) {
	cj := s.hot[c.job] // removeHot counts it out of waitingOnParents
	s.toDLQ(cj, jobs.ReasonDependencyFailed, dependencyDetails(c.parents[i].name, pj), now)
}

func dependencyDetails(parent string, pj *jobs.Job) string {
	if pj.Table == jobs.TableDLQ {
		return fmt.Sprintf("parent task %q (job %d) ended in the dead-letter queue: %s", parent, pj.ID, pj.FailureReason)
	}
	return fmt.Sprintf("parent task %q (job %d) left the dead-letter queue without succeeding (purged or trimmed)", parent, pj.ID)
}

// taskResurrected: a task back from the DLQ. Its children that wait for
// it (edgeFailed) wait for it as for any unfinished parent; it waits, in
// turn, only for its parents still hot: one archived is done, and one in
// the DLQ or gone counts as done too, since resurrecting the task is the
// operator's word that it may run.
func (s *Store) taskResurrected(j *jobs.Job, now time.Time) {
	t := s.tasks[j.ID]
	if t == nil {
		return
	}
	t.wf.hot++
	for c, i := range s.children(j) {
		if c.edges[i] == edgeFailed {
			c.set(i, edgeWaiting)
		}
	}
	for i, p := range t.parents {
		if _, hot := s.hot[p.job]; hot {
			t.set(i, edgeWaiting)
		} else {
			t.set(i, edgeDone)
		}
	}
	if n, _ := t.waitingOn(); n > 0 {
		t.blocked = true
		s.queue(j.Queue).waitingOnParents++
		return
	}
	s.pushPending(j, now)
}

// taskGone: a task purged or trimmed. Children that wait for it in the
// DLQ are cancelled as DependencyCancel does; a workflow whose every task
// is gone goes with them.
func (s *Store) taskGone(j *jobs.Job, now time.Time) {
	t := s.tasks[j.ID]
	if t == nil {
		return
	}
	for c, i := range s.children(j) {
		if c.blocked && c.edges[i] == edgeFailed {
			s.failDependent(c, i, j, now)
		}
	}
	delete(s.tasks, j.ID)
	t.job = 0
	for _, o := range t.wf.tasks {
		if o.job != 0 {
			return
		}
	}
	delete(s.workflows, t.wf.id)
}

// newJob builds the hot job of an enqueue of p (normalized) at now.
func (s *Store) newJob(p jobs.EnqueueParams, now time.Time) *jobs.Job {
	s.nextID++
	j := &jobs.Job{
		ID: s.nextID, Queue: p.Queue, Type: p.Type, Payload: bytes.Clone(p.Payload), Priority: p.Priority, Tags: slices.Clone(p.Tags),
		IdempotencyKey: p.IdempotencyKey, CreatedBy: p.CreatedBy, ConcurrencyKey: p.ConcurrencyKey, SequenceKey: p.SequenceKey,
		Metadata: maps.Clone(p.Metadata), MaxAttempts: p.MaxAttempts, Table: jobs.TableHot, Status: jobs.StatusPending,
		CreatedAt: now, ScheduledAt: now.Add(p.Delay), LastUpdatedAt: now,
	}
	if !p.RunAt.IsZero() {
		j.ScheduledAt = p.RunAt
	}
	return j
}

// Workflows implements jobs.WorkflowAdmin.
func (s *Store) Workflows(ctx context.Context, beforeID int64, limit int) ([]jobs.Workflow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit < 1 || limit > 1000 {
		return nil, &jobs.ValidationError{Field: "limit", Value: limit, Rule: "must be between 1 and 1000"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id := range s.workflows {
		if beforeID == 0 || id < beforeID {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b int64) int { return compareInt64(b, a) })
	out := make([]jobs.Workflow, 0, min(limit, len(ids)))
	for _, id := range ids[:min(limit, len(ids))] {
		out = append(out, s.summary(s.workflows[id]))
	}
	return out, nil
}

func (s *Store) summary(wf *workflow) jobs.Workflow {
	w := jobs.Workflow{ID: wf.id, Name: wf.name, CreatedAt: wf.created}
	for _, t := range wf.tasks {
		if t.job == 0 {
			continue
		}
		switch j := s.jobOf(t.job); {
		case j == nil:
		case j.Table == jobs.TableArchive:
			w.Succeeded++
		case j.Table == jobs.TableDLQ:
			w.Failed++
		case t.blocked:
			w.Waiting++
		case j.Status == jobs.StatusPending:
			w.Pending++
		default:
			w.Running++
		}
	}
	return w.WithState()
}

func (s *Store) jobOf(id int64) *jobs.Job {
	for _, t := range []map[int64]*jobs.Job{s.hot, s.archive, s.dlq} {
		if j := t[id]; j != nil {
			return j
		}
	}
	return nil
}

// GetWorkflow implements jobs.WorkflowAdmin.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (jobs.WorkflowDetail, error) {
	if err := ctx.Err(); err != nil {
		return jobs.WorkflowDetail{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wf := s.workflows[id]
	if wf == nil {
		return jobs.WorkflowDetail{}, fmt.Errorf("memstore: workflow %d: %w", id, jobs.ErrWorkflowNotFound)
	}
	d := jobs.WorkflowDetail{Workflow: s.summary(wf)}
	for _, t := range wf.tasks {
		j := s.jobOf(t.job)
		if j == nil {
			continue
		}
		ts := jobs.WorkflowTaskState{Name: t.name, JobID: j.ID, OnParentFailure: t.policy, Table: j.Table, FailureReason: j.FailureReason}
		for _, p := range t.parents {
			ts.Parents = append(ts.Parents, p.name)
		}
		if j.Table == jobs.TableHot {
			ts.Status = j.Status
			if t.blocked {
				ts.WaitingOn, ts.WaitingOnFailed = t.waitingOn()
			}
		}
		d.Tasks = append(d.Tasks, ts)
	}
	return d, nil
}

// CancelWorkflow implements jobs.WorkflowAdmin: Cancel of every hot task,
// children first, so that no parent's cancel dead-letters a child as
// DependencyFailed before the child's own cancel names the operator.
func (s *Store) CancelWorkflow(ctx context.Context, p jobs.CancelWorkflowParams) ([]jobs.CancelResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	id := p.ID
	s.mu.Lock()
	wf := s.workflows[id]
	var ids []int64
	if wf != nil {
		for i := len(wf.tasks) - 1; i >= 0; i-- {
			if j := s.hot[wf.tasks[i].job]; j != nil && wf.tasks[i].job != 0 {
				ids = append(ids, j.ID)
			}
		}
	}
	s.mu.Unlock()
	if wf == nil {
		return nil, fmt.Errorf("memstore: workflow %d: %w", id, jobs.ErrWorkflowNotFound)
	}
	return jobs.CancelChildrenFirst(ctx, s.Cancel, ids, p)
}
