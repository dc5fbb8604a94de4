package chokaq_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// PipelineArgs are one step of a nightly import: the import, a transform
// of one region's file, or the report.
type PipelineArgs struct {
	Step string `json:"step"`
}

func (PipelineArgs) Kind() string { return "pipeline.step" }

// A workflow: import, then three transforms (in parallel, each after the
// import), then the report, after all three. The store releases each task
// in the same move that finishes its last parent, so a crash between the
// two cannot strand it. The report waits (DependencyWait) if a transform
// fails, until that transform is resurrected and succeeds; the default,
// DependencyCancel, would dead-letter it instead, and DependencyRunAnyway
// would run it without the failed parent.
func Example_workflow() {
	ctx := context.Background()
	var (
		mu       sync.Mutex
		steps    []string
		reported = make(chan struct{})
	)
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args PipelineArgs) error {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, args.Step)
		if args.Step == "report" {
			close(reported)
		}
		return nil
	})
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, reg)
	if err != nil {
		panic(err)
	}
	tasks := []chokaq.WorkflowTask{{Name: "import", Args: PipelineArgs{"import"}}}
	var regions []string
	for _, region := range []string{"eu", "us", "apac"} {
		regions = append(regions, region)
		tasks = append(tasks, chokaq.WorkflowTask{Name: region, Args: PipelineArgs{"transform " + region}, After: []string{"import"}})
	}
	tasks = append(tasks, chokaq.WorkflowTask{Name: "report", Args: PipelineArgs{"report"}, After: regions,
		OnParentFailure: jobs.DependencyWait})
	wf, err := client.EnqueueWorkflow(ctx, "nightly import", tasks...)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	<-reported
	client.Stop(ctx) // waits for the report's handler and records its success
	d, err := client.GetWorkflow(ctx, wf.ID)
	if err != nil {
		panic(err)
	}
	fmt.Printf("workflow %q %s: %d of %d tasks succeeded\n", d.Name, d.State, d.Succeeded, d.Total)
	mu.Lock()
	defer mu.Unlock()
	transforms := slices.Sorted(slices.Values(steps[1:4])) // in parallel, in any order
	fmt.Println("first:", steps[0], "then:", transforms, "last:", steps[4])
	// Output:
	// workflow "nightly import" succeeded: 5 of 5 tasks succeeded
	// first: import then: [transform apac transform eu transform us] last: report
}
