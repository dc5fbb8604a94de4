-- chokaq-go schema, version 2: indexes that fit the statements' lock order
-- (ADR 0016), the claim id, the queue-list table type and the application
-- role. {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- Each claim stamps its rows with a random id, so a claim repeated after its
-- reply was lost adopts the rows the first attempt took instead of leaving
-- them Fetched until rescue phase 1.
ALTER TABLE {{.Schema}}.JobsHot ADD ClaimId BIGINT NULL;

-- Rescue phase 1 and the claim's adoption read Fetched rows, and nothing
-- reads the Pending backlog through this index: it holds Fetched and
-- Processing rows only. HeartbeatUtc and DeadlineUtc are no longer in it,
-- so a heartbeat changes no key of it.
DROP INDEX IX_JobsHot_Status ON {{.Schema}}.JobsHot;
CREATE NONCLUSTERED INDEX IX_JobsHot_Active
    ON {{.Schema}}.JobsHot (Status, LastUpdatedUtc) INCLUDE (Queue, WorkerId, ClaimId)
    WHERE Status IN (1, 2);

-- Phases 2 and 3 seek their cutoff: only rows past it are read (and
-- update-locked), never the live ones.
CREATE NONCLUSTERED INDEX IX_JobsHot_Heartbeat
    ON {{.Schema}}.JobsHot (HeartbeatUtc) INCLUDE (Queue)
    WHERE Status = 2;
CREATE NONCLUSTERED INDEX IX_JobsHot_Deadline
    ON {{.Schema}}.JobsHot (DeadlineUtc)
    WHERE Status = 2;

-- The archive and the DLQ are appended at their newest end, by ID and by
-- finish time: the last-page insert contention OPTIMIZE_FOR_SEQUENTIAL_KEY
-- exists for (SQL Server 2019 and Azure SQL).
ALTER INDEX PK_JobsArchive ON {{.Schema}}.JobsArchive SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
ALTER INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
ALTER INDEX PK_JobsDLQ ON {{.Schema}}.JobsDLQ SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
ALTER INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);

-- Queue lists (QueueDepths), instead of a string split: STRING_SPLIT needs
-- database compatibility level 130.
EXEC(N'CREATE TYPE {{.Schema}}.QueueList AS TABLE (Name NVARCHAR(100) NOT NULL PRIMARY KEY)');

-- The rights the store needs at run time, and no more: read and write the
-- schema's tables, use its table types (EXECUTE) and its sequence
-- (UPDATE). sp_getapplock is open to public. Grant the role to the
-- service's login: ALTER ROLE {{.Name}}_app ADD MEMBER <user>.
IF DATABASE_PRINCIPAL_ID(N'{{.Name}}_app') IS NULL EXEC(N'CREATE ROLE [{{.Name}}_app]');
EXEC(N'GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON SCHEMA::{{.Schema}} TO [{{.Name}}_app]');

COMMIT TRANSACTION;
