package storetest_test

import (
	"testing"

	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// The store of ExampleRun passes the whole contract.
func TestAuditedStoreContract(t *testing.T) {
	storetest.Run(t, NewAuditedHarness)
}
