-- Drops everything version 1 created except the schema itself, which also
-- holds the migrations table.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

-- All or nothing: DDL is transactional in SQL Server.
BEGIN TRANSACTION;

DROP TABLE IF EXISTS {{.Schema}}.JobsHot;
DROP TABLE IF EXISTS {{.Schema}}.JobsArchive;
DROP TABLE IF EXISTS {{.Schema}}.JobsDLQ;
DROP TABLE IF EXISTS {{.Schema}}.Queues;
DROP TYPE IF EXISTS {{.Schema}}.IdLeaseList;
DROP TYPE IF EXISTS {{.Schema}}.IdList;
DROP TYPE IF EXISTS {{.Schema}}.JobInsertList;
DROP SEQUENCE IF EXISTS {{.Schema}}.JobIds;

COMMIT TRANSACTION;
