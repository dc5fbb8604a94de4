//go:build race

package memstore

// raceEnabled: the race detector slows the index walk tests about tenfold,
// so they run fewer seeds under it (plain go test runs them all).
const raceEnabled = true
