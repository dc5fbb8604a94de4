package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// The Workflows pages (ADR 0034) need a store that implements
// jobs.WorkflowAdmin; over any other they say so, as the charts do
// without a jobs.FinishedCounter.

// maxTableTasks is how many tasks a workflow's page lists at once; the
// rest are paged with ?from=.
const maxTableTasks = 500

// workflowRow is one line of the Workflows page.
type workflowRow struct {
	jobs.Workflow
	Age time.Duration
}

// workflowsData is the Workflows page.
type workflowsData struct {
	Available bool // the store implements jobs.WorkflowAdmin
	Rows      []workflowRow
	First     bool
	NextURL   string
	FirstURL  string
}

func (d *Dashboard) workflowsPage(w http.ResponseWriter, r *http.Request) {
	data := workflowsData{Available: d.workflows != nil, FirstURL: d.path("/workflows")}
	if d.workflows == nil {
		d.render(w, r, http.StatusOK, "workflows", "Workflows", "workflows", data)
		return
	}
	ctx := r.Context()
	var before int64
	var err error
	if s := r.URL.Query().Get("before"); s != "" {
		if before, err = parseID("before", s); err != nil {
			d.failErr(w, r, err)
			return
		}
	}
	data.First = before == 0
	list, err := d.workflows.Workflows(ctx, before, jobs.DefaultPageSize)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	now, err := d.store.Now(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	for _, wf := range list {
		data.Rows = append(data.Rows, workflowRow{Workflow: wf, Age: now.Sub(wf.CreatedAt)})
	}
	if len(list) == jobs.DefaultPageSize {
		data.NextURL = d.path("/workflows") + "?before=" + strconv.FormatInt(list[len(list)-1].ID, 10)
	}
	d.render(w, r, http.StatusOK, "workflows", "Workflows", "workflows", data)
}

// workflowTask is one row of a workflow's task table.
type workflowTask struct {
	jobs.WorkflowTaskState
	State string // taskState
}

// workflowData is a workflow's page.
type workflowData struct {
	Available bool
	Workflow  jobs.Workflow
	Age       time.Duration
	// Drawn: the graph is within the bounds and Drawing holds it; else
	// Summary counts the tasks by state and TooBig says which bound.
	Drawn   bool
	Drawing dagDrawing
	TooBig  string
	Summary []stateCount
	States  []string // the legend
	// Tasks are the table's rows, from task From on; Total counts all.
	Tasks       []workflowTask
	From, Total int
	// ShownFrom and ShownTo number the rows shown from 1, for the note.
	ShownFrom, ShownTo, PageSize int
	NextURL                      string
	PrevURL                      string
	CanCancel                    bool
	CancelAction                 string
	UnfinishedTask               int // hot tasks, which a cancel would touch
}

type stateCount struct {
	State string
	N     int
}

func (d *Dashboard) workflowPage(w http.ResponseWriter, r *http.Request) {
	if d.workflows == nil {
		d.render(w, r, http.StatusOK, "workflow", "Workflow", "workflows", workflowData{})
		return
	}
	id, err := parseID("workflow id", r.PathValue("id"))
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	from := 0
	if s := r.URL.Query().Get("from"); s != "" {
		if from, err = strconv.Atoi(s); err != nil || from < 0 {
			d.failErr(w, r, badInput("from %q: want a task number from 0", s))
			return
		}
	}
	ctx := r.Context()
	wf, err := d.workflows.GetWorkflow(ctx, id)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	now, err := d.store.Now(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	data := workflowData{Available: true, Workflow: wf.Workflow, Age: now.Sub(wf.CreatedAt), States: taskStates,
		Total: len(wf.Tasks), From: min(from, len(wf.Tasks))}
	counts := map[string]int{}
	rows := make([]workflowTask, len(wf.Tasks))
	for i, t := range wf.Tasks {
		rows[i] = workflowTask{WorkflowTaskState: t, State: taskState(t)}
		counts[rows[i].State]++
		if t.Table == jobs.TableHot {
			data.UnfinishedTask++
		}
	}
	for _, s := range taskStates {
		data.Summary = append(data.Summary, stateCount{s, counts[s]})
	}
	switch edges := edgeCount(wf.Tasks); {
	case len(wf.Tasks) > maxDrawnTasks:
		data.TooBig = fmt.Sprintf("%d tasks, more than the %d drawn", len(wf.Tasks), maxDrawnTasks)
	case edges > maxDrawnEdges:
		data.TooBig = fmt.Sprintf("%d dependencies, more than the %d drawn", edges, maxDrawnEdges)
	default:
		data.Drawn, data.Drawing = true, layoutDAG(wf.Tasks)
	}
	page := d.path("/workflow/" + strconv.FormatInt(id, 10))
	data.Tasks = rows[data.From:min(data.From+maxTableTasks, len(rows))]
	data.ShownFrom, data.ShownTo, data.PageSize = data.From+1, data.From+len(data.Tasks), maxTableTasks
	if data.From+maxTableTasks < len(rows) {
		data.NextURL = page + "?from=" + strconv.Itoa(data.From+maxTableTasks)
	}
	if data.From > 0 {
		data.PrevURL = page + "?from=" + strconv.Itoa(max(data.From-maxTableTasks, 0))
	}
	if !d.opts.ReadOnly && data.UnfinishedTask > 0 {
		data.CanCancel, data.CancelAction = true, d.path("/workflows/"+strconv.FormatInt(id, 10)+"/cancel")
	}
	d.render(w, r, http.StatusOK, "workflow", "Workflow "+strconv.FormatInt(id, 10), "workflows", data)
}

// cancelWorkflow cancels every unfinished task of a workflow, as the
// inspector's cancel does a job: one not yet started goes to the DLQ at
// once, a running one is asked to stop. jobs.WorkflowAdmin takes one note,
// so the actor goes into it beside the form's reason.
func (d *Dashboard) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	if d.workflows == nil {
		d.failErr(w, r, jobs.ErrWorkflowsUnsupported)
		return
	}
	id, err := parseID("workflow id", r.PathValue("id"))
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	reason := "the whole workflow"
	if said := strings.TrimSpace(r.PostForm.Get("reason")); said != "" {
		reason += ": " + said
	}
	rs, err := d.workflows.CancelWorkflow(r.Context(), jobs.CancelWorkflowParams{ID: id, By: jobs.Clip(d.actor(r), jobs.MaxCreatedByLen),
		Reason: jobs.Clip(reason, jobs.MaxCancelReasonLen)})
	if errors.Is(err, jobs.ErrWorkflowNotFound) {
		// As an unknown schedule: a 404 that says so, no action to log.
		d.failErr(w, r, err)
		return
	}
	counts := map[jobs.CancelOutcome]int{}
	for _, c := range rs {
		counts[c.Outcome]++
	}
	var parts []string
	for _, o := range []jobs.CancelOutcome{jobs.CancelDone, jobs.CancelRequested, jobs.CancelAlreadyFinished, jobs.CancelNotFound} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no task was unfinished"}
	}
	text := fmt.Sprintf("cancel of workflow %d: %s", id, strings.Join(parts, ", "))
	if shown := d.record(r, "cancel_workflow", text, counts[jobs.CancelDone]+counts[jobs.CancelRequested], err); err != nil {
		d.failAction(w, r, err, "cancel failed: ", shown)
		return
	}
	d.redirectWithFlash(w, r, d.path("/workflow/"+strconv.FormatInt(id, 10)), capitalize(text)+".")
}
