// Package memstore is the in-memory jobs.Store: the reference model of the
// contract, the embedded default for demos, and the test double users get.
//
// It keeps the same semantics as the SQL Server store, including leases,
// per-queue MaxWorkers, per-queue timeouts and idempotency keys. Its clock is
// injectable (WithClock, ManualClock), so tests of timeouts run in
// microseconds. Data lives only as long as the process.
package memstore
