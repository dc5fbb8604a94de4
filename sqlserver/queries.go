package sqlserver

import (
	"strconv"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
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
//   - Statements that pick a batch select TOP (@n) IDs with UPDLOCK,
//     READPAST, ROWLOCK in a derived table that seeks an index, joined to
//     the base table read WITH (READPAST, ROWLOCK), and repeat the whole
//     test on that outer table: such a statement never waits on a row
//     another transaction holds, so it cannot take part in a deadlock with
//     the worker statements, which lock the clustered key first (ADR 0016,
//     with the lock order of every statement). Every READPAST comes with
//     READCOMMITTEDLOCK: with READ_COMMITTED_SNAPSHOT on (Azure SQL's
//     default) a read committed scan would otherwise read row versions,
//     and READPAST is refused or skips nothing. They state READ COMMITTED
//     (READPAST needs it, and fails with error 650 under SNAPSHOT; a
//     parameterized batch runs in sp_executesql, so the setting ends with
//     the call). No statement that runs in a caller's transaction
//     (EnqueueTx) uses READPAST.
//   - Every parameter is declared the same whatever its value, so each
//     statement keeps one cached plan: text goes as NVARCHAR(MAX) and is
//     copied into a local of the column's type before it meets an index;
//     an absent text is the empty string (no queue, type or text is empty);
//     bytes go as hex text; times as DATETIME2 with a separate "has" bit;
//     lists and jobs as table-valued parameters.

// delayFrom is from plus @<name>Ms milliseconds.
func delayFrom(name, from string) string { return addMs("@"+name+"Ms", from) }

// addMs is from plus ms milliseconds, an expression of BIGINT.
func addMs(ms, from string) string {
	return "DATEADD(MILLISECOND, " + ms + " % 1000, DATEADD(SECOND, " + ms + " / 1000, " + from + "))"
}

// agoFrom is @now minus @<name>Ms milliseconds.
func agoFrom(name, from string) string {
	return "DATEADD(MILLISECOND, -(@" + name + "Ms % 1000), DATEADD(SECOND, -(@" + name + "Ms / 1000), " + from + "))"
}

// unifiedHot, unifiedArchive and unifiedDLQ are the one column list every
// read of a job returns, whatever its table (GetJob's UNION ALL, ListJobs,
// the claim): cols replaces $ with a table alias, and the columns that do
// not apply to the table are typed NULLs, so the three lists line up
// column for column. scanJobs reads this list in this order; unifiedNames
// names and types the same columns for the @claimed table variable the
// claim fills before it commits. TestUnifiedColumnListsAgree keeps the
// four in step.
const unifiedHot = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(1 AS TINYINT), $.Status, $.CreatedAtUtc, $.ScheduledAtUtc, $.LastUpdatedUtc, $.WorkerId, $.RunLease,
    $.StartedAtUtc, $.HeartbeatUtc, $.DeadlineUtc, $.LastError,
    CAST(NULL AS DATETIME2(7)), CAST(NULL AS BIGINT), CAST(NULL AS INT), CAST(NULL AS NVARCHAR(MAX)),
    $.SnoozeCount, $.CancelRequestedUtc, $.CancelNote, $.HeartbeatMaxMs,
    $.Metadata, CAST(NULL AS NVARCHAR(MAX)), $.ProgressFraction, $.ProgressMessage,
    $.TimeoutSource, $.ZombieRetryCap, $.ZombieRetries,
    $.UniqueKeyHash, $.UniqueBucket, $.UniqueStates, $.ConcurrencyKey, $.SequenceKey,
    $.WorkflowId, $.WorkflowTask`

const unifiedArchive = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(2 AS TINYINT), CAST(NULL AS TINYINT), $.CreatedAtUtc, $.ScheduledAtUtc, CAST(NULL AS DATETIME2(7)), $.WorkerId, $.RunLease,
    $.StartedAtUtc, CAST(NULL AS DATETIME2(7)), CAST(NULL AS DATETIME2(7)), $.LastError,
    $.FinishedAtUtc, $.DurationMs, CAST(NULL AS INT), CAST(NULL AS NVARCHAR(MAX)),
    $.SnoozeCount, CAST(NULL AS DATETIME2(7)), CAST(NULL AS NVARCHAR(500)), CAST(NULL AS INT),
    $.Metadata, $.OutputJson, CAST(NULL AS REAL), CAST(NULL AS NVARCHAR(200)),
    CAST(NULL AS TINYINT), CAST(NULL AS INT), CAST(NULL AS INT),
    $.UniqueKeyHash, $.UniqueBucket, $.UniqueStates, $.ConcurrencyKey, $.SequenceKey,
    $.WorkflowId, $.WorkflowTask`

const unifiedDLQ = `$.Id, $.Queue, $.Type, $.Payload, $.Priority, $.Tags, $.IdempotencyKey, $.CreatedBy, $.MaxAttempts, $.AttemptCount,
    CAST(3 AS TINYINT), CAST(NULL AS TINYINT), $.CreatedAtUtc, $.ScheduledAtUtc, CAST(NULL AS DATETIME2(7)), $.WorkerId, $.RunLease,
    $.StartedAtUtc, $.HeartbeatUtc, $.DeadlineUtc, $.LastError,
    $.FinishedAtUtc, CAST(NULL AS BIGINT), $.FailureReason, $.ErrorDetails,
    $.SnoozeCount, CAST(NULL AS DATETIME2(7)), CAST(NULL AS NVARCHAR(500)), CAST(NULL AS INT),
    $.Metadata, $.OutputJson, CAST(NULL AS REAL), CAST(NULL AS NVARCHAR(200)),
    CAST(NULL AS TINYINT), CAST(NULL AS INT), CAST(NULL AS INT),
    $.UniqueKeyHash, $.UniqueBucket, $.UniqueStates, $.ConcurrencyKey, $.SequenceKey,
    $.WorkflowId, $.WorkflowTask`

func cols(list, alias string) string { return strings.ReplaceAll(list, "$.", alias+".") }

// unifiedNames declares the unified columns, in order, for a table variable.
var unifiedNames = [][2]string{
	{"Id", "BIGINT"}, {"Queue", "NVARCHAR(100)"}, {"Type", "NVARCHAR(200)"}, {"Payload", "VARBINARY(MAX)"}, {"Priority", "INT"},
	{"Tags", "NVARCHAR(1000)"}, {"IdempotencyKey", "NVARCHAR(200)"}, {"CreatedBy", "NVARCHAR(100)"}, {"MaxAttempts", "INT"},
	{"AttemptCount", "INT"}, {"TableKind", "TINYINT"}, {"Status", "TINYINT"}, {"CreatedAtUtc", "DATETIME2(7)"},
	{"ScheduledAtUtc", "DATETIME2(7)"}, {"LastUpdatedUtc", "DATETIME2(7)"}, {"WorkerId", "NVARCHAR(200)"}, {"RunLease", "BIGINT"},
	{"StartedAtUtc", "DATETIME2(7)"}, {"HeartbeatUtc", "DATETIME2(7)"}, {"DeadlineUtc", "DATETIME2(7)"}, {"LastError", "NVARCHAR(MAX)"},
	{"FinishedAtUtc", "DATETIME2(7)"}, {"DurationMs", "BIGINT"}, {"FailureReason", "INT"}, {"ErrorDetails", "NVARCHAR(MAX)"},
	{"SnoozeCount", "INT"}, {"CancelRequestedUtc", "DATETIME2(7)"}, {"CancelNote", "NVARCHAR(500)"},
	{"HeartbeatMaxMs", "INT"}, {"Metadata", "NVARCHAR(MAX)"}, {"OutputJson", "NVARCHAR(MAX)"}, {"ProgressFraction", "REAL"},
	{"ProgressMessage", "NVARCHAR(200)"},
	{"TimeoutSource", "TINYINT"}, {"ZombieRetryCap", "INT"}, {"ZombieRetries", "INT"},
	{"UniqueKeyHash", "BINARY(32)"}, {"UniqueBucket", "BIGINT"}, {"UniqueStates", "TINYINT"},
	{"ConcurrencyKey", "NVARCHAR(200)"}, {"SequenceKey", "NVARCHAR(200)"},
	{"WorkflowId", "BIGINT"}, {"WorkflowTask", "NVARCHAR(200)"},
}

// unifiedDecl is the column list of a table variable of unified rows;
// unifiedSelect selects them from alias.
func unifiedDecl() string {
	parts := make([]string, len(unifiedNames))
	for i, c := range unifiedNames {
		parts[i] = c[0] + " " + c[1] + " NULL"
	}
	return strings.Join(parts, ", ")
}

func unifiedSelect(alias string) string {
	parts := make([]string, len(unifiedNames))
	for i, c := range unifiedNames {
		parts[i] = alias + "." + c[0]
	}
	return strings.Join(parts, ", ")
}

// Columns a move copies out of JobsHot.
const (
	archiveColumns = `Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts, AttemptCount,
    CreatedAtUtc, ScheduledAtUtc, WorkerId, RunLease, StartedAtUtc, LastError, FinishedAtUtc, DurationMs, SnoozeCount, Metadata,
    UniqueKeyHash, UniqueBucket, UniqueStates, ConcurrencyKey, SequenceKey, ` + workflowColumns
	archiveFromDeleted = `deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.AttemptCount, deleted.CreatedAtUtc, deleted.ScheduledAtUtc, deleted.WorkerId,
    deleted.RunLease, deleted.StartedAtUtc, deleted.LastError, @now, DATEDIFF_BIG(MILLISECOND, deleted.StartedAtUtc, @now),
    deleted.SnoozeCount, deleted.Metadata, deleted.UniqueKeyHash, deleted.UniqueBucket, deleted.UniqueStates,
    deleted.ConcurrencyKey, deleted.SequenceKey, ` + workflowFromDeleted
	dlqColumns = `Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts, AttemptCount,
    CreatedAtUtc, ScheduledAtUtc, WorkerId, RunLease, StartedAtUtc, HeartbeatUtc, DeadlineUtc, LastError, Metadata,
    UniqueKeyHash, UniqueBucket, UniqueStates, ConcurrencyKey, SequenceKey, ` + workflowColumns + `,
    SnoozeCount, FinishedAtUtc, FailureReason, ErrorDetails`
	// dlqFromDeleted is followed by the reason and the details.
	dlqFromDeleted = `deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.AttemptCount, deleted.CreatedAtUtc, deleted.ScheduledAtUtc, deleted.WorkerId,
    deleted.RunLease, deleted.StartedAtUtc, deleted.HeartbeatUtc, deleted.DeadlineUtc, deleted.LastError, deleted.Metadata,
    deleted.UniqueKeyHash, deleted.UniqueBucket, deleted.UniqueStates, deleted.ConcurrencyKey, deleted.SequenceKey,
    ` + workflowFromDeleted + `, deleted.SnoozeCount, @now`
	// workflowColumns are a workflow task's columns in the archive and the
	// DLQ; workflowFromDeleted fills them from a move out of JobsHot, with
	// ReleaseCursor 0 for a task: the release the task owes its children
	// (ADR 0034) commits with its move, whatever the move.
	workflowColumns     = `WorkflowId, WorkflowTask, OnParentFailure, ReleaseCursor`
	workflowFromDeleted = `deleted.WorkflowId, deleted.WorkflowTask, deleted.OnParentFailure,
    CASE WHEN deleted.WorkflowId IS NOT NULL THEN CAST(0 AS BIGINT) END`
	// cancelledReason is the reason of a move to the DLQ by rescue phase
	// 3: Timeout, or Cancelled for a job whose cancel was requested.
	cancelledReason = `CASE WHEN deleted.CancelRequestedUtc IS NULL THEN 7 ELSE 1 END`
	// rescuedOutput is what a rescue phase reports per job; scanRescued reads it.
	rescuedOutput = `deleted.Id, deleted.Queue, deleted.Type, deleted.WorkerId, deleted.RunLease`
)

// Every enqueue passes its jobs as a JobInsertList table-valued parameter,
// even a single one: the parameter's declaration is then the same whatever
// the payload's length, so the plan cache holds one plan, not one per
// payload size (go-mssqldb declares []byte as varbinary(len)). The
// metadata of the jobs that have any comes in the MetadataList @metadata,
// by the item's Ord (empty for a batch without metadata; ADR 0028).
const insertFromItems = `INSERT INTO {{s}}.JobsHot WITH (ROWLOCK) (Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts,
    AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease, Metadata, UniqueKeyHash, UniqueBucket, UniqueStates,
    ConcurrencyKey, SequenceKey)
SELECT {{idExpr}}, i.Queue, i.Type, i.Payload, i.Priority, i.Tags, {{keyExpr}}, i.CreatedBy, i.MaxAttempts,
    0, 0, @now,
    CASE WHEN i.RunAtMs IS NULL
        THEN DATEADD(MILLISECOND, i.DelayMs % 1000, DATEADD(SECOND, i.DelayMs / 1000, @now))
        ELSE DATEADD(MILLISECOND, i.RunAtMs % 86400000, DATEADD(DAY, i.RunAtMs / 86400000, CAST('19700101' AS DATETIME2(7)))) END,
    @now, 0, m.Metadata, {{uniqueExpr}}, f.ConcurrencyKey, f.SequenceKey
FROM @items AS i
LEFT JOIN @metadata AS m ON m.Ord = i.Ord
LEFT JOIN @flowKeys AS f ON f.Ord = i.Ord;`

// Enqueue of jobs without keys: the IDs come as one range from the
// sequence, so item i gets @first + i and no OUTPUT ordering is needed.
const qEnqueueBatch = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @firstValue SQL_VARIANT;
EXEC sys.sp_sequence_get_range @sequence_name = N'{{s}}.JobIds', @range_size = @n, @range_first_value = @firstValue OUTPUT;
DECLARE @first BIGINT = CONVERT(BIGINT, @firstValue);
` + "{{insertBatch}}" + `
SELECT @first;`

// Enqueue of one job (the single row of @items) with an idempotency key. The
// key is serialized with an application lock on a hash of it, owned by the
// transaction: enqueues of one key wait for each other, enqueues of other
// keys do not (a key-range lock, UPDLOCK and HOLDLOCK on a key that does not
// exist yet, would lock the gap to the next key, and monotonic keys all fall
// in one gap). CHECKSUM follows the collation, so keys the unique index
// holds equal hash equally; two keys that merely collide wait for each
// other, nothing worse. Under the lock a plain seek finds an active job with
// the key, else the job is inserted. A job with the key that arrives by
// another path (resurrect takes no key lock) surfaces as error 2601 or 2627,
// after which the existing job is read and returned; if that job has
// already left the hot table (it finished between the conflict and the
// re-read), the error is rethrown and the store runs the statement again.
//
// keyedPrologue and keyedBody are shared by the two forms: on the store's
// own transaction (enqueueKeyed), and inside a caller's (enqueueKeyedTx).
const keyedPrologue = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @k NVARCHAR(200) = @key;
DECLARE @id BIGINT, @dup BIT = 0, @rc INT;
DECLARE @lock NVARCHAR(255) = N'chokaq:{{name}}:key:' + CONVERT(NVARCHAR(11), CHECKSUM(@k));`

const keyedBody = `EXEC @rc = sys.sp_getapplock @Resource = @lock, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the idempotency key lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
SELECT @id = Id FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE IdempotencyKey = @k;
IF @id IS NOT NULL
    SET @dup = 1;
ELSE
BEGIN
    BEGIN TRY
        SET @id = NEXT VALUE FOR {{s}}.JobIds;
        ` + "{{insertKeyed}}" + `
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (2601, 2627) OR XACT_STATE() <> 1
            THROW;
        -- The sequence value stays in @id if no row matches (the key's
        -- holder finished in between): reset it, so "no job" rethrows.
        SET @id = NULL;
        SELECT @id = Id FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE IdempotencyKey = @k;
        IF @id IS NULL
            THROW;
        SET @dup = 1;
    END CATCH
END`

// ownTx and callersTx wrap a keyed enqueue's body in its two forms.
//
// ownTx is the store's own transaction, under XACT_ABORT so that a
// cancelled request leaves no transaction (and no key lock) open. A
// duplicate key here dooms the transaction (XACT_STATE() = -1), so the
// statement rethrows and the store reads the existing job with qJobByKey.
//
// callersTx runs inside a caller's transaction: XACT_ABORT off for this
// batch (a SET in a parameterized batch lasts only as long as the batch),
// since under it a duplicate key would roll back the caller's whole
// transaction, and no transaction of its own. The key locks then last
// until the caller commits or rolls back, which is what makes the keys
// safe there: a second enqueue of one waits to see whether the first
// commits. READCOMMITTEDLOCK reads the latest committed row even in a
// caller's SNAPSHOT transaction, where a plain read would miss a job
// committed after the snapshot began.
func ownTx(prologue, body string) string {
	return prologue + `
SET XACT_ABORT ON;
BEGIN TRANSACTION;
` + body + `
COMMIT TRANSACTION;
SELECT @id, @dup;`
}

func callersTx(prologue, body string) string {
	return prologue + `
SET XACT_ABORT OFF;
IF @@TRANCOUNT = 0
    THROW 51002, N'chokaq: EnqueueTx needs an open transaction', 1;
` + body + `
SELECT @id, @dup;`
}

// The active job that holds a key, after an insert lost a race for it.
const qJobByKey = `SET NOCOUNT ON;
DECLARE @k NVARCHAR(200) = @key;
SELECT Id FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE IdempotencyKey = @k;`

// Unique jobs (ADR 0030). JobUniqueKeys names, per key (KeyHash, Bucket),
// the job that took it last; that job holds the key while it is hot, or
// finished in a table its States count. Only statements that hold the
// key's application lock (uniqueLock) insert or re-point a row: the
// enqueue of a unique job and resurrect. Retention and purge delete a
// job's row with the job; no other move writes the table, so the claim,
// the start and every finish are unchanged by unique jobs.
//
// uniqueLock names a key's lock: the hash in hex and the bucket. Every
// statement that takes several takes them in (KeyHash, Bucket) order, and
// an enqueue takes its unique key's lock before its idempotency key's, so
// two enqueues never wait for each other's keys in a cycle.
// uniqueLockOfBatch is the same name, of a key of the batch's @buckets.
const (
	uniqueLock        = `N'chokaq:{{name}}:unique:' + CONVERT(NVARCHAR(64), @h, 2) + N':' + CONVERT(NVARCHAR(20), @b)`
	uniqueLockOfBatch = `N'chokaq:{{name}}:unique:' + CONVERT(NVARCHAR(64), u.KeyHash, 2) + N':' + CONVERT(NVARCHAR(20), u.Bucket)`
)

// uniqueHolds sets @held to 1 when job @x, named by a key row with states
// @xs, holds the key: it is hot, or archived and @xs counts the archive,
// or dead-lettered and @xs counts the DLQ. IF, not OR (and each table's
// read nested under its states' test, which reads no table), so the
// tables are read in this order and only when they count: a job only moves out of JobsHot while the key lock
// is not held by its mover, and a locking read of its hot row waits for
// the move to commit and then finds it in the table it went to.
// READCOMMITTEDLOCK reads the latest committed row also in a caller's
// SNAPSHOT transaction.
const uniqueHolds = `IF EXISTS (SELECT 1 FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE Id = @x)
    SET @held = 1;
IF @held = 0 AND @xs & 8 <> 0
BEGIN
    IF EXISTS (SELECT 1 FROM {{s}}.JobsArchive WITH (READCOMMITTEDLOCK) WHERE Id = @x)
        SET @held = 1;
END
IF @held = 0 AND @xs & 16 <> 0
BEGIN
    IF EXISTS (SELECT 1 FROM {{s}}.JobsDLQ WITH (READCOMMITTEDLOCK) WHERE Id = @x)
        SET @held = 1;
END`

// uniqueTake points the key's row at job @id: an UPDATE of the row if
// there is one, else an INSERT. Only holders of the key's lock write rows,
// and retention deletes only rows of jobs it deletes, so the row cannot
// appear between the two.
const uniqueTake = `UPDATE {{s}}.JobUniqueKeys WITH (ROWLOCK) SET JobId = @id, States = @us WHERE KeyHash = @h AND Bucket = @b;
IF @@ROWCOUNT = 0
    INSERT INTO {{s}}.JobUniqueKeys WITH (ROWLOCK) (KeyHash, Bucket, JobId, States) VALUES (@h, @b, @id, @us);`

// Enqueue of one unique job (the single row of @items): the hash comes as
// hex (@hashHex), the bucket either given (@hasBucket, by the batch's
// qLockEnqueueKeys, which took the lock) or computed here from the
// server's clock, floor(unix ms / @periodMs). Under the key's lock: the
// key row and its holder; a holder makes the enqueue a duplicate of it;
// else the job is inserted and takes the key. A job with an idempotency
// key (@key not empty) takes that key's lock second and checks it first,
// as the in-memory store does: the idempotency key's holder wins. It
// comes in the two forms of ownTx and callersTx.
const uniquePrologue = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @h BINARY(32) = CONVERT(BINARY(32), @hashHex, 2), @us TINYINT = @states;
DECLARE @b BIGINT = CASE WHEN @hasBucket = 1 THEN @bucket WHEN @periodMs = 0 THEN 0
    ELSE DATEDIFF_BIG(MILLISECOND, CAST('19700101' AS DATETIME2(7)), @now) / @periodMs END;
DECLARE @k NVARCHAR(200) = NULLIF(@key, N'');
DECLARE @id BIGINT, @dup BIT = 0, @rc INT, @x BIGINT, @xs TINYINT, @held BIT = 0;
DECLARE @ulock NVARCHAR(255) = ` + uniqueLock + `;
DECLARE @lock NVARCHAR(255) = N'chokaq:{{name}}:key:' + CONVERT(NVARCHAR(11), CHECKSUM(ISNULL(@k, N'')));`

const uniqueBody = `EXEC @rc = sys.sp_getapplock @Resource = @ulock, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51003, N'chokaq: the unique key lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
IF @k IS NOT NULL
BEGIN
    EXEC @rc = sys.sp_getapplock @Resource = @lock, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
    IF @rc < 0
        THROW 51001, N'chokaq: the idempotency key lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
    SELECT @id = Id FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE IdempotencyKey = @k;
    IF @id IS NOT NULL
        SET @dup = 1;
END
IF @dup = 0
BEGIN
    SELECT @x = JobId, @xs = States FROM {{s}}.JobUniqueKeys WITH (READCOMMITTEDLOCK) WHERE KeyHash = @h AND Bucket = @b;
    IF @x IS NOT NULL
    BEGIN
        ` + uniqueHolds + `
    END
    IF @held = 1
    BEGIN
        SET @id = @x;
        SET @dup = 1;
    END
END
IF @dup = 0
BEGIN
    BEGIN TRY
        SET @id = NEXT VALUE FOR {{s}}.JobIds;
        ` + "{{insertUnique}}" + `
    END TRY
    BEGIN CATCH
        -- Only the idempotency key's unique index can refuse the row: a
        -- resurrected job took that key (see keyedBody).
        IF ERROR_NUMBER() NOT IN (2601, 2627) OR XACT_STATE() <> 1 OR @k IS NULL
            THROW;
        SET @id = NULL;
        SELECT @id = Id FROM {{s}}.JobsHot WITH (READCOMMITTEDLOCK) WHERE IdempotencyKey = @k;
        IF @id IS NULL
            THROW;
        SET @dup = 1;
    END CATCH
    IF @dup = 0
    BEGIN
        ` + uniqueTake + `
    END
END`

// qLockEnqueueKeys takes, in the batch's transaction, the locks of every
// key of an EnqueueMany before its first item: the unique keys in
// (KeyHash, Bucket) order, then the idempotency keys in Ord order, which
// the store gives them in the order of the keys' bytes, the order a batch
// without unique keys takes them in (enqueueMany). The items' statements then take their locks again (an
// application lock owned by the transaction is counted, not waited for),
// so however the batch orders its items, every batch takes key locks in
// one global order. Two caveats, both ending in a deadlock victim that is
// rolled back whole and retried, never a wrong answer: idempotency keys
// that share a lock name (CHECKSUM follows the collation: 'A' and 'a', or
// a collision) are ordered by their bytes, not by that name; and a
// caller's transaction that enqueues several keyed jobs takes their locks
// in its own order. It returns each unique key's bucket, computed once
// from the server's clock: the items' statements use it, so an item
// enqueued after the bucket turned still takes the key it locked.
const qLockEnqueueKeys = `SET NOCOUNT ON;
IF @@TRANCOUNT = 0
    THROW 51002, N'chokaq: the key locks of a batch need its transaction', 1;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @locks TABLE (Seq INT NOT NULL PRIMARY KEY, Name NVARCHAR(255) NOT NULL);
DECLARE @buckets TABLE (Ord INT NOT NULL PRIMARY KEY, KeyHash BINARY(32) NOT NULL, Bucket BIGINT NOT NULL);
INSERT INTO @buckets (Ord, KeyHash, Bucket)
SELECT Ord, KeyHash, CASE WHEN PeriodMs = 0 THEN 0 ELSE DATEDIFF_BIG(MILLISECOND, CAST('19700101' AS DATETIME2(7)), @now) / PeriodMs END
FROM @keys WHERE KeyHash IS NOT NULL;
INSERT INTO @locks (Seq, Name)
SELECT ROW_NUMBER() OVER (ORDER BY u.KeyHash, u.Bucket), ` + uniqueLockOfBatch + `
FROM (SELECT DISTINCT KeyHash, Bucket FROM @buckets) AS u;
INSERT INTO @locks (Seq, Name)
SELECT (SELECT COUNT(*) FROM @locks) + ROW_NUMBER() OVER (ORDER BY MIN(i.Ord)), i.Name
FROM (SELECT Ord, N'chokaq:{{name}}:key:' + CONVERT(NVARCHAR(11), CHECKSUM(CONVERT(NVARCHAR(200), IdempotencyKey))) AS Name
      FROM @keys WHERE IdempotencyKey IS NOT NULL) AS i
GROUP BY i.Name;
DECLARE @seq INT = 1, @last INT = (SELECT COUNT(*) FROM @locks), @name NVARCHAR(255), @rc INT;
WHILE @seq <= @last
BEGIN
    SELECT @name = Name FROM @locks WHERE Seq = @seq;
    EXEC @rc = sys.sp_getapplock @Resource = @name, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
    IF @rc < 0
        THROW 51003, N'chokaq: a key lock of the batch was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
    SET @seq += 1;
END
SELECT Ord, Bucket FROM @buckets ORDER BY Ord;`

// queueLock names a queue's application lock. Queue names are ASCII
// (jobs.ValidateQueueName), so UPPER makes the name compare as the Queue
// column does under a case-insensitive collation; lock names compare
// byte by byte.
const queueLock = `N'chokaq:{{name}}:queue:' + UPPER(@q)`

// claimLock names one claim's application lock: the claim holds it
// exclusively for its transaction, and a retried claim's adoption takes it
// shared, so the adoption waits for an attempt still in flight (even one
// still waiting for its queue lock) instead of missing its rows.
const claimLock = `N'chokaq:{{name}}:claim:' + CONVERT(NVARCHAR(20), @claimId)`

// outerHints are the hints of the outer table of a statement that picks a
// batch: the base table the candidate derived table (x) joins on its
// clustered key. READPAST, ROWLOCK, READCOMMITTEDLOCK as ADR 0016 says;
// INDEX and FORCESEEK make the join one clustered-key seek per candidate
// row whatever the optimizer estimates for x: without them it may scan the
// table, or seek a range of another index the outer WHERE also fits (the
// claim's IX_JobsHot_Claim, the queue's whole backlog) and hash-join it.
func outerHints(table string) string {
	return "INDEX (PK_" + table + "), FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK"
}

// outerHotHints are outerHints of JobsHot, a constant for the statements
// that are constants.
const outerHotHints = "INDEX (PK_JobsHot), FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK"

// Application lock names compare byte for byte, while schema and queue
// names compare by the database's collation: {{name}} is the schema name
// in upper case (render), and queue names go through UPPER, so names SQL
// Server holds equal take the same lock.

// flowLock names a queue's flow lock (ADR 0031): the claims that judge
// jobs with a concurrency or sequence key, or unpark them, hold it
// exclusively for their transaction, so only one claim at a time raises a
// key's or a sequence's count of Fetched and Processing jobs.
const flowLock = `N'chokaq:{{name}}:flow:' + UPPER(@q)`

// Claim for one queue. Every claim holds a shared application lock on the
// queue for its transaction and reads the queue's settings under it;
// UpdateQueue takes the same lock exclusively. A MaxWorkers set by an
// operator therefore waits for the claims in flight, and every later claim
// sees it: no claimer can go on claiming freely after a cap is committed. A
// capped queue then serializes its claimers on its Queues row (UPDLOCK, to
// COMMIT) and counts its Fetched and Processing rows under that lock, so the
// cap is exact across processes (ADR 0003). The candidate set is TOP (@n) in
// IX_JobsHot_Claim order: no sort and no window function over the backlog,
// so the statement update-locks about @n rows (and reads past the rows of
// higher priority that are not yet due, which come first in that index).
// The claimed rows go into a table variable and are sent after COMMIT, in
// claim order: their payloads reach the client after every lock is
// released. Each row carries @claimId, and the claim holds its claimLock,
// so a claim repeated after a lost reply can adopt them (qAdoptClaim).
//
// Flow control (ADR 0031) adds to this, only for a queue that uses it:
// when the queue has parked jobs (a FlowWaits row), the claim takes the
// queue's flow lock and first unparks the jobs that have room now
// (claimUnpark); when a candidate carries a key, it takes the flow lock
// (after the candidates' update locks: see the ADR for why no cycle can
// form) and judges the candidates set-based (claimJudge): a sequenced one
// runs only as its sequence's first hot member with no member running (and,
// under hold, no earlier dead letter other than a cancelled one); a keyed
// one only within its key's room, the limit less the key's Fetched and
// Processing jobs. The others are parked (Status 3 on a key, 4 on a
// sequence), out of the claim's Status = 0 range, and the claim picks
// again for the room they leave, at most four rounds. Flow reads are plain
// reads: under READ_COMMITTED_SNAPSHOT they see committed rows and wait for
// nothing; under locking reads they wait for a statement that holds a row
// (a heartbeat, a move), and for a caller's transaction that enqueued a
// sequenced job, never for a claim. A claim whose queue has no parked job
// and whose candidates carry no key reads what it read before.
var qClaim = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @q NVARCHAR(100) = @queue, @w NVARCHAR(200) = @worker;
DECLARE @paused BIT, @max INT, @perKey INT, @hold BIT, @n INT = @limit, @rc INT;
DECLARE @rated BIT, @rateCount INT, @rateMs INT, @rateStart DATETIME2(7), @rateUsed INT, @heldMs BIGINT;
DECLARE @round INT = 0, @got INT = 0, @ask INT, @picked INT, @parked INT, @flowHeld BIT = 0;
DECLARE @lock NVARCHAR(255) = ` + queueLock + `, @mine NVARCHAR(255) = ` + claimLock + `, @flow NVARCHAR(255) = ` + flowLock + `;
DECLARE @claimed TABLE (` + "{{unifiedColumnsDecl}}" + `);
DECLARE @cand TABLE (Id BIGINT NOT NULL PRIMARY KEY, Priority INT NOT NULL, ScheduledAtUtc DATETIME2(7) NOT NULL,
    CKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL, SKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    Rn INT NULL, Park TINYINT NULL);
DECLARE @room TABLE (KeyName NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, Room INT NOT NULL);
BEGIN TRANSACTION;
EXEC @rc = sys.sp_getapplock @Resource = @mine, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the claim lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
EXEC @rc = sys.sp_getapplock @Resource = @lock, @LockMode = 'Shared', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the queue lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
SELECT @paused = IsPaused, @max = MaxWorkers, @perKey = MaxWorkersPerKey,
    @hold = CASE WHEN SequenceOnDeadLetter = 1 THEN 1 ELSE 0 END, @rated = CASE WHEN RateCount IS NULL THEN 0 ELSE 1 END
FROM {{s}}.Queues WHERE Name = @q;
SET @perKey = ISNULL(@perKey, 0);
SET @hold = ISNULL(@hold, 0);
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
IF @max IS NOT NULL OR @rated = 1
BEGIN
    -- A capped or rate-limited queue's claims serialize on its row, and
    -- read its settings again under that lock.
    SELECT @max = MaxWorkers, @rateCount = RateCount, @rateMs = RateWindowMs, @rateStart = RateWindowStartUtc, @rateUsed = RateUsed
    FROM {{s}}.Queues WITH (UPDLOCK, ROWLOCK) WHERE Name = @q;
    IF @max IS NOT NULL
    BEGIN
        SELECT @n = @max - COUNT(*) FROM {{s}}.JobsHot WHERE Queue = @q AND Status IN (1, 2);
        IF @n > @limit SET @n = @limit;
    END
    ` + claimRateRoom + `
END
IF @n > 0 AND ISNULL(@paused, 0) = 0
BEGIN
    IF EXISTS (SELECT 1 FROM {{s}}.FlowWaits WHERE Queue = @q)
    BEGIN
        ` + flowLockTaken + `
        ` + claimUnpark + `
    END
    WHILE @round < 4 AND @got < @n
    BEGIN
        SET @round += 1;
        SET @ask = @n - @got;
        SET @parked = 0;
        DELETE FROM @cand;
        INSERT INTO @cand (Id, Priority, ScheduledAtUtc, CKey, SKey)
        SELECT TOP (@ask) c.Id, c.Priority, c.ScheduledAtUtc, c.ConcurrencyKey, c.SequenceKey
        FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE c.Queue = @q AND c.Status = 0 AND c.ScheduledAtUtc <= @now
        ORDER BY c.Priority DESC, c.ScheduledAtUtc, c.Id;
        SET @picked = @@ROWCOUNT;
        IF EXISTS (SELECT 1 FROM @cand WHERE CKey IS NOT NULL OR SKey IS NOT NULL)
        BEGIN
            IF @flowHeld = 0
            BEGIN
                ` + flowLockTaken + `
            END
            ` + claimJudge + `
        END
        UPDATE h
        SET Status = 1, WorkerId = @w, RunLease = h.RunLease + 1, LastUpdatedUtc = @now, ClaimId = @claimId
        OUTPUT ` + "{{hotInserted}}" + ` INTO @claimed
        FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
        INNER JOIN @cand AS x ON x.Id = h.Id
        WHERE x.Park IS NULL AND h.Status = 0 AND h.Queue = @q AND h.ScheduledAtUtc <= @now;
        SET @got += @@ROWCOUNT;
        IF @parked = 0 OR @picked < @ask
            BREAK;
    END
END
` + claimRateTaken + `
COMMIT TRANSACTION;
SELECT ` + "{{claimedCols}}" + ` FROM @claimed AS c ORDER BY c.Priority DESC, c.ScheduledAtUtc, c.Id;
SELECT @heldMs, ` + releaseOwed + `;`

// claimRateRoom closes a rate-limited queue's window that has run its time
// and caps the claim at what the open window has left (ADR 0033); it runs
// under the Queues row's update lock, so the window's use is exact across
// processes. claimRateTaken counts what the claim took, opening a window
// at @now if none is open, and sets @heldMs, the wait until the window
// closes, when it has nothing left: the claim's second result.
const (
	claimRateRoom = `IF @rateCount IS NOT NULL
    BEGIN
        IF @rateStart IS NOT NULL AND DATEADD(MILLISECOND, @rateMs, @rateStart) <= @now
        BEGIN
            SET @rateStart = NULL;
            SET @rateUsed = 0;
        END
        SET @rateUsed = ISNULL(@rateUsed, 0);
        IF @n > @rateCount - @rateUsed SET @n = @rateCount - @rateUsed;
    END`
	claimRateTaken = `IF @rateCount IS NOT NULL
BEGIN
    IF @got > 0
    BEGIN
        IF @rateStart IS NULL SET @rateStart = @now;
        SET @rateUsed += @got;
        UPDATE {{s}}.Queues WITH (ROWLOCK) SET RateWindowStartUtc = @rateStart, RateUsed = @rateUsed WHERE Name = @q;
    END
    IF @rateStart IS NOT NULL AND @rateUsed >= @rateCount
        SET @heldMs = DATEDIFF_BIG(MILLISECOND, @now, DATEADD(MILLISECOND, @rateMs, @rateStart));
END`
)

// flowLockTaken takes the queue's flow lock for the claim's transaction.
const flowLockTaken = `EXEC @rc = sys.sp_getapplock @Resource = @flow, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
        IF @rc < 0
            THROW 51001, N'chokaq: the flow lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
        SET @flowHeld = 1;`

// keyLimitOf is the limit of concurrency key k in queue @q: its own
// (QueueKeyLimits), else the queue's MaxWorkersPerKey; 0 is none.
func keyLimitOf(k string) string {
	return `ISNULL((SELECT l.MaxWorkers FROM {{s}}.QueueKeyLimits AS l WHERE l.Queue = @q AND l.KeyName = ` + k + `), @perKey)`
}

// keyRunning counts concurrency key k's Fetched and Processing jobs, one
// seek of IX_JobsHot_KeyActive (its filter repeated, so it matches).
func keyRunning(k string) string {
	return `(SELECT COUNT(*) FROM {{s}}.JobsHot AS a
                WHERE a.Queue = @q AND a.ConcurrencyKey IS NOT NULL AND a.ConcurrencyKey = ` + k + ` AND a.Status IN (1, 2))`
}

// seqRunning is true while sequence k has a Fetched or Processing member
// (IX_JobsHot_SequenceActive); seqHeld while, under the hold policy, a dead
// letter of k before member id holds it (IX_JobsDLQ_Sequence; a cancelled
// job never holds its sequence).
func seqRunning(k string) string {
	return `EXISTS (SELECT 1 FROM {{s}}.JobsHot AS a
                WHERE a.Queue = @q AND a.SequenceKey IS NOT NULL AND a.SequenceKey = ` + k + ` AND a.Status IN (1, 2))`
}

func seqHeld(k, id string) string {
	return `(@hold = 1 AND EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS d
                WHERE d.Queue = @q AND d.SequenceKey IS NOT NULL AND d.SequenceKey = ` + k + ` AND d.Id < ` + id + ` AND d.FailureReason <> 1))`
}

// claimUnpark returns to Status 0 the parked jobs that have room now, at
// most @limit on keys and @limit on sequences (what one claim can take;
// the rest wait for the next), and at most @limit of any one key:
// a key's best parked jobs, as many as its limit less its running jobs; a
// sequence's first hot member, if parked, with no member running and no
// dead letter holding it. A parked row another statement holds (a cancel
// in flight) is read past, not waited for: a cancel holds its listed rows
// while it waits for a claim's candidate, and that claim may wait for this
// flow lock; the row stays parked for the next claim. Then it deletes the
// FlowWaits rows with no parked job left (one whose jobs were all
// unparked, cancelled or resurrected).
var claimUnpark = `UPDATE h SET Status = 0, LastUpdatedUtc = @now
        FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
        INNER JOIN (
            SELECT TOP (@limit) p.Id
            FROM {{s}}.FlowWaits AS fw
            CROSS APPLY (SELECT ` + keyLimitOf("fw.KeyName") + ` AS L) AS lim
            CROSS APPLY (SELECT CASE WHEN lim.L = 0 THEN @limit ELSE lim.L - ` + keyRunning("fw.KeyName") + ` END AS Room) AS r
            CROSS APPLY (SELECT TOP (CASE WHEN r.Room < 0 THEN 0 WHEN r.Room > @limit THEN @limit ELSE r.Room END) w.Id
                FROM {{s}}.JobsHot AS w
                WHERE w.Queue = @q AND w.ConcurrencyKey = fw.KeyName AND w.Status = 3
                ORDER BY w.Priority DESC, w.ScheduledAtUtc, w.Id) AS p
            WHERE fw.Queue = @q AND fw.Kind = 3
        ) AS x ON x.Id = h.Id
        WHERE h.Status = 3;
        UPDATE h SET Status = 0, LastUpdatedUtc = @now
        FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
        INNER JOIN (
            SELECT TOP (@limit) f.Id
            FROM {{s}}.FlowWaits AS fw
            CROSS APPLY (SELECT TOP (1) m.Id, m.Status FROM {{s}}.JobsHot AS m
                WHERE m.Queue = @q AND m.SequenceKey IS NOT NULL AND m.SequenceKey = fw.KeyName ORDER BY m.Id) AS f
            WHERE fw.Queue = @q AND fw.Kind = 4 AND f.Status = 4
              AND NOT ` + seqRunning("fw.KeyName") + `
              AND NOT ` + seqHeld("fw.KeyName", "f.Id") + `
        ) AS x ON x.Id = h.Id
        WHERE h.Status = 4;
        DELETE fw FROM {{s}}.FlowWaits AS fw WITH (ROWLOCK)
        WHERE fw.Queue = @q AND fw.Kind = 3
          AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot AS w WHERE w.Queue = @q AND w.ConcurrencyKey = fw.KeyName AND w.Status = 3);
        DELETE fw FROM {{s}}.FlowWaits AS fw WITH (ROWLOCK)
        WHERE fw.Queue = @q AND fw.Kind = 4
          AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot AS w
              WHERE w.Queue = @q AND w.SequenceKey IS NOT NULL AND w.SequenceKey = fw.KeyName AND w.Status = 4);`

// claimJudge marks the candidates that may not run now with the status
// they park in, parks them, and names their key or sequence in FlowWaits.
// A sequenced candidate waits (4) behind an earlier hot member (parked or
// not, one of this batch included), a running member or a holding dead
// letter. A keyed candidate waits (3) past its key's room, counted in
// claim order among the key's candidates that passed; the running count
// includes what earlier rounds of this claim took.
var claimJudge = `UPDATE c SET Park = 4 FROM @cand AS c
            WHERE c.SKey IS NOT NULL
              AND (EXISTS (SELECT 1 FROM {{s}}.JobsHot AS m
                           WHERE m.Queue = @q AND m.SequenceKey IS NOT NULL AND m.SequenceKey = c.SKey AND m.Id < c.Id)
                   OR ` + seqRunning("c.SKey") + `
                   OR ` + seqHeld("c.SKey", "c.Id") + `);
            DELETE FROM @room;
            INSERT INTO @room (KeyName, Room)
            SELECT k.CKey, CASE WHEN lim.L = 0 THEN @n ELSE lim.L - ` + keyRunning("k.CKey") + ` END
            FROM (SELECT DISTINCT CKey FROM @cand WHERE CKey IS NOT NULL AND Park IS NULL) AS k
            CROSS APPLY (SELECT ` + keyLimitOf("k.CKey") + ` AS L) AS lim;
            UPDATE c SET Rn = r.Rn
            FROM @cand AS c
            INNER JOIN (SELECT Id, ROW_NUMBER() OVER (PARTITION BY CKey ORDER BY Priority DESC, ScheduledAtUtc, Id) AS Rn
                        FROM @cand WHERE CKey IS NOT NULL AND Park IS NULL) AS r ON r.Id = c.Id;
            UPDATE c SET Park = 3 FROM @cand AS c INNER JOIN @room AS r ON r.KeyName = c.CKey
            WHERE c.Park IS NULL AND c.Rn > r.Room;
            UPDATE h SET Status = x.Park, LastUpdatedUtc = @now
            FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
            INNER JOIN @cand AS x ON x.Id = h.Id
            WHERE x.Park IS NOT NULL AND h.Status = 0;
            SET @parked = @@ROWCOUNT;
            INSERT INTO {{s}}.FlowWaits WITH (ROWLOCK) (Queue, Kind, KeyName)
            SELECT DISTINCT @q, x.Park, x.KeyName
            FROM (SELECT c.Park, CASE WHEN c.Park = 3 THEN c.CKey ELSE c.SKey END AS KeyName FROM @cand AS c WHERE c.Park IS NOT NULL) AS x
            WHERE NOT EXISTS (SELECT 1 FROM {{s}}.FlowWaits AS f WHERE f.Queue = @q AND f.Kind = x.Park AND f.KeyName = x.KeyName);`

// The rows a claim with @claimId took, for the store's retry of a claim
// whose reply was lost. It first takes the claim's lock shared, so it
// waits while the first attempt is still in its transaction, wherever that
// is (waiting for its queue lock too); then it reads with shared locks
// (READCOMMITTEDLOCK, also under READ_COMMITTED_SNAPSHOT) and no READPAST,
// and sees what the attempt committed, in claim order. An attempt that
// never reached the server leaves no lock and no rows.
const qAdoptClaim = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @w NVARCHAR(200) = @worker, @rc INT;
DECLARE @mine NVARCHAR(255) = ` + claimLock + `;
BEGIN TRANSACTION;
EXEC @rc = sys.sp_getapplock @Resource = @mine, @LockMode = 'Shared', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the claim lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
SELECT ` + "{{hotCols}}" + `
FROM {{s}}.JobsHot AS h WITH (READCOMMITTEDLOCK)
WHERE h.Status = 1 AND h.ClaimId = @claimId AND h.WorkerId = @w
ORDER BY h.Priority DESC, h.ScheduledAtUtc, h.Id;
COMMIT TRANSACTION;`

// Fetched -> Processing. The deadline is the queue's execution timeout, else
// the processor's default. A repeated start of the same claim (the reply to
// the first was lost and the call retried) reports that start again instead
// of losing the job: the lease belongs to this claim alone.
const qStart = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @started TABLE (AttemptCount INT NOT NULL, StartedAtUtc DATETIME2(7) NOT NULL, DeadlineUtc DATETIME2(7) NOT NULL, TimeoutSource TINYINT NULL);
UPDATE h
SET Status = 2, AttemptCount = h.AttemptCount + 1, StartedAtUtc = @now, HeartbeatUtc = @now, LastUpdatedUtc = @now,
    DeadlineUtc = ` + startDeadline + `,
    TimeoutSource = ` + startTimeoutSource + `,
    HeartbeatMaxMs = NULLIF(@heartbeatMaxMs, 0), ZombieRetryCap = NULLIF(@zombieRetryCap, 0)
OUTPUT inserted.AttemptCount, inserted.StartedAtUtc, inserted.DeadlineUtc, inserted.TimeoutSource INTO @started
FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
LEFT JOIN {{s}}.Queues AS q ON q.Name = h.Queue
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 1;
IF @@ROWCOUNT = 0
    INSERT INTO @started (AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource)
    SELECT AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource FROM {{s}}.JobsHot
    WHERE Id = @id AND RunLease = @lease AND Status = 2;
SELECT AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource FROM @started;`

// startDeadline is a start's deadline, by jobs.StartParams.EffectiveTimeout:
// the job's or kind's timeout (@timeoutMs, 0 for none), else the queue's
// execution timeout, else the processor's default. startTimeoutSource is
// the level it came from, a jobs.PolicySource (@timeoutFrom is the job's
// or kind's).
const (
	startDeadline = `CASE WHEN @timeoutMs > 0 THEN ` + "{{kindDeadline}}" + `
                       WHEN q.ExecutionTimeoutSeconds IS NULL THEN ` + "{{defaultDeadline}}" + `
                       ELSE DATEADD(SECOND, q.ExecutionTimeoutSeconds, @now) END`
	startTimeoutSource = `CASE WHEN @timeoutMs > 0 THEN @timeoutFrom WHEN q.ExecutionTimeoutSeconds IS NULL THEN 4 ELSE 3 END`
)

// Heartbeat of many jobs in one statement. FORCESEEK keeps it a seek per
// listed job whatever the optimizer guesses about the table parameter. The
// third column says an operator asked to cancel the job.
const qHeartbeat = `SET NOCOUNT ON;
UPDATE h
SET HeartbeatUtc = SYSUTCDATETIME()
OUTPUT inserted.Id, inserted.RunLease, CASE WHEN inserted.CancelRequestedUtc IS NULL THEN 0 ELSE 1 END
FROM @refs AS r
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = r.Id AND h.RunLease = r.Lease
WHERE h.Status = 2;`

// qHeartbeatProgress is qHeartbeat for a call some of whose beats carry
// their handler's progress (ADR 0028): the ProgressList @progress holds
// those beats alone, so a beat's bytes grow by what changed, and a call
// with none goes as qHeartbeat. The progress is written to the row the
// beat matches, under the same lease and status fence, and touches no
// index key (neither column is in an index): the footprint is the
// heartbeat's.
const qHeartbeatProgress = `SET NOCOUNT ON;
UPDATE h
SET HeartbeatUtc = SYSUTCDATETIME(),
    ProgressFraction = CASE WHEN p.Id IS NULL THEN h.ProgressFraction ELSE p.Fraction END,
    ProgressMessage = CASE WHEN p.Id IS NULL THEN h.ProgressMessage ELSE p.Message END
OUTPUT inserted.Id, inserted.RunLease, CASE WHEN inserted.CancelRequestedUtc IS NULL THEN 0 ELSE 1 END
FROM @refs AS r
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = r.Id AND h.RunLease = r.Lease
LEFT JOIN @progress AS p ON p.Id = r.Id AND p.Lease = r.Lease
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

// Processing -> Pending for a snooze: the attempt is given back and the
// snooze counted. A job whose cancel was requested goes to the DLQ as
// Cancelled instead (2 is returned). The row is update-locked first, so a
// cancel that comes meanwhile waits: the job is either marked now or stays
// unmarked until COMMIT, and no move misses it.
var qSnooze = `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @marked BIT, @n INT = 0;
BEGIN TRANSACTION;
SELECT @marked = CASE WHEN CancelRequestedUtc IS NULL THEN 0 ELSE 1 END
FROM {{s}}.JobsHot WITH (UPDLOCK, ROWLOCK)
WHERE Id = @id AND RunLease = @lease AND Status = 2;
IF @marked = 1
BEGIN
    DELETE h
    OUTPUT ` + dlqFromDeleted + `, 1, ` + cancelDetails("N'snoozed after its cancel was requested'") + `
    INTO {{s}}.JobsDLQ (` + dlqColumns + `)
    FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
    WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2;
    SET @n = 2;
END
ELSE IF @marked = 0
BEGIN
    UPDATE {{s}}.JobsHot WITH (ROWLOCK)
    SET Status = 0, WorkerId = NULL, StartedAtUtc = NULL, HeartbeatUtc = NULL, DeadlineUtc = NULL, HeartbeatMaxMs = NULL, ProgressFraction = NULL, ProgressMessage = NULL,
        LastUpdatedUtc = @now, AttemptCount = AttemptCount - 1, SnoozeCount = SnoozeCount + 1,
        ScheduledAtUtc = ` + "{{retryAt}}" + `
    WHERE Id = @id AND RunLease = @lease AND Status = 2;
    SET @n = @@ROWCOUNT;
END
COMMIT TRANSACTION;
SELECT @n;`

// Processing -> DLQ, one atomic move.
var qDeadLetter = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DELETE h
OUTPUT ` + dlqFromDeleted + `, @reason,
    CASE WHEN @reason = 1 THEN ` + cancelDetails("NULLIF(@details, N'')") + ` ELSE NULLIF(@details, N'') END
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
FROM {{s}}.JobsHot AS h WITH (ROWLOCK)
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2;
SELECT @@ROWCOUNT;`

// qTransition is every batch form at once (ADR 0018): the starts of some
// jobs, the completes, retries and dead letters of others, one round trip
// for a processor's coalesced requests. Each list is one statement over a
// table-valued parameter (empty when the call has none of its kind), and
// each job in it is matched on Id, RunLease and Status as its one-job
// statement matches it, so a stale ref matches nothing and changes nothing
// while the others go through. The parameters have a primary key (Id,
// Lease), so a target row meets one parameter row at most; FORCESEEK makes
// each a seek of the clustered key. No statement promises the order it
// locks those rows in, whatever the parameter's key order: two lists that
// share two rows (through stale refs, or a cancel) can deadlock, and the
// victim's 1205 is retried (ADR 0016, Lists). Every row
// returned names its list (Kind 1 to 4) and the ref it moved; the store
// reports the others lost. The statements commit one by one, as the
// one-job calls do: after an error the caller knows nothing of any job and
// sends them again, which each list's statement bears (a start repeated
// under its lease reports that start; a move repeated finds nothing).
var qTransition = `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @locked INT;
DECLARE @started TABLE (Id BIGINT NOT NULL PRIMARY KEY, Lease BIGINT NOT NULL, AttemptCount INT NOT NULL,
    StartedAtUtc DATETIME2(7) NOT NULL, DeadlineUtc DATETIME2(7) NOT NULL, TimeoutSource TINYINT NULL);
-- 1. Fetched -> Processing. A job this lease already started is reported
-- as it was started, as qStart does.
UPDATE h
SET Status = 2, AttemptCount = h.AttemptCount + 1, StartedAtUtc = @now, HeartbeatUtc = @now, LastUpdatedUtc = @now,
    DeadlineUtc = ` + startDeadline + `,
    TimeoutSource = ` + startTimeoutSource + `,
    HeartbeatMaxMs = NULLIF(@heartbeatMaxMs, 0), ZombieRetryCap = NULLIF(@zombieRetryCap, 0)
OUTPUT inserted.Id, inserted.RunLease, inserted.AttemptCount, inserted.StartedAtUtc, inserted.DeadlineUtc, inserted.TimeoutSource INTO @started
FROM @starts AS sr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = sr.Id AND h.RunLease = sr.Lease
LEFT JOIN {{s}}.Queues AS q ON q.Name = h.Queue
WHERE h.Status = 1;
INSERT INTO @started (Id, Lease, AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource)
SELECT h.Id, h.RunLease, h.AttemptCount, h.StartedAtUtc, h.DeadlineUtc, h.TimeoutSource
FROM @starts AS sr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK) ON h.Id = sr.Id AND h.RunLease = sr.Lease
WHERE h.Status = 2 AND NOT EXISTS (SELECT 1 FROM @started AS done WHERE done.Id = h.Id);
SELECT CAST(1 AS TINYINT), Id, Lease, AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource FROM @started;
-- 2. Processing -> Archive, one atomic move.
-- Each with the output its handler recorded, if any (@outputs, ADR 0028).
DELETE h
OUTPUT ` + archiveFromDeleted + `, o.OutputJson
INTO {{s}}.JobsArchive (` + archiveColumns + `, OutputJson)
OUTPUT CAST(2 AS TINYINT), deleted.Id, deleted.RunLease, ` + transitionNulls + `
FROM @completes AS cr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = cr.Id AND h.RunLease = cr.Lease
LEFT JOIN @outputs AS o ON o.Id = cr.Id AND o.Lease = cr.Lease
WHERE h.Status = 2;
-- 3. Processing -> Pending, each with its own delay and error; a job whose
-- cancel was requested goes to the DLQ as Cancelled instead (Kind 5). The
-- rows are update-locked first, so a cancel that comes meanwhile waits:
-- each is marked now or stays unmarked until COMMIT, and no move misses it.
BEGIN TRANSACTION;
SELECT @locked = COUNT(*)
FROM @retries AS rr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, UPDLOCK, ROWLOCK) ON h.Id = rr.Id AND h.RunLease = rr.Lease
WHERE h.Status = 2;
DELETE h
OUTPUT ` + dlqFromDeleted + `, 1, ` + cancelDetails("NULLIF(rr.Error, N'')") + `
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
OUTPUT CAST(5 AS TINYINT), deleted.Id, deleted.RunLease, ` + transitionNulls + `
FROM @retries AS rr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = rr.Id AND h.RunLease = rr.Lease
WHERE h.Status = 2 AND h.CancelRequestedUtc IS NOT NULL;
UPDATE h
SET Status = 0, WorkerId = NULL, StartedAtUtc = NULL, HeartbeatUtc = NULL, DeadlineUtc = NULL, HeartbeatMaxMs = NULL, ProgressFraction = NULL, ProgressMessage = NULL,
    LastUpdatedUtc = @now, LastError = NULLIF(rr.Error, N''), ScheduledAtUtc = ` + "{{retryAtItem}}" + `
OUTPUT CAST(3 AS TINYINT), inserted.Id, inserted.RunLease, ` + transitionNulls + `
FROM @retries AS rr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = rr.Id AND h.RunLease = rr.Lease
WHERE h.Status = 2 AND h.CancelRequestedUtc IS NULL;
COMMIT TRANSACTION;
-- 4. Processing -> DLQ, each with its own reason and details and the
-- output its handler recorded, if any, one atomic move.
DELETE h
OUTPUT ` + dlqFromDeleted + `, dr.Reason,
    CASE WHEN dr.Reason = 1 THEN ` + cancelDetails("NULLIF(dr.Details, N'')") + ` ELSE NULLIF(dr.Details, N'') END, o.OutputJson
INTO {{s}}.JobsDLQ (` + dlqColumns + `, OutputJson)
OUTPUT CAST(4 AS TINYINT), deleted.Id, deleted.RunLease, ` + transitionNulls + `
FROM @deadLetters AS dr
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = dr.Id AND h.RunLease = dr.Lease
LEFT JOIN @outputs AS o ON o.Id = dr.Id AND o.Lease = dr.Lease
WHERE h.Status = 2;`

// qCancel stops the jobs of @ids (ADR 0019). It reads and update-locks the
// hot rows first, so each is judged once against a state that holds until
// COMMIT: a Pending or Fetched job (no user code ran) moves to the DLQ as
// Cancelled with the note as its details; a Processing job is marked, the
// first request's note kept, and its worker learns of it at its next
// heartbeat. Jobs not hot are looked for in the archive and the DLQ after
// COMMIT (already finished); the others were not found. Outcome numbers are
// jobs.CancelOutcome's.
var qCancel = `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @note NVARCHAR(500) = @noteText;
DECLARE @judged TABLE (Id BIGINT NOT NULL PRIMARY KEY, Outcome TINYINT NOT NULL, Queue NVARCHAR(100) NOT NULL, Type NVARCHAR(200) NOT NULL);
BEGIN TRANSACTION;
INSERT INTO @judged (Id, Outcome, Queue, Type)
SELECT h.Id, CASE WHEN h.Status = 2 THEN 2 ELSE 1 END, h.Queue, h.Type
FROM @ids AS i
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, UPDLOCK, ROWLOCK) ON h.Id = i.Id;
DELETE h
OUTPUT ` + dlqFromDeleted + `, 1, @note
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
FROM @judged AS j
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = j.Id
WHERE j.Outcome = 1;
UPDATE h
SET CancelRequestedUtc = ISNULL(h.CancelRequestedUtc, @now), CancelNote = ISNULL(h.CancelNote, @note)
FROM @judged AS j
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = j.Id
WHERE j.Outcome = 2;
COMMIT TRANSACTION;
INSERT INTO @judged (Id, Outcome, Queue, Type)
SELECT a.Id, 3, a.Queue, a.Type FROM @ids AS i INNER JOIN {{s}}.JobsArchive AS a ON a.Id = i.Id
WHERE NOT EXISTS (SELECT 1 FROM @judged AS j WHERE j.Id = i.Id);
INSERT INTO @judged (Id, Outcome, Queue, Type)
SELECT d.Id, 3, d.Queue, d.Type FROM @ids AS i INNER JOIN {{s}}.JobsDLQ AS d ON d.Id = i.Id
WHERE NOT EXISTS (SELECT 1 FROM @judged AS j WHERE j.Id = i.Id);
SELECT Id, Outcome, Queue, Type FROM @judged;`

// transitionNulls fill the start columns of qTransition's other rows, so
// that every row it returns has one shape.
const transitionNulls = `CAST(NULL AS INT), CAST(NULL AS DATETIME2(7)), CAST(NULL AS DATETIME2(7)), CAST(NULL AS TINYINT)`

// Fetched -> Pending for jobs a worker gives back; stale refs match nothing.
const qRelease = `SET NOCOUNT ON;
UPDATE h
SET Status = 0, WorkerId = NULL, LastUpdatedUtc = SYSUTCDATETIME()
FROM @refs AS r
INNER JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK) ON h.Id = r.Id AND h.RunLease = r.Lease
WHERE h.Status = 1;
SELECT @@ROWCOUNT;`

// Rescue phase 1: Fetched rows older than the timeout go back to Pending.
// No user code ran, so AttemptCount is not touched. The candidate seeks
// IX_JobsHot_Active (Status, LastUpdatedUtc).
const qRescueFetched = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @cutoff DATETIME2(7) = ` + "{{timeoutAgo}}" + `;
UPDATE h
SET Status = 0, WorkerId = NULL, ClaimId = NULL, LastUpdatedUtc = @now
OUTPUT ` + rescuedOutput + `, deleted.LastUpdatedUtc, CAST(NULL AS INT), @now
FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE c.Status = 1 AND c.LastUpdatedUtc < @cutoff
    ORDER BY c.LastUpdatedUtc
) AS x ON x.Id = h.Id
WHERE h.Status = 1 AND h.LastUpdatedUtc < @cutoff;`

// rescueLock serializes rescue phases 2 and 3 across processes. Each
// phase's candidate update-locks keys of its own index (IX_JobsHot_Heartbeat,
// IX_JobsHot_Deadline) and its DELETE then removes the row's key from
// every index, the other phase's among them. READPAST lets the candidate
// and the outer table skip a row another transaction holds, but removing a
// secondary index key waits for a lock on that key: a phase 2 and a phase 3
// running at once in two processes, each over a job that is both silent and
// past its deadline, could each wait for a key the other's candidate holds
// (error 1205, which the store would retry). Every process still sweeps (ADR 0010), one
// phase batch at a time across the fleet, owned by the batch's transaction
// so that nothing outlives it; a process that waits longer than the lock
// timeout gets error 51001, which the store retries. The name differs from
// the leader's chokaq:<schema>:rescue (a session lock that SingleRescuer
// holds for as long as it leads, while its own phases take this one).
const rescueLock = `N'chokaq:{{name}}:rescue:phases-2-3'`

// rescueLockTaken takes rescueLock for the transaction and checks its
// return code (a negative one means no lock, and no rollback).
const rescueLockTaken = `EXEC @rc = sys.sp_getapplock @Resource = ` + rescueLock + `, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the rescue lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;`

// missedBeatsMs is jobs.MissedBeats x the HeartbeatMaxMs of alias's row,
// in milliseconds as a BIGINT (NULL when none was recorded).
func missedBeatsMs(alias string) string {
	return strconv.Itoa(jobs.MissedBeats) + " * CAST(" + alias + ".HeartbeatMaxMs AS BIGINT)"
}

// silentForMissedBeats is jobs.ZombieTimeout's floor for alias's row: its
// heartbeat is older than jobs.MissedBeats x the heartbeat maximum its
// worker declared at start, or it declared none.
func silentForMissedBeats(alias string) string {
	return "(" + alias + ".HeartbeatMaxMs IS NULL OR " + alias + ".HeartbeatUtc < " + addMs("-"+missedBeatsMs(alias), "@now") + ")"
}

// Rescue phase 2: Processing rows whose heartbeat is older than their
// queue's ZombieTimeoutSeconds, else the global timeout, and than 3 x the
// heartbeat maximum their worker declared when it started them
// (HeartbeatMaxMs; jobs.ZombieTimeout), move to the DLQ as Zombie. Their
// side effects are uncertain, so they are never re-run, unless their kind
// opted in (ZombieRetryCap, recorded at start): below the cap such a job
// goes back to Pending instead (2a, before the move, in the same
// transaction under the same rescue lock, so N1's serialization of phases
// 2 and 3 holds), and the batch's limit counts both. The moved rows come
// back as the DELETE's output, the recovered ones as a second result set
// with a ninth column.
//
// The candidate seeks IX_JobsHot_Heartbeat up to the loosest cutoff (now
// minus the shortest of the global and the per-queue timeouts): a live job
// heartbeats far more often than that, so only rows whose worker went
// silent are read, and update-locked. (A row past that cutoff whose worker
// declared a longer heartbeat maximum is read too, through a lookup of its
// HeartbeatMaxMs in the clustered row, which READPAST skips while the
// worker holds it, and left alone.) The per-queue timeouts come from a
// table variable filled first, so no Queues row is locked while JobsHot is,
// and the exact per-queue test is made in the candidate, so rows of a queue
// with a longer timeout cannot fill the batch and starve the others, and
// again on the outer table, which READPAST leaves alone while a worker
// holds it.
var qRescueZombies = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @rc INT, @left INT;
DECLARE @timeouts TABLE (Queue NVARCHAR(100) NOT NULL PRIMARY KEY, Seconds INT NOT NULL);
DECLARE @recovered TABLE (Id BIGINT NOT NULL PRIMARY KEY, Queue NVARCHAR(100) NOT NULL, Type NVARCHAR(200) NOT NULL, WorkerId NVARCHAR(200) NULL,
    RunLease BIGINT NOT NULL, LastSeen DATETIME2(7) NOT NULL, Reason INT NOT NULL, At DATETIME2(7) NOT NULL);
BEGIN TRANSACTION;
` + rescueLockTaken + `
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @globalCutoff DATETIME2(7) = ` + "{{timeoutAgo}}" + `;
INSERT INTO @timeouts (Queue, Seconds)
SELECT Name, ZombieTimeoutSeconds FROM {{s}}.Queues WHERE ZombieTimeoutSeconds IS NOT NULL;
DECLARE @shortest INT;
DECLARE @loosest DATETIME2(7) = ` + "{{timeoutAgo}}" + `;
SELECT @shortest = MIN(Seconds) FROM @timeouts;
IF @shortest IS NOT NULL AND DATEADD(SECOND, -@shortest, @now) > @loosest
    SET @loosest = DATEADD(SECOND, -@shortest, @now);
-- 2a. Jobs whose kind opted into zombie retries, below their cap and not
-- asked to cancel: back to Pending, due now, their attempt spent. The
-- lease is not touched: the row is no longer Processing, so the old
-- holder's every call matches nothing, and the next claim hands out
-- lease+1.
UPDATE h
SET Status = 0, WorkerId = NULL, ClaimId = NULL, StartedAtUtc = NULL, HeartbeatUtc = NULL, DeadlineUtc = NULL, HeartbeatMaxMs = NULL, ProgressFraction = NULL, ProgressMessage = NULL,
    LastUpdatedUtc = @now, ScheduledAtUtc = @now, ZombieRetries = ISNULL(h.ZombieRetries, 0) + 1,
    LastError = N'recovered: heartbeat expired (last heartbeat ' + CONVERT(NVARCHAR(33), ISNULL(h.HeartbeatUtc, h.LastUpdatedUtc), 127)
        + N'Z, timeout ' + CONVERT(NVARCHAR(20), ` + zombieTimeoutMs("h") + ` / 1000)
        + N's, worker ' + ISNULL(h.WorkerId, N'') + N'); zombie retry '
        + CONVERT(NVARCHAR(11), ISNULL(h.ZombieRetries, 0) + 1) + N' of ' + CONVERT(NVARCHAR(11), h.ZombieRetryCap)
OUTPUT ` + rescuedOutput + `, ISNULL(deleted.HeartbeatUtc, deleted.LastUpdatedUtc), 2, @now INTO @recovered
FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    LEFT JOIN @timeouts AS ct ON ct.Queue = c.Queue
    WHERE ` + zombieCandidate + ` AND ` + recoverable("c") + `
    ORDER BY c.HeartbeatUtc
) AS x ON x.Id = h.Id
LEFT JOIN @timeouts AS q ON q.Queue = h.Queue
WHERE ` + zombieOuter + ` AND ` + recoverable("h") + `;
SET @left = @limit - @@ROWCOUNT;
-- 2b. Every other silent job: to the DLQ as Zombie (I4).
DELETE h
OUTPUT ` + dlqFromDeleted + `, 2,
    N'zombie: heartbeat expired (last heartbeat ' + CONVERT(NVARCHAR(33), ISNULL(deleted.HeartbeatUtc, deleted.LastUpdatedUtc), 127)
        + N'Z, timeout ' + CONVERT(NVARCHAR(20), ` + zombieTimeoutMs("deleted") + ` / 1000)
        + N's, worker ' + ISNULL(deleted.WorkerId, N'') + N')'
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
OUTPUT ` + rescuedOutput + `, ISNULL(deleted.HeartbeatUtc, deleted.LastUpdatedUtc), 2, @now
FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
INNER JOIN (
    SELECT TOP (@left) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    LEFT JOIN @timeouts AS ct ON ct.Queue = c.Queue
    WHERE ` + zombieCandidate + `
    ORDER BY c.HeartbeatUtc
) AS x ON x.Id = h.Id
LEFT JOIN @timeouts AS q ON q.Queue = h.Queue
WHERE ` + zombieOuter + `;
COMMIT TRANSACTION;
SELECT Id, Queue, Type, WorkerId, RunLease, LastSeen, Reason, At, CAST(1 AS BIT) FROM @recovered;`

// zombieCandidate and zombieOuter are phase 2's test of a silent job, on
// the candidate (c, its queue's timeout ct) and on the outer table (h, q).
var (
	zombieCandidate = `c.Status = 2 AND c.HeartbeatUtc < @loosest
      AND c.HeartbeatUtc < ISNULL(DATEADD(SECOND, -ct.Seconds, @now), @globalCutoff)
      AND ` + silentForMissedBeats("c")
	zombieOuter = `h.Status = 2 AND h.HeartbeatUtc < ISNULL(DATEADD(SECOND, -q.Seconds, @now), @globalCutoff)
  AND ` + silentForMissedBeats("h")
)

// zombieTimeoutMs is the timeout phase 2 applied to alias's row, in
// milliseconds (jobs.ZombieTimeout: the queue's, else @timeoutMs, and at
// least 3 x the row's heartbeat maximum); q is the row's queue timeout.
func zombieTimeoutMs(alias string) string {
	return `(CASE WHEN ` + missedBeatsMs(alias) + ` > ISNULL(CAST(q.Seconds AS BIGINT) * 1000, @timeoutMs)
            THEN ` + missedBeatsMs(alias) + ` ELSE ISNULL(CAST(q.Seconds AS BIGINT) * 1000, @timeoutMs) END)`
}

// recoverable is jobs.RecoversZombie for alias's row: its kind's zombie
// policy, recorded at start, allows one more zombie retry, and no operator
// asked to cancel it. No function of a column, so the candidate's seek of
// IX_JobsHot_Heartbeat stays a seek; the three columns are read by the
// lookup of the clustered row, as HeartbeatMaxMs is, which READPAST skips
// while a live worker holds it.
func recoverable(alias string) string {
	return alias + ".ZombieRetryCap > 0 AND (" + alias + ".ZombieRetries IS NULL OR " + alias + ".ZombieRetries < " + alias + ".ZombieRetryCap)" +
		" AND " + alias + ".CancelRequestedUtc IS NULL"
}

// Rescue phase 3: Processing rows past their deadline move to the DLQ as
// Timeout, even while their worker still heartbeats (a hung handler), or as
// Cancelled when an operator asked for that and the handler ignored it. The
// candidate seeks IX_JobsHot_Deadline.
var qRescueExpired = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @rc INT;
BEGIN TRANSACTION;
` + rescueLockTaken + `
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DELETE h
OUTPUT ` + dlqFromDeleted + `, ` + cancelledReason + `,
    ` + cancelDetails(deadlineText) + `
INTO {{s}}.JobsDLQ (` + dlqColumns + `)
OUTPUT ` + rescuedOutput + `, deleted.DeadlineUtc, ` + cancelledReason + `, @now
FROM {{s}}.JobsHot AS h WITH (` + outerHotHints + `)
INNER JOIN (
    SELECT TOP (@limit) c.Id
    FROM {{s}}.JobsHot AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE c.Status = 2 AND c.DeadlineUtc < @now
    ORDER BY c.DeadlineUtc
) AS x ON x.Id = h.Id
WHERE h.Status = 2 AND h.DeadlineUtc < @now;
COMMIT TRANSACTION;`

// deadlineText is the details of a move by phase 3 (jobs.DeadlineDetails
// writes the same in Go).
const deadlineText = `N'timeout: execution deadline passed (deadline ' + CONVERT(NVARCHAR(33), deleted.DeadlineUtc, 127)
        + N'Z, worker ' + ISNULL(deleted.WorkerId, N'') + N')'`

// cancelDetails is the details of a move to the DLQ that a cancel may have
// asked for: the cancel's note, then what the mover had to say (details,
// an expression that may be NULL); just details for a job nobody
// cancelled. jobs.CancelledDetails writes the same in Go.
func cancelDetails(details string) string {
	return "CASE WHEN deleted.CancelNote IS NULL THEN " + details + " WHEN " + details + " IS NULL THEN deleted.CancelNote ELSE deleted.CancelNote + N'; ' + " + details + " END"
}

// filterPrologue copies the filter's text parameters, sent as
// NVARCHAR(MAX), into locals of their columns' types, and the search text's
// bytes from hex, so that every call binds the same declarations.
const filterPrologue = `DECLARE @fq NVARCHAR(100) = @queue, @ft NVARCHAR(200) = @type, @fx NVARCHAR(400) = @text;
DECLARE @fb VARBINARY(400) = CONVERT(VARBINARY(400), @textHex, 2);`

// filterWhere is the WHERE clause shared by listing, counting, resurrect and
// purge: a catch-all over optional parameters, compiled per call with
// OPTION (RECOMPILE) so the plan fits the filters actually given. $ is the
// table alias, @ the table's own instant column.
const filterWhere = `WHERE (@hasIds = 0 OR $.Id IN (SELECT Id FROM @ids))
  AND (@fq = N'' OR $.Queue = @fq)
  AND (@ft = N'' OR $.Type = @ft)
  AND (@hasFrom = 0 OR $.@ >= @from)
  AND (@hasTo = 0 OR $.@ < @to)
  AND (@olderThanMs IS NULL OR $.@ < ` + "{{olderThanAgo}}" + `)
  AND (@hasAsOf = 0 OR $.@ <= @asOf)
  AND (@fx = N'' OR CHARINDEX(@fx, $.Type) > 0 OR CHARINDEX(@fx, ISNULL($.LastError, N'')) > 0
       {{textExtra}} OR CHARINDEX(@fb, ISNULL($.Payload, 0x)) > 0)
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
		extra: "AND (@status IS NULL OR $.Status = @status OR (@status = 0 AND $.Status IN (3, 4, 5)))"},
	jobs.TableArchive: {name: "JobsArchive", instant: "FinishedAtUtc", columns: unifiedArchive},
	jobs.TableDLQ: {name: "JobsDLQ", instant: "FinishedAtUtc", columns: unifiedDLQ,
		extra: "AND (@reason IS NULL OR $.FailureReason = @reason)",
		text:  "OR CHARINDEX(@fx, ISNULL($.ErrorDetails, N'')) > 0"},
}

func (t tableSQL) where(alias string) string {
	w := strings.NewReplacer("{{tableFilter}}", t.extra, "{{textExtra}}", t.text, "{{olderThanAgo}}", agoFrom("olderThan", "SYSUTCDATETIME()")).Replace(filterWhere)
	return strings.NewReplacer("$.@", alias+"."+t.instant, "$.", alias+".").Replace(w)
}

// qList pages newest first; it asks for one row more than the page to know
// whether another page follows.
func (t tableSQL) qList() string {
	return `SET NOCOUNT ON;
` + filterPrologue + `
SELECT TOP (@limit) ` + cols(t.columns, "t") + `
FROM {{s}}.` + t.name + ` AS t
` + t.where("t") + `
  AND (@beforeId = 0 OR t.Id < @beforeId)
ORDER BY t.Id DESC
OPTION (RECOMPILE);`
}

func (t tableSQL) qCount() string {
	return `SET NOCOUNT ON;
` + filterPrologue + `
SELECT COUNT_BIG(*) FROM {{s}}.` + t.name + ` AS t
` + t.where("t") + `
OPTION (RECOMPILE);`
}

// qPurge deletes one bounded batch of archived or dead-lettered jobs,
// oldest first, after the last job the batch before deleted (@afterUtc,
// @afterId; @hasAfter 0 for the first): the candidate walks the
// finish-time index from there, so a purge by age reads about as many rows
// as it deletes. Starting every batch at the old end instead would read
// again, at every batch, the ghost records of every row the batches before
// it deleted, until the ghost cleanup task removes them (qTrim does the
// same for the retention loop). It takes no UPDLOCK: nothing updates an
// archived or dead-lettered row, and the locks of rows read but not deleted
// (a queue or text filter the index does not cover) would otherwise pile
// up towards escalation. READPAST on both sides leaves rows another
// statement holds to a later purge. It returns how many it deleted and the
// last of them.
func (t tableSQL) qPurge() string {
	return `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
` + filterPrologue + `
` + goneDecl + `
BEGIN TRANSACTION;
DELETE d
OUTPUT ` + goneOutput + ` INTO @gone
FROM {{s}}.` + t.name + ` AS d WITH (` + outerHints(t.name) + `)
INNER JOIN (
    SELECT TOP (@limit) t.Id
    FROM {{s}}.` + t.name + ` AS t WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
    ` + t.where("t") + `
      AND (@hasAfter = 0 OR (t.FinishedAtUtc >= @afterUtc AND (t.FinishedAtUtc > @afterUtc OR t.Id > @afterId)))
    ORDER BY t.FinishedAtUtc, t.Id
) AS x ON x.Id = d.Id
OPTION (RECOMPILE);
` + goneKeysOf(t.name) + lastGone
}

// goneDecl, goneOutput and goneKeysOf are a purge or trim step's table of
// the jobs it deleted and the deletion of their unique keys' rows, in the
// same transaction (ADR 0030): a row goes with the job it names, by the
// key the job carries (a clustered-key seek, nothing for a job that is not
// unique), and only if it still names that job. READPAST skips a row an
// enqueue or a resurrect is re-pointing at another job, which is then no
// longer this one's to delete; a re-point rolled back leaves the row
// naming a job that is gone, which holds nothing: the key's next enqueue
// takes it over.
const (
	goneDecl = `DECLARE @gone TABLE (FinishedAtUtc DATETIME2(7) NOT NULL, Id BIGINT NOT NULL,
    UniqueKeyHash BINARY(32) NULL, UniqueBucket BIGINT NULL, WorkflowId BIGINT NULL, WorkflowTask NVARCHAR(200) NULL);`
	goneOutput = `deleted.FinishedAtUtc, deleted.Id, deleted.UniqueKeyHash, deleted.UniqueBucket, deleted.WorkflowId, deleted.WorkflowTask`
)

// goneKeysOf also writes the WorkflowGone row of each workflow task the
// step deleted from table (ADR 0034), in the same transaction: the
// release step then settles the children that wait for it and deletes
// its edges, and a workflow whose last task is gone goes with it.
func goneKeysOf(table string) string {
	failed := "0"
	if table == "JobsDLQ" {
		failed = "1"
	}
	return `DELETE k
FROM {{s}}.JobUniqueKeys AS k WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
INNER JOIN @gone AS g ON k.KeyHash = g.UniqueKeyHash AND k.Bucket = g.UniqueBucket AND k.JobId = g.Id;
INSERT INTO {{s}}.WorkflowGone WITH (ROWLOCK) (ParentId, WorkflowId, WorkflowTask, Failed, ReleaseCursor)
SELECT g.Id, g.WorkflowId, g.WorkflowTask, ` + failed + `, 0 FROM @gone AS g WHERE g.WorkflowId IS NOT NULL;
COMMIT TRANSACTION;
`
}

// lastGone reports a purge or trim step: how many rows @gone holds and the
// last of them in (FinishedAtUtc, Id) order, NULLs when it is empty.
const lastGone = `SELECT (SELECT COUNT(*) FROM @gone), g.FinishedAtUtc, g.Id
FROM (SELECT 1 AS one) AS o
LEFT JOIN (SELECT TOP (1) FinishedAtUtc, Id FROM @gone ORDER BY FinishedAtUtc DESC, Id DESC) AS g ON 1 = 1;`

// qResurrect moves one bounded batch of dead letters back to Pending in one
// transaction, oldest first: picked into @pick, then out of the DLQ into a
// table variable, then into JobsHot with AttemptCount reset and the ID and
// lease kept. A unique job takes its key back unless another job holds it
// (ADR 0030): before any job row, under each key's lock, in (KeyHash,
// Bucket) order as an enqueue takes them, the key's row and its holder are
// read as an enqueue reads them; of the picked jobs of one key, the one the
// row names (else the first) takes the key when no other job holds it, and
// the others go on without it. A picked job that another statement moved
// or purged in the meantime is not moved; if it had taken its key, the row
// names a job that holds nothing, which the next enqueue takes over.
// An idempotency key that an active job holds now (or that another
// resurrected job of this batch takes first) is dropped, because keys are
// unique among active jobs. That check takes no range lock; a keyed enqueue
// that wins the key between the check and the insert makes the insert fail
// with 2601, which rolls the whole batch back, and the store runs it again.
func qResurrect() string {
	dlq := tables[jobs.TableDLQ]
	return `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
` + filterPrologue + `
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @payload VARBINARY(MAX) = CONVERT(VARBINARY(MAX), @payloadHex, 2);
DECLARE @pick TABLE (Id BIGINT NOT NULL PRIMARY KEY, KeyHash BINARY(32) NULL, Bucket BIGINT NULL, States TINYINT NULL,
    Keep BIT NOT NULL DEFAULT 0, WorkflowId BIGINT NULL, INDEX IX_Key (KeyHash, Bucket));
DECLARE @moved TABLE (
    Id BIGINT NOT NULL PRIMARY KEY, Queue NVARCHAR(100) NOT NULL, Type NVARCHAR(200) NOT NULL, Payload VARBINARY(MAX) NULL,
    Priority INT NOT NULL, Tags NVARCHAR(1000) NULL, IdempotencyKey NVARCHAR(200) NULL, CreatedBy NVARCHAR(100) NULL,
    MaxAttempts INT NOT NULL, CreatedAtUtc DATETIME2(7) NOT NULL, RunLease BIGINT NOT NULL, ErrorDetails NVARCHAR(MAX) NULL,
    Metadata NVARCHAR(MAX) NULL, UniqueKeyHash BINARY(32) NULL, UniqueBucket BIGINT NULL, UniqueStates TINYINT NULL,
    ConcurrencyKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL, SequenceKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    WorkflowId BIGINT NULL, WorkflowTask NVARCHAR(200) NULL, OnParentFailure TINYINT NULL);
INSERT INTO @pick (Id, KeyHash, Bucket, States, WorkflowId)
SELECT TOP (@limit) t.Id, t.UniqueKeyHash, t.UniqueBucket, t.UniqueStates, t.WorkflowId
FROM {{s}}.JobsDLQ AS t WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
` + dlq.where("t") + `
ORDER BY t.FinishedAtUtc, t.Id
OPTION (RECOMPILE);
DECLARE @h BINARY(32), @b BIGINT, @lastH BINARY(32), @lastB BIGINT, @id BIGINT, @us TINYINT;
DECLARE @x BIGINT, @xs TINYINT, @held BIT, @rc INT, @ulock NVARCHAR(255);
BEGIN TRANSACTION;
WHILE 1 = 1
BEGIN
    SET @h = NULL;
    SELECT TOP (1) @h = KeyHash, @b = Bucket FROM @pick
    WHERE KeyHash IS NOT NULL AND (@lastH IS NULL OR KeyHash > @lastH OR (KeyHash = @lastH AND Bucket > @lastB))
    ORDER BY KeyHash, Bucket;
    IF @h IS NULL
        BREAK;
    SET @ulock = ` + uniqueLock + `;
    EXEC @rc = sys.sp_getapplock @Resource = @ulock, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
    IF @rc < 0
        THROW 51003, N'chokaq: the unique key lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
    SET @x = NULL;
    SET @xs = NULL;
    SET @held = 0;
    SELECT @x = JobId, @xs = States FROM {{s}}.JobUniqueKeys WITH (READCOMMITTEDLOCK) WHERE KeyHash = @h AND Bucket = @b;
    SELECT TOP (1) @id = p.Id, @us = p.States FROM @pick AS p
    WHERE p.KeyHash = @h AND p.Bucket = @b
    ORDER BY CASE WHEN p.Id = @x THEN 0 ELSE 1 END, p.Id;
    IF @x IS NOT NULL AND @x <> @id
    BEGIN
        ` + uniqueHolds + `
    END
    IF @held = 0
    BEGIN
        ` + uniqueTake + `
        UPDATE @pick SET Keep = 1 WHERE Id = @id;
    END
    SELECT @lastH = @h, @lastB = @b;
END
-- After the key locks (a caller's open EnqueueTx may hold one a while),
-- so no release step waits on a resurrect that waits on a key; no step
-- or fan-out takes a key lock, so no cycle either way.
IF EXISTS (SELECT 1 FROM @pick WHERE WorkflowId IS NOT NULL)
BEGIN
    ` + workflowLockTaken + `
END
DELETE d
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Priority, deleted.Tags, deleted.IdempotencyKey,
    deleted.CreatedBy, deleted.MaxAttempts, deleted.CreatedAtUtc, deleted.RunLease, deleted.ErrorDetails, deleted.Metadata,
    deleted.UniqueKeyHash, deleted.UniqueBucket, deleted.UniqueStates, deleted.ConcurrencyKey, deleted.SequenceKey,
    deleted.WorkflowId, deleted.WorkflowTask, deleted.OnParentFailure
INTO @moved
FROM {{s}}.JobsDLQ AS d WITH (` + outerHints("JobsDLQ") + `)
INNER JOIN @pick AS x ON x.Id = d.Id;
INSERT INTO {{s}}.JobsHot WITH (ROWLOCK) (Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts,
    AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease, LastError, Metadata,
    UniqueKeyHash, UniqueBucket, UniqueStates, ConcurrencyKey, SequenceKey, WorkflowId, WorkflowTask, OnParentFailure)
SELECT m.Id, m.Queue, m.Type, CASE WHEN @replacePayload = 1 THEN @payload ELSE m.Payload END, m.Priority, m.Tags,
    CASE WHEN m.IdempotencyKey IS NULL OR m.KeyRank > 1
              OR EXISTS (SELECT 1 FROM {{s}}.JobsHot AS k WITH (READCOMMITTEDLOCK)
                         WHERE k.IdempotencyKey = m.IdempotencyKey)
         THEN NULL ELSE m.IdempotencyKey END,
    m.CreatedBy, m.MaxAttempts, 0, 0, m.CreatedAtUtc, @now, @now, m.RunLease, m.ErrorDetails, m.Metadata,
    CASE WHEN p.Keep = 1 THEN m.UniqueKeyHash END, CASE WHEN p.Keep = 1 THEN m.UniqueBucket END,
    CASE WHEN p.Keep = 1 THEN m.UniqueStates END, m.ConcurrencyKey, m.SequenceKey, m.WorkflowId, m.WorkflowTask, m.OnParentFailure
FROM (SELECT mv.*, ROW_NUMBER() OVER (PARTITION BY mv.IdempotencyKey ORDER BY mv.Id) AS KeyRank FROM @moved AS mv) AS m
INNER JOIN @pick AS p ON p.Id = m.Id;
` + resurrectTasks + `
COMMIT TRANSACTION;
SELECT COUNT(*) FROM @moved;`
}

// resurrectTasks settles the workflow tasks a resurrect moved (ADR 0034),
// under the workflow lock: a task waits only for its parents still hot
// (its edge to one archived, dead-lettered or gone is done: resurrecting
// it is the operator's word that it may run), Status 5 on their count.
// Its children that wait for it (DependencyWait) go on waiting, now for
// a parent that is hot again.
const resurrectTasks = `UPDATE e SET State = 1
FROM {{s}}.WorkflowEdges AS e WITH (ROWLOCK)
INNER JOIN @moved AS m ON e.ChildId = m.Id
WHERE m.WorkflowId IS NOT NULL AND e.State = 0
  AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot AS p WHERE p.Id = e.ParentId);
UPDATE h SET Status = 5, WaitingOn = w.N
FROM {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK)
INNER JOIN (SELECT e.ChildId, COUNT(*) AS N FROM {{s}}.WorkflowEdges AS e INNER JOIN @moved AS m ON e.ChildId = m.Id
            WHERE m.WorkflowId IS NOT NULL AND e.State = 0 GROUP BY e.ChildId) AS w ON w.ChildId = h.Id
WHERE h.Status = 0;`

// qGetJob looks in every table; the job is in exactly one (I2).
const qGetJob = `SELECT ` + "{{hotCols}}" + ` FROM {{s}}.JobsHot AS h WHERE h.Id = @id
UNION ALL
SELECT ` + "{{archiveCols}}" + ` FROM {{s}}.JobsArchive AS a WHERE a.Id = @id
UNION ALL
SELECT ` + "{{dlqCols}}" + ` FROM {{s}}.JobsDLQ AS d WHERE d.Id = @id;`

// queueColumns is what scanQueues reads of a Queues row. The retentions
// stay NULL when not set: 0 there means keep forever. The queue's own key
// limits come as one JSON array ([{"k": key, "n": limit}], NULL for none;
// JSON escapes any key), at most jobs.MaxKeyLimits rows.
const queueColumns = `Name, IsPaused, ISNULL(MaxWorkers, 0), ISNULL(ZombieTimeoutSeconds, 0), ISNULL(ExecutionTimeoutSeconds, 0),
    ArchiveRetentionSeconds, DeadLetterRetentionSeconds, ISNULL(MaxWorkersPerKey, 0), ISNULL(SequenceOnDeadLetter, 0),
    (SELECT TOP (` + "{{maxKeyLimits}}" + `) l.KeyName AS k, l.MaxWorkers AS n FROM {{s}}.QueueKeyLimits AS l
        WHERE l.Queue = Queues.Name ORDER BY l.KeyName FOR JSON PATH),
    ISNULL(Weight, 0), ISNULL(RateCount, 0), ISNULL(RateWindowMs, 0)`

const qQueues = `SELECT ` + queueColumns + `
FROM {{s}}.Queues ORDER BY Name;`

// Upsert of one queue row; a @set* flag of 0 leaves that column alone and a
// zero value stores NULL (not set), -1 for a retention (whose 0 means keep
// forever). @keyLimits (a KeyLimitList) merges key by key into
// QueueKeyLimits: a limit of 0 removes the key's own. The queue's
// application lock, taken exclusively first, makes a change wait for the
// claims in flight, which hold it shared (see qClaim): from its commit on,
// every claim sees it, and the next claim unparks what a raised limit lets
// run.
const qUpdateQueue = `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @q NVARCHAR(100) = @name, @rc INT;
DECLARE @lock NVARCHAR(255) = ` + queueLock + `;
BEGIN TRANSACTION;
EXEC @rc = sys.sp_getapplock @Resource = @lock, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the queue lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
UPDATE {{s}}.Queues WITH (UPDLOCK, SERIALIZABLE)
SET IsPaused = CASE WHEN @setPaused = 1 THEN @paused ELSE IsPaused END,
    MaxWorkers = CASE WHEN @setMax = 1 THEN NULLIF(@max, 0) ELSE MaxWorkers END,
    ZombieTimeoutSeconds = CASE WHEN @setZombie = 1 THEN NULLIF(@zombie, 0) ELSE ZombieTimeoutSeconds END,
    ExecutionTimeoutSeconds = CASE WHEN @setExec = 1 THEN NULLIF(@exec, 0) ELSE ExecutionTimeoutSeconds END,
    ArchiveRetentionSeconds = CASE WHEN @setArchive = 1 THEN NULLIF(@archive, -1) ELSE ArchiveRetentionSeconds END,
    DeadLetterRetentionSeconds = CASE WHEN @setDeadLetter = 1 THEN NULLIF(@deadLetter, -1) ELSE DeadLetterRetentionSeconds END,
    MaxWorkersPerKey = CASE WHEN @setPerKey = 1 THEN NULLIF(@perKey, 0) ELSE MaxWorkersPerKey END,
    SequenceOnDeadLetter = CASE WHEN @setSequence = 1 THEN NULLIF(@sequence, 0) ELSE SequenceOnDeadLetter END,
    LastUpdatedUtc = SYSUTCDATETIME()
WHERE Name = @q;
IF @@ROWCOUNT = 0
    INSERT INTO {{s}}.Queues (Name, IsPaused, MaxWorkers, ZombieTimeoutSeconds, ExecutionTimeoutSeconds,
        ArchiveRetentionSeconds, DeadLetterRetentionSeconds, MaxWorkersPerKey, SequenceOnDeadLetter)
    VALUES (@q, CASE WHEN @setPaused = 1 THEN @paused ELSE 0 END,
            CASE WHEN @setMax = 1 THEN NULLIF(@max, 0) END,
            CASE WHEN @setZombie = 1 THEN NULLIF(@zombie, 0) END,
            CASE WHEN @setExec = 1 THEN NULLIF(@exec, 0) END,
            CASE WHEN @setArchive = 1 THEN NULLIF(@archive, -1) END,
            CASE WHEN @setDeadLetter = 1 THEN NULLIF(@deadLetter, -1) END,
            CASE WHEN @setPerKey = 1 THEN NULLIF(@perKey, 0) END,
            CASE WHEN @setSequence = 1 THEN NULLIF(@sequence, 0) END);
DELETE l FROM {{s}}.QueueKeyLimits AS l WITH (ROWLOCK)
INNER JOIN @keyLimits AS k ON k.KeyName = l.KeyName
WHERE l.Queue = @q AND k.MaxWorkers = 0;
UPDATE l SET MaxWorkers = k.MaxWorkers
FROM {{s}}.QueueKeyLimits AS l WITH (ROWLOCK)
INNER JOIN @keyLimits AS k ON k.KeyName = l.KeyName
WHERE l.Queue = @q AND k.MaxWorkers > 0;
INSERT INTO {{s}}.QueueKeyLimits WITH (ROWLOCK) (Queue, KeyName, MaxWorkers)
SELECT @q, k.KeyName, k.MaxWorkers FROM @keyLimits AS k
WHERE k.MaxWorkers > 0 AND NOT EXISTS (SELECT 1 FROM {{s}}.QueueKeyLimits AS l WHERE l.Queue = @q AND l.KeyName = k.KeyName);
IF @setWeight = 1 -- the row just updated or inserted, already locked by this transaction
    UPDATE {{s}}.Queues SET Weight = @weight WHERE Name = @q;
-- A rate limit changed keeps its open window (the change applies to it);
-- one removed forgets it.
IF @setRate = 1
    UPDATE {{s}}.Queues SET RateCount = NULLIF(@rateCount, 0), RateWindowMs = NULLIF(@rateWindowMs, 0),
        RateWindowStartUtc = CASE WHEN @rateCount = 0 THEN NULL ELSE RateWindowStartUtc END,
        RateUsed = CASE WHEN @rateCount = 0 THEN NULL ELSE RateUsed END
    WHERE Name = @q;
COMMIT TRANSACTION;
SELECT ` + queueColumns + `
FROM {{s}}.Queues WHERE Name = @q;`

// distinctQueues adds to @names the distinct queues of a table, one seek
// per queue on an index that starts with Queue, instead of a scan of the
// table: how much a poll reads grows with the queues, not with the rows.
func distinctQueues(table string) string {
	return `SET @q = N'';
WHILE (SELECT COUNT(*) FROM @names) < @maxQueues
BEGIN
    SET @next = NULL;
    SELECT TOP (1) @next = Queue FROM {{s}}.` + table + ` WHERE Queue > @q ORDER BY Queue;
    IF @next IS NULL BREAK;
    IF NOT EXISTS (SELECT 1 FROM @names WHERE Queue = @next) INSERT INTO @names (Queue) VALUES (@next);
    SET @q = @next;
END`
}

// capped counts at most @cap rows of a seek, as QueueDepths does: a deep
// backlog or a large archive costs no more to count than @cap rows.
func capped(table, where string) string {
	return `(SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.` + table + ` WHERE Queue = n.Queue` + where + `) AS t)`
}

// Per-queue counts for operators, in one statement for every queue with a
// control row or a job. Pending counts the parked jobs too (Status 3 and
// 4, ADR 0031), which WaitingOnKey and WaitingOnSequence count apart; the
// busiest keys come as one JSON array ([{"k", "r" running, "w" waiting}],
// NULL for none), among the keys of at most @cap running keyed jobs
// (IX_JobsHot_KeyActive), each count capped too: no GROUP BY over a table. Each count reads at most @cap rows through an
// index that starts with Queue (so a count of @cap means "at least @cap"),
// and the queue names come from one seek per queue: a poll of the
// dashboard reads a bounded number of rows however large the backlog or
// the archive grows. OldestDue is the oldest due job among the next @cap in
// claim order, which is the oldest due job unless more than @cap are due
// across priorities.
var qQueueStats = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @names TABLE (Queue NVARCHAR(100) NOT NULL PRIMARY KEY);
DECLARE @q NVARCHAR(100), @next NVARCHAR(100);
INSERT INTO @names (Queue) SELECT TOP (@maxQueues) Name FROM {{s}}.Queues ORDER BY Name;
` + distinctQueues("JobsHot") + `
` + distinctQueues("JobsArchive") + `
` + distinctQueues("JobsDLQ") + `
SELECT n.Queue, ISNULL(qr.IsPaused, 0), ISNULL(qr.MaxWorkers, 0),
    ` + capped("JobsHot", " AND Status IN (0, 3, 4) AND ScheduledAtUtc <= @now") + `,
    ` + capped("JobsHot", " AND Status = 0 AND ScheduledAtUtc > @now") + `,
    ` + capped("JobsHot", " AND Status = 1") + `,
    ` + capped("JobsHot", " AND Status = 2") + `,
    ` + capped("JobsArchive", "") + `,
    ` + capped("JobsDLQ", "") + `,
    (SELECT MIN(o.ScheduledAtUtc) FROM (SELECT TOP (@cap) ScheduledAtUtc FROM {{s}}.JobsHot
        WHERE Queue = n.Queue AND Status = 0 AND ScheduledAtUtc <= @now ORDER BY Priority DESC, ScheduledAtUtc, Id) AS o),
    @now,
    ` + capped("JobsHot", " AND Status = 3") + `,
    ` + capped("JobsHot", " AND Status = 4") + `,
    ` + capped("JobsHot", " AND Status = 5") + `,
    ISNULL(qr.RateCount, 0),
    CASE WHEN DATEADD(MILLISECOND, qr.RateWindowMs, qr.RateWindowStartUtc) > @now THEN qr.RateUsed ELSE 0 END,
    CASE WHEN DATEADD(MILLISECOND, qr.RateWindowMs, qr.RateWindowStartUtc) > @now
         THEN DATEADD(MILLISECOND, qr.RateWindowMs, qr.RateWindowStartUtc) END,
    (SELECT TOP (` + "{{maxBusiestKeys}}" + `) b.k, b.r,
            (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot AS w
                WHERE w.Queue = n.Queue AND w.ConcurrencyKey = b.k AND w.Status = 3) AS t) AS w
        FROM (SELECT DISTINCT r.ConcurrencyKey AS k,
                  (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot AS a
                      WHERE a.Queue = n.Queue AND a.ConcurrencyKey = r.ConcurrencyKey AND a.Status IN (1, 2)) AS t) AS r
              FROM (SELECT TOP (@cap) a.ConcurrencyKey FROM {{s}}.JobsHot AS a
                    WHERE a.Queue = n.Queue AND a.ConcurrencyKey IS NOT NULL AND a.Status IN (1, 2)) AS r) AS b
        ORDER BY b.r DESC, b.k FOR JSON PATH)
FROM @names AS n
LEFT JOIN {{s}}.Queues AS qr ON qr.Name = n.Queue
ORDER BY n.Queue;`

// Per-queue depth for metrics sampling: every count reads at most @cap rows
// of IX_JobsHot_Claim, so a deep backlog costs no more than a shallow one.
// The queues come as a table-valued parameter: no string splitting, which
// would need database compatibility level 130.
const qQueueDepths = `SET NOCOUNT ON;
SELECT n.Name,
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = n.Name AND Status IN (0, 3, 4)) AS t),
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = n.Name AND Status = 1) AS t),
    (SELECT COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x FROM {{s}}.JobsHot WHERE Queue = n.Name AND Status = 2) AS t)
FROM @queues AS n
ORDER BY n.Name;`

// tableQueues lists one page of a table's distinct queue names after
// @after (N” to start), at most @maxQueues, one seek per queue on an index
// that starts with Queue: the retention loop pages on through every queue.
func tableQueues(table string) string {
	return `SET NOCOUNT ON;
DECLARE @names TABLE (Queue NVARCHAR(100) NOT NULL PRIMARY KEY);
DECLARE @q NVARCHAR(100) = @after, @next NVARCHAR(100), @k INT = 0;
WHILE @k < @maxQueues
BEGIN
    SET @next = NULL;
    SELECT TOP (1) @next = Queue FROM {{s}}.` + table + ` WHERE Queue > @q ORDER BY Queue;
    IF @next IS NULL BREAK;
    INSERT INTO @names (Queue) VALUES (@next);
    SET @q = @next;
    SET @k += 1;
END
SELECT Queue FROM @names ORDER BY Queue;`
}

// qTrim is one step of the retention loop's trim of one queue (ADR 0020):
// at most @limit of the queue's jobs that finished before the cutoff,
// oldest first, after the last job the previous step deleted. It seeks the
// queue's (Queue, FinishedAtUtc) index (the clustered key Id ends every
// nonclustered key, so the order needs no sort) from that key on, not from
// the queue's oldest end: the rows earlier steps deleted stay there as
// ghost records until the ghost cleanup task removes them, a few pages
// every few seconds, and a seek from the old end would read them all again
// at every step. No catch-all, no RECOMPILE: one cached plan. READPAST
// leaves a row another statement holds to a later sweep.
func qTrim(table, index string) string {
	return `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @fq NVARCHAR(100) = @queue;
DECLARE @cutoff DATETIME2(7) = ` + agoFrom("olderThan", "SYSUTCDATETIME()") + `;
DECLARE @from DATETIME2(7) = CASE WHEN @hasAfter = 1 THEN @afterUtc ELSE CAST('00010101' AS DATETIME2(7)) END;
` + goneDecl + `
BEGIN TRANSACTION;
DELETE d
OUTPUT ` + goneOutput + ` INTO @gone
FROM {{s}}.` + table + ` AS d WITH (` + outerHints(table) + `)
INNER JOIN (
    SELECT TOP (@limit) t.Id
    FROM {{s}}.` + table + ` AS t WITH (INDEX (` + index + `), FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE t.Queue = @fq AND t.FinishedAtUtc >= @from AND t.FinishedAtUtc < @cutoff
      AND (@hasAfter = 0 OR t.FinishedAtUtc > @afterUtc OR t.Id > @afterId)
    ORDER BY t.FinishedAtUtc, t.Id
) AS x ON x.Id = d.Id;
` + goneKeysOf(table) + lastGone
}

// finishedCounts counts the jobs of both finished tables by queue and
// Bucket-long interval since the Unix epoch (and by reason in the DLQ),
// for the dashboard's charts (ADR 0022). Each side reads the window's range
// of its finish-time index, which includes what is grouped (migration 6),
// or of its queue index for one queue; OPTION (RECOMPILE) picks between
// them for the values given. READPAST (with READCOMMITTEDLOCK, as
// everywhere) skips the rows of moves not yet committed rather than wait
// for them: a chart polls again, and re-reads its last intervals.
const qFinishedCounts = `SET NOCOUNT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @fq NVARCHAR(100) = @queue;
DECLARE @epoch DATETIME2(7) = '19700101';
SELECT CAST(2 AS TINYINT), a.Queue, DATEDIFF_BIG(SECOND, @epoch, a.FinishedAtUtc) / @bucketSeconds, CAST(0 AS INT), COUNT_BIG(*)
FROM {{s}}.JobsArchive AS a WITH (READPAST, READCOMMITTEDLOCK)
WHERE a.FinishedAtUtc >= @from AND a.FinishedAtUtc < @to AND (@fq = N'' OR a.Queue = @fq)
GROUP BY a.Queue, DATEDIFF_BIG(SECOND, @epoch, a.FinishedAtUtc) / @bucketSeconds
UNION ALL
SELECT CAST(3 AS TINYINT), d.Queue, DATEDIFF_BIG(SECOND, @epoch, d.FinishedAtUtc) / @bucketSeconds, d.FailureReason, COUNT_BIG(*)
FROM {{s}}.JobsDLQ AS d WITH (READPAST, READCOMMITTEDLOCK)
WHERE d.FinishedAtUtc >= @from AND d.FinishedAtUtc < @to AND (@fq = N'' OR d.Queue = @fq)
GROUP BY d.Queue, DATEDIFF_BIG(SECOND, @epoch, d.FinishedAtUtc) / @bucketSeconds, d.FailureReason
OPTION (RECOMPILE);`

// Schedules (ADR 0020). scheduleColumns is what scanSchedules reads.
const scheduleColumns = `Name, Definition, DefinitionHash, LastFiredTickUtc, LastFiredAtUtc, NextFireUtc, IsPaused,
    UpdatedAtUtc, SyncedAtUtc`

// scheduleLock serializes the syncs of starting processes: two that record
// a new schedule at once would otherwise both miss its row and both insert
// it (a key-range lock on the missing key would be the other way, and
// lock the gap to the next name).
const scheduleLock = `N'chokaq:{{name}}:schedules'`

// qSyncSchedules records a starting process's schedules (@defs): an
// unchanged one (same hash) is only stamped; a changed one starts over as
// if it fired now, in the state its definition says; a new one is inserted
// the same way. A changed or new schedule owes no tick from before now. It
// states READ COMMITTED (a pooled session at SNAPSHOT would fail an update
// with error 3960 when a fire commits in between), and its existence test
// reads the latest committed row under READ_COMMITTED_SNAPSHOT too, so an
// operator's delete in flight is not mistaken for a row still there.
const qSyncSchedules = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME(), @rc INT;
BEGIN TRANSACTION;
EXEC @rc = sys.sp_getapplock @Resource = ` + scheduleLock + `, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the schedules lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;
UPDATE s
SET SyncedAtUtc = @now
FROM {{s}}.Schedules AS s
INNER JOIN @defs AS d ON d.Name = s.Name
WHERE s.DefinitionHash = d.DefinitionHash;
UPDATE s
SET Definition = d.Definition, DefinitionHash = d.DefinitionHash, LastFiredTickUtc = @now, NextFireUtc = NULL,
    IsPaused = d.IsPaused, UpdatedAtUtc = @now, SyncedAtUtc = @now
FROM {{s}}.Schedules AS s
INNER JOIN @defs AS d ON d.Name = s.Name
WHERE s.DefinitionHash <> d.DefinitionHash;
INSERT INTO {{s}}.Schedules (Name, Definition, DefinitionHash, LastFiredTickUtc, LastFiredAtUtc, NextFireUtc, IsPaused,
    CreatedAtUtc, UpdatedAtUtc, SyncedAtUtc)
SELECT d.Name, d.Definition, d.DefinitionHash, @now, NULL, NULL, d.IsPaused, @now, @now, @now
FROM @defs AS d
WHERE NOT EXISTS (SELECT 1 FROM {{s}}.Schedules AS s WITH (READCOMMITTEDLOCK) WHERE s.Name = d.Name);
COMMIT TRANSACTION;`

// qFireSchedule is the compare-and-set of one tick: the schedule's row
// moves to @tick only if its definition is the one the firer computed the
// tick from, it is not paused and no later or equal tick fired. It runs in
// the store's transaction, which enqueues the tick's job next when a row
// moved: a second firer of the tick waits on the row's lock and then finds
// the tick taken. An UPDATE reads the rows it qualifies with update locks,
// not row versions, under READ_COMMITTED_SNAPSHOT too (with optimized
// locking it re-evaluates the predicate after the wait): no hint needed.
const qFireSchedule = `SET NOCOUNT ON;
DECLARE @n NVARCHAR(80) = @name, @h NVARCHAR(64) = @hash;
UPDATE {{s}}.Schedules WITH (ROWLOCK)
SET LastFiredTickUtc = @tick, LastFiredAtUtc = SYSUTCDATETIME(), NextFireUtc = CASE WHEN @hasNext = 1 THEN @next END
WHERE Name = @n AND DefinitionHash = @h AND IsPaused = 0 AND LastFiredTickUtc < @tick;
SELECT @@ROWCOUNT;`

const qSchedules = `SELECT ` + scheduleColumns + ` FROM {{s}}.Schedules ORDER BY Name;`

// qPauseSchedule pauses or resumes one schedule and reads it back.
const qPauseSchedule = `SET NOCOUNT ON;
DECLARE @n NVARCHAR(80) = @name;
UPDATE {{s}}.Schedules WITH (ROWLOCK)
SET IsPaused = @paused, UpdatedAtUtc = CASE WHEN IsPaused = @paused THEN UpdatedAtUtc ELSE SYSUTCDATETIME() END
WHERE Name = @n;
SELECT ` + scheduleColumns + ` FROM {{s}}.Schedules WHERE Name = @n;`

const qDeleteSchedule = `SET NOCOUNT ON;
DECLARE @n NVARCHAR(80) = @name;
DELETE FROM {{s}}.Schedules WITH (ROWLOCK) WHERE Name = @n;
SELECT @@ROWCOUNT;`

// qCaseSensitiveNames counts the schema's name columns that compare case
// by case: queue and schedule names compare ignoring case in every store
// (jobs.QueueKey), which on SQL Server is what the column's collation does
// (COLLATIONPROPERTY's ComparisonStyle has bit 1, "ignore case", set; 0
// for binary and fully sensitive collations). The columns take the
// database's default collation when the migrations create them.
const qCaseSensitiveNames = `SELECT COUNT(*), MIN(c.collation_name)
FROM sys.columns AS c
WHERE ((c.object_id IN (OBJECT_ID(@hot), OBJECT_ID(@archive), OBJECT_ID(@dlq)) AND c.name = N'Queue')
    OR (c.object_id IN (OBJECT_ID(@queues), OBJECT_ID(@schedules)) AND c.name = N'Name'))
  AND CAST(ISNULL(COLLATIONPROPERTY(c.collation_name, 'ComparisonStyle'), 0) AS INT) & 1 = 0;`

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
    HeartbeatUtc = {{ago:HeartbeatUtc}}, DeadlineUtc = {{ago:DeadlineUtc}}, FinishedAtUtc = {{ago:FinishedAtUtc}};
UPDATE {{s}}.Schedules SET
    LastFiredTickUtc = {{ago:LastFiredTickUtc}}, LastFiredAtUtc = {{ago:LastFiredAtUtc}}, NextFireUtc = {{ago:NextFireUtc}},
    CreatedAtUtc = {{ago:CreatedAtUtc}}, UpdatedAtUtc = {{ago:UpdatedAtUtc}}, SyncedAtUtc = {{ago:SyncedAtUtc}};
UPDATE {{s}}.Queues SET RateWindowStartUtc = {{ago:RateWindowStartUtc}};`

// Leader election (Leader): a session-owned exclusive application lock, tried
// without waiting, checked before each use, released on resign.
const (
	qTryAppLock = `DECLARE @rc INT;
EXEC @rc = sys.sp_getapplock @Resource = @resource, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0;
SELECT @rc;`
	qAppLockMode    = `SELECT APPLOCK_MODE('public', @resource, 'Session');`
	qReleaseAppLock = `EXEC sys.sp_releaseapplock @Resource = @resource, @LockOwner = 'Session';`
)

// Workflows (ADR 0034). A task waiting for a parent is Status 5 in
// JobsHot, with WaitingOn its open edges, out of IX_JobsHot_Claim's
// Status = 0 range. A task's move out of JobsHot writes ReleaseCursor 0
// on its archive or DLQ row (workflowFromDeleted) in the move's own
// statement, and a purge or trim of a task writes its WorkflowGone row in
// the purge's (goneKeysOf): what a task owes its children commits with the
// task, and qReleaseTasks pays it in bounded steps.

// workflowLock names the schema's workflow lock: the release step holds it
// exclusively for its transaction (and skips its turn when another holds
// it), and so do the statements that change edges of tasks that exist: a
// fan-out at run time (qAddTasksBegin) and a resurrect of a task. So no
// edge appears, and no task comes back, while a step walks the edges.
const workflowLock = `N'chokaq:{{name}}:workflows'`

// workflowLockTaken takes the workflow lock for the transaction, waiting
// at most the store's lock timeout.
const workflowLockTaken = `EXEC @rc = sys.sp_getapplock @Resource = ` + workflowLock + `, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;
IF @rc < 0
    THROW 51001, N'chokaq: the workflow lock was not granted (sp_getapplock returned a negative code: timeout or deadlock)', 1;`

// releaseOwed is true while a finished task owes its children their
// release: a claim reports it (its third result) and so does the probe,
// so that the store runs a release step before its next claim.
const releaseOwed = `CASE WHEN EXISTS (SELECT 1 FROM {{s}}.JobsArchive AS ra WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK) WHERE ra.ReleaseCursor IS NOT NULL)
    OR EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS rd WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK) WHERE rd.ReleaseCursor IS NOT NULL)
    OR EXISTS (SELECT 1 FROM {{s}}.WorkflowGone AS rg WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK))
    THEN CAST(1 AS BIT) ELSE CAST(0 AS BIT) END`

// qInsertWorkflowTasks inserts one bounded part of a workflow's tasks
// (@items with their @tasks side list, at most the store's insert batch)
// and of its edges (@edges, as many), in the caller's transaction: the
// store's own (EnqueueWorkflow, AddWorkflowTasks) or a caller's
// (EnqueueWorkflowTx); it has none of its own and reads past nothing. The
// first part of an enqueue (@firstId 0) takes the ID range of every task
// (@total) and, for a new workflow (@workflowId 0), the workflow's ID and
// row; a task's ID is @firstId plus its Ord among all the tasks (@base
// plus its Ord in @items). A task waits (Status 5) on its WaitingOn
// parents. An edge to a task that exists and has finished (a fan-out's)
// reopens its release (ReleaseCursor 0), which the next release step pays
// as it stands: done if archived, the child's policy if dead-lettered.
// The last part of a fan-out fences it (@fenceId, @fenceLease; 0 for
// none): the adding job must still be Processing under its lease, its row
// update-locked from there to COMMIT, or error 51004 rolls it all back.
const qInsertWorkflowTasks = `SET NOCOUNT ON;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @wf BIGINT = @workflowId, @first BIGINT = @firstId, @nm NVARCHAR(200) = @name, @firstValue SQL_VARIANT;
IF @fenceId <> 0 AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot WITH (UPDLOCK, ROWLOCK)
                                 WHERE Id = @fenceId AND RunLease = @fenceLease AND Status = 2)
    THROW 51004, N'chokaq: the job adding these tasks no longer holds its lease', 1;
IF @first = 0
BEGIN
    EXEC sys.sp_sequence_get_range @sequence_name = N'{{s}}.JobIds', @range_size = @total, @range_first_value = @firstValue OUTPUT;
    SET @first = CONVERT(BIGINT, @firstValue);
END
IF @wf = 0
BEGIN
    SET @wf = NEXT VALUE FOR {{s}}.WorkflowIds;
    INSERT INTO {{s}}.Workflows WITH (ROWLOCK) (Id, Name, CreatedAtUtc) VALUES (@wf, @nm, @now);
END
INSERT INTO {{s}}.JobsHot WITH (ROWLOCK) (Id, Queue, Type, Payload, Priority, Tags, IdempotencyKey, CreatedBy, MaxAttempts,
    AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease, Metadata, UniqueKeyHash, UniqueBucket, UniqueStates,
    ConcurrencyKey, SequenceKey, WorkflowId, WorkflowTask, OnParentFailure, WaitingOn)
SELECT @first + @base + i.Ord, i.Queue, i.Type, i.Payload, i.Priority, i.Tags, NULL, i.CreatedBy, i.MaxAttempts,
    0, CASE WHEN t.WaitingOn > 0 THEN 5 ELSE 0 END, @now,
    CASE WHEN i.RunAtMs IS NULL
        THEN DATEADD(MILLISECOND, i.DelayMs % 1000, DATEADD(SECOND, i.DelayMs / 1000, @now))
        ELSE DATEADD(MILLISECOND, i.RunAtMs % 86400000, DATEADD(DAY, i.RunAtMs / 86400000, CAST('19700101' AS DATETIME2(7)))) END,
    @now, 0, m.Metadata, NULL, NULL, NULL, f.ConcurrencyKey, f.SequenceKey,
    @wf, t.WorkflowTask, t.OnParentFailure, NULLIF(t.WaitingOn, 0)
FROM @items AS i
INNER JOIN @tasks AS t ON t.Ord = i.Ord
LEFT JOIN @metadata AS m ON m.Ord = i.Ord
LEFT JOIN @flowKeys AS f ON f.Ord = i.Ord;
INSERT INTO {{s}}.WorkflowEdges WITH (ROWLOCK) (ParentId, ChildId, WorkflowId, State)
SELECT ISNULL(e.ParentId, @first + e.ParentOrd), @first + e.ChildOrd, @wf, 0
FROM @edges AS e;
UPDATE a SET ReleaseCursor = 0
FROM {{s}}.JobsArchive AS a WITH (FORCESEEK, ROWLOCK)
INNER JOIN (SELECT DISTINCT ParentId FROM @edges WHERE ParentId IS NOT NULL) AS p ON p.ParentId = a.Id
WHERE a.ReleaseCursor IS NULL;
UPDATE d SET ReleaseCursor = 0
FROM {{s}}.JobsDLQ AS d WITH (FORCESEEK, ROWLOCK)
INNER JOIN (SELECT DISTINCT ParentId FROM @edges WHERE ParentId IS NOT NULL) AS p ON p.ParentId = d.Id
WHERE d.ReleaseCursor IS NULL;
SELECT @wf, @first;`

// qAddTasksBegin opens a fan-out at run time in the store's transaction:
// the workflow lock, then the adding job's row, read (not locked: the
// inserts may take many round trips, and the job's heartbeats must not
// wait for them) to find its workflow and fail at once a handler that has
// lost its job; the last insert fences the fan-out under the lease
// (qInsertWorkflowTasks). Its first result is whether the job holds its
// lease, its workflow and task, and the workflow's name; its second the
// workflow's tasks by name.
const qAddTasksBegin = `SET NOCOUNT ON;
DECLARE @rc INT, @wf BIGINT, @task NVARCHAR(200), @found BIT;
` + workflowLockTaken + `
SET @found = NULL;
SET @wf = NULL;
SET @task = NULL;
SELECT @found = 1, @wf = h.WorkflowId, @task = h.WorkflowTask
FROM {{s}}.JobsHot AS h WITH (READCOMMITTEDLOCK)
WHERE h.Id = @id AND h.RunLease = @lease AND h.Status = 2;
SELECT ISNULL(@found, 0), @wf, @task, (SELECT w.Name FROM {{s}}.Workflows AS w WHERE w.Id = @wf);
SELECT t.WorkflowTask, t.Id FROM (
    SELECT h.WorkflowTask, h.Id FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = @wf
    UNION ALL
    SELECT a.WorkflowTask, a.Id FROM {{s}}.JobsArchive AS a WHERE a.WorkflowId IS NOT NULL AND a.WorkflowId = @wf
    UNION ALL
    SELECT d.WorkflowTask, d.Id FROM {{s}}.JobsDLQ AS d WHERE d.WorkflowId IS NOT NULL AND d.WorkflowId = @wf) AS t
ORDER BY t.Id;`

// qReleaseTasks is one release step (ADR 0034), in its own transaction
// under the workflow lock (taken without waiting: when another step holds
// it, this one does nothing and says so). It takes up to @maxParents
// finished tasks that owe a release from each of the archive, the DLQ and
// WorkflowGone, update-locked and read past (a move or purge in flight is
// the next step's), and walks their edges in (parent, child) order from
// each one's cursor, at most @maxEdges edges in all: so a step locks a
// bounded number of rows (well below lock escalation's 5,000) whatever the
// fan-out, and a parent of 10,000 children is paid in ten steps. For each
// open edge whose child waits (Status 5, update-locked: never read past,
// so no child is skipped): a parent archived, or failed under
// DependencyRunAnyway, marks the edge done and the child, at its last open
// edge, Pending; a failed parent under DependencyWait leaves it waiting
// (until a resurrect, or a purge that cancels it); otherwise the child is
// dead-lettered as DependencyFailed, and its own DLQ row owes its
// children in turn. A gone parent's edges are deleted as it is paid, and
// a workflow whose last task is gone goes with it. A parent whose edges
// are all walked has its cursor set to NULL (its WorkflowGone row
// deleted); one cut by the budget keeps the last child walked. The result:
// Two reads past, argued in ADR 0016: the edge walk (under the workflow
// lock only an open EnqueueWorkflowTx holds edges, of its own new tasks,
// and the walk must not wait for one at its range's end), and the cursor
// writes (a purge or trim holding the owed row's key waits for this
// step's lock on the row's IX_Release key; a skipped write only makes a
// later step walk again, which changes nothing it changed: done edges and
// moved children are left alone, and the purge's WorkflowGone row walks
// from 0). The children are locked only for open edges.
// whether more is owed (an owed row it did not walk or finish, or a child
// it dead-lettered, which owes its own children: the store runs another
// step), and whether the lock was busy; its second, the workflows that
// ended in it (WithWorkflowEnded). @workflowId 0 pays every
// workflow's; another pays only that workflow's (the doctor's, which must
// not touch an application's rows).
var qReleaseTasks = `SET NOCOUNT ON;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @now DATETIME2(7) = SYSUTCDATETIME(), @rc INT, @budget INT = @maxEdges, @p BIGINT, @cur BIGINT, @got INT;
DECLARE @more BIT = 0, @busy BIT = 0;
DECLARE @owed TABLE (Id BIGINT NOT NULL PRIMARY KEY, Source TINYINT NOT NULL, WorkflowId BIGINT NOT NULL, Failed BIT NOT NULL,
    Task NVARCHAR(200) NULL, Reason INT NULL, FromCursor BIGINT NOT NULL, NewCursor BIGINT NULL, Walked BIT NOT NULL);
DECLARE @edges TABLE (ParentId BIGINT NOT NULL, ChildId BIGINT NOT NULL, State TINYINT NOT NULL, Act TINYINT NULL,
    PRIMARY KEY (ParentId, ChildId));
DECLARE @done TABLE (ChildId BIGINT NOT NULL);
DECLARE @ended TABLE (WorkflowId BIGINT NOT NULL PRIMARY KEY, Failed BIT NOT NULL);
BEGIN TRANSACTION;
EXEC @rc = sys.sp_getapplock @Resource = ` + workflowLock + `, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 0;
IF @rc < 0
    SET @busy = 1;
ELSE
BEGIN
    INSERT INTO @owed (Id, Source, WorkflowId, Failed, Task, Reason, FromCursor, Walked)
    SELECT TOP (@maxParents) a.Id, 1, a.WorkflowId, 0, a.WorkflowTask, NULL, a.ReleaseCursor, 0
    FROM {{s}}.JobsArchive AS a WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE a.ReleaseCursor IS NOT NULL AND (@workflowId = 0 OR a.WorkflowId = @workflowId)
    ORDER BY a.Id;
    IF @@ROWCOUNT = @maxParents
        SET @more = 1;
    INSERT INTO @owed (Id, Source, WorkflowId, Failed, Task, Reason, FromCursor, Walked)
    SELECT TOP (@maxParents) d.Id, 2, d.WorkflowId, 1, d.WorkflowTask, d.FailureReason, d.ReleaseCursor, 0
    FROM {{s}}.JobsDLQ AS d WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE d.ReleaseCursor IS NOT NULL AND (@workflowId = 0 OR d.WorkflowId = @workflowId)
    ORDER BY d.Id;
    IF @@ROWCOUNT = @maxParents
        SET @more = 1;
    INSERT INTO @owed (Id, Source, WorkflowId, Failed, Task, Reason, FromCursor, Walked)
    SELECT TOP (@maxParents) g.ParentId, 3, g.WorkflowId, g.Failed, g.WorkflowTask, NULL, g.ReleaseCursor, 0
    FROM {{s}}.WorkflowGone AS g WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    WHERE @workflowId = 0 OR g.WorkflowId = @workflowId
    ORDER BY g.ParentId;
    IF @@ROWCOUNT = @maxParents
        SET @more = 1;
    WHILE @budget > 0
    BEGIN
        SET @p = NULL;
        SET @cur = NULL;
        SELECT TOP (1) @p = Id, @cur = FromCursor FROM @owed WHERE Walked = 0 ORDER BY Source, Id;
        IF @p IS NULL
            BREAK;
        INSERT INTO @edges (ParentId, ChildId, State)
        SELECT TOP (@budget) e.ParentId, e.ChildId, e.State
        FROM {{s}}.WorkflowEdges AS e WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE e.ParentId = @p AND e.ChildId > @cur
        ORDER BY e.ChildId;
        SET @got = @@ROWCOUNT;
        UPDATE @owed SET Walked = 1,
            NewCursor = CASE WHEN @got = @budget THEN (SELECT MAX(x.ChildId) FROM @edges AS x WHERE x.ParentId = @p) END
        WHERE Id = @p;
        SET @budget -= @got;
    END
    IF EXISTS (SELECT 1 FROM @owed WHERE Walked = 0 OR NewCursor IS NOT NULL)
        SET @more = 1;
    UPDATE x SET Act = CASE
            WHEN x.State <> 0 THEN 0
            WHEN h.Id IS NULL THEN CASE WHEN o.Failed = 0 THEN 1 ELSE 0 END
            WHEN o.Failed = 0 OR h.OnParentFailure = 1 THEN 1
            WHEN h.OnParentFailure = 2 AND o.Source <> 3 THEN 0
            ELSE 2 END
    FROM @edges AS x
    INNER JOIN @owed AS o ON o.Id = x.ParentId
    LEFT JOIN {{s}}.JobsHot AS h WITH (FORCESEEK, UPDLOCK, ROWLOCK, READCOMMITTEDLOCK) ON x.State = 0 AND h.Id = x.ChildId AND h.Status = 5;
    UPDATE e SET State = 1
    OUTPUT inserted.ChildId INTO @done (ChildId)
    FROM {{s}}.WorkflowEdges AS e WITH (FORCESEEK, ROWLOCK)
    INNER JOIN @edges AS x ON x.ParentId = e.ParentId AND x.ChildId = e.ChildId
    WHERE x.Act = 1 AND e.State = 0;
    UPDATE h SET WaitingOn = h.WaitingOn - d.N, Status = CASE WHEN h.WaitingOn - d.N > 0 THEN 5 ELSE 0 END, LastUpdatedUtc = @now
    FROM {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK)
    INNER JOIN (SELECT ChildId, COUNT(*) AS N FROM @done GROUP BY ChildId) AS d ON d.ChildId = h.Id
    WHERE h.Status = 5;
    DELETE h
    OUTPUT ` + dlqFromDeleted + `, 12,
        N'parent task "' + ISNULL(o.Task, N'') + N'" (job ' + CONVERT(NVARCHAR(20), o.Id) + CASE WHEN o.Source = 3
            THEN N') left the dead-letter queue without succeeding (purged or trimmed)'
            ELSE N') ended in the dead-letter queue: ' + ` + "{{reasonName}}" + ` END
    INTO {{s}}.JobsDLQ (` + dlqColumns + `)
    FROM {{s}}.JobsHot AS h WITH (FORCESEEK, ROWLOCK)
    INNER JOIN (SELECT ChildId, MIN(ParentId) AS ParentId FROM @edges WHERE Act = 2 GROUP BY ChildId) AS f ON f.ChildId = h.Id
    INNER JOIN @owed AS o ON o.Id = f.ParentId
    WHERE h.Status = 5;
    IF @@ROWCOUNT > 0
        SET @more = 1; -- the children it dead-lettered owe their own children: the next step
    DELETE e
    FROM {{s}}.WorkflowEdges AS e WITH (FORCESEEK, ROWLOCK)
    INNER JOIN @edges AS x ON x.ParentId = e.ParentId AND x.ChildId = e.ChildId
    INNER JOIN @owed AS o ON o.Id = x.ParentId
    WHERE o.Source = 3;
    UPDATE a SET ReleaseCursor = o.NewCursor
    FROM {{s}}.JobsArchive AS a WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    INNER JOIN @owed AS o ON o.Id = a.Id
    WHERE o.Source = 1 AND o.Walked = 1;
    UPDATE d SET ReleaseCursor = o.NewCursor
    FROM {{s}}.JobsDLQ AS d WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    INNER JOIN @owed AS o ON o.Id = d.Id
    WHERE o.Source = 2 AND o.Walked = 1;
    UPDATE g SET ReleaseCursor = o.NewCursor
    FROM {{s}}.WorkflowGone AS g WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    INNER JOIN @owed AS o ON o.Id = g.ParentId
    WHERE o.Source = 3 AND o.Walked = 1 AND o.NewCursor IS NOT NULL;
    DELETE g
    FROM {{s}}.WorkflowGone AS g WITH (FORCESEEK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
    INNER JOIN @owed AS o ON o.Id = g.ParentId
    WHERE o.Source = 3 AND o.Walked = 1 AND o.NewCursor IS NULL;
    DELETE w
    FROM {{s}}.Workflows AS w WITH (ROWLOCK)
    WHERE w.Id IN (SELECT o.WorkflowId FROM @owed AS o WHERE o.Source = 3 AND o.Walked = 1 AND o.NewCursor IS NULL)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = w.Id)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsArchive AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = w.Id)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = w.Id)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.WorkflowGone AS t WHERE t.WorkflowId = w.Id);
    -- A workflow ended here when this step paid a finished task of it in
    -- full and it has no task hot and none owed: the last to leave, once
    -- (a gone task's row ends nothing: its workflow had ended before).
    INSERT INTO @ended (WorkflowId, Failed)
    SELECT x.WorkflowId,
        CASE WHEN EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = x.WorkflowId) THEN 1 ELSE 0 END
    FROM (SELECT DISTINCT o.WorkflowId FROM @owed AS o WHERE o.Source IN (1, 2) AND o.Walked = 1 AND o.NewCursor IS NULL) AS x
    WHERE NOT EXISTS (SELECT 1 FROM {{s}}.JobsHot AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = x.WorkflowId)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsArchive AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = x.WorkflowId AND t.ReleaseCursor IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS t WHERE t.WorkflowId IS NOT NULL AND t.WorkflowId = x.WorkflowId AND t.ReleaseCursor IS NOT NULL);
END
COMMIT TRANSACTION;
SELECT @more, @busy;
SELECT WorkflowId, Failed FROM @ended;`

// reasonName is the name of failure reason o.Reason, as
// jobs.FailureReason.String spells it.
func reasonName() string {
	var b strings.Builder
	b.WriteString("CASE o.Reason")
	for r := range jobs.FailureReason(32) {
		if r.Valid() {
			b.WriteString(" WHEN " + strconv.Itoa(int(r)) + " THEN N'" + r.String() + "'")
		}
	}
	b.WriteString(" ELSE N'FailureReason(' + CONVERT(NVARCHAR(11), o.Reason) + N')' END")
	return b.String()
}

// qWorkflows lists workflows newest first, with their tasks counted where
// they are, each count one seek of a table's workflow index. A workflow
// whose every task is gone is not listed (its row goes at the next release
// step).
const qWorkflows = `SET NOCOUNT ON;
SELECT TOP (@limit) w.Id, w.Name, w.CreatedAtUtc,
    (SELECT COUNT_BIG(*) FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = w.Id AND h.Status IN (0, 3, 4)),
    (SELECT COUNT_BIG(*) FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = w.Id AND h.Status = 5),
    (SELECT COUNT_BIG(*) FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = w.Id AND h.Status IN (1, 2)),
    (SELECT COUNT_BIG(*) FROM {{s}}.JobsArchive AS a WHERE a.WorkflowId IS NOT NULL AND a.WorkflowId = w.Id),
    (SELECT COUNT_BIG(*) FROM {{s}}.JobsDLQ AS d WHERE d.WorkflowId IS NOT NULL AND d.WorkflowId = w.Id)
FROM {{s}}.Workflows AS w
WHERE (@beforeId = 0 OR w.Id < @beforeId)
  AND (EXISTS (SELECT 1 FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = w.Id)
       OR EXISTS (SELECT 1 FROM {{s}}.JobsArchive AS a WHERE a.WorkflowId IS NOT NULL AND a.WorkflowId = w.Id)
       OR EXISTS (SELECT 1 FROM {{s}}.JobsDLQ AS d WHERE d.WorkflowId IS NOT NULL AND d.WorkflowId = w.Id))
ORDER BY w.Id DESC;`

// qGetWorkflow reads one workflow: its row, its tasks in ID order (parents
// before children: a task's ID is above its parents'), and its edges.
const qGetWorkflow = `SET NOCOUNT ON;
SELECT w.Id, w.Name, w.CreatedAtUtc FROM {{s}}.Workflows AS w WHERE w.Id = @id;
SELECT t.Id, t.WorkflowTask, t.TableKind, t.Status, t.OnParentFailure, t.WaitingOn, t.FailureReason FROM (
    SELECT h.Id, h.WorkflowTask, CAST(1 AS TINYINT) AS TableKind, h.Status, h.OnParentFailure, h.WaitingOn, CAST(NULL AS INT) AS FailureReason
    FROM {{s}}.JobsHot AS h WHERE h.WorkflowId IS NOT NULL AND h.WorkflowId = @id
    UNION ALL
    SELECT a.Id, a.WorkflowTask, CAST(2 AS TINYINT), CAST(NULL AS TINYINT), a.OnParentFailure, CAST(NULL AS INT), CAST(NULL AS INT)
    FROM {{s}}.JobsArchive AS a WHERE a.WorkflowId IS NOT NULL AND a.WorkflowId = @id
    UNION ALL
    SELECT d.Id, d.WorkflowTask, CAST(3 AS TINYINT), CAST(NULL AS TINYINT), d.OnParentFailure, CAST(NULL AS INT), d.FailureReason
    FROM {{s}}.JobsDLQ AS d WHERE d.WorkflowId IS NOT NULL AND d.WorkflowId = @id) AS t
ORDER BY t.Id;
SELECT e.ParentId, e.ChildId, e.State FROM {{s}}.WorkflowEdges AS e WHERE e.WorkflowId = @id ORDER BY e.ChildId, e.ParentId;`

// qResetForTest empties every table between contract cases.
const qResetForTest = `DELETE FROM {{s}}.JobsHot; DELETE FROM {{s}}.JobsArchive; DELETE FROM {{s}}.JobsDLQ; DELETE FROM {{s}}.Queues;
DELETE FROM {{s}}.Schedules; DELETE FROM {{s}}.JobUniqueKeys; DELETE FROM {{s}}.QueueKeyLimits; DELETE FROM {{s}}.FlowWaits;
DELETE FROM {{s}}.WorkflowEdges; DELETE FROM {{s}}.WorkflowGone; DELETE FROM {{s}}.Workflows;`

// queries is every statement rendered for one schema.
type queries struct {
	enqueueKeyed, enqueueKeyedTx, jobByKey, enqueueBatch              string
	enqueueUnique, enqueueUniqueTx, lockEnqueueKeys                   string
	claim, adoptClaim                                                 string
	dueProbe                                                          string
	start, heartbeat, heartbeatProgress, complete, snooze, deadLetter string
	cancel                                                            string
	transition                                                        string
	release                                                           string
	rescueFetched, rescueZombies, rescueExpired                       string
	resurrect                                                         string
	purge, list, count                                                map[jobs.Table]string
	getJob, queues, updateQueue, queueStats, now                      string
	queueDepths, serverLevel, caseSensitiveNames                      string
	tableQueues                                                       map[jobs.Table]string
	syncSchedules, fireSchedule, schedules                            string
	pauseSchedule, deleteSchedule                                     string
	finishedCounts                                                    string
	trim                                                              map[jobs.Table]string
	ageForTest, resetForTest                                          string
	insertWorkflowTasks, addTasksBegin, releaseTasks                  string
	workflows, getWorkflow                                            string
	tryAppLock, appLockMode, releaseAppLock                           string
	// The doctor's own checks (queries_doctor.go).
	doctorServer, doctorDatabase, doctorPrivileges string
	doctorTranState, doctorLocks                   string
	probeType, probeSequence                       string
	probes                                         map[string]string
}

var agoColumn = strings.NewReplacer(
	"{{ago:CreatedAtUtc}}", agoFrom("by", "CreatedAtUtc"),
	"{{ago:ScheduledAtUtc}}", agoFrom("by", "ScheduledAtUtc"),
	"{{ago:LastUpdatedUtc}}", agoFrom("by", "LastUpdatedUtc"),
	"{{ago:StartedAtUtc}}", agoFrom("by", "StartedAtUtc"),
	"{{ago:HeartbeatUtc}}", agoFrom("by", "HeartbeatUtc"),
	"{{ago:DeadlineUtc}}", agoFrom("by", "DeadlineUtc"),
	"{{ago:FinishedAtUtc}}", agoFrom("by", "FinishedAtUtc"),
	"{{ago:LastFiredTickUtc}}", agoFrom("by", "LastFiredTickUtc"),
	"{{ago:LastFiredAtUtc}}", agoFrom("by", "LastFiredAtUtc"),
	"{{ago:NextFireUtc}}", agoFrom("by", "NextFireUtc"),
	"{{ago:UpdatedAtUtc}}", agoFrom("by", "UpdatedAtUtc"),
	"{{ago:SyncedAtUtc}}", agoFrom("by", "SyncedAtUtc"),
	"{{ago:RateWindowStartUtc}}", agoFrom("by", "RateWindowStartUtc"),
)

var (
	noUnique    = "NULL, NULL, NULL"
	batchInsert = strings.NewReplacer("{{idExpr}}", "@first + i.Ord", "{{keyExpr}}", "NULL", "{{uniqueExpr}}", noUnique).Replace(insertFromItems)
	keyedInsert = strings.NewReplacer("{{idExpr}}", "@id", "{{keyExpr}}", "@k", "{{uniqueExpr}}", noUnique).Replace(insertFromItems)
	// uniqueInsert is the insert of a unique job, with or without an
	// idempotency key (@k is NULL without one).
	uniqueInsert = strings.NewReplacer("{{idExpr}}", "@id", "{{keyExpr}}", "@k", "{{uniqueExpr}}", "@h, @b, @us").Replace(insertFromItems)
)

// render builds every statement for a schema name that schema.ValidateName
// accepts: bracket-quoted where it names the schema, bare inside the names
// of application locks.
func render(name string) *queries {
	r := strings.NewReplacer(
		"{{s}}", schema.Quote(name),
		"{{name}}", strings.ToUpper(name), // in application lock names only
		"{{unifiedColumnsDecl}}", unifiedDecl(),
		"{{claimedCols}}", unifiedSelect("c"),
		"{{hotInserted}}", cols(unifiedHot, "inserted"),
		"{{defaultDeadline}}", delayFrom("default", "@now"),
		"{{kindDeadline}}", delayFrom("timeout", "@now"),
		"{{retryAt}}", delayFrom("delay", "@now"),
		"{{retryAtItem}}", addMs("rr.DelayMs", "@now"),
		"{{timeoutAgo}}", agoFrom("timeout", "@now"),
		"{{hotCols}}", cols(unifiedHot, "h"),
		"{{archiveCols}}", cols(unifiedArchive, "a"),
		"{{dlqCols}}", cols(unifiedDLQ, "d"),
		"{{maxBusiestKeys}}", strconv.Itoa(jobs.MaxBusiestKeys),
		"{{maxKeyLimits}}", strconv.Itoa(jobs.MaxKeyLimits),
	)
	q := &queries{
		enqueueKeyed:       r.Replace(strings.Replace(ownTx(keyedPrologue, keyedBody), "{{insertKeyed}}", keyedInsert, 1)),
		enqueueKeyedTx:     r.Replace(strings.Replace(callersTx(keyedPrologue, keyedBody), "{{insertKeyed}}", keyedInsert, 1)),
		jobByKey:           r.Replace(qJobByKey),
		enqueueUnique:      r.Replace(strings.Replace(ownTx(uniquePrologue, uniqueBody), "{{insertUnique}}", uniqueInsert, 1)),
		enqueueUniqueTx:    r.Replace(strings.Replace(callersTx(uniquePrologue, uniqueBody), "{{insertUnique}}", uniqueInsert, 1)),
		lockEnqueueKeys:    r.Replace(qLockEnqueueKeys),
		adoptClaim:         r.Replace(qAdoptClaim),
		serverLevel:        schema.ServerLevelQuery,
		caseSensitiveNames: qCaseSensitiveNames,
		enqueueBatch:       r.Replace(strings.Replace(qEnqueueBatch, "{{insertBatch}}", batchInsert, 1)),
		claim:              r.Replace(qClaim),
		dueProbe:           r.Replace(qDueProbe),
		start:              r.Replace(qStart),
		heartbeat:          r.Replace(qHeartbeat),
		heartbeatProgress:  r.Replace(qHeartbeatProgress),
		complete:           r.Replace(qComplete),
		deadLetter:         r.Replace(qDeadLetter),
		snooze:             r.Replace(qSnooze),
		cancel:             r.Replace(qCancel),
		transition:         r.Replace(qTransition),
		release:            r.Replace(qRelease),
		rescueFetched:      r.Replace(qRescueFetched),
		rescueZombies:      r.Replace(qRescueZombies),
		rescueExpired:      r.Replace(qRescueExpired),
		resurrect:          r.Replace(qResurrect()),
		getJob:             r.Replace(qGetJob),
		queues:             r.Replace(qQueues),
		updateQueue:        r.Replace(qUpdateQueue),
		queueStats:         r.Replace(qQueueStats),
		now:                qNow,
		queueDepths:        r.Replace(qQueueDepths),
		syncSchedules:      r.Replace(qSyncSchedules),
		fireSchedule:       r.Replace(qFireSchedule),
		schedules:          r.Replace(qSchedules),
		pauseSchedule:      r.Replace(qPauseSchedule),
		deleteSchedule:     r.Replace(qDeleteSchedule),
		finishedCounts:     r.Replace(qFinishedCounts),
		tableQueues:        map[jobs.Table]string{},
		trim: map[jobs.Table]string{
			jobs.TableArchive: r.Replace(qTrim("JobsArchive", "IX_JobsArchive_Queue")),
			jobs.TableDLQ:     r.Replace(qTrim("JobsDLQ", "IX_JobsDLQ_Queue")),
		},
		insertWorkflowTasks: r.Replace(qInsertWorkflowTasks),
		addTasksBegin:       r.Replace(qAddTasksBegin),
		releaseTasks:        r.Replace(strings.Replace(qReleaseTasks, "{{reasonName}}", reasonName(), 1)),
		workflows:           r.Replace(qWorkflows),
		getWorkflow:         r.Replace(qGetWorkflow),
		ageForTest:          r.Replace(agoColumn.Replace(qAgeForTest)),
		resetForTest:        r.Replace(qResetForTest),
		tryAppLock:          qTryAppLock,
		appLockMode:         qAppLockMode,
		releaseAppLock:      qReleaseAppLock,
		purge:               map[jobs.Table]string{},
		list:                map[jobs.Table]string{},
		count:               map[jobs.Table]string{},
	}
	for t, ts := range tables {
		q.list[t] = r.Replace(ts.qList())
		q.count[t] = r.Replace(ts.qCount())
		q.tableQueues[t] = r.Replace(tableQueues(ts.name))
		if t != jobs.TableHot {
			q.purge[t] = r.Replace(ts.qPurge())
		}
	}
	doctorStatements(q, r)
	return q
}
