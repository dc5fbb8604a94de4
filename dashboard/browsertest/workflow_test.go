package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chokaq/chokaq-go/dashboard"
	"github.com/chokaq/chokaq-go/jobs"
)

// A workflow's page draws its graph with a node per task, linked to the
// task's job; the list links to it; cancelling it from the page stops
// every unfinished task and says how many.
func TestBrowserCancelsAWorkflow(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, dashboard.Options{})
	bg := context.Background()
	job := func(typ string) jobs.EnqueueParams {
		return jobs.EnqueueParams{Queue: "etl", Type: typ, Payload: []byte(`{}`)}
	}
	tasks := []jobs.WorkflowTask{{Name: "import", Job: job("import")}}
	var transforms []string
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("transform-%d", i)
		transforms = append(transforms, name)
		tasks = append(tasks, jobs.WorkflowTask{Name: name, Job: job("transform"), After: []string{"import"}})
	}
	tasks = append(tasks, jobs.WorkflowTask{Name: "report", Job: job("report"), After: transforms, OnParentFailure: jobs.DependencyWait},
		jobs.WorkflowTask{Name: "notify", Job: job("notify"), After: []string{"report"}})
	res, err := f.store.EnqueueWorkflow(bg, jobs.WorkflowParams{Name: "nightly import", Tasks: tasks})
	must(t, err)
	must(t, f.store.Complete(bg, f.start(res.Jobs["import"], "etl")))
	must(t, f.store.Complete(bg, f.start(res.Jobs["transform-1"], "etl")))
	must(t, f.store.DeadLetter(bg, f.start(res.Jobs["transform-2"], "etl"), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "row 17: bad date"}))
	f.start(res.Jobs["transform-3"], "etl")

	base := f.srv.URL
	must(t, chromedp.Do(ctx, chromedp.Navigate(base+"/workflows"), chromedp.WaitVisible(chromedp.ID("workflows"))))
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id="%d"] a`, res.ID))), chromedp.WaitVisible(chromedp.ID("dag"))))
	nodes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#dag .node").length`))
	must(t, err)
	if nodes != len(tasks) {
		t.Fatalf("%d nodes drawn, want %d", nodes, len(tasks))
	}
	// The colors come from the stylesheet: a failed node is filled red, a
	// waiting one is not filled.
	fills, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["transform-2", "report"].map(function (n) {
		return getComputedStyle(document.querySelector('#dag .node[data-task="' + n + '"] rect')).fill; })`))
	must(t, err)
	if fills[0] != "rgb(192, 54, 44)" || fills[1] != "rgb(255, 255, 255)" {
		t.Fatalf("fills %v", fills)
	}
	screenshot(t, ctx, "dashboard-workflow.png")

	// A node opens its job, which links back.
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#dag .node[data-task="transform-2"]`)), chromedp.WaitVisible(chromedp.ID("job-workflow"))))
	link, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("job-workflow")))
	must(t, err)
	if want := fmt.Sprintf("workflow %d, task transform-2", res.ID); link != want {
		t.Fatalf("job page says %q, want %q", link, want)
	}
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#job-workflow a")), chromedp.WaitVisible(chromedp.ID("cancel-workflow"))))

	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("window.confirm = function () { return true; }; true"))
	must(t, err)
	must(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#cancel-workflow-form input[name="reason"]`), "bad input file"),
		chromedp.Click(chromedp.ID("cancel-workflow")),
		chromedp.WaitVisible(chromedp.CSS(".flash"))))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".flash")))
	must(t, err)
	// transform-4, report, notify not started; transform-3 running.
	if want := fmt.Sprintf("Cancel of workflow %d: 3 cancelled, 1 cancel requested.", res.ID); flash != want {
		t.Fatalf("flash %q, want %q", flash, want)
	}
	for _, name := range []string{"transform-4", "report", "notify"} {
		if f.table(res.Jobs[name]) != jobs.TableDLQ {
			t.Fatalf("%s was not cancelled", name)
		}
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#tasks tr[data-task="notify"]`)))
	must(t, err)
	if !strings.Contains(state, "failed") || !strings.Contains(state, "Cancelled") {
		t.Fatalf("notify's row %q", state)
	}
	f.wantLogged("cancel_workflow", fmt.Sprintf("cancel of workflow %d: 3 cancelled, 1 cancel requested", res.ID))
}
