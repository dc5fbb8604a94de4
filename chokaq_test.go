package chokaq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

func TestClientWritesQueueSettingsAtStart(t *testing.T) {
	ctx := context.Background()
	max := 2
	c, err := chokaq.New(ctx, chokaq.Config{
		DisableProcessor: true,
		Queues:           map[string]jobs.QueueUpdate{"mail": {MaxWorkers: &max}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	qs, err := c.Store().Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].MaxWorkers != 2 {
		t.Fatalf("queues %+v %v", qs, err)
	}
	if c.Processor() != nil || c.Rescuer() == nil {
		t.Fatal("DisableProcessor should leave the rescue loop only")
	}
}

func TestClientRefusesWhatItsStoreCannotDo(t *testing.T) {
	ctx := context.Background()
	if _, err := chokaq.New(ctx, chokaq.Config{}, nil); err == nil {
		t.Fatal("a processor without a registry was accepted")
	}
	if _, err := chokaq.New(ctx, chokaq.Config{SingleRescuer: true}, processor.NewRegistry()); err == nil {
		t.Fatal("SingleRescuer accepted on the in-memory store")
	}
	c, err := chokaq.New(ctx, chokaq.Config{}, processor.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueTx(ctx, nil, jobs.EnqueueParams{Type: "t"}); !errors.Is(err, chokaq.ErrTxUnsupported) {
		t.Fatalf("EnqueueTx on memory: %v", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Processor: processor.Config{Concurrency: -1}}, processor.NewRegistry()); err == nil {
		t.Fatal("bad processor config accepted")
	}
}

func TestFromSettings(t *testing.T) {
	s := config.Default()
	s.Retry.MaxAttempts = 7
	s.Execution.Concurrency = 3
	s.Queues = []string{"mail"}
	c := chokaq.FromSettings(s)
	if c.ConnectionString != "" || c.DefaultMaxAttempts != 7 || c.Processor.Concurrency != 3 || c.Processor.Queues[0] != "mail" {
		t.Fatalf("FromSettings = %+v", c)
	}
	reg := processor.NewRegistry()
	client, err := chokaq.New(context.Background(), c, reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.Enqueue(context.Background(), jobs.EnqueueParams{Type: "t", Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := client.Store().GetJob(context.Background(), r.ID); j.MaxAttempts != 7 {
		t.Fatalf("Retry.MaxAttempts did not become the enqueue default: %d", j.MaxAttempts)
	}
}

func TestClientRefusesTimeoutsThatFight(t *testing.T) {
	ctx := context.Background()
	reg := processor.NewRegistry()
	_, err := chokaq.New(ctx, chokaq.Config{
		Processor: processor.Config{FetchedJobTimeout: time.Minute},
		Rescue:    zombie.Config{FetchedJobTimeout: 2 * time.Minute},
	}, reg)
	if err == nil || !strings.Contains(err.Error(), "FetchedJobTimeout") {
		t.Fatalf("different fetched timeouts: %v", err)
	}
	_, err = chokaq.New(ctx, chokaq.Config{
		Processor: processor.Config{HeartbeatIntervalMin: 10 * time.Second, HeartbeatIntervalMax: 30 * time.Second},
		Rescue:    zombie.Config{ProcessingZombieTimeout: time.Minute},
	}, reg)
	if err == nil || !strings.Contains(err.Error(), "3 x Processor.HeartbeatIntervalMax") {
		t.Fatalf("zombie timeout under 3 heartbeats: %v", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Rescue: zombie.Config{ProcessingZombieTimeout: time.Minute}}, reg); err != nil {
		t.Fatalf("a 1m zombie timeout with 12s heartbeats: %v", err)
	}
}
