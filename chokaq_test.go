package chokaq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

func TestClientWritesQueueSettingsAtStart(t *testing.T) {
	ctx := context.Background()
	max := 2
	c, err := chokaq.New(ctx, chokaq.Config{
		Store:            memstore.New(),
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
	qs, err := c.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].MaxWorkers != 2 {
		t.Fatalf("queues %+v %v", qs, err)
	}
	if c.Processor() != nil || c.Rescuer() == nil {
		t.Fatal("DisableProcessor should leave the rescue loop only")
	}
}

// Client.UpdateQueue applies at once to every process, whose heartbeats it
// cannot know: a zombie timeout of 3 default heartbeat maxima or less is
// refused with the rule, and changes nothing.
func TestClientUpdateQueueRefusesAZombieTimeoutBelowThreeDefaultHeartbeats(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	c, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	oneSecond, fine := time.Second, time.Minute
	_, err = c.UpdateQueue(ctx, "mail", jobs.QueueUpdate{ZombieTimeout: &oneSecond})
	if !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), "zombie_timeout 1s: must be more than 36s") {
		t.Fatalf("UpdateQueue with a 1s zombie timeout: %v", err)
	}
	if qs, _ := store.Queues(ctx); len(qs) != 0 {
		t.Fatalf("the refused update wrote %+v", qs)
	}
	if s, err := c.UpdateQueue(ctx, "mail", jobs.QueueUpdate{ZombieTimeout: &fine}); err != nil || s.ZombieTimeout != time.Minute {
		t.Fatalf("UpdateQueue with a 1m zombie timeout: %+v, %v", s, err)
	}
}

func TestClientRefusesWhatItsStoreCannotDo(t *testing.T) {
	ctx := context.Background()
	if _, err := chokaq.New(ctx, chokaq.Config{}, processor.NewRegistry()); !errors.Is(err, chokaq.ErrNoStore) {
		t.Fatalf("no store and no connection string: %v, want ErrNoStore (no silent in-memory fallback)", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, nil); err == nil {
		t.Fatal("a processor without a registry was accepted")
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), SingleRescuer: true}, processor.NewRegistry()); err == nil {
		t.Fatal("SingleRescuer accepted on the in-memory store")
	}
	c, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, processor.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueRawTx(ctx, nil, jobs.EnqueueParams{Type: "t"}); !errors.Is(err, chokaq.ErrTxUnsupported) {
		t.Fatalf("EnqueueTx on memory: %v", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), Processor: processor.Config{Concurrency: -1}}, processor.NewRegistry()); err == nil {
		t.Fatal("bad processor config accepted")
	}
}

func TestClientRefusesTimeoutsThatFight(t *testing.T) {
	ctx := context.Background()
	reg := processor.NewRegistry()
	_, err := chokaq.New(ctx, chokaq.Config{
		Store:     memstore.New(),
		Processor: processor.Config{ReleaseAfter: 90 * time.Second},
		Rescue:    zombie.Config{FetchedJobTimeout: 2 * time.Minute},
	}, reg)
	if err == nil || !strings.Contains(err.Error(), "processor: ReleaseAfter = 1m30s: must be at most half of zombie.FetchedJobTimeout (2m0s)") {
		t.Fatalf("a buffer that outlives half the fetched timeout: %v", err)
	}
	if se, ok := errors.AsType[*jobs.SettingError](err); !ok || se.Key != "ReleaseAfter" {
		t.Fatalf("not a *jobs.SettingError naming ReleaseAfter: %#v", err)
	}
	_, err = chokaq.New(ctx, chokaq.Config{
		Store:     memstore.New(),
		Processor: processor.Config{HeartbeatIntervalMin: 10 * time.Second, HeartbeatIntervalMax: 30 * time.Second},
		Rescue:    zombie.Config{ProcessingZombieTimeout: time.Minute},
	}, reg)
	if err == nil || !strings.Contains(err.Error(), "3 x processor.HeartbeatIntervalMax") {
		t.Fatalf("zombie timeout under 3 heartbeats: %v", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), Rescue: zombie.Config{ProcessingZombieTimeout: time.Minute}}, reg); err != nil {
		t.Fatalf("a 1m zombie timeout with 12s heartbeats: %v", err)
	}
}

// A Client runs once: a second Start is refused while it runs, and a Start
// after Stop is refused with its own error, not a sub-package's.
func TestClientLifecycle(t *testing.T) {
	ctx := context.Background()
	c, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, processor.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); !errors.Is(err, jobs.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v, want ErrAlreadyStarted", err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Start(ctx); !errors.Is(err, chokaq.ErrClientStopped) {
		t.Fatalf("Start after Stop: %v, want ErrClientStopped", err)
	}
}

// CheckConfig holds the rules between a processor and a rescue loop, for a
// service that wires them by hand as for New.
func TestCheckConfig(t *testing.T) {
	secs := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	cases := []struct {
		name   string
		p      processor.Config
		r      zombie.Config
		queues map[string]jobs.QueueUpdate
		want   string
	}{
		{"ZombieWithinThreeBeats", processor.Config{}, zombie.Config{ProcessingZombieTimeout: 36 * time.Second}, nil,
			"zombie: ProcessingZombieTimeout = 36s: must be more than 3 x processor.HeartbeatIntervalMax (3 x 12s = 36s)"},
		{"QueueZombieWithinThreeBeats", processor.Config{}, zombie.Config{}, map[string]jobs.QueueUpdate{"mail": {ZombieTimeout: secs(30)}},
			"queue mail: ZombieTimeout = 30s: must be more than 3 x processor.HeartbeatIntervalMax"},
		{"BufferOutlivesHalfTheFetchedTimeout", processor.Config{ReleaseAfter: 6 * time.Minute}, zombie.Config{}, nil,
			"processor: ReleaseAfter = 6m0s: must be at most half of zombie.FetchedJobTimeout (10m0s)"},
		{"ProcessorAlone", processor.Config{Concurrency: -1}, zombie.Config{}, nil, "processor: Concurrency = -1"},
		{"QueuesThatDifferOnlyInCase", processor.Config{}, zombie.Config{}, map[string]jobs.QueueUpdate{"Orders": {}, "orders": {MaxWorkers: new(2)}},
			"chokaq: Queues = orders: is the same queue as Orders (queue names ignore case)"},
		{"RescueAlone", processor.Config{}, zombie.Config{ScanInterval: time.Nanosecond}, nil, "zombie: ScanInterval = 1ns: must be between 100ms and 24h0m0s"},
	}
	for _, c := range cases {
		err := chokaq.CheckConfig(c.p, c.r, c.queues)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckConfig = %v, want %q", c.name, err, c.want)
		}
		if _, ok := errors.AsType[*jobs.SettingError](err); !ok {
			t.Errorf("%s: %T is not a *jobs.SettingError", c.name, err)
		}
		_, nerr := chokaq.New(context.Background(), chokaq.Config{Store: memstore.New(), Processor: c.p, Rescue: c.r, Queues: c.queues}, processor.NewRegistry())
		if nerr == nil || !strings.Contains(nerr.Error(), c.want) {
			t.Errorf("%s: New = %v, want %q", c.name, nerr, c.want)
		}
	}
	ok := chokaq.CheckConfig(processor.Config{HeartbeatIntervalMax: 12 * time.Second, ReleaseAfter: 5 * time.Minute},
		zombie.Config{ProcessingZombieTimeout: 37 * time.Second}, map[string]jobs.QueueUpdate{"mail": {ZombieTimeout: secs(0)}})
	if ok != nil {
		t.Errorf("settings at the edges refused: %v", ok)
	}
}
