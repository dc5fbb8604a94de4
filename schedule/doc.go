// Package schedule owns recurring jobs: cron expressions read in a time
// zone with explicit daylight-saving rules (Cadence), the definition of a
// schedule and its missed-fire policy (Schedule), and the loop that fires
// each tick exactly once across a fleet (Scheduler).
//
// Exactly once rests on the store, not on leadership: a tick fires through
// jobs.Scheduler.FireSchedule, a compare-and-set on the schedule's row
// (the last tick fired must be older than this one) in the transaction of
// the job it enqueues. The elected leader (sqlserver.Leader; one process
// in memory) is only a saving: two leaders at once, a restart or a leader
// change cannot fire a tick twice. Each tick's job also carries the
// idempotency key "schedule:<name>:<tick>", a second guard. Ticks are
// judged on the store's clock.
//
// The decisions are in docs/adr/0020-schedules-and-retention.md.
package schedule
