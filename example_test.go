package chokaq_test

import (
	"context"
	"fmt"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// Embedding chokaq-go: register a typed handler, start the client, enqueue.
// With a ConnectionString (and Migrate: true) the same code runs on SQL
// Server; without one it runs on the in-memory store.
func Example() {
	type welcome struct {
		Email string `json:"email"`
	}
	done := make(chan string, 1)
	reg := processor.NewRegistry()
	_ = processor.HandleJSON(reg, "mail.welcome", func(ctx context.Context, job *processor.Job, w welcome) error {
		done <- fmt.Sprintf("sent welcome mail to %s (attempt %d)", w.Email, job.Attempt)
		return nil
	})

	ctx := context.Background()
	client, err := chokaq.New(ctx, chokaq.Config{Processor: processor.Config{PollInterval: 50 * time.Millisecond}}, reg)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(ctx)

	if _, err := client.Enqueue(ctx, jobs.EnqueueParams{
		Type:           "mail.welcome",
		Payload:        []byte(`{"email":"ada@example.com"}`),
		IdempotencyKey: "welcome-ada",
	}); err != nil {
		panic(err)
	}
	fmt.Println(<-done)
	// Output: sent welcome mail to ada@example.com (attempt 1)
}
