package sqlserver

import (
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
)

// Every T-SQL statement of the SQL Server store is in this file, so it can be
// reviewed in one place. {{s}} is replaced by the bracket-quoted, validated
// schema name when a Store is built; nothing else is ever pasted into SQL
// text. Conventions:
//   - Every timestamp is SYSUTCDATETIME() read inside the statement (I7).
//   - Durations arrive as milliseconds (BIGINT) and are added as seconds plus
//     the remainder, because DATEADD takes an INT and milliseconds overflow
//     it after 24 days.
//   - Every worker transition matches Id, RunLease and Status; the clustered
//     key is in the predicate, so each seeks one row.
//   - Moves between tables are one DELETE ... OUTPUT ... INTO statement, or
//     one transaction under XACT_ABORT.
//   - Statements that pick a batch select TOP (@n) IDs with
//     UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK in a derived table joined
//     to the base table, and repeat the status test on the outer statement.
//     They state READ COMMITTED (READPAST needs it; a parameterized batch
//     runs in sp_executesql, so the setting ends with the call).
//   - Long text parameters are sent as NVARCHAR(MAX) and jobs as a table-
//     valued parameter, so a parameter's declared length does not vary with
//     its value and each statement keeps one cached plan.

// delayFrom is @now plus @<name>Ms milliseconds.
func delayFrom(name, from string) string {
	return "DATEADD(MILLISECOND, @" + name + "Ms % 1000, DATEADD(SECOND, @" + name + "Ms / 1000, " + from + "))"
}

// agoFrom is @now minus @<name>Ms milliseconds.
func agoFrom(name, from string) string {
	return "DATEADD(MILLISECOND, -(@" + name + "Ms % 1000), DATEADD(SECOND, -(@" + name + "Ms / 1000), " + from + "))"
}

// jobColumns is the unified column list every read returns, whatever the
// table; $ is replaced by a table alias and the table-specific columns that
// do not apply are NULL. scanJob reads exactly this list.
const unifiedHot = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(1 AS TINYINT), $.Status, $.CreatedAtUtc, $.ScheduledAtUtc, $.LastUpdatedUtc, $.WorkerId, $.RunLease,
    $.StartedAtUtc, $.HeartbeatUtc, $.DeadlineUtc, $.LastError,
    CAST(NULL AS DATETIME2(7)), CAST(NULL AS BIGINT), CAST(NULL AS INT), CAST(NULL AS NVARCHAR(MAX))`

const unifiedArchive = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(2 AS TINYINT), CAST(NULL AS TINYINT), $.CreatedAtUtc, $.ScheduledAtUtc, CAST(NULL AS DATETIME2(7)), $.WorkerId, $.RunLease,
    $.StartedAtUtc, CAST(NULL AS DATETIME2(7)), CAST(NULL AS DATETIME2(7)), $.LastError,
    $.FinishedAtUtc, $.DurationMs, CAST(NULL AS INT), CAST(NULL AS NVARCHAR(MAX))`

const unifiedDLQ = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(3 AS TINYINT), CAST(NULL AS TINYINT), $.CreatedAtUtc, $.ScheduledAtUtc, CAST(NULL AS DATETIME2(7)), $.WorkerId, $.RunLease,
    $.StartedAtUtc, $.HeartbeatUtc, $.DeadlineUtc, $.LastError,
    $.FinishedAtUtc, CAST(NULL AS BIGINT), $.FailureReason, $.ErrorDetails`

func cols(list, alias string) string { return strings.ReplaceAll(list, "$.", alias+".") }

// Columns a move copies out of JobsHot.
const (
	archiveColumns = `Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts, AttemptCount,
    CreatedAtUtc, ScheduledAtUtc, WorkerId, RunLease, StartedAtUtc, LastError, FinishedAtUtc, DurationMs`
	archiveFromDeleted = `deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.AttemptCount, deleted.CreatedAtUtc, deleted.ScheduledAtUtc, deleted.WorkerId,
    deleted.RunLease, deleted.StartedAtUtc, deleted.LastError, @now, DATEDIFF_BIG(MILLISECOND, deleted.StartedAtUtc, @now)`
	dlqColumns = `Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts, AttemptCount,
    CreatedAtUtc, ScheduledAtUtc, WorkerId, RunLease, StartedAtUtc, HeartbeatUtc, DeadlineUtc, LastError,
    FinishedAtUtc, FailureReason, ErrorDetails`
	// dlqFromDeleted is followed by the reason and the details.
	dlqFromDeleted = `deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.AttemptCount, deleted.CreatedAtUtc, deleted.ScheduledAtUtc, deleted.WorkerId,
    deleted.RunLease, deleted.StartedAtUtc, deleted.HeartbeatUtc, deleted.DeadlineUtc, deleted.LastError, @now`
	// rescuedOutput is what a rescue phase reports per job; scanRescued reads it.
	rescuedOutput = `deleted.Id, deleted.Queue, deleted.Type, deleted.WorkerId, deleted.RunLease`
)

// Every enqueue passes its jobs as a JobInsertList table-valued parameter,
// even a single one: the parameter's declaration is then the same whatever
// the payload's length, so the plan cache holds one plan, not one per
// payload size (go-mssqldb declares []byte as varbinary(len)).
const insertFromItems = `INSERT INTO {{s}}.JobsHot (Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts,
    AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease)
SELECT {{idExpr}}, i.Queue, i.Type, i.Payload, i.Priority, i.Tags, {{keyExpr}}, i.CreatedBy, i.MaxAttempts,
    0, 0, @now,
    CASE WHEN i.RunAtMs IS NULL
        THEN DATEADD(MILLISECOND, i.DelayMs % 1000, DATEADD(SECOND, i.DelayMs / 1000, @now))
        ELSE DATEADD(MILLISECOND, i.RunAtMs % 86400000, DATEADD(DAY, i.RunAtMs / 86400000, CAST('19700101' AS DATETIME2(7)))) END,
    @now, 0
FROM @items AS i;`

// Enqueue of jobs without keys: the IDs come as one range from the
// sequence, so item i gets @first + i and no OUTPUT ordering is needed.
const qEnqueueBatch = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @firstValue SQL_VARIANT;
EXEC sys.sp_sequence_get_range @sequence_name = N'{{s}}.JobIds', @range_size = @n, @range_first_value = @firstValue OUTPUT;
DECLARE @first BIGINT = CONVERT(BIGINT, @firstValue);
` + "{{insertBatch}}" + `
SELECT @first;`

// Enqueue of one job (the single row of @items) with an idempotency key.
// UPDLOCK + HOLDLOCK on the key seek takes a key-range update lock, so a
// concurrent enqueue of the same key waits here and then sees the first job,
// instead of deadlocking or failing on the unique index. Run inside a
// caller's transaction it holds that lock until the caller commits, which is
// what makes the key safe there too. XACT_ABORT rolls the transaction back if
// the request is cancelled, so no lock outlives a timed-out call.
const qEnqueueKeyed = `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @id BIGINT;
BEGIN TRANSACTION;
SELECT @id = Id FROM {{s}}.JobsHot WITH (UPDLOCK, HOLDLOCK, ROWLOCK, FORCESEEK)
WHERE IdempotencyKey = @key AND IdempotencyKey IS NOT NULL;
IF @id IS NOT NULL
BEGIN
    COMMIT TRANSACTION;
    SELECT @id, CAST(1 AS BIT);
END
ELSE
BEGIN
    SET @id = NEXT VALUE FOR {{s}}.JobIds;
    ` + "{{insertKeyed}}" + `
    COMMIT TRANSACTION;
    SELECT @id, CAST(0 AS BIT);
END`

// Claim for one queue. A queue with MaxWorkers serializes its claimers on its
// Queues row (UPDLOCK, held to COMMIT) and counts its Fetched and Processing
// rows under that lock, so the cap is exact across processes (ADR 0003).
// Queues without a cap take no such lock. The candidate set is TOP (@n) in
// IX_JobsHot_Claim order: no sort and no window function over the backlog,
// so the statement locks about @n rows.
const qClaim = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @paused BIT, @max INT, @n INT = @limit;
SELECT @paused = IsPaused, @max = MaxWorkers FROM {{s}}.Queues WHERE Name = @queue;
BEGIN TRANSACTION;
IF @max IS NOT NULL
BEGIN
    SELECT @paused = IsPaused, @max = MaxWorkers FROM {{s}}.Queues WITH (UPDLOCK, ROWLOCK) WHERE Name = @queue;
    IF @max IS NOT NULL
    BEGIN
        SELECT @n = @max - COUNT(*) FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK)
        WHERE Queue = @queue AND Status IN (1, 2);
        IF @n > @limit SET @n = @limit;
    END
END
IF @n > 0 AND ISNULL(@paused, 0) = 0
BEGIN
    DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
    UPDATE h
    SET Status = 1, WorkerId = @worker, RunLease = h.RunLease + 1, LastUpdatedUtc = @now
    OUTPUT ` + "{{hotInserted}}" + `
    FROM {{s}}.JobsHot AS h
    INNER JOIN (
        SELECT TOP (@n) c.Id
        FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE c.Queue = @queue AND c.Status = 0 AND c.ScheduledAtUtc <= @now
        ORDER BY c.Priority DESC, c.ScheduledAtUtc, c.Id
    ) AS x ON x.Id = h.Id
    WHERE h.Status = 0;
END
COMMIT TRANSACTION;`

// Fetched -> Processing. The deadline is the queue's execution timeout, else
// the processor's default. A repeated start of the same claim (the reply to
// the first was lost and the call retried) reports that start again instead
// of losing the job: the lease belongs to this claim alone.
const qStart = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @started TABLE (AttemptCount INT NOT NULL, StartedAtUtc DATETIME2(7) NOT NULL, DeadlineUtc DATETIME2(7) NOT NULL);
UPDATE h
SET Status = 2, AttemptCount = h.AttemptCount + 1, StartedAtUtc = @now, HeartbeatUtc = @now, LastUpdatedUtc = @now,
    DeadlineUtc = CASE WHEN q.ExecutionTimeoutSeconds IS NULL THEN ` + "{{defaultDeadline}}" + `
                       ELSE DATEADD(SECOND, q.ExecutionTimeoutSeconds, @now) END
OUTPUT inserted.AttemptCount, inserted.StartedAtUtc, inserted.DeadlineUtc INTO @started
FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
LEFT JOIN {{s}}.Queues AS q ON q.Name = h.Queue
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 1;
IF @@ROWCOUNT = 0
    INSERT INTO @started (AttemptCount, StartedAtUtc, DeadlineUtc)
    SELECT AttemptCount, StartedAtUtc, DeadlineUtc FROM {{s}}.JobsHot
    WHERE Id = @id AND RunLease = @lease AND Status = 2;
SELECT AttemptCount, StartedAtUtc, DeadlineUtc FROM @started;`

// Heartbeat of many jobs in one statement. FORCESEEK keeps it a seek per
// listed job whatever the optimizer guesses about the table parameter.
const qHeartbeat = `SET NOCOUNT ON;
UPDATE h
SET HeartbeatUtc = SYSUTCDATETIME()
OUTPUT inserted.Id, inserted.RunLease
FROM @refs AS r
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = r.Id AND h.RunLease = r.Lease
WHERE h.Status = 2;`

// Processing -> Archive, one atomic move.
const qComplete = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DELETE h
OUTPUT ` + archiveFromDeleted + `
INTO {{s}}.JobsArchive (` + archiveColumns + `)
FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2;
SELECT @@ROWCOUNT;`

// Processing -> Pending after a retryable failure.
const qRetry = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
UPDATE {{s}}.JobsHot WITH (ROWLOCK)
SET Status = 0, WorkerId = NULL, StartedAtUtc = NULL, HeartbeatUtc = NULL, DeadlineUtc = NULL,
    LastUpdatedUtc = @now, LastError = @error, ScheduledAtUtc = ` + "{{retryAt}}" + `
WHERE Id = @id AND RunLease = @lease AND Status = 2;
SELECT @@ROWCOUNT;`

// Processing -> DLQ, one atomic move.
const qDeadLetter = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DELETE h
OUTPUT ` + dlqFromDeleted + `, @reason, @details
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2;
SELECT @@ROWCOUNT;`

// Fetched -> Pending for jobs a worker gives back; stale refs match nothing.
const qRelease = `SET NOCOUNT ON;
UPDATE h
SET Status = 0, WorkerId = NULL, LastUpdatedUtc = SYSUTCDATETIME()
FROM @refs AS r
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = r.Id AND h.RunLease = r.Lease
WHERE h.Status = 1;
SELECT @@ROWCOUNT;`

// Rescue phase 1: Fetched rows older than the timeout go back to Pending.
// No user code ran, so AttemptCount is not touched.
const qRescueFetched = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @cutoff DATETIME2(7) = ` + "{{timeoutAgo}}" + `;
UPDATE h
SET Status = 0, WorkerId = NULL, LastUpdatedUtc = @now
OUTPUT ` + rescuedOutput + `, deleted.LastUpdatedUtc, CAST(NULL AS INT), @now
FROM {{s}}.JobsHot AS h
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE c.Status = 1 AND c.LastUpdatedUtc < @cutoff
    ORDER BY c.LastUpdatedUtc
) AS x ON x.Id = h.Id
WHERE h.Status = 1 AND h.LastUpdatedUtc < @cutoff;`

// Rescue phase 2: Processing rows whose heartbeat is older than their
// queue's ZombieTimeoutSeconds, else the global timeout, move to the DLQ as
// Zombie. Their side effects are uncertain, so they are never re-run.
const qRescueZombies = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @globalCutoff DATETIME2(7) = ` + "{{timeoutAgo}}" + `;
DELETE h
OUTPUT ` + dlqFromDeleted + `, 2,
    N'zombie: heartbeat expired (last heartbeat ' + CONVERT(NVARCHAR(33), ISNULL(deleted.HeartbeatUtc, deleted.LastUpdatedUtc), 127)
        + N'Z, timeout ' + CONVERT(NVARCHAR(20), ISNULL(CAST(q.ZombieTimeoutSeconds AS BIGINT), @timeoutMs / 1000))
        + N's, worker ' + ISNULL(deleted.WorkerId, N'') + N')'
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
OUTPUT ` + rescuedOutput + `, ISNULL(deleted.HeartbeatUtc, deleted.LastUpdatedUtc), 2, @now
FROM {{s}}.JobsHot AS h
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    LEFT JOIN {{s}}.Queues AS cq ON cq.Name = c.Queue
    WHERE c.Status = 2
      AND ISNULL(c.HeartbeatUtc, c.LastUpdatedUtc) <
          CASE WHEN cq.ZombieTimeoutSeconds IS NULL THEN @globalCutoff ELSE DATEADD(SECOND, -cq.ZombieTimeoutSeconds, @now) END
) AS x ON x.Id = h.Id
LEFT JOIN {{s}}.Queues AS q ON q.Name = h.Queue
WHERE h.Status = 2
  AND ISNULL(h.HeartbeatUtc, h.LastUpdatedUtc) <
      CASE WHEN q.ZombieTimeoutSeconds IS NULL THEN @globalCutoff ELSE DATEADD(SECOND, -q.ZombieTimeoutSeconds, @now) END;`

// Rescue phase 3: Processing rows past their deadline move to the DLQ as
// Timeout, even while their worker still heartbeats (a hung handler).
const qRescueExpired = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DELETE h
OUTPUT ` + dlqFromDeleted + `, 7,
    N'timeout: execution deadline passed (deadline ' + CONVERT(NVARCHAR(33), deleted.DeadlineUtc, 127)
        + N'Z, worker ' + ISNULL(deleted.WorkerId, N'') + N')'
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
OUTPUT ` + rescuedOutput + `, deleted.DeadlineUtc, 7, @now
FROM {{s}}.JobsHot AS h
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE c.Status = 2 AND c.DeadlineUtc < @now
) AS x ON x.Id = h.Id
WHERE h.Status = 2 AND h.DeadlineUtc < @now;`

// filterWhere is the WHERE clause shared by listing, counting, resurrect and
// purge: a catch-all over optional parameters, compiled per call with
// OPTION (RECOMPILE) so the plan fits the filters actually given. $ is the
// table alias, @ the table's own instant column.
const filterWhere = `WHERE (@hasIds = 0 OR $.Id IN (SELECT Id FROM @ids))
  AND (@queue IS NULL OR $.Queue = @queue)
  AND (@type IS NULL OR $.Type = @type)
  AND (@from IS NULL OR $.@ >= @from)
  AND (@to IS NULL OR $.@ < @to)
  AND (@olderThanMs IS NULL OR $.@ < ` + "{{olderThanAgo}}" + `)
  AND (@asOf IS NULL OR $.@ <= @asOf)
  AND (@text IS NULL OR CHARINDEX(@text, $.Type) > 0 OR CHARINDEX(@text, ISNULL($.LastError, N'')) > 0
       {{textExtra}} OR CHARINDEX(@textBytes, ISNULL($.Payload, 0x)) > 0)
  {{tableFilter}}`

// tableSQL holds the per-table pieces the generic statements need.
type tableSQL struct {
	name    string // JobsHot, JobsArchive, JobsDLQ
	instant string // the column From, To, OlderThan and asOf compare
	columns string // unified select list
	extra   string // table-only filter predicates
	text    string // extra text search columns
}

var tables = map[jobs.Table]tableSQL{
	jobs.TableHot: {name: "JobsHot", instant: "CreatedAtUtc", columns: unifiedHot,
		extra: "AND (@status IS NULL OR $.Status = @status)"},
	jobs.TableArchive: {name: "JobsArchive", instant: "FinishedAtUtc", columns: unifiedArchive},
	jobs.TableDLQ: {name: "JobsDLQ", instant: "FinishedAtUtc", columns: unifiedDLQ,
		extra: "AND (@reason IS NULL OR $.FailureReason = @reason)",
		text:  "OR CHARINDEX(@text, ISNULL($.ErrorDetails, N'')) > 0"},
}

func (t tableSQL) where(alias string) string {
	w := strings.NewReplacer("{{tableFilter}}", t.extra, "{{textExtra}}", t.text, "{{olderThanAgo}}", agoFrom("olderThan", "SYSUTCDATETIME()")).Replace(filterWhere)
	return strings.NewReplacer("$.@", alias+"."+t.instant, "$.", alias+".").Replace(w)
}

// qList pages newest first; it asks for one row more than the page to know
// whether another page follows.
func (t tableSQL) qList() string {
	return `SELECT TOP (@limit) ` + cols(t.columns, "t") + `
FROM {{s}}.` + t.name + ` AS t
` + t.where("t") + `
  AND (@beforeId = 0 OR t.Id < @beforeId)
ORDER BY t.Id DESC
OPTION (RECOMPILE);`
}

func (t tableSQL) qCount() string {
	return `SELECT COUNT_BIG(*) FROM {{s}}.` + t.name + ` AS t
` + t.where("t") + `
OPTION (RECOMPILE);`
}

// qPurge deletes one bounded batch of archived or dead-lettered jobs.
func (t tableSQL) qPurge() string {
	return `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DELETE d
FROM {{s}}.` + t.name + ` AS d
INNER JOIN (
    SELECT TOP (@limit) t.Id
    FROM {{s}}.` + t.name + ` AS t WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    ` + t.where("t") + `
    ORDER BY t.Id DESC
) AS x ON x.Id = d.Id
OPTION (RECOMPILE);
SELECT @@ROWCOUNT;`
}

// qResurrect moves one bounded batch of dead letters back to Pending in one
// transaction: out of the DLQ into a table variable, then into JobsHot with
// AttemptCount reset and the ID and lease kept. A key that an active job
// holds now (or that another resurrected job of this batch takes first) is
// dropped, because keys are unique among active jobs.
func qResurrect() string {
	dlq := tables[jobs.TableDLQ]
	return `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @moved TABLE (
    Id BIGINT NOT NULL PRIMARY KEY, Queue NVARCHAR(100) NOT NULL, Type NVARCHAR(200) NOT NULL, Payload VARBINARY(MAX) NULL,
    Priority INT NOT NULL, Tags NVARCHAR(1000) NULL, IdempotencyKey NVARCHAR(200) NULL, CreatedBy NVARCHAR(100) NULL,
    MaxAttempts INT NOT NULL, CreatedAtUtc DATETIME2(7) NOT NULL, RunLease BIGINT NOT NULL, ErrorDetails NVARCHAR(MAX) NULL);
BEGIN TRANSACTION;
DELETE d
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.CreatedAtUtc, deleted.RunLease, deleted.ErrorDetails
INTO @moved
FROM {{s}}.JobsDLQ AS d
INNER JOIN (
    SELECT TOP (@limit) t.Id
    FROM {{s}}.JobsDLQ AS t WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    ` + dlq.where("t") + `
    ORDER BY t.Id DESC
) AS x ON x.Id = d.Id
OPTION (RECOMPILE);
INSERT INTO {{s}}.JobsHot (Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts,
    AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease, LastError)
SELECT m.Id, m.Queue, m.Type, CASE WHEN @replacePayload = 1 THEN @payload ELSE m.Payload END, m.Priority, m.Tags,
    CASE WHEN m.IdempotencyKey IS NULL OR m.KeyRank > 1
              OR EXISTS (SELECT 1 FROM {{s}}.JobsHot AS k WITH (UPDLOCK, HOLDLOCK, FORCESEEK)
                         WHERE k.IdempotencyKey = m.IdempotencyKey AND k.IdempotencyKey IS NOT NULL)
         THEN NULL ELSE m.IdempotencyKey END,
    m.CreatedBy, m.MaxAttempts, 0, 0, m.CreatedAtUtc, @now, @now, m.RunLease, m.ErrorDetails
FROM (SELECT mv.*, ROW_NUMBER() OVER (PARTITION BY mv.IdempotencyKey ORDER BY mv.Id) AS KeyRank FROM @moved AS mv) AS m;
COMMIT TRANSACTION;
SELECT COUNT(*) FROM @moved;`
}

// qGetJob looks in every table; the job is in exactly one (I2).
const qGetJob = `SELECT ` + "{{hotCols}}" + ` FROM {{s}}.JobsHot AS h WHERE h.Id = @id
UNION ALL
SELECT ` + "{{archiveCols}}" + ` FROM {{s}}.JobsArchive AS a WHERE a.Id = @id
UNION ALL
SELECT ` + "{{dlqCols}}" + ` FROM {{s}}.JobsDLQ AS d WHERE d.Id = @id;`

const qQueues = `SELECT Name, IsPaused, ISNULL(MaxWorkers, 0), ISNULL(ZombieTimeoutSeconds, 0), ISNULL(ExecutionTimeoutSeconds, 0)
FROM {{s}}.Queues ORDER BY Name;`

// Upsert of one queue row; a @set* flag of 0 leaves that column alone and a
// zero value stores NULL (not set).
const qUpdateQueue = `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRANSACTION;
UPDATE {{s}}.Queues WITH (UPDLOCK, SERIALIZABLE)
SET IsPaused = CASE WHEN @setPaused = 1 THEN @paused ELSE IsPaused END,
    MaxWorkers = CASE WHEN @setMax = 1 THEN NULLIF(@max, 0) ELSE MaxWorkers END,
    ZombieTimeoutSeconds = CASE WHEN @setZombie = 1 THEN NULLIF(@zombie, 0) ELSE ZombieTimeoutSeconds END,
    ExecutionTimeoutSeconds = CASE WHEN @setExec = 1 THEN NULLIF(@exec, 0) ELSE ExecutionTimeoutSeconds END,
    LastUpdatedUtc = SYSUTCDATETIME()
WHERE Name = @name;
IF @@ROWCOUNT = 0
    INSERT INTO {{s}}.Queues (Name, IsPaused, MaxWorkers, ZombieTimeoutSeconds, ExecutionTimeoutSeconds)
    VALUES (@name, CASE WHEN @setPaused = 1 THEN @paused ELSE 0 END,
            CASE WHEN @setMax = 1 THEN NULLIF(@max, 0) END,
            CASE WHEN @setZombie = 1 THEN NULLIF(@zombie, 0) END,
            CASE WHEN @setExec = 1 THEN NULLIF(@exec, 0) END);
COMMIT TRANSACTION;
SELECT Name, IsPaused, ISNULL(MaxWorkers, 0), ISNULL(ZombieTimeoutSeconds, 0), ISNULL(ExecutionTimeoutSeconds, 0)
FROM {{s}}.Queues WHERE Name = @name;`

// Per-queue counts for operators. It reads every table once; it is an
// operator query, not something the hot path runs.
const qQueueStats = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
WITH hot AS (
    SELECT Queue,
        COUNT_BIG(CASE WHEN Status = 0 AND ScheduledAtUtc <= @now THEN 1 END) AS Pending,
        COUNT_BIG(CASE WHEN Status = 0 AND ScheduledAtUtc > @now THEN 1 END) AS Scheduled,
        COUNT_BIG(CASE WHEN Status = 1 THEN 1 END) AS Fetched,
        COUNT_BIG(CASE WHEN Status = 2 THEN 1 END) AS Processing,
        MIN(CASE WHEN Status = 0 AND ScheduledAtUtc <= @now THEN ScheduledAtUtc END) AS OldestDue
    FROM {{s}}.JobsHot GROUP BY Queue),
arc AS (SELECT Queue, COUNT_BIG(*) AS N FROM {{s}}.JobsArchive GROUP BY Queue),
dlq AS (SELECT Queue, COUNT_BIG(*) AS N FROM {{s}}.JobsDLQ GROUP BY Queue),
names AS (
    SELECT Name AS Queue FROM {{s}}.Queues
    UNION SELECT Queue FROM hot UNION SELECT Queue FROM arc UNION SELECT Queue FROM dlq)
SELECT n.Queue, ISNULL(q.IsPaused, 0), ISNULL(q.MaxWorkers, 0),
    ISNULL(h.Pending, 0), ISNULL(h.Scheduled, 0), ISNULL(h.Fetched, 0), ISNULL(h.Processing, 0),
    ISNULL(a.N, 0), ISNULL(d.N, 0), h.OldestDue, @now
FROM names AS n
LEFT JOIN {{s}}.Queues AS q ON q.Name = n.Queue
LEFT JOIN hot AS h ON h.Queue = n.Queue
LEFT JOIN arc AS a ON a.Queue = n.Queue
LEFT JOIN dlq AS d ON d.Queue = n.Queue
ORDER BY n.Queue;`

// Per-queue depth for metrics sampling: every count reads at most @cap rows
// of IX_JobsHot_Claim, so a deep backlog costs no more than a shallow one.
// Queue names cannot contain commas (jobs.ValidateQueueName), so a
// comma-joined list split by STRING_SPLIT is safe.
const qQueueDepths = `SELECT q.value,
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = q.value AND Status = 0) AS t),
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = q.value AND Status = 1) AS t),
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = q.value AND Status = 2) AS t)
FROM (SELECT DISTINCT CAST(value AS NVARCHAR(100)) AS value FROM STRING_SPLIT(@queues, ',') WHERE value <> N'') AS q
ORDER BY q.value;`

const qNow = `SELECT SYSUTCDATETIME();`

// qAgeForTest moves every stored instant back by @byMs milliseconds: to every
// expiry rule this is the same as the clock moving forward. Only the
// contract tests use it, through an unexported hook.
const qAgeForTest = `SET NOCOUNT ON;
UPDATE {{s}}.JobsHot SET
    CreatedAtUtc = {{ago:CreatedAtUtc}}, ScheduledAtUtc = {{ago:ScheduledAtUtc}}, LastUpdatedUtc = {{ago:LastUpdatedUtc}},
    StartedAtUtc = {{ago:StartedAtUtc}}, HeartbeatUtc = {{ago:HeartbeatUtc}}, DeadlineUtc = {{ago:DeadlineUtc}};
UPDATE {{s}}.JobsArchive SET
    CreatedAtUtc = {{ago:CreatedAtUtc}}, ScheduledAtUtc = {{ago:ScheduledAtUtc}}, StartedAtUtc = {{ago:StartedAtUtc}},
    FinishedAtUtc = {{ago:FinishedAtUtc}};
UPDATE {{s}}.JobsDLQ SET
    CreatedAtUtc = {{ago:CreatedAtUtc}}, ScheduledAtUtc = {{ago:ScheduledAtUtc}}, StartedAtUtc = {{ago:StartedAtUtc}},
    HeartbeatUtc = {{ago:HeartbeatUtc}}, DeadlineUtc = {{ago:DeadlineUtc}}, FinishedAtUtc = {{ago:FinishedAtUtc}};`

// Leader election (Leader): a session-owned exclusive application lock, tried
// without waiting, checked before each use, released on resign.
const (
	qTryAppLock = `DECLARE @rc INT;
EXEC @rc = sp_getapplock @Resource = @resource, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0;
SELECT @rc;`
	qAppLockMode    = `SELECT APPLOCK_MODE('public', @resource, 'Session');`
	qReleaseAppLock = `EXEC sp_releaseapplock @Resource = @resource, @LockOwner = 'Session';`
)

// qResetForTest empties every table between contract cases.
const qResetForTest = `DELETE FROM {{s}}.JobsHot; DELETE FROM {{s}}.JobsArchive; DELETE FROM {{s}}.JobsDLQ; DELETE FROM {{s}}.Queues;`

// queries is every statement rendered for one schema.
type queries struct {
	enqueueKeyed, enqueueBatch                           string
	claim, start, heartbeat, complete, retry, deadLetter string
	release                                              string
	rescueFetched, rescueZombies, rescueExpired          string
	resurrect                                            string
	purge, list, count                                   map[jobs.Table]string
	getJob, queues, updateQueue, queueStats, now         string
	queueDepths                                          string
	ageForTest, resetForTest                             string
	tryAppLock, appLockMode, releaseAppLock              string
}

var agoColumn = strings.NewReplacer(
	"{{ago:CreatedAtUtc}}", agoFrom("by", "CreatedAtUtc"),
	"{{ago:ScheduledAtUtc}}", agoFrom("by", "ScheduledAtUtc"),
	"{{ago:LastUpdatedUtc}}", agoFrom("by", "LastUpdatedUtc"),
	"{{ago:StartedAtUtc}}", agoFrom("by", "StartedAtUtc"),
	"{{ago:HeartbeatUtc}}", agoFrom("by", "HeartbeatUtc"),
	"{{ago:DeadlineUtc}}", agoFrom("by", "DeadlineUtc"),
	"{{ago:FinishedAtUtc}}", agoFrom("by", "FinishedAtUtc"),
)

var (
	batchInsert = strings.NewReplacer("{{idExpr}}", "@first + i.Ord", "{{keyExpr}}", "NULL").Replace(insertFromItems)
	keyedInsert = strings.NewReplacer("{{idExpr}}", "@id", "{{keyExpr}}", "@key").Replace(insertFromItems)
)

// render builds every statement for the bracket-quoted schema name.
func render(quotedSchema string) *queries {
	r := strings.NewReplacer(
		"{{s}}", quotedSchema,
		"{{hotInserted}}", cols(unifiedHot, "inserted"),
		"{{defaultDeadline}}", delayFrom("default", "@now"),
		"{{retryAt}}", delayFrom("delay", "@now"),
		"{{timeoutAgo}}", agoFrom("timeout", "@now"),
		"{{hotCols}}", cols(unifiedHot, "h"),
		"{{archiveCols}}", cols(unifiedArchive, "a"),
		"{{dlqCols}}", cols(unifiedDLQ, "d"),
	)
	q := &queries{
		enqueueKeyed:   r.Replace(strings.Replace(qEnqueueKeyed, "{{insertKeyed}}", keyedInsert, 1)),
		enqueueBatch:   r.Replace(strings.Replace(qEnqueueBatch, "{{insertBatch}}", batchInsert, 1)),
		claim:          r.Replace(qClaim),
		start:          r.Replace(qStart),
		heartbeat:      r.Replace(qHeartbeat),
		complete:       r.Replace(qComplete),
		retry:          r.Replace(qRetry),
		deadLetter:     r.Replace(qDeadLetter),
		release:        r.Replace(qRelease),
		rescueFetched:  r.Replace(qRescueFetched),
		rescueZombies:  r.Replace(qRescueZombies),
		rescueExpired:  r.Replace(qRescueExpired),
		resurrect:      r.Replace(qResurrect()),
		getJob:         r.Replace(qGetJob),
		queues:         r.Replace(qQueues),
		updateQueue:    r.Replace(qUpdateQueue),
		queueStats:     r.Replace(qQueueStats),
		now:            qNow,
		queueDepths:    r.Replace(qQueueDepths),
		ageForTest:     r.Replace(agoColumn.Replace(qAgeForTest)),
		resetForTest:   r.Replace(qResetForTest),
		tryAppLock:     qTryAppLock,
		appLockMode:    qAppLockMode,
		releaseAppLock: qReleaseAppLock,
		purge:          map[jobs.Table]string{},
		list:           map[jobs.Table]string{},
		count:          map[jobs.Table]string{},
	}
	for t, ts := range tables {
		q.list[t] = r.Replace(ts.qList())
		q.count[t] = r.Replace(ts.qCount())
		if t != jobs.TableHot {
			q.purge[t] = r.Replace(ts.qPurge())
		}
	}
	return q
}
