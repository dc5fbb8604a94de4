-- Undoes version 3: drops the batch forms' table types.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

DROP TYPE IF EXISTS {{.Schema}}.DeadLetterList;
DROP TYPE IF EXISTS {{.Schema}}.RetryList;

COMMIT TRANSACTION;
