package processor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// Tests run inside testing/synctest bubbles: time.Now, timers and sleeps are
// fake, so a ten-minute zombie timeout passes in microseconds and the
// outcome does not depend on the machine's speed. The in-memory store's
// default clock is time.Now, so it shares the bubble's clock.

func testConfig() processor.Config {
	return processor.Config{
		WorkerID:             "w1",
		Concurrency:          4,
		PrefetchSize:         8,
		BatchSize:            4,
		PollInterval:         100 * time.Millisecond,
		DefaultTimeout:       time.Hour,
		HeartbeatIntervalMin: 8 * time.Second,
		HeartbeatIntervalMax: 12 * time.Second,
		ShutdownTimeout:      5 * time.Second,
		ReleaseAfter:         5 * time.Minute,
		Retry:                processor.RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Minute, BackoffMultiplier: 2},
	}
}

func startProcessor(t *testing.T, s jobs.Store, reg *processor.Registry, cfg processor.Config) *processor.Processor {
	t.Helper()
	p, err := processor.New(s, reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A failed test must not leave the processor running: in a synctest
	// bubble that turns one failure into a deadlock panic.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = p.Stop(ctx)
	})
	return p
}

func stop(t *testing.T, p *processor.Processor) {
	t.Helper()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func startRescue(t *testing.T, s jobs.Store, cfg zombie.Config) *zombie.Rescuer {
	t.Helper()
	if cfg.ScanInterval == 0 {
		cfg.ScanInterval = 10 * time.Second
	}
	r, err := zombie.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return r
}

func enqueue(t *testing.T, s jobs.Store, p jobs.EnqueueParams) int64 {
	t.Helper()
	if p.Type == "" {
		p.Type = "test"
	}
	r, err := s.Enqueue(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func get(t *testing.T, s jobs.Store, id int64) *jobs.Job {
	t.Helper()
	j, err := s.GetJob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// waitFor sleeps in fake time until cond holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func inTable(s jobs.Store, id int64, table jobs.Table) func() bool {
	return func() bool {
		j, err := s.GetJob(context.Background(), id)
		return err == nil && j.Table == table
	}
}

func countIn(t *testing.T, s jobs.Store, table jobs.Table) int64 {
	t.Helper()
	n, err := s.CountJobs(context.Background(), table, jobs.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countingStore counts the calls a processor makes.
type countingStore struct {
	jobs.Store
	mu    sync.Mutex
	calls map[string]int
}

func newCountingStore(s jobs.Store) *countingStore {
	return &countingStore{Store: s, calls: map[string]int{}}
}

func (c *countingStore) add(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *countingStore) count(ops ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, op := range ops {
		n += c.calls[op]
	}
	return n
}

func (c *countingStore) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	c.add("claim")
	return c.Store.Claim(ctx, p)
}
func (c *countingStore) Start(ctx context.Context, r jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	c.add("start")
	return c.Store.Start(ctx, r, p)
}
func (c *countingStore) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	c.add("heartbeat")
	return c.Store.Heartbeat(ctx, refs)
}
func (c *countingStore) Complete(ctx context.Context, r jobs.LeaseRef) error {
	c.add("complete")
	return c.Store.Complete(ctx, r)
}
func (c *countingStore) Retry(ctx context.Context, r jobs.LeaseRef, p jobs.RetryParams) error {
	c.add("retry")
	return c.Store.Retry(ctx, r, p)
}
func (c *countingStore) DeadLetter(ctx context.Context, r jobs.LeaseRef, p jobs.DeadLetterParams) error {
	c.add("deadletter")
	return c.Store.DeadLetter(ctx, r, p)
}
func (c *countingStore) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	c.add("release")
	return c.Store.Release(ctx, refs)
}
func (c *countingStore) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	c.add("queues")
	return c.Store.Queues(ctx)
}

func newMem() *memstore.Store { return memstore.New() }

func ptr[T any](v T) *T { return &v }

// secs is a queue timeout of n seconds.
func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
