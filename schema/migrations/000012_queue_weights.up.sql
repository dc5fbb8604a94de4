-- chokaq-go schema, version 12: a queue's weight, its share of the claims
-- of a processor serving it beside other queues (issue 30, ADR 0032). The
-- processor reads it with the other queue settings and orders its claims
-- by it; no statement of the claim reads it. {{.Schema}} is the
-- bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL is "not set": the queue weighs 1. UpdateQueue already
-- writes Queues, so no GRANT is needed.
ALTER TABLE {{.Schema}}.Queues ADD Weight INT NULL;

COMMIT TRANSACTION;
