-- chokaq-go schema, version 4: job control (cancel, snooze). A running job
-- an operator cancels is marked (CancelRequestedUtc, CancelNote) and its
-- worker learns of it at its next heartbeat; a snooze gives its attempt
-- back and counts itself in SnoozeCount, kept through the archive and the
-- DLQ. {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- Adding a NOT NULL column with a constant default is a metadata-only
-- change only where SERVERPROPERTY('EngineEdition') is 3 (Enterprise,
-- Developer, Evaluation), 5 or 8 (Azure SQL). On Standard and Express it
-- rewrites every row of the three tables, under a schema-modification lock
-- held until this file's COMMIT (docs/operations.md). Later migrations add
-- columns to the job tables as NULL (ADR 0008).
ALTER TABLE {{.Schema}}.JobsHot ADD
    SnoozeCount        INT           NOT NULL CONSTRAINT DF_JobsHot_SnoozeCount DEFAULT (0),
    CancelRequestedUtc DATETIME2(7)  NULL,
    CancelNote         NVARCHAR(500) NULL;
ALTER TABLE {{.Schema}}.JobsArchive ADD
    SnoozeCount INT NOT NULL CONSTRAINT DF_JobsArchive_SnoozeCount DEFAULT (0);
ALTER TABLE {{.Schema}}.JobsDLQ ADD
    SnoozeCount INT NOT NULL CONSTRAINT DF_JobsDLQ_SnoozeCount DEFAULT (0);

COMMIT TRANSACTION;
