package jobs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// oneJobStore is a store with no batch forms of its own, given the ones
// jobs.Batches makes of its one-job calls: they must keep the batch
// contract too.
type oneJobStore struct {
	jobs.Store
	jobs.BatchWorker
}

func TestBatchesOfOneJobCallsKeepTheContract(t *testing.T) {
	storetest.RunTransitions(t, func(t *testing.T) *storetest.Harness {
		clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
		hidden := struct{ jobs.Store }{memstore.New(memstore.WithClock(clock.Now))}
		return &storetest.Harness{
			Store:   oneJobStore{Store: hidden, BatchWorker: jobs.Batches(hidden)},
			Advance: func(_ testing.TB, d time.Duration) { clock.Advance(d) },
		}
	})
}

// EachOnce applies each distinct ref once, in order, and answers every
// repeat with its first result: below the size where it scans for repeats
// and above it, where it keeps a map.
func TestEachOnceAppliesARepeatedRefOnceWhateverTheBatchSize(t *testing.T) {
	for _, n := range []int{3, 40} {
		refs := make([]jobs.LeaseRef, 0, 2*n)
		for i := range n {
			refs = append(refs, jobs.LeaseRef{ID: int64(i), Lease: 1})
		}
		refs = append(refs, refs...) // every ref twice
		var applied []int64
		got, err := jobs.EachOnce(refs, func(r jobs.LeaseRef) jobs.LeaseRef { return r }, func(r jobs.LeaseRef) (int64, error) {
			applied = append(applied, r.ID)
			return r.ID * 10, nil
		})
		if err != nil || len(got) != 2*n || len(applied) != n {
			t.Fatalf("n=%d: %d results, %d applied, %v; want %d results, %d applied", n, len(got), len(applied), err, 2*n, n)
		}
		for i, r := range refs {
			if got[i] != r.ID*10 || (i < n && applied[i] != r.ID) {
				t.Fatalf("n=%d: item %d = %d (applied %v), want %d in order", n, i, got[i], applied, r.ID*10)
			}
		}
	}
}

// An error apply returns is the call's: the batch stops there.
func TestEachOnceStopsAtTheCallsError(t *testing.T) {
	refs := []jobs.LeaseRef{{ID: 1}, {ID: 2}, {ID: 3}}
	calls := 0
	got, err := jobs.EachOnce(refs, func(r jobs.LeaseRef) jobs.LeaseRef { return r }, func(r jobs.LeaseRef) (bool, error) {
		calls++
		if r.ID == 2 {
			return false, errors.New("store unreachable")
		}
		return true, nil
	})
	if err == nil || got != nil || calls != 2 {
		t.Fatalf("EachOnce = %v, %v after %d calls; want the error after 2", got, err, calls)
	}
	if got, err := jobs.EachOnce(nil, func(r jobs.LeaseRef) jobs.LeaseRef { return r }, func(jobs.LeaseRef) (bool, error) { return true, nil }); got != nil || err != nil {
		t.Fatalf("EachOnce(nil) = %v, %v", got, err)
	}
}
