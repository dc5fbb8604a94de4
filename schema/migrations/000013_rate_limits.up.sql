-- chokaq-go schema, version 13: a queue's rate limit (issue 30, ADR 0033):
-- at most RateCount claims per window of RateWindowMs, and the open
-- window's start and use, written by the claims of the queue under its
-- Queues row's update lock, which every claim of a rate-limited queue
-- takes (as a capped queue's claims do, ADR 0003). {{.Schema}} is the
-- bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL is "no limit" and "no open window".
ALTER TABLE {{.Schema}}.Queues ADD
    RateCount          INT          NULL,
    RateWindowMs       INT          NULL,
    RateWindowStartUtc DATETIME2(7) NULL,
    RateUsed           INT          NULL;

COMMIT TRANSACTION;
