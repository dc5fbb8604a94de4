-- chokaq-go schema, version 5: schedules and retention (ADR 0020). A
-- schedule's row records the last tick fired, so that a fire is a
-- compare-and-set on it, in the transaction of the job it enqueues; a
-- queue's row may override how long its archived and dead-lettered jobs
-- are kept. {{.Schema}} is the bracket-quoted, validated schema name. The
-- application role of version 2 has its rights on the schema, which cover
-- the new table and type.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

CREATE TABLE {{.Schema}}.Schedules (
    Name             NVARCHAR(80)  NOT NULL,
    Definition       NVARCHAR(MAX) NOT NULL, -- JSON, as package schedule writes it
    DefinitionHash   NVARCHAR(64)  NOT NULL,
    LastFiredTickUtc DATETIME2(7)  NOT NULL, -- a fire of tick T needs LastFiredTickUtc < T
    LastFiredAtUtc   DATETIME2(7)  NULL,
    NextFireUtc      DATETIME2(7)  NULL,
    IsPaused         BIT           NOT NULL,
    CreatedAtUtc     DATETIME2(7)  NOT NULL,
    UpdatedAtUtc     DATETIME2(7)  NOT NULL, -- the definition or the pause changed
    SyncedAtUtc      DATETIME2(7)  NOT NULL, -- a starting process last defined it
    CONSTRAINT PK_Schedules PRIMARY KEY CLUSTERED (Name)
);

EXEC(N'CREATE TYPE {{.Schema}}.ScheduleList AS TABLE (
    Name           NVARCHAR(80)  NOT NULL PRIMARY KEY,
    Definition     NVARCHAR(MAX) NOT NULL,
    DefinitionHash NVARCHAR(64)  NOT NULL,
    IsPaused       BIT           NOT NULL)');

-- NULL: the retention loop's own setting; 0: keep forever.
ALTER TABLE {{.Schema}}.Queues ADD
    ArchiveRetentionSeconds    INT NULL,
    DeadLetterRetentionSeconds INT NULL;

COMMIT TRANSACTION;
