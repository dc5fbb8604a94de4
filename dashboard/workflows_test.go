package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
)

// seedWorkflow enqueues import -> transform-1..3 -> report, plus a root
// audit, and moves them so that every state shows: import and transform-1
// succeeded, transform-2 failed, transform-3 running, report waiting (its
// policy is wait, on a failed parent), audit pending.
func (f *fixture) seedWorkflow() jobs.WorkflowResult {
	f.t.Helper()
	ctx := context.Background()
	job := func(typ string) jobs.EnqueueParams {
		return jobs.EnqueueParams{Queue: "etl", Type: typ, Payload: []byte(`{}`)}
	}
	res, err := f.store.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "nightly import", Tasks: []jobs.WorkflowTask{
		{Name: "import", Job: job("import")},
		{Name: "transform-1", Job: job("transform"), After: []string{"import"}},
		{Name: "transform-2", Job: job("transform"), After: []string{"import"}},
		{Name: "transform-3", Job: job("transform"), After: []string{"import"}},
		{Name: "report", Job: job("report"), After: []string{"transform-1", "transform-2", "transform-3"}, OnParentFailure: jobs.DependencyWait},
		{Name: "audit", Job: jobs.EnqueueParams{Queue: "audit", Type: "audit", Payload: []byte(`{}`)}},
	}})
	must(f.t, err)
	must(f.t, f.store.Complete(ctx, f.start(res.Jobs["import"], "etl")))
	must(f.t, f.store.Complete(ctx, f.start(res.Jobs["transform-1"], "etl")))
	must(f.t, f.store.DeadLetter(ctx, f.start(res.Jobs["transform-2"], "etl"), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "bad row"}))
	f.start(res.Jobs["transform-3"], "etl")
	return res
}

func TestTheWorkflowsPageListsWorkflowsNewestFirstWithTheirProgress(t *testing.T) {
	f := newFixture(t, Options{})
	first := f.seedWorkflow()
	second, err := f.store.EnqueueWorkflow(context.Background(), jobs.WorkflowParams{Name: "second", Tasks: []jobs.WorkflowTask{{Name: "only", Job: jobs.EnqueueParams{Queue: "q", Type: "t"}}}})
	must(t, err)
	r := f.get("/workflows")
	wantStatus(t, r, http.StatusOK, `class="on">Workflows</a>`, "nightly import", `<span class="badge wf-running">running</span>`, "2/6")
	if a, b := strings.Index(r.body, fmt.Sprintf(`data-id="%d"`, second.ID)), strings.Index(r.body, fmt.Sprintf(`data-id="%d"`, first.ID)); a < 0 || b < 0 || a > b {
		t.Fatalf("want workflow %d before %d:\n%s", second.ID, first.ID, r.body)
	}
	// The row's counts: 1 pending (audit), 1 waiting, 1 running, 1 failed.
	row := r.body[strings.Index(r.body, fmt.Sprintf(`data-id="%d"`, first.ID)):]
	row = row[:strings.Index(row, "</tr>")]
	if got := regexp.MustCompile(`<td class="num">(\d+)</td>`).FindAllStringSubmatch(row, -1); len(got) != 4 ||
		got[0][1] != "1" || got[1][1] != "1" || got[2][1] != "1" || got[3][1] != "1" {
		t.Fatalf("counts %v in\n%s", got, row)
	}
}

func TestTheWorkflowsPageIsPagedWithBefore(t *testing.T) {
	f := newFixture(t, Options{})
	var ids []int64
	for i := range jobs.DefaultPageSize + 1 {
		res, err := f.store.EnqueueWorkflow(context.Background(), jobs.WorkflowParams{Name: fmt.Sprintf("wf-%d", i),
			Tasks: []jobs.WorkflowTask{{Name: "only", Job: jobs.EnqueueParams{Queue: "q", Type: "t"}}}})
		must(t, err)
		ids = append(ids, res.ID)
	}
	r := f.get("/workflows")
	next := fmt.Sprintf(`href="/workflows?before=%d" id="older"`, ids[1])
	wantStatus(t, r, http.StatusOK, next)
	if strings.Contains(r.body, fmt.Sprintf(`data-id="%d"`, ids[0])) {
		t.Fatal("the first page shows the oldest workflow")
	}
	r = f.get(fmt.Sprintf("/workflows?before=%d", ids[1]))
	wantStatus(t, r, http.StatusOK, fmt.Sprintf(`data-id="%d"`, ids[0]), "← newest")
	if strings.Count(r.body, "<tr data-id=") != 1 || strings.Contains(r.body, `id="older"`) {
		t.Fatalf("the second page:\n%s", r.body)
	}
	wantStatus(t, f.get("/workflows?before=x"), http.StatusBadRequest)
}

func TestAWorkflowsPageDrawsItsGraphAndListsItsTasks(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.seedWorkflow()
	page := fmt.Sprintf("/workflow/%d", res.ID)
	r := f.get(page)
	wantStatus(t, r, http.StatusOK, `<svg class="dag-svg" id="dag"`, `id="legend"`, "nightly import", "2 of 6 tasks succeeded")
	for state, n := range map[string]int{"succeeded": 2, "failed": 1, "running": 1, "waiting": 1, "pending": 1} {
		if got := strings.Count(r.body, `<g class="node wf-`+state+`"`); got != n {
			t.Errorf("%d %s nodes, want %d", got, state, n)
		}
		if !strings.Contains(r.body, `<li><span class="swatch wf-`+state+`"></span>`+state+`</li>`) {
			t.Errorf("the legend lacks %s", state)
		}
	}
	if n := strings.Count(r.body, `<path class="edge`); n != 6 {
		t.Errorf("%d edges, want 6", n)
	}
	// Each node links to its job; the table has a row per task, with the
	// same link, its parents and its policy.
	for name, id := range res.Jobs {
		if !strings.Contains(r.body, fmt.Sprintf(`<a href="/job/%d" class="node-link"><g class="node wf-`, id)) {
			t.Errorf("no node links to %s's job %d", name, id)
		}
		if !strings.Contains(r.body, fmt.Sprintf(`<tr data-task="%s">`, name)) {
			t.Errorf("no table row for %s", name)
		}
	}
	if strings.Count(r.body, "<tr data-task=") != 6 {
		t.Fatalf("want 6 task rows:\n%s", r.body)
	}
	wantStatus(t, r, http.StatusOK, "<td>transform-1, transform-2, transform-3</td>\n  <td>wait</td>", "on a failed parent", `id="cancel-workflow"`)
	if strings.Contains(r.body, "dag-summary") {
		t.Fatal("a small workflow is summarised, not drawn")
	}
	// The same store draws the same page.
	if again := f.get(page); svgOf(t, again.body) != svgOf(t, r.body) {
		t.Fatal("the drawing changed between two renders")
	}
	wantStatus(t, f.get("/workflow/999999"), http.StatusNotFound)
}

func svgOf(t *testing.T, body string) string {
	t.Helper()
	i, j := strings.Index(body, "<svg class=\"dag-svg\""), strings.Index(body, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("no drawing:\n%s", body)
	}
	return body[i:j]
}

func TestTheGraphIsLaidOutInColumnsByDepth(t *testing.T) {
	// a -> b -> d, a -> d, c alone: d is at depth 2 (its longest path),
	// not 1, and c is a's row-mate below it.
	d := layoutDAG([]jobs.WorkflowTaskState{
		{Name: "a", JobID: 1, Table: jobs.TableArchive},
		{Name: "b", JobID: 2, Parents: []string{"a"}, Table: jobs.TableHot, Status: jobs.StatusProcessing},
		{Name: "c", JobID: 3, Table: jobs.TableDLQ},
		{Name: "d", JobID: 4, Parents: []string{"b", "a"}, Table: jobs.TableHot, WaitingOn: 1},
	})
	type at struct {
		x, y  int
		state string
	}
	want := map[string]at{"a": {16, 16, "succeeded"}, "b": {226, 16, "running"}, "c": {16, 60, "failed"}, "d": {436, 16, "waiting"}}
	for _, n := range d.Nodes {
		if w := want[n.Name]; n.X != w.x || n.Y != w.y || n.State != w.state {
			t.Errorf("%s at %d,%d %s, want %+v", n.Name, n.X, n.Y, n.State, w)
		}
	}
	if d.Width != 16*2+3*150+2*60 || d.Height != 16*2+2*30+14 {
		t.Errorf("size %dx%d", d.Width, d.Height)
	}
	wantEdges := []dagEdge{{D: "M166,31 C196,31 196,31 226,31", State: "succeeded"}, {D: "M376,31 C406,31 406,31 436,31", State: "running"},
		{D: "M166,31 C301,31 301,31 436,31", State: "succeeded"}}
	if fmt.Sprint(d.Edges) != fmt.Sprint(wantEdges) {
		t.Errorf("edges %v\nwant %v", d.Edges, wantEdges)
	}
}

func TestAWorkflowPastTheBoundIsSummarisedAndItsTableIsPaged(t *testing.T) {
	f := newFixture(t, Options{})
	tasks := make([]jobs.WorkflowTask, maxDrawnTasks+1)
	for i := range tasks {
		tasks[i] = jobs.WorkflowTask{Name: fmt.Sprintf("file-%03d", i), Job: jobs.EnqueueParams{Queue: "q", Type: "t"}}
	}
	res, err := f.store.EnqueueWorkflow(context.Background(), jobs.WorkflowParams{Name: "big", Tasks: tasks})
	must(t, err)
	page := fmt.Sprintf("/workflow/%d", res.ID)
	r := f.get(page)
	wantStatus(t, r, http.StatusOK, `id="dag-summary"`, "501 tasks, more than the 500 drawn",
		`<div class="card"><span class="n">501</span><span class="l"><span class="swatch wf-pending"></span>pending</span></div>`,
		"Tasks 1 to 500 of 501", fmt.Sprintf(`href="%s?from=500" id="next-tasks"`, page))
	if strings.Contains(r.body, "<svg class=\"dag-svg\"") {
		t.Fatal("a workflow past the bound is drawn")
	}
	if n := strings.Count(r.body, "<tr data-task="); n != maxTableTasks {
		t.Fatalf("%d task rows, want %d", n, maxTableTasks)
	}
	r = f.get(page + "?from=500")
	wantStatus(t, r, http.StatusOK, `<tr data-task="file-500">`, "Tasks 501 to 501 of 501", "← earlier tasks")
	if n := strings.Count(r.body, "<tr data-task="); n != 1 {
		t.Fatalf("%d task rows on the second page", n)
	}
	wantStatus(t, f.get(page+"?from=-1"), http.StatusBadRequest)
}

func TestCancelAWorkflowFromItsPage(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.seedWorkflow()
	path := fmt.Sprintf("/workflows/%d/cancel", res.ID)
	r := f.post(path, urlValues("reason", "bad input file"))
	flash := f.wantRedirect(r, fmt.Sprintf("/workflow/%d", res.ID))
	// audit and report not started: cancelled; transform-3 running: asked.
	want := fmt.Sprintf("Cancel of workflow %d: 2 cancelled, 1 cancel requested.", res.ID)
	if flash != want {
		t.Fatalf("flash %q, want %q", flash, want)
	}
	f.wantLogged("cancel_workflow", want[1:len(want)-1])
	j, err := f.store.GetJob(context.Background(), res.Jobs["report"])
	must(t, err)
	if j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonCancelled || !strings.Contains(j.ErrorDetails, "cancelled by 127.0.0.1: the whole workflow: bad input file") {
		t.Fatalf("report %s %s %q", j.Table, j.FailureReason, j.ErrorDetails)
	}
	running, err := f.store.GetJob(context.Background(), res.Jobs["transform-3"])
	must(t, err)
	if running.CancelRequestedAt.IsZero() {
		t.Fatal("the running task was not asked to stop")
	}
	// Once nothing can be cancelled, the form goes; another POST says so.
	r = f.post(path, nil)
	f.wantRedirect(r, fmt.Sprintf("/workflow/%d", res.ID))
	wantStatus(t, f.post("/workflows/999999/cancel", nil), http.StatusNotFound)
}

func TestCancelAWorkflowIsRefusedWithoutCSRFAndInReadOnlyMode(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.seedWorkflow()
	path := fmt.Sprintf("/workflows/%d/cancel", res.ID)
	wantStatus(t, f.postRaw(path, urlValues("reason", "x")), http.StatusForbidden, "CSRF")
	wantStatus(t, f.postRaw(path, urlValues("csrf", f.csrf()+"x")), http.StatusForbidden, "CSRF")
	if f.table(res.Jobs["audit"]) != jobs.TableHot {
		t.Fatal("a forged cancel moved a task")
	}

	ro := newFixture(t, Options{ReadOnly: true})
	res = ro.seedWorkflow()
	page := ro.get(fmt.Sprintf("/workflow/%d", res.ID))
	wantStatus(t, page, http.StatusOK, "read-only", `<svg class="dag-svg"`)
	if strings.Contains(page.body, `method="post"`) || strings.Contains(page.body, "Cancel workflow") {
		t.Fatal("a read-only dashboard shows the workflow's cancel")
	}
	wantStatus(t, ro.postRaw(fmt.Sprintf("/workflows/%d/cancel", res.ID), urlValues("csrf", "whatever")), http.StatusForbidden, "read-only")
	if ro.table(res.Jobs["audit"]) != jobs.TableHot {
		t.Fatal("a read-only dashboard cancelled a task")
	}
}

func TestTheJobPageLinksToItsWorkflow(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.seedWorkflow()
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", res.Jobs["report"])), http.StatusOK,
		fmt.Sprintf(`<dd id="job-workflow"><a href="/workflow/%d">workflow %d</a>, task <code>report</code></dd>`, res.ID, res.ID))
	plain := f.enqueue("q", "t", `{}`)
	if r := f.get(fmt.Sprintf("/job/%d", plain)); strings.Contains(r.body, "job-workflow") {
		t.Fatal("a job of no workflow links to one")
	}
}

func TestAStoreWithoutWorkflowsSaysSo(t *testing.T) {
	f := newFixture(t, Options{})
	plain := newFixtureOver(t, f.store, adminOnly{f.store}, Options{})
	for _, path := range []string{"/workflows", "/workflow/1"} {
		wantStatus(t, plain.get(path), http.StatusOK, `id="workflows-off"`, "This store does not run workflows")
	}
	wantStatus(t, plain.post("/workflows/1/cancel", nil), http.StatusNotImplemented, "does not run workflows")
	wantStatus(t, plain.get("/"), http.StatusOK, `href="/workflows"`)
}

func TestAWorkflowOfTooManyDependenciesIsSummarised(t *testing.T) {
	f := newFixture(t, Options{})
	// 50 roots and 41 fan-ins of all of them: 91 tasks, 2,050 edges.
	var tasks []jobs.WorkflowTask
	var roots []string
	for i := range 50 {
		roots = append(roots, fmt.Sprintf("root-%02d", i))
		tasks = append(tasks, jobs.WorkflowTask{Name: roots[i], Job: jobs.EnqueueParams{Queue: "q", Type: "t"}})
	}
	for i := range 41 {
		tasks = append(tasks, jobs.WorkflowTask{Name: fmt.Sprintf("join-%02d", i), Job: jobs.EnqueueParams{Queue: "q", Type: "t"}, After: roots})
	}
	res, err := f.store.EnqueueWorkflow(context.Background(), jobs.WorkflowParams{Name: "dense", Tasks: tasks})
	must(t, err)
	r := f.get(fmt.Sprintf("/workflow/%d", res.ID))
	wantStatus(t, r, http.StatusOK, `id="dag-summary"`, "2050 dependencies, more than the 2000 drawn",
		`<span class="n">50</span><span class="l"><span class="swatch wf-pending"></span>pending</span>`,
		`<span class="n">41</span><span class="l"><span class="swatch wf-waiting"></span>waiting</span>`)
	if strings.Contains(r.body, "<svg class=\"dag-svg\"") || strings.Count(r.body, "<tr data-task=") != 91 || strings.Contains(r.body, "tasks-paged") {
		t.Fatalf("want no drawing and one page of 91 rows:\n%s", r.body)
	}
}

func TestTheWorkflowPagesLinkUnderTheBasePath(t *testing.T) {
	f := newFixture(t, Options{BasePath: "/ops"})
	res := f.seedWorkflow()
	wantStatus(t, f.get("/ops/workflows"), http.StatusOK, fmt.Sprintf(`<a href="/ops/workflow/%d">nightly import</a>`, res.ID))
	wantStatus(t, f.get(fmt.Sprintf("/ops/workflow/%d", res.ID)), http.StatusOK,
		fmt.Sprintf(`action="/ops/workflows/%d/cancel"`, res.ID), fmt.Sprintf(`<a href="/ops/job/%d" class="node-link">`, res.Jobs["import"]))
	wantStatus(t, f.get(fmt.Sprintf("/ops/job/%d", res.Jobs["import"])), http.StatusOK, fmt.Sprintf(`<a href="/ops/workflow/%d">`, res.ID))
}
