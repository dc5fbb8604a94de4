package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
)

// Workflows (ADR 0034): list, show and cancel, as "jobs" does for jobs.

func (a *app) workflowsCommand() *cobra.Command {
	c := &cobra.Command{Use: "workflows", Short: "See and cancel workflows (ADR 0034): list, show, cancel", Args: cobra.NoArgs}
	c.AddCommand(a.workflowsListCommand(), a.workflowsShowCommand(), a.workflowsCancelCommand())
	return c
}

// errNoWorkflows: the configured store keeps no workflows. A usage error
// (exit 2), as errNeedsSQLServer is: the store chosen is the operator's
// configuration, and no retry can help.
var errNoWorkflows = fmt.Errorf("%w: the configured store keeps no workflows (the SQL Server store at schema version 14 and the in-memory store do)", jobs.ErrWorkflowsUnsupported)

// openWorkflows opens the configured store in its workflow operator role.
func (a *app) openWorkflows(ctx context.Context) (jobs.WorkflowAdmin, error) {
	s, err := a.openAdmin(ctx)
	if err != nil {
		return nil, err
	}
	wa, ok := s.(jobs.WorkflowAdmin)
	if !ok {
		return nil, errNoWorkflows
	}
	return wa, nil
}

// workflowID parses a workflow ID argument.
func workflowID(arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usage("workflow id %q: want a positive integer", arg)
	}
	return id, nil
}

// workflowView is what list and show print of a workflow, and its JSON form.
type workflowView struct {
	ID        int64          `json:"id"`
	Name      string         `json:"name"`
	CreatedAt time.Time      `json:"created_at"`
	State     string         `json:"state"`
	Counts    workflowCounts `json:"counts"`
}

// workflowCounts counts a workflow's tasks by where they are.
type workflowCounts struct {
	Tasks     int `json:"tasks"`
	Pending   int `json:"pending"`
	Waiting   int `json:"waiting"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

func viewOf(w jobs.Workflow) workflowView {
	return workflowView{ID: w.ID, Name: w.Name, CreatedAt: w.CreatedAt, State: w.State.String(), Counts: workflowCounts{
		Tasks: w.Total, Pending: w.Pending, Waiting: w.Waiting, Running: w.Running, Succeeded: w.Succeeded, Failed: w.Failed}}
}

// workflowPage is "workflows list"'s JSON form.
type workflowPage struct {
	Workflows []workflowView `json:"workflows"`
	// NextBeforeID continues the listing; 0 when this was the last page.
	NextBeforeID int64 `json:"next_before_id"`
}

// maxWorkflowPage is the largest page jobs.WorkflowAdmin.Workflows serves.
const maxWorkflowPage = 1000

func (a *app) workflowsListCommand() *cobra.Command {
	var limit int
	var before int64
	c := &cobra.Command{
		Use:   "list [flags]",
		Short: "List workflows, newest first, with their tasks counted by where they are",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > maxWorkflowPage {
				return usage("--limit %d: want 1 to %d", limit, maxWorkflowPage)
			}
			if before < 0 {
				return usage("--before %d: want a workflow ID, or 0 for the newest", before)
			}
			s, err := a.openWorkflows(cmd.Context())
			if err != nil {
				return err
			}
			// One more than the page, when the store allows, tells the
			// last page from a full one.
			got, err := s.Workflows(cmd.Context(), before, min(limit+1, maxWorkflowPage))
			if err != nil {
				return err
			}
			page := workflowPage{Workflows: make([]workflowView, 0, min(limit, len(got)))}
			for _, w := range got[:min(limit, len(got))] {
				page.Workflows = append(page.Workflows, viewOf(w))
			}
			if len(got) > limit || (len(got) == maxWorkflowPage && limit == maxWorkflowPage) {
				page.NextBeforeID = page.Workflows[len(page.Workflows)-1].ID
			}
			return a.print(page, func(w *tabwriter.Writer) {
				if len(page.Workflows) == 0 {
					fmt.Fprintln(w, "no workflows")
					return
				}
				fmt.Fprintln(w, "ID\tNAME\tSTATE\tTASKS\tPENDING\tWAITING\tRUNNING\tSUCCEEDED\tFAILED\tCREATED")
				for _, v := range page.Workflows {
					n := v.Counts
					fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", v.ID, v.Name, v.State, n.Tasks, n.Pending, n.Waiting, n.Running,
						n.Succeeded, n.Failed, v.CreatedAt.Format(time.RFC3339))
				}
				if page.NextBeforeID != 0 {
					fmt.Fprintf(w, "more: --before %d\n", page.NextBeforeID)
				}
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", jobs.DefaultPageSize, "page size (at most 1000)")
	c.Flags().Int64Var(&before, "before", 0, "continue below this ID (from the previous page)")
	return c
}

// taskView is one task as "workflows show" prints it, and its JSON form.
type taskView struct {
	Name            string   `json:"name"`
	JobID           int64    `json:"job_id"`
	Parents         []string `json:"parents"`
	OnParentFailure string   `json:"on_parent_failure"`
	// Where is waiting, pending, fetched or processing (hot), archive or
	// dlq.
	Where string `json:"where"`
	// WaitingOn counts the parents a waiting task still waits for;
	// WaitingOnFailed, one of them is in the DLQ (DependencyWait).
	WaitingOn       int    `json:"waiting_on,omitempty"`
	WaitingOnFailed bool   `json:"waiting_on_failed,omitempty"`
	FailureReason   string `json:"failure_reason,omitempty"`
}

func taskViewOf(t jobs.WorkflowTaskState) taskView {
	v := taskView{Name: t.Name, JobID: t.JobID, Parents: t.Parents, OnParentFailure: t.OnParentFailure.String(), Where: t.Table.String(),
		WaitingOn: t.WaitingOn, WaitingOnFailed: t.WaitingOnFailed}
	if v.Parents == nil {
		v.Parents = []string{}
	}
	switch {
	case t.Table == jobs.TableHot && t.WaitingOn > 0:
		v.Where = "waiting"
	case t.Table == jobs.TableHot:
		v.Where = strings.ToLower(t.Status.String())
	case t.Table == jobs.TableDLQ:
		v.FailureReason = t.FailureReason.String()
	}
	return v
}

// whereText is a task's place in words, for the table.
func (v taskView) whereText() string {
	switch {
	case v.WaitingOnFailed:
		return fmt.Sprintf("waiting on %d parent(s), one in the DLQ: resurrect it or cancel this task", v.WaitingOn)
	case v.Where == "waiting":
		return fmt.Sprintf("waiting on %d parent(s)", v.WaitingOn)
	case v.Where == "archive":
		return "archive (succeeded)"
	case v.Where == "dlq":
		return "dlq: " + v.FailureReason
	}
	return v.Where
}

// workflowDetailView is "workflows show"'s JSON form.
type workflowDetailView struct {
	workflowView
	Tasks []taskView `json:"tasks"`
}

func (a *app) workflowsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one workflow and each task: its job, parents, policy, and where it is",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, s, err := a.workflowArg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			d, err := s.GetWorkflow(cmd.Context(), id)
			if errors.Is(err, jobs.ErrWorkflowNotFound) {
				return notFound("workflow %d not found; a workflow goes with its last task (retention or purge)", id)
			}
			if err != nil {
				return err
			}
			v := workflowDetailView{workflowView: viewOf(d.Workflow), Tasks: make([]taskView, len(d.Tasks))}
			for i, t := range d.Tasks {
				v.Tasks[i] = taskViewOf(t)
			}
			return a.print(v, func(w *tabwriter.Writer) {
				n := v.Counts
				fmt.Fprintf(w, "workflow\t%d %s\n", v.ID, v.Name)
				fmt.Fprintf(w, "state\t%s\n", v.State)
				fmt.Fprintf(w, "created\t%s\n", v.CreatedAt.Format(time.RFC3339Nano))
				fmt.Fprintf(w, "tasks\t%d: %d pending, %d waiting, %d running, %d succeeded, %d failed\n",
					n.Tasks, n.Pending, n.Waiting, n.Running, n.Succeeded, n.Failed)
				fmt.Fprintln(w)
				fmt.Fprintln(w, "TASK\tJOB\tAFTER\tON PARENT FAILURE\tWHERE")
				for _, t := range v.Tasks {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", t.Name, t.JobID, orDefault(strings.Join(t.Parents, ","), "-"), t.OnParentFailure, t.whereText())
				}
			})
		},
	}
}

func (a *app) workflowsCancelCommand() *cobra.Command {
	var reason, by string
	c := &cobra.Command{
		Use:   "cancel ID [--reason TEXT] [--by NAME]",
		Short: "Cancel every task of a workflow not finished yet, as jobs cancel does (a running one is asked to stop)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, s, err := a.workflowArg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			p := jobs.CancelWorkflowParams{ID: id, By: by, Reason: reason}
			if err := p.Validate(); err != nil {
				return &usageError{err}
			}
			rs, err := s.CancelWorkflow(cmd.Context(), p)
			if errors.Is(err, jobs.ErrWorkflowNotFound) {
				return notFound("workflow %d not found; nothing cancelled", id)
			}
			if err != nil {
				return err
			}
			type result struct {
				ID      int64  `json:"id"`
				Outcome string `json:"outcome"`
			}
			out := make([]result, len(rs))
			for i, r := range rs {
				out[i] = result{r.ID, r.Outcome.String()}
			}
			return a.print(out, func(w *tabwriter.Writer) {
				if len(out) == 0 {
					fmt.Fprintf(w, "workflow %d has no task left to cancel: every task finished\n", id)
					return
				}
				fmt.Fprintln(w, "JOB\tOUTCOME")
				for _, r := range out {
					fmt.Fprintf(w, "%d\t%s\n", r.ID, r.Outcome)
				}
			})
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for each dead letter's details")
	c.Flags().StringVar(&by, "by", defaultActor(), "who cancels, for the dead letter's details")
	return c
}

// workflowArg reads a command's workflow ID and opens the store's
// workflows.
func (a *app) workflowArg(ctx context.Context, arg string) (int64, jobs.WorkflowAdmin, error) {
	id, err := workflowID(arg)
	if err != nil {
		return 0, nil, err
	}
	s, err := a.openWorkflows(ctx)
	return id, s, err
}
