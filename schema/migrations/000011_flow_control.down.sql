-- Undoes version 11: concurrency and sequence keys are lost; the jobs stay,
-- as plain jobs, and a parked job is Pending again.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

UPDATE {{.Schema}}.JobsHot SET Status = 0 WHERE Status IN (3, 4);
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.FlowWaits FROM [{{.Name}}_app]');
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.QueueKeyLimits FROM [{{.Name}}_app]');
DROP TYPE IF EXISTS {{.Schema}}.KeyLimitList;
DROP TYPE IF EXISTS {{.Schema}}.FlowKeyList;
DROP INDEX IF EXISTS IX_JobsDLQ_Sequence ON {{.Schema}}.JobsDLQ;
DROP INDEX IF EXISTS IX_JobsHot_SequenceActive ON {{.Schema}}.JobsHot;
DROP INDEX IF EXISTS IX_JobsHot_Sequence ON {{.Schema}}.JobsHot;
DROP INDEX IF EXISTS IX_JobsHot_KeyWaiting ON {{.Schema}}.JobsHot;
DROP INDEX IF EXISTS IX_JobsHot_KeyActive ON {{.Schema}}.JobsHot;
DROP TABLE IF EXISTS {{.Schema}}.FlowWaits;
DROP TABLE IF EXISTS {{.Schema}}.QueueKeyLimits;
ALTER TABLE {{.Schema}}.Queues DROP COLUMN SequenceOnDeadLetter, MaxWorkersPerKey;
ALTER TABLE {{.Schema}}.JobsDLQ DROP COLUMN SequenceKey, ConcurrencyKey;
ALTER TABLE {{.Schema}}.JobsArchive DROP COLUMN SequenceKey, ConcurrencyKey;
ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN SequenceKey, ConcurrencyKey;

COMMIT TRANSACTION;
