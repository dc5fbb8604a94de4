package sqlserver

// qDueProbe tells an idle processor whether a claim of its queues would find
// work (jobs.Prober, ADR 0027): for each listed queue not paused, one seek
// into IX_JobsHot_Claim at (Queue, Status = 0) that stops at the first due
// row. It takes no application lock and writes nothing. READPAST with
// READCOMMITTEDLOCK (as the claim's candidate read, also under
// READ_COMMITTED_SNAPSHOT) makes it skip a row another transaction holds
// rather than wait for it: a row being claimed is not work for this
// processor, and a row being enqueued is seen at the next poll. So the
// probe never waits on a row, and a missed answer only delays a job by one
// poll. A queue with many Pending jobs not yet due reads past them in key
// order (priority before due time), as the claim does (ADR 0002). A queue
// with parked jobs (a FlowWaits row, ADR 0031) is work too: only a claim
// unparks them, so an idle processor must claim to find out whether their
// key or sequence has room again; while a key stays at its limit, that is
// one claim per poll instead of one probe. A queue whose rate limit has
// nothing left in its open window (ADR 0033) is no work until it closes.
// Its second column is releaseOwed: a finished workflow task owes its
// children a release (ADR 0034), which the store runs before its next
// claim, so an idle processor must claim.
const qDueProbe = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
SELECT CASE WHEN EXISTS (
    SELECT 1
    FROM @queues AS n
    WHERE NOT EXISTS (SELECT 1 FROM {{s}}.Queues AS q WHERE q.Name = n.Name
        AND (q.IsPaused = 1 OR (q.RateUsed >= q.RateCount AND DATEADD(MILLISECOND, q.RateWindowMs, q.RateWindowStartUtc) > @now)))
      AND (EXISTS (
        SELECT 1 FROM {{s}}.JobsHot AS c WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE c.Queue = n.Name AND c.Status = 0 AND c.ScheduledAtUtc <= @now)
        OR EXISTS (SELECT 1 FROM {{s}}.FlowWaits AS f WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK) WHERE f.Queue = n.Name))
) THEN CAST(1 AS BIT) ELSE CAST(0 AS BIT) END, ` + releaseOwed + `;`
