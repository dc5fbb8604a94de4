// Package zombie is the rescue loop: on every ScanInterval it runs the three
// rescue phases of docs/design.md (Rescue) against a jobs.Store.
//
//  1. Fetched jobs whose reservation expired go back to Pending: no user code
//     ran, so running them again is safe.
//  2. Processing jobs whose heartbeat expired (the queue's own
//     ZombieTimeout, else ProcessingZombieTimeout) go to the
//     dead-letter queue as Zombie: their side effects are uncertain.
//  3. Processing jobs past their execution deadline go to the dead-letter
//     queue as Timeout, even while their process still heartbeats.
//
// Each phase moves at most BatchSize jobs per statement and repeats until a
// short batch. Every statement is atomic and lease-safe, so rescue may run in
// every process; a Leader (sp_getapplock on SQL Server) saves the scans of
// all but one. A failed sweep is logged and retried at the next interval; the
// loop never dies.
package zombie
