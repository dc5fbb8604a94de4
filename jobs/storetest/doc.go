// Package storetest is the contract suite for jobs.Store: every transition of
// docs/design.md (Transitions) and the invariants I1-I7 of docs/design.md
// (Invariants), written once and run against every store. It is exported so
// that a new store can prove itself with one call:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) *storetest.Harness { ... })
//	}
//
// A case that needs time to pass calls Harness.Advance, so timeouts of ten
// minutes are tested in microseconds on a store with an injectable clock.
package storetest
