package memstore_test

import (
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// The store's clock starts years away from the wall clock, so a timestamp
// taken from time.Now anywhere in the store fails the I7 case.
var epoch = time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *storetest.Harness {
	clock := memstore.NewManualClock(epoch)
	return &storetest.Harness{
		Store:   memstore.New(memstore.WithClock(clock.Now)),
		Advance: func(_ testing.TB, d time.Duration) { clock.Advance(d) },
	}
}

func TestContract(t *testing.T) {
	if n := storetest.CaseCount(); n < 40 {
		t.Fatalf("the contract has %d cases, want at least 40", n)
	}
	storetest.RunTransitions(t, newHarness)
}

// The invariants of docs/design.md (Invariants), one top-level test each.
func TestInvariant_I1_SingleOwner(t *testing.T) { storetest.RunInvariant(t, "I1", newHarness) }
func TestInvariant_I2_NoJobLost(t *testing.T)   { storetest.RunInvariant(t, "I2", newHarness) }
func TestInvariant_I3_SafeReclaim(t *testing.T) { storetest.RunInvariant(t, "I3", newHarness) }
func TestInvariant_I4_UncertainWorkNotRerun(t *testing.T) {
	storetest.RunInvariant(t, "I4", newHarness)
}
func TestInvariant_I5_PerQueueTimeouts(t *testing.T) { storetest.RunInvariant(t, "I5", newHarness) }
func TestInvariant_I6_Bulkhead(t *testing.T)         { storetest.RunInvariant(t, "I6", newHarness) }
func TestInvariant_I7_ServerTime(t *testing.T)       { storetest.RunInvariant(t, "I7", newHarness) }

func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(*testing.B) jobs.Store { return memstore.New() })
}
