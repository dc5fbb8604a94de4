package chokaq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// MonthlyReportArgs are a kind that declares its policy: its queue, attempts and
// execution timeout, its backoff, and that rescue may run it again, twice
// at most, when its worker dies mid-run (building a report is safe to
// repeat).
type MonthlyReportArgs struct {
	Month string `json:"month"`
}

func (MonthlyReportArgs) Kind() string { return "report.monthly" }

func (MonthlyReportArgs) KindPolicy() chokaq.KindPolicy {
	return chokaq.KindPolicy{
		Queue:       "reports",
		MaxAttempts: 5,
		Timeout:     30 * time.Second,
		NextRetry:   func(attempt int, err error) time.Duration { return time.Duration(attempt) * time.Minute },
		// Opt in: a crashed run goes back to Pending, under a new lease.
		ZombieRetryCap: 2,
	}
}

// A kind's policy, and where each effective value came from. An operator
// overrides any field in ChokaQ.Kinds.report.monthly.* (Config.Kinds).
func Example_kindPolicy() {
	ctx := context.Background()
	done := make(chan string, 1)

	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args MonthlyReportArgs) error {
		done <- fmt.Sprintf("%s on %s: timeout %v (%s), %d attempts, zombie retries %d",
			args.Month, job.Queue, job.Timeout, job.TimeoutFrom, job.MaxAttempts, job.ZombieRetryCap)
		return nil
	})
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(),
		Processor: processor.Config{Queues: []string{"reports"}}}, reg)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(context.Background())

	if _, err := client.Enqueue(ctx, MonthlyReportArgs{Month: "2026-11"}, nil); err != nil {
		panic(err)
	}
	fmt.Println(<-done)
	// Output: 2026-11 on reports: timeout 30s (kind), 5 attempts, zombie retries 2
}
