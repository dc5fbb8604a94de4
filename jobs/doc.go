// Package jobs owns the job model of chokaq-go and the Store port that every
// storage backend implements.
//
// A job lives in exactly one of three places for its whole life (invariant
// I2): the hot set (Pending, Fetched or Processing), the archive (succeeded)
// or the dead-letter queue (failed, cancelled, zombie, timed out). Its ID never
// changes between them.
//
// Every worker-side transition is fenced by a lease: a claim hands the job a
// new Lease, and Start, Heartbeat, Complete, Retry, DeadLetter and Release only
// change the job while the caller still holds that lease. A Store reports a
// stale lease with ErrLeaseLost and changes nothing.
//
// Every instant a Store uses to judge expiry comes from the store's own clock
// (SYSUTCDATETIME() on SQL Server), never from the caller: the Store API takes
// durations, not timestamps, for timeouts (invariant I7).
//
// Implementations live in other packages: jobs/memstore (in-memory, the
// reference model) and sqlserver (production). jobs/storetest is the contract
// suite both must pass.
package jobs
