-- Undoes version 5: drops the schedules and the queues' retention columns.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

ALTER TABLE {{.Schema}}.Queues DROP COLUMN ArchiveRetentionSeconds, DeadLetterRetentionSeconds;
DROP TYPE IF EXISTS {{.Schema}}.ScheduleList;
DROP TABLE IF EXISTS {{.Schema}}.Schedules;

COMMIT TRANSACTION;
