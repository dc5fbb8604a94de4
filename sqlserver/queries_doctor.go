package sqlserver

import (
	"strings"

	"github.com/chokaq/chokaq-go/schema"
)

// The statements of the doctor's own checks (ADR 0025). Everything else the
// doctor runs is the store's statements, sent by the store's own methods.
// None of these writes a row: the permission probes change no row (WHERE
// 1 = 0), the sequence probe consumes one job ID (sequences are not rolled
// back), and the rest read the catalog and the doctor's own session.

// qDoctorServer describes the engine and the session for the report.
const qDoctorServer = `SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)), CAST(SERVERPROPERTY('Edition') AS NVARCHAR(128)),
    ISNULL(DB_NAME(), N''), ISNULL(ORIGINAL_LOGIN(), N''), ISNULL(USER_NAME(), N'');`

// qDoctorDatabase reads the database options that change how the store's
// statements lock and roll back. is_accelerated_database_recovery_on exists
// from SQL Server 2019, the oldest engine the store takes; optimized
// locking is read through DATABASEPROPERTYEX, which returns NULL where the
// engine does not have it (before SQL Server 2025).
const qDoctorDatabase = `SELECT d.is_read_committed_snapshot_on, d.snapshot_isolation_state, d.is_accelerated_database_recovery_on,
    CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsOptimizedLockingOn') AS INT)
FROM sys.databases AS d
WHERE d.database_id = DB_ID();`

// qDoctorPrivileges reads the rights the service's login should not hold,
// and whether it is in the schema's application role. These are classes
// HAS_PERMS_BY_NAME takes everywhere, Azure SQL Database included
// (DATABASE and SCHEMA); what it cannot test (application locks, a table
// type's EXECUTE) the doctor tries instead.
const qDoctorPrivileges = `SELECT ISNULL(IS_ROLEMEMBER(N'db_owner'), 0), ISNULL(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'CONTROL'), 0),
    ISNULL(HAS_PERMS_BY_NAME(@schemaName, N'SCHEMA', N'ALTER'), 0), ISNULL(IS_ROLEMEMBER(@roleName), 0);`

// qDoctorTranState tells whether the doctor's transaction is still open:
// an error under XACT_ABORT, a THROW in it, or a deadlock rolls back the
// whole transaction, the doctor's included, and every statement after it
// would run in autocommit.
const qDoctorTranState = `SELECT @@TRANCOUNT, XACT_STATE();`

// qDoctorLocks counts the locks this session holds in this database, by
// resource type, mode and object or index. It needs VIEW SERVER PERFORMANCE
// STATE (SQL Server 2022 and later), VIEW SERVER STATE (before) or VIEW
// DATABASE STATE (Azure SQL Database).
//
// resource_associated_entity_id is an object's ID for an OBJECT lock and a
// HoBT's for a KEY, PAGE, RID or HOBT lock; both are joined, never passed
// to OBJECT_NAME, which takes an INT and a HoBT ID overflows.
const qDoctorLocks = `SELECT l.resource_type, l.request_mode, ISNULL(o.name, ISNULL(i.name, N'')), COUNT_BIG(*)
FROM sys.dm_tran_locks AS l
LEFT JOIN sys.objects AS o ON l.resource_type = N'OBJECT' AND o.object_id = l.resource_associated_entity_id
LEFT JOIN sys.partitions AS p ON l.resource_type IN (N'KEY', N'PAGE', N'RID', N'HOBT') AND p.hobt_id = l.resource_associated_entity_id
LEFT JOIN sys.indexes AS i ON i.object_id = p.object_id AND i.index_id = p.index_id
WHERE l.request_session_id = @@SPID AND l.resource_database_id = DB_ID() AND l.request_status = N'GRANT'
GROUP BY l.resource_type, l.request_mode, o.name, i.name;`

// qProbeType passes an empty list of one table type (@list, whichever
// type the call declares): a login without EXECUTE on the type fails with
// error 229 before the statement runs.
const qProbeType = `SET NOCOUNT ON;
SELECT COUNT_BIG(*) FROM @list AS l;`

// qProbeSequence takes one job ID, as every enqueue does: it needs UPDATE
// on the sequence.
const qProbeSequence = `SET NOCOUNT ON;
DECLARE @first SQL_VARIANT;
EXEC sys.sp_sequence_get_range @sequence_name = N'{{s}}.JobIds', @range_size = 1, @range_first_value = @first OUTPUT;
SELECT CONVERT(BIGINT, @first);`

// tableRights lists, per table, the rights some statement of the store
// uses, and a column the INSERT and UPDATE probes name (a text column
// where the table has one; WorkflowEdges has none, and the empty text
// converts to its State, which the probe's WHERE 1 = 0 never reaches).
// The archive's and the DLQ's rows are updated only for a workflow task's
// release cursor; the migrations table is only read (by the start-up
// version check).
var tableRights = []struct {
	table, column string
	rights        []string
}{
	{"JobsHot", "Queue", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"JobsArchive", "Queue", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"JobsDLQ", "Queue", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"Queues", "Name", []string{"SELECT", "INSERT", "UPDATE"}},
	{"Schedules", "Name", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"JobUniqueKeys", "JobId", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"QueueKeyLimits", "Queue", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"FlowWaits", "Queue", []string{"SELECT", "INSERT", "DELETE"}},
	{"Workflows", "Name", []string{"SELECT", "INSERT", "DELETE"}},
	{"WorkflowEdges", "State", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"WorkflowGone", "WorkflowTask", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{schema.MigrationsTable, "", []string{"SELECT"}},
}

// probeKey names the probe of one right on one table in queries.probes.
func probeKey(table, right string) string { return table + " " + right }

// qProbe exercises one right on one table and changes no row: SQL Server
// checks a statement's permissions whether or not it touches a row, and a
// probe that refers to no column needs no other right (SET to a constant,
// WHERE 1 = 0).
func qProbe(table, column, right string) string {
	t := "{{s}}." + schema.Quote(table)
	switch right {
	case "INSERT":
		return "INSERT INTO " + t + " (" + column + ") SELECT N'' WHERE 1 = 0;"
	case "UPDATE":
		return "UPDATE " + t + " SET " + column + " = N'' WHERE 1 = 0;"
	case "DELETE":
		return "DELETE FROM " + t + " WHERE 1 = 0;"
	}
	return "SELECT TOP (0) 1 FROM " + t + ";"
}

// doctorStatements renders the doctor's statements into q.
func doctorStatements(q *queries, r *strings.Replacer) {
	q.doctorServer = qDoctorServer
	q.doctorDatabase = qDoctorDatabase
	q.doctorPrivileges = qDoctorPrivileges
	q.doctorTranState = qDoctorTranState
	q.doctorLocks = qDoctorLocks
	q.probeType = qProbeType
	q.probeSequence = r.Replace(qProbeSequence)
	q.probes = map[string]string{}
	for _, tr := range tableRights {
		for _, right := range tr.rights {
			q.probes[probeKey(tr.table, right)] = r.Replace(qProbe(tr.table, tr.column, right))
		}
	}
}
