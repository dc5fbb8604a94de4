-- chokaq-go schema, version 9: a start records where its execution
-- timeout came from (TimeoutSource, a jobs.PolicySource: 1 job, 2 kind,
-- 3 queue, 4 default) and the zombie policy of the job's kind
-- (ZombieRetryCap: how many times rescue phase 2 may return the job to
-- Pending when its worker goes silent), and phase 2 counts the times it
-- did (ZombieRetries), so that a rescuer that never heard of the kind
-- applies its policy (ADR 0029). {{.Schema}} is the bracket-quoted,
-- validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL means "not recorded": a job started before this
-- version, or of a kind without a zombie policy, is dead-lettered by
-- phase 2 as before (I4).
ALTER TABLE {{.Schema}}.JobsHot ADD TimeoutSource TINYINT NULL, ZombieRetryCap INT NULL, ZombieRetries INT NULL;

COMMIT TRANSACTION;
