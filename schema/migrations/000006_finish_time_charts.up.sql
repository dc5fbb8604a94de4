-- chokaq-go schema, version 6: the finish-time indexes carry what the
-- dashboard's charts group by (ADR 0022), so counting the jobs that
-- finished in a window per queue (and per reason, for dead letters) reads
-- the window's range of one narrow index and no row of the tables.
-- {{.Schema}} is the bracket-quoted, validated schema name. DROP_EXISTING
-- rebuilds each index in place; on a large archive that takes a while, and
-- the table stays readable, not writable, until it ends (ONLINE = ON would
-- avoid that, but only some editions have it).
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

CREATE NONCLUSTERED INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive (FinishedAtUtc) INCLUDE (Queue)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
CREATE NONCLUSTERED INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ (FinishedAtUtc) INCLUDE (Queue, FailureReason)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
-- A chart of one queue seeks the queue's index instead.
CREATE NONCLUSTERED INDEX IX_JobsDLQ_Queue ON {{.Schema}}.JobsDLQ (Queue, FinishedAtUtc) INCLUDE (FailureReason)
    WITH (DROP_EXISTING = ON);

COMMIT TRANSACTION;
