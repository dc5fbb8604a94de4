package chokaqtest_test

import (
	"context"
	"errors"
	"fmt"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/chokaqtest"
	"github.com/chokaq/chokaq-go/processor"
)

type InvoiceArgs struct {
	Customer string `json:"customer"`
	Cents    int    `json:"cents"`
}

func (InvoiceArgs) Kind() string { return "billing.invoice" }

var errGatewayDown = errors.New("payment gateway down")

// Testing a handler: Work runs the job through the real processor, so the
// test sees what production would do with each result: here a failure
// retried on the backoff schedule (3s, then 6s) by the store's manual
// clock, and dead-lettered at its last attempt.
func ExampleWorker() {
	ctx := context.Background()
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args InvoiceArgs) error {
		return errGatewayDown
	})
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	start := w.Clock().Now()
	o, err := w.Work(ctx, InvoiceArgs{Customer: "ada", Cents: 1200}, nil)
	for err == nil {
		fmt.Printf("attempt %d: %s", o.Attempt, o.Outcome)
		if o.Outcome != processor.OutcomeRetried {
			fmt.Printf(" (%s: %s)\n", o.Reason, o.Job.ErrorDetails)
			break
		}
		fmt.Printf(", due again at +%v\n", o.Job.ScheduledAt.Sub(start))
		o, err = w.WorkJob(ctx, o.Job.ID)
	}
	// Output:
	// attempt 1: retried, due again at +3s
	// attempt 2: retried, due again at +9s
	// attempt 3: dead_lettered (MaxRetriesExceeded: attempt 3 of 3 failed: payment gateway down)
}

// Testing code that enqueues: hand it the Worker's Client (or any Client
// over an in-memory store), then look at what it enqueued. In a test,
// RequireEnqueued(t, client.Admin(), match) does the same and fails the
// test, listing what was enqueued instead, unless exactly one job matches.
func ExampleEnqueuedJobs() {
	ctx := context.Background()
	w, err := chokaqtest.NewWorker(ctx, chokaq.NewRegistry(), nil)
	if err != nil {
		panic(err)
	}
	client := w.Client()

	// The code under test.
	closeMonth := func(ctx context.Context, c *chokaq.Client) error {
		for _, customer := range []string{"ada", "bob"} {
			if _, err := c.Enqueue(ctx, InvoiceArgs{Customer: customer, Cents: 1200}, &chokaq.EnqueueOpts{Queue: "billing"}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := closeMonth(ctx, client); err != nil {
		panic(err)
	}

	found, err := chokaqtest.EnqueuedJobs(ctx, client.Admin(), &chokaqtest.Match[InvoiceArgs]{
		Queue: "billing",
		Args:  func(a InvoiceArgs) bool { return a.Customer == "bob" },
	})
	if err != nil {
		panic(err)
	}
	for _, e := range found {
		fmt.Printf("job %d: invoice %s for %d cents\n", e.Job.ID, e.Args.Customer, e.Args.Cents)
	}
	// Output: job 2: invoice bob for 1200 cents
}
