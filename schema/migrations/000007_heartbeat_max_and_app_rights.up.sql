-- chokaq-go schema, version 7: a running job records the heartbeat
-- maximum its worker declared when it started it, so that rescue phase 2
-- never dead-letters it before 3 x that much silence, whatever its
-- queue's zombie timeout (jobs.ZombieTimeout); and the application role
-- can no longer write the migrations table. {{.Schema}} is the
-- bracket-quoted, validated schema name.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET XACT_ABORT ON;

BEGIN TRANSACTION;

-- NULL, without a default: a change of metadata only on every edition
-- (ADR 0008). NULL also means "not recorded" (a job started before this
-- version, or by a worker that declared none): the zombie timeout alone.
ALTER TABLE {{.Schema}}.JobsHot ADD HeartbeatMaxMs INT NULL;

-- Version 2 granted the role INSERT, UPDATE and DELETE on the whole schema,
-- which holds golang-migrate's SchemaMigrations too: a service login could
-- rewrite the recorded version. The write rights move to the objects the
-- store writes: the five tables and the sequence (UPDATE, for NEXT VALUE
-- FOR and sp_sequence_get_range). SELECT (CheckSchema reads the version)
-- and EXECUTE (the table types) stay on the schema. A DENY on the
-- migrations table instead would also reach a login that migrates and is
-- a member of the role, and stop it migrating. A table a later version
-- creates for the store gets its own GRANT.
EXEC(N'REVOKE INSERT, UPDATE, DELETE ON SCHEMA::{{.Schema}} FROM [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.JobsHot TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.JobsArchive TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.JobsDLQ TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.Queues TO [{{.Name}}_app]');
EXEC(N'GRANT INSERT, UPDATE, DELETE ON OBJECT::{{.Schema}}.Schedules TO [{{.Name}}_app]');
EXEC(N'GRANT UPDATE ON OBJECT::{{.Schema}}.JobIds TO [{{.Name}}_app]');

COMMIT TRANSACTION;
