package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

// Workflows (ADR 0034). A workflow's tasks go in with its edges in one
// transaction, in bounded statements (qInsertWorkflowTasks); what a
// finished task owes its children commits with its move, and release steps
// (qReleaseTasks) pay it before the claims of any process.

var (
	_ jobs.WorkflowEnqueuer   = (*Store)(nil)
	_ jobs.WorkflowTxEnqueuer = (*Store)(nil)
	_ jobs.WorkflowExtender   = (*Store)(nil)
	_ jobs.WorkflowAdmin      = (*Store)(nil)
)

// Bounds of one release step: the owed tasks it takes from each of the
// archive, the DLQ and WorkflowGone, and the edges it walks in all. With
// the children it updates, a step holds about 3,600 row locks at most,
// below lock escalation's 5,000.
const (
	releaseMaxParents = 200
	releaseMaxEdges   = 1000
	// releaseStepsPerClaim bounds the steps a claim runs before it claims,
	// so a claim waits for at most this many steps: 10,000 children of one
	// parent are released by three claims.
	releaseStepsPerClaim = 4
	// workflowEdgeBatch bounds the edges of one qInsertWorkflowTasks.
	workflowEdgeBatch = 1000
)

// workflowTaskRow is one row of the WorkflowTaskList table type, in column
// order.
type workflowTaskRow struct {
	Ord             int32
	WorkflowTask    string
	OnParentFailure int32
	WaitingOn       int32
}

// workflowEdgeRow is one row of the WorkflowEdgeList table type, in column
// order: the parent is a task of the same enqueue (ParentOrd) or one that
// exists (ParentID).
type workflowEdgeRow struct {
	ParentOrd *int32
	ParentID  *int64
	ChildOrd  int32
}

// EnqueueWorkflow implements jobs.WorkflowEnqueuer: one transaction of the
// store's own.
func (s *Store) EnqueueWorkflow(ctx context.Context, p jobs.WorkflowParams) (jobs.WorkflowResult, error) {
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.WorkflowResult{}, err
	}
	var out jobs.WorkflowResult
	err = s.do(ctx, "enqueue workflow", once, func(ctx context.Context) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if out, err = s.insertWorkflow(ctx, tx, 0, p.Name, p.Tasks, nil, jobs.LeaseRef{}); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return jobs.WorkflowResult{}, fmt.Errorf("sqlserver: enqueue workflow %q: %w", p.Name, err)
	}
	return out, nil
}

// EnqueueWorkflowTx implements jobs.WorkflowTxEnqueuer: the workflow
// exists if and only if tx commits. As EnqueueTx, nothing is retried
// here: the transaction is the caller's to retry.
func (s *Store) EnqueueWorkflowTx(ctx context.Context, tx *sql.Tx, p jobs.WorkflowParams) (jobs.WorkflowResult, error) {
	if tx == nil {
		return jobs.WorkflowResult{}, fmt.Errorf("sqlserver: enqueue workflow %q in caller's transaction: %w", p.Name, ErrNilTx)
	}
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.WorkflowResult{}, err
	}
	out, err := s.insertWorkflow(ctx, tx, 0, p.Name, p.Tasks, nil, jobs.LeaseRef{})
	if err != nil {
		return jobs.WorkflowResult{}, fmt.Errorf("sqlserver: enqueue workflow %q in caller's transaction: %w", p.Name, err)
	}
	return out, nil
}

// insertWorkflow inserts tasks (normalized: parents first) into workflow
// wf (0: a new one named name) on q, a transaction: at most insertBatch
// tasks and workflowEdgeBatch edges a statement. A parent not among tasks
// is one of existing, by name. Task i's ID is the range's first plus i.
//
// fence, when not zero, is the job a fan-out comes from: the last part
// checks it still holds its lease, and error 51004 rolls the whole fan-out
// back when it does not.
func (s *Store) insertWorkflow(ctx context.Context, q querier, wf int64, name string, tasks []jobs.WorkflowTask, existing map[string]int64, fence jobs.LeaseRef) (jobs.WorkflowResult, error) {
	ord := make(map[string]int32, len(tasks))
	for i, t := range tasks {
		ord[t.Name] = int32(i)
	}
	edges := []workflowEdgeRow{} // never nil: the driver refuses a nil TVP
	for i, t := range tasks {
		for _, parent := range t.After {
			e := workflowEdgeRow{ChildOrd: int32(i)}
			if o, ok := ord[parent]; ok {
				e.ParentOrd = &o
			} else {
				id := existing[parent]
				e.ParentID = &id
			}
			edges = append(edges, e)
		}
	}
	parts := max((len(tasks)+s.insertBatch-1)/s.insertBatch, (len(edges)+workflowEdgeBatch-1)/workflowEdgeBatch)
	var first int64
	for part := range parts {
		lo, hi := min(part*s.insertBatch, len(tasks)), min((part+1)*s.insertBatch, len(tasks))
		items := make([]insertRow, 0, hi-lo)
		rows := make([]workflowTaskRow, 0, hi-lo)
		ps := make([]jobs.EnqueueParams, 0, hi-lo)
		for i := lo; i < hi; i++ {
			t := tasks[i]
			local := int32(i - lo)
			items = append(items, toInsertRow(local, t.Job))
			rows = append(rows, workflowTaskRow{Ord: local, WorkflowTask: t.Name, OnParentFailure: int32(t.OnParentFailure), WaitingOn: int32(len(t.After))})
			ps = append(ps, t.Job)
		}
		side, err := s.sideLists(ps)
		if err != nil {
			return jobs.WorkflowResult{}, err
		}
		el, eh := min(part*workflowEdgeBatch, len(edges)), min((part+1)*workflowEdgeBatch, len(edges))
		var f jobs.LeaseRef
		if part == parts-1 {
			f = fence
		}
		args := append(side, named("fenceId", f.ID), named("fenceLease", f.Lease),
			named("workflowId", wf), named("firstId", first), named("name", text(name)), named("total", int64(len(tasks))),
			named("base", int64(lo)), named("items", s.insertTVP(items)),
			named("tasks", mssql.TVP{TypeName: s.schema + ".WorkflowTaskList", Value: rows}),
			named("edges", mssql.TVP{TypeName: s.schema + ".WorkflowEdgeList", Value: append([]workflowEdgeRow{}, edges[el:eh]...)}))
		if err := q.QueryRowContext(ctx, s.q.insertWorkflowTasks, args...).Scan(&wf, &first); err != nil {
			return jobs.WorkflowResult{}, err
		}
	}
	out := jobs.WorkflowResult{ID: wf, Jobs: make(map[string]int64, len(tasks))}
	for i, t := range tasks {
		out.Jobs[t.Name] = first + int64(i)
	}
	return out, nil
}

// AddWorkflowTasks implements jobs.WorkflowExtender: in one transaction,
// under the workflow lock (qAddTasksBegin), fenced by the adding job's
// lease at the last insert.
func (s *Store) AddWorkflowTasks(ctx context.Context, p jobs.AddTasksParams) (map[string]int64, error) {
	var out map[string]int64
	err := s.do(ctx, "add workflow tasks", once, func(ctx context.Context) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if out, err = s.addTasks(ctx, tx, p); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: add workflow tasks from job %d: %w", p.Ref.ID, err)
	}
	return out, nil
}

func (s *Store) addTasks(ctx context.Context, tx querier, p jobs.AddTasksParams) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, s.q.addTasksBegin, named("id", p.Ref.ID), named("lease", p.Ref.Lease),
		named("lockTimeoutMs", s.lockTimeoutMs()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found bool
	var wf sql.NullInt64
	var task, wfName sql.NullString
	if !rows.Next() {
		return nil, errors.Join(rows.Err(), errors.New("no reply to the lease check"))
	}
	if err := rows.Scan(&found, &wf, &task, &wfName); err != nil {
		return nil, err
	}
	existing := map[string]int64{}
	if rows.NextResultSet() {
		for rows.Next() {
			var name string
			var id int64
			if err := rows.Scan(&name, &id); err != nil {
				return nil, err
			}
			existing[name] = id
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	switch {
	case !found:
		return nil, fmt.Errorf("lease %d: %w", p.Ref.Lease, jobs.ErrLeaseLost)
	case !wf.Valid:
		return nil, jobs.ErrNotAWorkflowTask
	}
	wp, err := jobs.WorkflowParams{Name: wfName.String, Tasks: p.Tasks}.NormalizeWithin(s.limits, func(name string) bool {
		_, ok := existing[name]
		return ok
	})
	if err != nil {
		return nil, err
	}
	if len(existing)+len(wp.Tasks) > jobs.MaxWorkflowTasks {
		return nil, &jobs.WorkflowError{Workflow: wp.Name, Err: &jobs.ValidationError{Field: "tasks", Value: len(existing) + len(wp.Tasks),
			Rule: "a workflow has at most " + strconv.Itoa(jobs.MaxWorkflowTasks) + " tasks"}}
	}
	r, err := s.insertWorkflow(ctx, tx, wf.Int64, wp.Name, wp.Tasks, existing, p.Ref)
	var me mssql.Error
	if errors.As(err, &me) && me.Number == 51004 {
		return nil, fmt.Errorf("lease %d, lost while adding: %w", p.Ref.Lease, jobs.ErrLeaseLost)
	}
	if err != nil {
		return nil, err
	}
	return r.Jobs, nil
}

// releaseTasks runs release steps until nothing more is owed, another
// process holds the workflow lock, or releaseStepsPerClaim steps ran. It
// clears s.owed only when a step saw nothing more owed.
func (s *Store) releaseTasks(ctx context.Context) error {
	for range releaseStepsPerClaim {
		more, busy, err := s.releaseStep(ctx, 0)
		if err != nil {
			return err
		}
		if busy {
			return nil // the holder pays it; this claim's reply says whether more is owed
		}
		if !more {
			s.owed.Store(false)
			return nil
		}
	}
	return nil
}

// releaseStep runs one release step: of every workflow (workflow 0), or of
// one only. It reports whether more is owed and whether another step held
// the workflow lock (then it did nothing).
func (s *Store) releaseStep(ctx context.Context, workflow int64) (more, busy bool, err error) {
	var ended []jobs.Workflow
	err = s.do(ctx, "release workflow tasks", idempotent, func(ctx context.Context) error {
		ended = ended[:0]
		rows, err := s.db.QueryContext(ctx, s.q.releaseTasks, named("maxParents", int64(releaseMaxParents)),
			named("maxEdges", int64(releaseMaxEdges)), named("workflowId", workflow))
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return errors.Join(rows.Err(), errors.New("no reply from the release step"))
		}
		if err := rows.Scan(&more, &busy); err != nil {
			return err
		}
		if rows.NextResultSet() {
			for rows.Next() {
				w := jobs.Workflow{State: jobs.WorkflowSucceeded}
				var failed bool
				if err := rows.Scan(&w.ID, &failed); err != nil {
					return err
				}
				if failed {
					w.State = jobs.WorkflowFailed
				}
				ended = append(ended, w)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return false, false, fmt.Errorf("sqlserver: release workflow tasks: %w", err)
	}
	if s.workflowEnded != nil {
		for _, w := range ended {
			s.workflowEnded(w)
		}
	}
	return more, busy, nil
}

// WithWorkflowEnded calls ended each time a release step of this store
// sees a workflow end: the step that pays the last of its tasks to leave
// JobsHot, once per end in the whole fleet (steps take one lock), with the
// workflow's ID and State (WorkflowSucceeded or WorkflowFailed);
// telemetry.Metrics.RecordWorkflowEnded counts them, and chokaq.New wires
// it when its Config has Telemetry. A workflow with a task resurrected
// runs again and ends again. It is called after the step commits and must
// be cheap. One end can go uncounted: a workflow's last task trimmed by
// retention before any step paid it.
func WithWorkflowEnded(ended func(jobs.Workflow)) Option {
	return func(s *Store) { s.workflowEnded = ended }
}

// Workflows implements jobs.WorkflowAdmin.
func (s *Store) Workflows(ctx context.Context, beforeID int64, limit int) ([]jobs.Workflow, error) {
	if limit < 1 || limit > 1000 {
		return nil, &jobs.ValidationError{Field: "limit", Value: limit, Rule: "must be between 1 and 1000"}
	}
	var out []jobs.Workflow
	err := s.do(ctx, "list workflows", idempotent, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, s.q.workflows, named("beforeId", max(beforeID, 0)), named("limit", int64(limit)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w jobs.Workflow
			var pending, waiting, running, succeeded, failed int64
			if err := rows.Scan(&w.ID, &w.Name, &w.CreatedAt, &pending, &waiting, &running, &succeeded, &failed); err != nil {
				return err
			}
			w.CreatedAt = w.CreatedAt.UTC()
			w.Pending, w.Waiting, w.Running, w.Succeeded, w.Failed = int(pending), int(waiting), int(running), int(succeeded), int(failed)
			out = append(out, w.WithState())
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: list workflows: %w", err)
	}
	return out, nil
}

// GetWorkflow implements jobs.WorkflowAdmin: one statement, three results.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (jobs.WorkflowDetail, error) {
	var d jobs.WorkflowDetail
	err := s.do(ctx, "get workflow", idempotent, func(ctx context.Context) error {
		var err error
		d, err = s.getWorkflow(ctx, id)
		return err
	})
	if err != nil {
		return jobs.WorkflowDetail{}, fmt.Errorf("sqlserver: workflow %d: %w", id, err)
	}
	return d, nil
}

func (s *Store) getWorkflow(ctx context.Context, id int64) (jobs.WorkflowDetail, error) {
	var d jobs.WorkflowDetail
	rows, err := s.db.QueryContext(ctx, s.q.getWorkflow, named("id", id))
	if err != nil {
		return d, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return d, err
		}
		return d, jobs.ErrWorkflowNotFound
	}
	if err := rows.Scan(&d.ID, &d.Name, &d.CreatedAt); err != nil {
		return d, err
	}
	d.CreatedAt = d.CreatedAt.UTC()
	byID := map[int64]int{}
	if rows.NextResultSet() {
		for rows.Next() {
			var t jobs.WorkflowTaskState
			var table int64
			var status, policy, waitingOn, reason sql.NullInt64
			if err := rows.Scan(&t.JobID, &t.Name, &table, &status, &policy, &waitingOn, &reason); err != nil {
				return d, err
			}
			t.Table, t.OnParentFailure, t.FailureReason = jobs.Table(table), jobs.DependencyPolicy(policy.Int64), jobs.FailureReason(reason.Int64)
			switch {
			case t.Table == jobs.TableArchive:
				d.Succeeded++
			case t.Table == jobs.TableDLQ:
				d.Failed++
			case status.Int64 == statusWaitingOnParents:
				d.Waiting++
				t.WaitingOn = int(waitingOn.Int64)
			case status.Int64 == int64(jobs.StatusFetched) || status.Int64 == int64(jobs.StatusProcessing):
				d.Running++
			default:
				d.Pending++
			}
			if t.Table == jobs.TableHot {
				t.Status = readerStatus(status.Int64)
			}
			byID[t.JobID] = len(d.Tasks)
			d.Tasks = append(d.Tasks, t)
		}
	}
	type edge struct {
		parent int64
		open   bool
	}
	var edges = map[int64][]edge{}
	if rows.NextResultSet() {
		for rows.Next() {
			var parent, child, state int64
			if err := rows.Scan(&parent, &child, &state); err != nil {
				return d, err
			}
			edges[child] = append(edges[child], edge{parent, state == 0})
		}
	}
	if err := rows.Err(); err != nil {
		return d, err
	}
	if len(d.Tasks) == 0 {
		return d, jobs.ErrWorkflowNotFound // every task is gone; its row goes at the next release step
	}
	names := make(map[int64]string, len(d.Tasks))
	for _, t := range d.Tasks {
		names[t.JobID] = t.Name
	}
	for i := range d.Tasks {
		t := &d.Tasks[i]
		for _, e := range edges[t.JobID] {
			if n, ok := names[e.parent]; ok {
				t.Parents = append(t.Parents, n)
			}
			if p, ok := byID[e.parent]; ok && e.open && t.WaitingOn > 0 && d.Tasks[p].Table == jobs.TableDLQ {
				t.WaitingOnFailed = true
			}
		}
	}
	d.Workflow = d.Workflow.WithState()
	return d, nil
}

// CancelWorkflow implements jobs.WorkflowAdmin: Cancel of the workflow's
// hot tasks, children first (a task's ID is above its parents'), so each
// child's dead letter names the operator's cancel, not its parent's; in
// chunks of jobs.MaxCancelIDs, each one Cancel's transaction.
func (s *Store) CancelWorkflow(ctx context.Context, p jobs.CancelWorkflowParams) ([]jobs.CancelResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d, err := s.GetWorkflow(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for i := len(d.Tasks) - 1; i >= 0; i-- {
		if d.Tasks[i].Table == jobs.TableHot {
			ids = append(ids, d.Tasks[i].JobID)
		}
	}
	return jobs.CancelChildrenFirst(ctx, s.Cancel, ids, p)
}

// noteOwed records a claim's or a probe's report that a release is owed.
func (s *Store) noteOwed(owed bool) {
	if owed {
		s.owed.Store(true)
	}
}
