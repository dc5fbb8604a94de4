-- chokaq-go schema, version 1. golang-migrate sends this file as one batch,
-- so statements that must start a batch (CREATE SCHEMA, CREATE TYPE) go
-- through EXEC. {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

-- All or nothing: DDL is transactional in SQL Server.
BEGIN TRANSACTION;

IF SCHEMA_ID(N'{{.Name}}') IS NULL EXEC(N'CREATE SCHEMA {{.Schema}}');

-- One sequence numbers every job for life: archive, DLQ and resurrect keep
-- the ID, so no two tables can ever collide.
CREATE SEQUENCE {{.Schema}}.JobIds AS BIGINT START WITH 1 INCREMENT BY 1 CACHE 1000;

-- Active work. No triggers, foreign keys or CHECK constraints on any job
-- table: each is the target of an OUTPUT ... INTO move.
CREATE TABLE {{.Schema}}.JobsHot (
    Id             BIGINT          NOT NULL CONSTRAINT DF_JobsHot_Id DEFAULT (NEXT VALUE FOR {{.Schema}}.JobIds),
    Queue          NVARCHAR(100)   NOT NULL,
    Type           NVARCHAR(200)   NOT NULL,
    Payload        VARBINARY(MAX)  NULL,
    Priority       INT             NOT NULL,
    Tags           NVARCHAR(1000)  NULL,
    IdempotencyKey NVARCHAR(200)   NULL,
    CreatedBy      NVARCHAR(100)   NULL,
    MaxAttempts    INT             NOT NULL,
    AttemptCount   INT             NOT NULL,
    Status         TINYINT         NOT NULL, -- 0 Pending, 1 Fetched, 2 Processing
    CreatedAtUtc   DATETIME2(7)    NOT NULL,
    ScheduledAtUtc DATETIME2(7)    NOT NULL, -- due time; the creation time for an immediate job
    LastUpdatedUtc DATETIME2(7)    NOT NULL, -- last status change
    WorkerId       NVARCHAR(200)   NULL,
    RunLease       BIGINT          NOT NULL, -- fencing token, +1 at every claim
    StartedAtUtc   DATETIME2(7)    NULL,
    HeartbeatUtc   DATETIME2(7)    NULL,
    DeadlineUtc    DATETIME2(7)    NULL,
    LastError      NVARCHAR(MAX)   NULL,
    CONSTRAINT PK_JobsHot PRIMARY KEY CLUSTERED (Id) WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)
);

-- The claim reads this index in order: one queue's due Pending rows by
-- priority, due time and ID, so TOP (@n) touches about @n rows.
CREATE NONCLUSTERED INDEX IX_JobsHot_Claim
    ON {{.Schema}}.JobsHot (Queue, Status, Priority DESC, ScheduledAtUtc, Id);

-- Rescue seeks by status; Fetched and Processing rows are few.
CREATE NONCLUSTERED INDEX IX_JobsHot_Status
    ON {{.Schema}}.JobsHot (Status, LastUpdatedUtc) INCLUDE (Queue, HeartbeatUtc, DeadlineUtc);

-- Idempotency keys are unique among active jobs only.
CREATE UNIQUE NONCLUSTERED INDEX UX_JobsHot_IdempotencyKey
    ON {{.Schema}}.JobsHot (IdempotencyKey) WHERE IdempotencyKey IS NOT NULL;

CREATE TABLE {{.Schema}}.JobsArchive (
    Id             BIGINT          NOT NULL,
    Queue          NVARCHAR(100)   NOT NULL,
    Type           NVARCHAR(200)   NOT NULL,
    Payload        VARBINARY(MAX)  NULL,
    Priority       INT             NOT NULL,
    Tags           NVARCHAR(1000)  NULL,
    IdempotencyKey NVARCHAR(200)   NULL,
    CreatedBy      NVARCHAR(100)   NULL,
    MaxAttempts    INT             NOT NULL,
    AttemptCount   INT             NOT NULL,
    CreatedAtUtc   DATETIME2(7)    NOT NULL,
    ScheduledAtUtc DATETIME2(7)    NOT NULL,
    WorkerId       NVARCHAR(200)   NULL,
    RunLease       BIGINT          NOT NULL,
    StartedAtUtc   DATETIME2(7)    NULL,
    LastError      NVARCHAR(MAX)   NULL,
    FinishedAtUtc  DATETIME2(7)    NOT NULL,
    DurationMs     BIGINT          NULL,
    CONSTRAINT PK_JobsArchive PRIMARY KEY CLUSTERED (Id)
);
CREATE NONCLUSTERED INDEX IX_JobsArchive_Queue ON {{.Schema}}.JobsArchive (Queue, FinishedAtUtc);
CREATE NONCLUSTERED INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive (FinishedAtUtc);

CREATE TABLE {{.Schema}}.JobsDLQ (
    Id             BIGINT          NOT NULL,
    Queue          NVARCHAR(100)   NOT NULL,
    Type           NVARCHAR(200)   NOT NULL,
    Payload        VARBINARY(MAX)  NULL,
    Priority       INT             NOT NULL,
    Tags           NVARCHAR(1000)  NULL,
    IdempotencyKey NVARCHAR(200)   NULL,
    CreatedBy      NVARCHAR(100)   NULL,
    MaxAttempts    INT             NOT NULL,
    AttemptCount   INT             NOT NULL,
    CreatedAtUtc   DATETIME2(7)    NOT NULL,
    ScheduledAtUtc DATETIME2(7)    NOT NULL,
    WorkerId       NVARCHAR(200)   NULL,
    RunLease       BIGINT          NOT NULL,
    StartedAtUtc   DATETIME2(7)    NULL,
    HeartbeatUtc   DATETIME2(7)    NULL,
    DeadlineUtc    DATETIME2(7)    NULL,
    LastError      NVARCHAR(MAX)   NULL,
    FinishedAtUtc  DATETIME2(7)    NOT NULL,
    FailureReason  INT             NOT NULL,
    ErrorDetails   NVARCHAR(MAX)   NULL,
    CONSTRAINT PK_JobsDLQ PRIMARY KEY CLUSTERED (Id)
);
CREATE NONCLUSTERED INDEX IX_JobsDLQ_Queue ON {{.Schema}}.JobsDLQ (Queue, FinishedAtUtc);
CREATE NONCLUSTERED INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ (FinishedAtUtc);

CREATE TABLE {{.Schema}}.Queues (
    Name                    NVARCHAR(100) NOT NULL,
    IsPaused                BIT           NOT NULL CONSTRAINT DF_Queues_IsPaused DEFAULT (0),
    MaxWorkers              INT           NULL, -- NULL: unlimited
    ZombieTimeoutSeconds    INT           NULL, -- NULL: the global ProcessingZombieTimeout
    ExecutionTimeoutSeconds INT           NULL, -- NULL: the processor's DefaultTimeout
    LastUpdatedUtc          DATETIME2(7)  NOT NULL CONSTRAINT DF_Queues_LastUpdatedUtc DEFAULT (SYSUTCDATETIME()),
    CONSTRAINT PK_Queues PRIMARY KEY CLUSTERED (Name)
);

-- Lists passed as table-valued parameters.
EXEC(N'CREATE TYPE {{.Schema}}.IdLeaseList AS TABLE (Id BIGINT NOT NULL, Lease BIGINT NOT NULL, PRIMARY KEY (Id, Lease))');
EXEC(N'CREATE TYPE {{.Schema}}.IdList AS TABLE (Id BIGINT NOT NULL PRIMARY KEY)');
EXEC(N'CREATE TYPE {{.Schema}}.JobInsertList AS TABLE (
    Ord         INT            NOT NULL PRIMARY KEY,
    Queue       NVARCHAR(100)  NOT NULL,
    Type        NVARCHAR(200)  NOT NULL,
    Payload     VARBINARY(MAX) NULL,
    Priority    INT            NOT NULL,
    DelayMs     BIGINT         NOT NULL,
    RunAtMs     BIGINT         NULL,
    MaxAttempts INT            NOT NULL,
    Tags        NVARCHAR(1000) NULL,
    CreatedBy   NVARCHAR(100)  NULL)');

COMMIT TRANSACTION;
