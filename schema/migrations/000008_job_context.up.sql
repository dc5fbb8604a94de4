-- chokaq-go schema, version 8: a job's context (issue 26, ADR 0028). Every
-- job table keeps the job's metadata (JSON, at most 4 KiB); the archive and
-- the DLQ keep the output its handler recorded (JSON, at most 32 KiB); a
-- running job keeps the progress its handler last reported, as of its last
-- heartbeat. {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008), and NULL is "none" (a job enqueued before this version, or
-- by a process of version 7 during a rolling upgrade).
ALTER TABLE {{.Schema}}.JobsHot ADD
    Metadata        NVARCHAR(MAX) NULL,
    ProgressFraction REAL         NULL,
    ProgressMessage NVARCHAR(200) NULL;
ALTER TABLE {{.Schema}}.JobsArchive ADD
    Metadata   NVARCHAR(MAX) NULL,
    OutputJson NVARCHAR(MAX) NULL;
ALTER TABLE {{.Schema}}.JobsDLQ ADD
    Metadata   NVARCHAR(MAX) NULL,
    OutputJson NVARCHAR(MAX) NULL;

-- Side lists: each holds only the rows that carry the new data (the jobs
-- enqueued with metadata, the outcomes with an output, the beats whose
-- progress changed), next to the version 1 and 3 lists, which stay as they
-- are: a table type cannot be altered, and a process of version 7 still
-- passes the old ones during a rolling upgrade. The role's EXECUTE on the
-- schema covers them.
EXEC(N'CREATE TYPE {{.Schema}}.MetadataList AS TABLE (
    Ord      INT           NOT NULL PRIMARY KEY,
    Metadata NVARCHAR(MAX) NOT NULL)');
EXEC(N'CREATE TYPE {{.Schema}}.OutputList AS TABLE (
    Id         BIGINT        NOT NULL,
    Lease      BIGINT        NOT NULL,
    OutputJson NVARCHAR(MAX) NOT NULL,
    PRIMARY KEY (Id, Lease))');
EXEC(N'CREATE TYPE {{.Schema}}.ProgressList AS TABLE (
    Id       BIGINT        NOT NULL,
    Lease    BIGINT        NOT NULL,
    Fraction REAL          NOT NULL,
    Message  NVARCHAR(200) NULL,
    PRIMARY KEY (Id, Lease))');

COMMIT TRANSACTION;
