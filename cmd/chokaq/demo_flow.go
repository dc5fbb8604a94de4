package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// demoFlowQueue is the demo's queue of flow control (ADR 0031): the
// tenant "big" may run one export at a time, the others as many as there
// are workers, and an account's ledger entries post in order.
const demoFlowQueue = "demo-flow"

// demoFlow is what the flow-control part of the demo saw.
type demoFlow struct {
	Skipped string `json:"skipped,omitempty"` // why it did not run
	// MostAtOnce is the most exports of a tenant that ran at once.
	MostAtOnce map[string]int `json:"most_at_once"`
	Exports    int            `json:"exports"`
	// Posted is the order the ledger's entries ran in.
	Posted []int `json:"posted"`
}

// runFlowDemo runs 6 exports of tenant big (limit 1) beside 6 of each of
// two other tenants (no limit) and a sequence of 5 ledger entries, on a
// processor of its own, and reports what ran at once and in which order.
func runFlowDemo(ctx context.Context, store jobs.Store, pcfg processor.Config) (demoFlow, error) {
	one := 1
	_, err := store.UpdateQueue(ctx, demoFlowQueue, jobs.QueueUpdate{KeyLimits: map[string]int{"tenant:big": one}})
	if errors.Is(err, jobs.ErrFlowControlUnsupported) {
		return demoFlow{Skipped: "this store does not enforce flow control yet (ADR 0031)"}, nil
	}
	if err != nil {
		return demoFlow{}, err
	}
	var (
		mu      sync.Mutex
		running = map[string]int{}
		sum     = demoFlow{MostAtOnce: map[string]int{}}
		left    sync.WaitGroup
	)
	reg := processor.NewRegistry()
	reg.MustHandle("tenant.export", func(ctx context.Context, j *processor.Job) error {
		defer left.Done()
		var a struct{ Tenant string }
		if err := json.Unmarshal(j.Payload, &a); err != nil {
			return err
		}
		mu.Lock()
		running[a.Tenant]++
		sum.MostAtOnce[a.Tenant] = max(sum.MostAtOnce[a.Tenant], running[a.Tenant])
		mu.Unlock()
		err := sleepCtx(ctx, 100*time.Millisecond)
		mu.Lock()
		running[a.Tenant]--
		mu.Unlock()
		return err
	})
	reg.MustHandle("ledger.post", func(ctx context.Context, j *processor.Job) error {
		defer left.Done()
		var a struct{ Entry int }
		if err := json.Unmarshal(j.Payload, &a); err != nil {
			return err
		}
		mu.Lock()
		sum.Posted = append(sum.Posted, a.Entry)
		mu.Unlock()
		return sleepCtx(ctx, 20*time.Millisecond)
	})
	var ps []jobs.EnqueueParams
	for i := range 18 {
		tenant := []string{"big", "acme", "globex"}[i%3]
		ps = append(ps, jobs.EnqueueParams{Queue: demoFlowQueue, Type: "tenant.export", CreatedBy: "chokaq demo",
			Payload: fmt.Appendf(nil, `{"tenant":%q}`, tenant), ConcurrencyKey: "tenant:" + tenant})
	}
	for entry := 1; entry <= 5; entry++ {
		ps = append(ps, jobs.EnqueueParams{Queue: demoFlowQueue, Type: "ledger.post", CreatedBy: "chokaq demo",
			Payload: fmt.Appendf(nil, `{"account":42,"entry":%d}`, entry), SequenceKey: "account:42"})
	}
	left.Add(len(ps))
	if _, err := store.EnqueueMany(ctx, ps); err != nil {
		return demoFlow{}, err
	}
	sum.Exports = 18
	stop, err := startPart(ctx, store, reg, pcfg, "worker-flow", demoFlowQueue)
	if err != nil {
		return demoFlow{}, err
	}
	defer stop()
	if err := waitAll(ctx, &left, "the flow-control jobs"); err != nil {
		return demoFlow{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	return sum, nil
}

// line is the summary's line of the flow-control part.
func (f demoFlow) line() string {
	if f.Skipped != "" {
		return "skipped: " + f.Skipped
	}
	return fmt.Sprintf("%d exports: tenant big (limit 1) ran at most %d at once, acme %d and globex %d (no limit); ledger account:42 posted %v",
		f.Exports, f.MostAtOnce["big"], f.MostAtOnce["acme"], f.MostAtOnce["globex"], f.Posted)
}

// startPart starts a processor of its own for one part of the demo, as
// worker on queue; stop stops it, waiting up to 2s for its handlers.
func startPart(ctx context.Context, store jobs.Store, reg *processor.Registry, pcfg processor.Config, worker, queue string) (stop func(), err error) {
	pcfg.WorkerID, pcfg.Queues = worker, []string{queue}
	p, err := processor.New(store, reg, pcfg)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = p.Stop(stopCtx)
	}, nil
}

// waitAll waits for left, or for ctx to end, naming what did not finish.
func waitAll(ctx context.Context, left *sync.WaitGroup, what string) error {
	done := make(chan struct{})
	go func() { left.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("demo: %s did not finish: %w", what, ctx.Err())
	}
}
