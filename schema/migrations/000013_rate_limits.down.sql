-- Undoes version 13: rate limits are lost; the queues run unlimited.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

ALTER TABLE {{.Schema}}.Queues DROP COLUMN RateUsed, RateWindowStartUtc, RateWindowMs, RateCount;

COMMIT TRANSACTION;
