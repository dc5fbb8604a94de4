-- Undoes version 8: the jobs' metadata, outputs and progress are lost.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

DROP TYPE IF EXISTS {{.Schema}}.ProgressList;
DROP TYPE IF EXISTS {{.Schema}}.OutputList;
DROP TYPE IF EXISTS {{.Schema}}.MetadataList;
ALTER TABLE {{.Schema}}.JobsDLQ DROP COLUMN OutputJson, Metadata;
ALTER TABLE {{.Schema}}.JobsArchive DROP COLUMN OutputJson, Metadata;
ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN ProgressMessage, ProgressFraction, Metadata;

COMMIT TRANSACTION;
