package jobs

import "time"

// Heartbeat bounds that the processor, the stores and the rescue loop
// share.
const (
	// DefaultHeartbeatIntervalMax is the processor's default longest
	// interval between two heartbeats of a running job.
	DefaultHeartbeatIntervalMax = 12 * time.Second
	// MaxHeartbeatInterval bounds a processor's heartbeat interval, and
	// StartParams.HeartbeatMax.
	MaxHeartbeatInterval = time.Hour
	// MissedBeats is how many of its worker's longest heartbeat intervals a
	// running job may go without a heartbeat before rescue phase 2 may
	// call it a zombie: a live job misses a beat or two under load.
	MissedBeats = 3
	// MinQueueZombieTimeout is what a queue's own zombie timeout must be
	// more than: MissedBeats x DefaultHeartbeatIntervalMax (36s). A shorter
	// one would be cut short by every job a processor with default
	// heartbeats runs (ZombieTimeout), so it is refused rather than
	// silently not applied.
	MinQueueZombieTimeout = MissedBeats * DefaultHeartbeatIntervalMax
)

// ZombieTimeout is how long a running job may go without a heartbeat
// before rescue phase 2 dead-letters it as a Zombie: timeout (its queue's
// zombie timeout, else the rescue loop's ProcessingZombieTimeout), but
// never less than MissedBeats x heartbeatMax, the heartbeat maximum its
// worker declared when it started the job (StartParams.HeartbeatMax; 0
// when none was recorded). No setting of a queue's can make rescue take a
// job from a live worker whose heartbeats are slower than the queue
// expects. Every store applies this rule; the SQL Server store in T-SQL.
func ZombieTimeout(timeout, heartbeatMax time.Duration) time.Duration {
	return max(timeout, MissedBeats*heartbeatMax)
}
