-- chokaq-go schema, version 11: flow control (issue 29, ADR 0031). A job
-- may carry a concurrency key (its queue caps how many of the key's jobs
-- are Fetched or Processing at once) and a sequence key (the jobs of one
-- sequence run one at a time, in Id order). Both are enforced by the claim;
-- no counter is kept, so no move out of Fetched or Processing writes
-- anything new. A due job the claim may not run now is parked: Status 3
-- (waiting on its key) or 4 (waiting on its sequence), Pending to every
-- reader, and out of IX_JobsHot_Claim's Status = 0 range, so no claim reads
-- past it again; FlowWaits names the keys and sequences that have parked
-- jobs, and the claims unpark them under the queue's flow lock.
-- {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL is "no key" (every job enqueued before this version).
-- Keys compare byte for byte (BIN2), whatever the database's collation.
ALTER TABLE {{.Schema}}.JobsHot ADD
    ConcurrencyKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    SequenceKey    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE {{.Schema}}.JobsArchive ADD
    ConcurrencyKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    SequenceKey    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE {{.Schema}}.JobsDLQ ADD
    ConcurrencyKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    SequenceKey    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL;

-- The queue's limit for every key (NULL: none) and what a dead letter does
-- to its sequence (NULL or 0 continue, 1 hold: a jobs.SequencePolicy).
ALTER TABLE {{.Schema}}.Queues ADD
    MaxWorkersPerKey     INT     NULL,
    SequenceOnDeadLetter TINYINT NULL;

-- The keys a queue gives a limit of their own (QueueSettings.KeyLimits).
CREATE TABLE {{.Schema}}.QueueKeyLimits (
    Queue      NVARCHAR(100) NOT NULL,
    KeyName    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL,
    MaxWorkers INT           NOT NULL,
    CONSTRAINT PK_QueueKeyLimits PRIMARY KEY CLUSTERED (Queue, KeyName)
);

-- One row per key (Kind 3) or sequence (Kind 4) of a queue that has
-- parked jobs; written and deleted only by claims, under the queue's flow
-- lock. A row whose parked jobs are gone (cancelled) is removed by the
-- next claim that reads it.
CREATE TABLE {{.Schema}}.FlowWaits (
    Queue   NVARCHAR(100) NOT NULL,
    Kind    TINYINT       NOT NULL,
    KeyName NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL,
    CONSTRAINT PK_FlowWaits PRIMARY KEY CLUSTERED (Queue, Kind, KeyName)
);

-- Filtered indexes, one per question the claim asks (a filter allows IN
-- and AND, not OR). A job without keys is in none of them, so a queue
-- without flow control pays nothing on any write. The claim's predicates
-- repeat each filter with literals, which lets the optimizer match them.
-- Each goes through EXEC: it names columns added above, and a batch is
-- compiled before its ALTER TABLE runs.
-- A key's running jobs; a key's parked jobs, in claim order:
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsHot_KeyActive ON {{.Schema}}.JobsHot (Queue, ConcurrencyKey)
    WHERE Status IN (1, 2) AND ConcurrencyKey IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsHot_KeyWaiting ON {{.Schema}}.JobsHot (Queue, ConcurrencyKey, Priority DESC, ScheduledAtUtc, Id)
    WHERE Status = 3');
-- A sequence's hot members in order (its first is the one that may run);
-- its running member; its dead letters, for the hold policy:
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsHot_Sequence ON {{.Schema}}.JobsHot (Queue, SequenceKey, Id) INCLUDE (Status)
    WHERE SequenceKey IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsHot_SequenceActive ON {{.Schema}}.JobsHot (Queue, SequenceKey)
    WHERE Status IN (1, 2) AND SequenceKey IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Sequence ON {{.Schema}}.JobsDLQ (Queue, SequenceKey, Id) INCLUDE (FailureReason)
    WHERE SequenceKey IS NOT NULL');

-- The keys of the jobs of an enqueue that carry any, by the item's Ord: a
-- side list, as version 8's MetadataList is, since a table type cannot be
-- altered and a process of version 10 still passes JobInsertList as it was.
EXEC(N'CREATE TYPE {{.Schema}}.FlowKeyList AS TABLE (
    Ord            INT           NOT NULL PRIMARY KEY,
    ConcurrencyKey NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL,
    SequenceKey    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NULL)');
-- The key limits of one UpdateQueue (MaxWorkers 0 removes the key's own).
EXEC(N'CREATE TYPE {{.Schema}}.KeyLimitList AS TABLE (
    KeyName    NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,
    MaxWorkers INT           NOT NULL)');

-- The store writes both new tables: their own GRANT, as version 7 gives
-- each table the store writes (SELECT and EXECUTE come from the schema).
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.QueueKeyLimits TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.FlowWaits TO [{{.Name}}_app]');

COMMIT TRANSACTION;
