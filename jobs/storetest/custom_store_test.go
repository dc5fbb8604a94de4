package storetest_test

import (
	"sync/atomic"
	"testing"

	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// The store of ExampleRun passes the whole contract.
func TestAuditedStoreContract(t *testing.T) {
	storetest.Run(t, NewAuditedHarness)
}

// CaseCount is the number of cases Run runs, each on a fresh store: a
// store's test that checks it against the count ran the whole contract.
func TestCaseCountIsWhatRunRuns(t *testing.T) {
	var fresh atomic.Int64
	storetest.Run(t, func(t *testing.T) *storetest.Harness {
		fresh.Add(1)
		return NewAuditedHarness(t)
	})
	if n := fresh.Load(); n != int64(storetest.CaseCount()) {
		t.Fatalf("Run ran %d cases, CaseCount says %d", n, storetest.CaseCount())
	}
}
