-- chokaq-go schema, version 3: the table types of the worker's batch forms
-- (ADR 0018): a retry and a dead-letter carry their own parameters per job.
-- Starts and completes take IdLeaseList. {{.Schema}} is the bracket-quoted,
-- validated schema name. The application role of version 2 has EXECUTE on
-- the schema, which covers the types it contains.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

EXEC(N'CREATE TYPE {{.Schema}}.RetryList AS TABLE (
    Id      BIGINT        NOT NULL,
    Lease   BIGINT        NOT NULL,
    DelayMs BIGINT        NOT NULL,
    Error   NVARCHAR(MAX) NULL,
    PRIMARY KEY (Id, Lease))');

EXEC(N'CREATE TYPE {{.Schema}}.DeadLetterList AS TABLE (
    Id      BIGINT        NOT NULL,
    Lease   BIGINT        NOT NULL,
    Reason  INT           NOT NULL,
    Details NVARCHAR(MAX) NULL,
    PRIMARY KEY (Id, Lease))');

COMMIT TRANSACTION;
