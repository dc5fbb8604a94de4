package chokaq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/internal/redact/redacttest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/sqlserver"
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

// New checks the connection string before the migrations and the pool:
// one the driver would misread (a password holding '#' or '?') is refused
// with ErrInvalidDSN, saying to percent-encode, and is never dialled.
func TestNewNeverDialsAConnectionStringItRefuses(t *testing.T) {
	dsns, dials := redacttest.Trap(t)
	for _, dsn := range dsns {
		for _, migrate := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := chokaq.New(ctx, chokaq.Config{ConnectionString: dsn, Migrate: migrate}, processor.NewRegistry())
			cancel()
			if !errors.Is(err, sqlserver.ErrInvalidDSN) || !strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error(), "Tr4pS3cret") {
				t.Errorf("Migrate %v: %v, want ErrInvalidDSN saying to percent-encode, without the password", migrate, err)
			}
		}
	}
	if n := dials(); n != 0 {
		t.Errorf("the trap was dialled %d times", n)
	}
}

// Every entry of Config.Queues is checked in New: a bad one fails there,
// naming the queue and the setting, and nothing is written, whatever the
// map's order and whether the processor or rescue loop runs.
func TestNewRefusesABadQueueSettingBeforeWritingAny(t *testing.T) {
	ctx := context.Background()
	two, minus := 2, -1
	pause := true
	for _, c := range []struct {
		name string
		bad  map[string]jobs.QueueUpdate
		want string
	}{
		{"max workers", map[string]jobs.QueueUpdate{"q4": {MaxWorkers: &minus}}, "queue q4: MaxWorkers = -1: must be between 0 (unlimited) and 100000"},
		{"name", map[string]jobs.QueueUpdate{"bad name": {MaxWorkers: &two}}, "queue bad name: Name = bad name: may contain only"},
		{"timeout", map[string]jobs.QueueUpdate{"q4": {ExecutionTimeout: new(1500 * time.Millisecond)}}, "queue q4: ExecutionTimeout = 1.5s: must be whole seconds"},
	} {
		for _, disable := range []bool{false, true} {
			queues := map[string]jobs.QueueUpdate{}
			for i := range 8 {
				queues[fmt.Sprintf("q%d", i)] = jobs.QueueUpdate{Paused: &pause, MaxWorkers: &two}
			}
			maps.Copy(queues, c.bad)
			store := memstore.New()
			_, err := chokaq.New(ctx, chokaq.Config{Store: store, Queues: queues, DisableProcessor: disable}, processor.NewRegistry())
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Errorf("%s (DisableProcessor %v): New = %v, want an invalid-argument error naming %q", c.name, disable, err, c.want)
			}
			if qs, _ := store.Queues(ctx); len(qs) != 0 {
				t.Errorf("%s: %d queue settings written by a Client that was refused", c.name, len(qs))
			}
		}
	}
}

// failingQueueWrites fails the nth UpdateQueue call, once, as a store that
// loses its database half way through Start would.
type failingQueueWrites struct {
	jobs.Store
	n, calls int
}

func (s *failingQueueWrites) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	s.calls++
	if s.calls == s.n {
		return jobs.QueueSettings{}, errors.New("connection lost")
	}
	return s.Store.UpdateQueue(ctx, name, u)
}

// Start writes the queue settings in name order; when a write fails half
// way it says which queues were written, the Client stays unstarted, and a
// second Start writes them all: the apply is idempotent (ADR 0023).
func TestStartAppliesQueueSettingsAgainAfterAFailure(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	store := &failingQueueWrites{Store: inner, n: 3}
	queues := map[string]jobs.QueueUpdate{}
	for i := range 8 {
		workers := i + 1
		queues[fmt.Sprintf("q%d", i)] = jobs.QueueUpdate{MaxWorkers: &workers}
	}
	c, err := chokaq.New(ctx, chokaq.Config{Store: store, Queues: queues}, processor.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "queue q2: connection lost (queue settings written: q0, q1; call Start again") {
		t.Fatalf("Start with a failing write: %v", err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start again: %v", err)
	}
	defer c.Stop(ctx)
	qs, err := inner.Queues(ctx)
	if err != nil || len(qs) != 8 {
		t.Fatalf("queues %+v, %v", qs, err)
	}
	for _, q := range qs {
		if want := int(q.Name[1]-'0') + 1; q.MaxWorkers != want {
			t.Errorf("%s: MaxWorkers %d, want %d", q.Name, q.MaxWorkers, want)
		}
	}
}

// Client Stops that overlap agree with the first, as the processor's do: a
// handler that ignores its cancellation makes every Stop report
// ErrHandlersAbandoned, concurrent or later, not only the first. (Real
// time, 100ms of grace: a Stop holding a mutex would stall a fake clock.)
func TestConcurrentClientStopsReturnTheSameResult(t *testing.T) {
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	reg := processor.NewRegistry()
	reg.MustHandle("hang", func(context.Context, *processor.Job) error {
		close(started)
		<-release // ignores its context
		return nil
	})
	c, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(),
		Processor: processor.Config{PollInterval: 10 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueRaw(ctx, jobs.EnqueueParams{Type: "hang"}); err != nil {
		t.Fatal(err)
	}
	<-started
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- c.Stop(ctx) }()
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, processor.ErrHandlersAbandoned) {
			t.Errorf("concurrent Stop = %v, want ErrHandlersAbandoned", err)
		}
	}
	if err := c.Stop(ctx); !errors.Is(err, processor.ErrHandlersAbandoned) {
		t.Errorf("a later Stop = %v, want the first's result", err)
	}
}
