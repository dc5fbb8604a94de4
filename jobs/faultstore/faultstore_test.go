package faultstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

func TestCutFailsEveryCallUntilRestored(t *testing.T) {
	mem := memstore.New()
	s := faultstore.New(mem)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	s.Cut()
	calls := map[string]error{}
	_, calls["Enqueue"] = s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"})
	_, calls["EnqueueMany"] = s.EnqueueMany(ctx, []jobs.EnqueueParams{{Type: "t"}})
	_, calls["Claim"] = s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"default"}, Limit: 1})
	_, calls["Start"] = s.Start(ctx, jobs.LeaseRef{ID: 1, Lease: 1}, jobs.StartParams{DefaultTimeout: 1})
	_, calls["Heartbeat"] = s.Heartbeat(ctx, nil)
	calls["Complete"] = s.Complete(ctx, jobs.LeaseRef{})
	calls["Retry"] = s.Retry(ctx, jobs.LeaseRef{}, jobs.RetryParams{})
	calls["DeadLetter"] = s.DeadLetter(ctx, jobs.LeaseRef{}, jobs.DeadLetterParams{})
	_, calls["Release"] = s.Release(ctx, nil)
	_, calls["RescueFetched"] = s.RescueFetched(ctx, jobs.RescueParams{})
	_, calls["RescueZombies"] = s.RescueZombies(ctx, jobs.RescueParams{})
	_, calls["RescueExpired"] = s.RescueExpired(ctx, jobs.RescueParams{})
	_, calls["Resurrect"] = s.Resurrect(ctx, jobs.ResurrectParams{})
	_, calls["Purge"] = s.Purge(ctx, jobs.PurgeParams{})
	_, calls["GetJob"] = s.GetJob(ctx, 1)
	_, calls["ListJobs"] = s.ListJobs(ctx, jobs.ListParams{})
	_, calls["CountJobs"] = s.CountJobs(ctx, jobs.TableHot, jobs.Filter{})
	_, calls["Queues"] = s.Queues(ctx)
	_, calls["UpdateQueue"] = s.UpdateQueue(ctx, "q", jobs.QueueUpdate{})
	_, calls["QueueStats"] = s.QueueStats(ctx)
	_, calls["Now"] = s.Now(ctx)
	for name, err := range calls {
		if !errors.Is(err, faultstore.ErrCut) {
			t.Errorf("%s while cut: %v, want ErrCut", name, err)
		}
	}
	if n, _ := mem.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 1 {
		t.Fatalf("a cut call reached the store: %d jobs", n)
	}
	s.Restore()
	if _, err := s.GetJob(ctx, 1); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
