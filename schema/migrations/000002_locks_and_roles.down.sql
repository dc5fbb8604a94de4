-- Undoes version 2: back to version 1's indexes, without the claim id, the
-- queue-list type and the application role.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- A role with members cannot be dropped: take them out first.
DECLARE @member SYSNAME, @sql NVARCHAR(400);
DECLARE members CURSOR LOCAL FAST_FORWARD FOR
    SELECT m.name FROM sys.database_role_members AS rm
    JOIN sys.database_principals AS r ON r.principal_id = rm.role_principal_id
    JOIN sys.database_principals AS m ON m.principal_id = rm.member_principal_id
    WHERE r.name = N'{{.Name}}_app';
OPEN members;
FETCH NEXT FROM members INTO @member;
WHILE @@FETCH_STATUS = 0
BEGIN
    SET @sql = N'ALTER ROLE [{{.Name}}_app] DROP MEMBER ' + QUOTENAME(@member);
    EXEC (@sql);
    FETCH NEXT FROM members INTO @member;
END
CLOSE members;
DEALLOCATE members;
IF DATABASE_PRINCIPAL_ID(N'{{.Name}}_app') IS NOT NULL EXEC(N'DROP ROLE [{{.Name}}_app]');

DROP TYPE IF EXISTS {{.Schema}}.QueueList;

ALTER INDEX PK_JobsArchive ON {{.Schema}}.JobsArchive SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF);
ALTER INDEX IX_JobsArchive_Finished ON {{.Schema}}.JobsArchive SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF);
ALTER INDEX PK_JobsDLQ ON {{.Schema}}.JobsDLQ SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF);
ALTER INDEX IX_JobsDLQ_Finished ON {{.Schema}}.JobsDLQ SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF);

DROP INDEX IX_JobsHot_Deadline ON {{.Schema}}.JobsHot;
DROP INDEX IX_JobsHot_Heartbeat ON {{.Schema}}.JobsHot;
DROP INDEX IX_JobsHot_Active ON {{.Schema}}.JobsHot;
CREATE NONCLUSTERED INDEX IX_JobsHot_Status
    ON {{.Schema}}.JobsHot (Status, LastUpdatedUtc) INCLUDE (Queue, HeartbeatUtc, DeadlineUtc);

ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN ClaimId;

COMMIT TRANSACTION;
