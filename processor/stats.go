package processor

import "sync/atomic"

// Stats counts what a processor did since it started.
type Stats struct {
	Claimed           int64 // jobs claimed into the buffer
	Released          int64 // buffered jobs given back without starting
	Started           int64
	Succeeded         int64
	Failed            int64 // handler errors and panics, before retry or dead-letter; not a handler cancelled by shutdown or a lost lease
	Retried           int64
	DeadLettered      int64
	Snoozed           int64 // executions that snoozed (Snooze): back to Pending, no attempt counted
	CancelRequests    int64 // running handlers cancelled because an operator cancelled their job
	LeaseLost         int64 // jobs taken away while this processor held them
	HeartbeatCalls    int64 // store calls made by the heartbeater
	HeartbeatBeats    int64 // job beats those calls carried
	HeartbeatFailures int64 // jobs that reached HeartbeatFailureThreshold
	StoreErrors       int64 // store calls that failed after the store's own retries
	Running           int64 // handlers running now
	Buffered          int64 // jobs in the buffer now
}

type counters struct {
	claimed, released, started, succeeded, failed, retried, deadLettered atomic.Int64
	leaseLost, hbCalls, hbBeats, hbFailures, storeErrors, running        atomic.Int64
	snoozed, cancelRequests                                              atomic.Int64
}

func (c *counters) snapshot(buffered int) Stats {
	return Stats{
		Claimed: c.claimed.Load(), Released: c.released.Load(), Started: c.started.Load(),
		Succeeded: c.succeeded.Load(), Failed: c.failed.Load(), Retried: c.retried.Load(),
		DeadLettered: c.deadLettered.Load(), Snoozed: c.snoozed.Load(), CancelRequests: c.cancelRequests.Load(),
		LeaseLost:      c.leaseLost.Load(),
		HeartbeatCalls: c.hbCalls.Load(), HeartbeatBeats: c.hbBeats.Load(), HeartbeatFailures: c.hbFailures.Load(),
		StoreErrors: c.storeErrors.Load(), Running: c.running.Load(), Buffered: int64(buffered),
	}
}
