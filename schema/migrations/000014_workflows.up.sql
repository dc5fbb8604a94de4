-- chokaq-go schema, version 14: workflows (issues 31 and 32, ADR 0034). A
-- workflow is a Workflows row and its tasks: jobs that carry WorkflowId,
-- their task's name and what a failed parent does to them
-- (OnParentFailure, a jobs.DependencyPolicy). WorkflowEdges holds the DAG.
-- A task waiting for a parent is Status 5 in JobsHot, with WaitingOn its
-- count of open edges: Pending to every reader, and out of
-- IX_JobsHot_Claim's Status = 0 range, so no claim reads past it. A task's
-- move out of JobsHot (any move: complete, dead-letter, cancel, rescue)
-- writes ReleaseCursor = 0 on its archive or DLQ row, in the move's own
-- statement: the release it owes its children is then as durable as its
-- finish. A release step (ADR 0034) walks the edges of those rows, at most
-- 1,000 a step, and sets ReleaseCursor back to NULL when done. A task
-- purged or trimmed leaves a WorkflowGone row, so its children waiting on
-- it are settled and its edges (and, with its last task, its workflow) go.
-- {{.Schema}} is the bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL is "not a workflow task" (every job before this version).
ALTER TABLE {{.Schema}}.JobsHot ADD
    WorkflowId      BIGINT        NULL,
    WorkflowTask    NVARCHAR(200) NULL,
    OnParentFailure TINYINT       NULL,
    WaitingOn       INT           NULL;
ALTER TABLE {{.Schema}}.JobsArchive ADD
    WorkflowId      BIGINT        NULL,
    WorkflowTask    NVARCHAR(200) NULL,
    OnParentFailure TINYINT       NULL,
    ReleaseCursor   BIGINT        NULL;
ALTER TABLE {{.Schema}}.JobsDLQ ADD
    WorkflowId      BIGINT        NULL,
    WorkflowTask    NVARCHAR(200) NULL,
    OnParentFailure TINYINT       NULL,
    ReleaseCursor   BIGINT        NULL;

CREATE SEQUENCE {{.Schema}}.WorkflowIds AS BIGINT START WITH 1 INCREMENT BY 1 CACHE 50;

CREATE TABLE {{.Schema}}.Workflows (
    Id           BIGINT        NOT NULL,
    Name         NVARCHAR(200) NOT NULL,
    CreatedAtUtc DATETIME2(7)  NOT NULL,
    CONSTRAINT PK_Workflows PRIMARY KEY CLUSTERED (Id)
);

-- State 0 open (the parent has not finished, or failed and the child
-- waits for its resurrect), 1 done. Clustered by parent: the release step
-- walks one parent's children in ChildId order.
CREATE TABLE {{.Schema}}.WorkflowEdges (
    ParentId   BIGINT  NOT NULL,
    ChildId    BIGINT  NOT NULL,
    WorkflowId BIGINT  NOT NULL,
    State      TINYINT NOT NULL,
    CONSTRAINT PK_WorkflowEdges PRIMARY KEY CLUSTERED (ParentId, ChildId)
);
CREATE NONCLUSTERED INDEX IX_WorkflowEdges_Child ON {{.Schema}}.WorkflowEdges (ChildId) INCLUDE (State);
CREATE NONCLUSTERED INDEX IX_WorkflowEdges_Workflow ON {{.Schema}}.WorkflowEdges (WorkflowId) INCLUDE (State);

-- A task purged or trimmed, until the release step has settled its
-- children and deleted its edges. Failed is 1 for a dead letter.
CREATE TABLE {{.Schema}}.WorkflowGone (
    ParentId      BIGINT        NOT NULL,
    WorkflowId    BIGINT        NOT NULL,
    WorkflowTask  NVARCHAR(200) NULL,
    Failed        BIT           NOT NULL,
    ReleaseCursor BIGINT        NOT NULL,
    CONSTRAINT PK_WorkflowGone PRIMARY KEY CLUSTERED (ParentId)
);
CREATE NONCLUSTERED INDEX IX_WorkflowGone_Workflow ON {{.Schema}}.WorkflowGone (WorkflowId);

-- Filtered indexes: a job of no workflow is in none of them. Each goes
-- through EXEC: it names columns added above, and a batch is compiled
-- before its ALTER TABLE runs.
-- A workflow's tasks in each table (GetWorkflow, CancelWorkflow, and the
-- release step's check that a workflow has no task left), covering what
-- those read, so a workflow of 100,000 tasks is one range of each, with no
-- key lookup (the fan-out reads it under the workflow lock):
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsHot_Workflow ON {{.Schema}}.JobsHot (WorkflowId)
    INCLUDE (Status, WorkflowTask, OnParentFailure, WaitingOn)
    WHERE WorkflowId IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsArchive_Workflow ON {{.Schema}}.JobsArchive (WorkflowId)
    INCLUDE (WorkflowTask, OnParentFailure)
    WHERE WorkflowId IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Workflow ON {{.Schema}}.JobsDLQ (WorkflowId)
    INCLUDE (WorkflowTask, OnParentFailure, FailureReason)
    WHERE WorkflowId IS NOT NULL');
-- The finished tasks whose release is owed (the release step's queue):
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsArchive_Release ON {{.Schema}}.JobsArchive (Id)
    INCLUDE (ReleaseCursor, WorkflowId, WorkflowTask)
    WHERE ReleaseCursor IS NOT NULL');
EXEC(N'CREATE NONCLUSTERED INDEX IX_JobsDLQ_Release ON {{.Schema}}.JobsDLQ (Id)
    INCLUDE (ReleaseCursor, WorkflowId, WorkflowTask, FailureReason)
    WHERE ReleaseCursor IS NOT NULL');

-- A workflow's tasks as an enqueue sends them, by the item's Ord in
-- JobInsertList (a side list, as FlowKeyList is), and its edges.
EXEC(N'CREATE TYPE {{.Schema}}.WorkflowTaskList AS TABLE (
    Ord             INT           NOT NULL PRIMARY KEY,
    WorkflowTask    NVARCHAR(200) NOT NULL,
    OnParentFailure INT           NOT NULL,
    WaitingOn       INT           NOT NULL)');
-- An edge's child is a task of the same enqueue (its Ord among them); its
-- parent is one too (ParentOrd) or a task that exists (ParentId).
EXEC(N'CREATE TYPE {{.Schema}}.WorkflowEdgeList AS TABLE (
    ParentOrd INT    NULL,
    ParentId  BIGINT NULL,
    ChildOrd  INT    NOT NULL)');

EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.Workflows TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.WorkflowEdges TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.WorkflowGone TO [{{.Name}}_app]');
EXEC(N'GRANT UPDATE ON OBJECT::{{.Schema}}.WorkflowIds TO [{{.Name}}_app]');

COMMIT TRANSACTION;
