-- Undoes version 6: the finish-time indexes without their included
-- columns. As the up file: no transaction around the file, each rebuild
-- commits on its own, online where the edition has online index
-- operations.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

DECLARE @online NVARCHAR(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS INT) IN (3, 5, 8)
    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END;

EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Queue ON {{.Schema}}.JobsDLQ (Queue, FinishedAtUtc)
    WITH (DROP_EXISTING = ON, ' + @online + N')');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ (FinishedAtUtc)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON, ' + @online + N')');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive (FinishedAtUtc)
    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON, ' + @online + N')');
