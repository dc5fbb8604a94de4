-- Undoes version 10: unique keys are lost; the jobs stay, as plain jobs.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.JobUniqueKeys FROM [{{.Name}}_app]');
DROP TYPE IF EXISTS {{.Schema}}.EnqueueKeyList;
DROP TABLE IF EXISTS {{.Schema}}.JobUniqueKeys;
ALTER TABLE {{.Schema}}.JobsDLQ DROP COLUMN UniqueStates, UniqueBucket, UniqueKeyHash;
ALTER TABLE {{.Schema}}.JobsArchive DROP COLUMN UniqueStates, UniqueBucket, UniqueKeyHash;
ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN UniqueStates, UniqueBucket, UniqueKeyHash;

COMMIT TRANSACTION;
