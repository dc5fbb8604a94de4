-- chokaq-go schema, version 6: the finish-time indexes carry what the
-- dashboard's charts group by (ADR 0022), so counting the jobs that
-- finished in a window per queue (and per reason, for dead letters) reads
-- the window's range of one narrow index and no row of the tables.
-- {{.Schema}} is the bracket-quoted, validated schema name.
--
-- CREATE INDEX ... WITH (DROP_EXISTING = ON) rebuilds an index from the
-- table. Offline it holds a schema-modification lock on the table for the
-- whole rebuild: every statement that reads or writes JobsArchive
-- (complete) or JobsDLQ (dead letters, rescue, cancel, resurrect, trim, the
-- dashboard) waits for it. Where the edition has online index operations
-- (SERVERPROPERTY('EngineEdition') 3: Enterprise, Developer, Evaluation;
-- 5: Azure SQL Database; 8: Azure SQL Managed Instance) the rebuilds run
-- online and hold that lock only for a moment at their end. Elsewhere they
-- run offline: run this migration in a maintenance window (README, SQL
-- Server; docs/operations.md).
--
-- No transaction around the file: a lock taken by a rebuild, online or
-- offline, would be held until the file's COMMIT, so each rebuild commits
-- on its own. Each is repeatable: if the file stops part way (version 6
-- dirty), `chokaq migrate force 5` and `chokaq migrate up` run it again.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

DECLARE @online NVARCHAR(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS INT) IN (3, 5, 8)
    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END;

EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive (FinishedAtUtc) INCLUDE (Queue)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON, ' + @online + N')');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ (FinishedAtUtc) INCLUDE (Queue, FailureReason)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON, ' + @online + N')');
-- A chart of one queue seeks the queue's index instead.
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Queue ON {{.Schema}}.JobsDLQ (Queue, FinishedAtUtc) INCLUDE (FailureReason)
    WITH (DROP_EXISTING = ON, ' + @online + N')');
