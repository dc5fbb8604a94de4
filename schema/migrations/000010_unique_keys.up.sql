-- chokaq-go schema, version 10: unique jobs (issue 28, ADR 0030). A job
-- enqueued unique carries its key (a SHA-256 computed in Go, compared as
-- bytes, never by a collation; and a bucket of the server's clock for a
-- key by period) and the states in which it holds it, in every job table,
-- so the key moves with the job and is shown with it. JobUniqueKeys names,
-- for each key, the job that last took it: that job holds the key while it
-- is hot, or finished in a table its states count. No move between the job
-- tables writes here, so the claim, the start and every finish are as
-- before; an enqueue (and a resurrect) under the key's application lock
-- reads the row and the holder's table, and takes the key if it is free.
-- {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL is "not unique" (every job enqueued before this version).
ALTER TABLE {{.Schema}}.JobsHot ADD
    UniqueKeyHash BINARY(32) NULL,
    UniqueBucket  BIGINT     NULL,
    UniqueStates  TINYINT    NULL;
ALTER TABLE {{.Schema}}.JobsArchive ADD
    UniqueKeyHash BINARY(32) NULL,
    UniqueBucket  BIGINT     NULL,
    UniqueStates  TINYINT    NULL;
ALTER TABLE {{.Schema}}.JobsDLQ ADD
    UniqueKeyHash BINARY(32) NULL,
    UniqueBucket  BIGINT     NULL,
    UniqueStates  TINYINT    NULL;

-- One row per key taken and not yet retired with its job: JobId is the
-- job that took it last, States (a jobs.UniqueStates) where that job holds
-- it. Retention and purge delete a job's row with the job, by this key
-- (the job carries it); a row whose job is gone, or finished where it
-- does not hold, holds nothing and is taken over by the next enqueue of
-- its key.
CREATE TABLE {{.Schema}}.JobUniqueKeys (
    KeyHash BINARY(32) NOT NULL,
    Bucket  BIGINT     NOT NULL,
    JobId   BIGINT     NOT NULL,
    States  TINYINT    NOT NULL,
    CONSTRAINT PK_JobUniqueKeys PRIMARY KEY CLUSTERED (KeyHash, Bucket)
);

-- The keys an EnqueueMany locks before its first item: the unique keys in
-- (KeyHash, Bucket) order, then the idempotency keys, the order every
-- enqueue takes its key locks in (ADR 0016).
EXEC(N'CREATE TYPE {{.Schema}}.EnqueueKeyList AS TABLE (
    Ord            INT           NOT NULL PRIMARY KEY,
    KeyHash        BINARY(32)    NULL,
    PeriodMs       BIGINT        NULL,
    IdempotencyKey NVARCHAR(200) NULL)');

-- The store writes the keys table: its own GRANT, as version 7 gives each
-- table the store writes (SELECT and EXECUTE come from the schema).
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.JobUniqueKeys TO [{{.Name}}_app]');

COMMIT TRANSACTION;
