-- Undoes version 4: drops the job-control columns.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

ALTER TABLE {{.Schema}}.JobsDLQ DROP CONSTRAINT DF_JobsDLQ_SnoozeCount;
ALTER TABLE {{.Schema}}.JobsDLQ DROP COLUMN SnoozeCount;
ALTER TABLE {{.Schema}}.JobsArchive DROP CONSTRAINT DF_JobsArchive_SnoozeCount;
ALTER TABLE {{.Schema}}.JobsArchive DROP COLUMN SnoozeCount;
ALTER TABLE {{.Schema}}.JobsHot DROP CONSTRAINT DF_JobsHot_SnoozeCount;
ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN SnoozeCount, CancelRequestedUtc, CancelNote;

COMMIT TRANSACTION;
