package storetest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// AuditedStore is a custom store: it keeps an audit trail of who enqueued
// what, and leaves every transition to the store it wraps. Wrapping must
// not change the contract, and the suite proves that it does not.
type AuditedStore struct {
	jobs.Store
	mu    sync.Mutex
	trail []string
}

func (s *AuditedStore) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	r, err := s.Store.Enqueue(ctx, p)
	if err == nil {
		s.mu.Lock()
		s.trail = append(s.trail, fmt.Sprintf("%s enqueued job %d (%s)", p.CreatedBy, r.ID, p.Type))
		s.mu.Unlock()
	}
	return r, err
}

// NewAuditedHarness gives the suite a fresh store per case, and a way to
// move that store's time: here an injectable clock, so the suite's
// ten-minute timeouts take microseconds.
func NewAuditedHarness(t *testing.T) *storetest.Harness {
	clock := memstore.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	return &storetest.Harness{
		Store:   &AuditedStore{Store: memstore.New(memstore.WithClock(clock.Now))},
		Advance: func(_ testing.TB, d time.Duration) { clock.Advance(d) },
	}
}

// A custom store proves itself against the contract with one test in its
// own _test.go file (this package runs exactly that one, in
// custom_store_test.go):
//
//	func TestAuditedStoreContract(t *testing.T) {
//		storetest.Run(t, NewAuditedHarness)
//	}
//
// Run covers every transition and the invariants I1 to I7 of
// docs/design.md, each case on a fresh store.
func ExampleRun() {
	fmt.Println(storetest.CaseCount() >= 40)
	for _, name := range storetest.Invariants() {
		fmt.Println(name)
	}
	// Output:
	// true
	// I1_SingleOwner
	// I2_NoJobLost
	// I3_SafeReclaim
	// I4_UncertainWorkNotRerun
	// I5_PerQueueTimeouts
	// I6_Bulkhead
	// I7_ServerTime
}
