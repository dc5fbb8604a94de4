package jobs_test

import (
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
