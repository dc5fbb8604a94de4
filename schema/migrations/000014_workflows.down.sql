-- Undoes version 14: workflows are lost; their tasks stay, as plain jobs,
-- and a task waiting for a parent is Pending again.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

UPDATE {{.Schema}}.JobsHot SET Status = 0 WHERE Status = 5;
EXEC(N'REVOKE UPDATE ON OBJECT::{{.Schema}}.WorkflowIds FROM [{{.Name}}_app]');
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.WorkflowGone FROM [{{.Name}}_app]');
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.WorkflowEdges FROM [{{.Name}}_app]');
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.Workflows FROM [{{.Name}}_app]');
DROP TYPE IF EXISTS {{.Schema}}.WorkflowEdgeList;
DROP TYPE IF EXISTS {{.Schema}}.WorkflowTaskList;
DROP INDEX IF EXISTS IX_JobsDLQ_Release ON {{.Schema}}.JobsDLQ;
DROP INDEX IF EXISTS IX_JobsArchive_Release ON {{.Schema}}.JobsArchive;
DROP INDEX IF EXISTS IX_JobsDLQ_Workflow ON {{.Schema}}.JobsDLQ;
DROP INDEX IF EXISTS IX_JobsArchive_Workflow ON {{.Schema}}.JobsArchive;
DROP INDEX IF EXISTS IX_JobsHot_Workflow ON {{.Schema}}.JobsHot;
DROP TABLE IF EXISTS {{.Schema}}.WorkflowGone;
DROP TABLE IF EXISTS {{.Schema}}.WorkflowEdges;
DROP TABLE IF EXISTS {{.Schema}}.Workflows;
DROP SEQUENCE IF EXISTS {{.Schema}}.WorkflowIds;
ALTER TABLE {{.Schema}}.JobsDLQ DROP COLUMN ReleaseCursor, OnParentFailure, WorkflowTask, WorkflowId;
ALTER TABLE {{.Schema}}.JobsArchive DROP COLUMN ReleaseCursor, OnParentFailure, WorkflowTask, WorkflowId;
ALTER TABLE {{.Schema}}.JobsHot DROP COLUMN WaitingOn, OnParentFailure, WorkflowTask, WorkflowId;

COMMIT TRANSACTION;
