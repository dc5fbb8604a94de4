package jobs

import (
	"fmt"
	"time"
)

// ZombieDetails is the ErrorDetails text of a job rescued by phase 2. The SQL
// Server store writes the same words from T-SQL.
func ZombieDetails(lastHeartbeat time.Time, timeout time.Duration, workerID string) string {
	return fmt.Sprintf("zombie: heartbeat expired (last heartbeat %s, timeout %ds, worker %s)",
		lastHeartbeat.UTC().Format(time.RFC3339Nano), int64(timeout/time.Second), workerID)
}

// DeadlineDetails is the ErrorDetails text of a job rescued by phase 3.
func DeadlineDetails(deadline time.Time, workerID string) string {
	return fmt.Sprintf("timeout: execution deadline passed (deadline %s, worker %s)",
		deadline.UTC().Format(time.RFC3339Nano), workerID)
}
