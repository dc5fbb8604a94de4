-- chokaq-go schema, version 7: a running job records the heartbeat
-- maximum its worker declared when it started it, so that rescue phase 2
-- never dead-letters it before 3 x that much silence, whatever its
-- queue's zombie timeout (jobs.ZombieTimeout). {{.Schema}} is the
-- bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL also means "not recorded" (a job started before this
-- version, or by a worker that declared none): the zombie timeout alone.
ALTER TABLE {{.Schema}}.JobsHot ADD HeartbeatMaxMs INT NULL;

COMMIT TRANSACTION;
