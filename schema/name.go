package schema

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultName is the schema chokaq-go uses unless told otherwise.
const DefaultName = "chokaq"

// MigrationsTable is the golang-migrate version table, inside the schema.
const MigrationsTable = "SchemaMigrations"

// ErrInvalidName is wrapped by every schema-name error.
var ErrInvalidName = errors.New("schema: invalid schema name")

// reserved names belong to SQL Server itself.
var reserved = []string{"sys", "INFORMATION_SCHEMA", "guest", "db_owner", "db_accessadmin", "db_securityadmin",
	"db_ddladmin", "db_backupoperator", "db_datareader", "db_datawriter", "db_denydatareader", "db_denydatawriter"}

// keywords are T-SQL's reserved keywords. go-mssqldb declares table-valued
// parameters as schema.Type without brackets, so a schema named like a
// keyword would break every statement that takes a list.
const keywords = `ADD ALL ALTER AND ANY AS ASC AUTHORIZATION BACKUP BEGIN BETWEEN BREAK BROWSE BULK BY CASCADE CASE CHECK
CHECKPOINT CLOSE CLUSTERED COALESCE COLLATE COLUMN COMMIT COMPUTE CONSTRAINT CONTAINS CONTAINSTABLE CONTINUE
CONVERT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR DATABASE DBCC
DEALLOCATE DECLARE DEFAULT DELETE DENY DESC DISK DISTINCT DISTRIBUTED DOUBLE DROP DUMP ELSE END ERRLVL ESCAPE
EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL FETCH FILE FILLFACTOR FOR FOREIGN FREETEXT FREETEXTTABLE FROM FULL
FUNCTION GOTO GRANT GROUP HAVING HOLDLOCK IDENTITY IDENTITY_INSERT IDENTITYCOL IF IN INDEX INNER INSERT
INTERSECT INTO IS JOIN KEY KILL LEFT LIKE LINENO LOAD MERGE NATIONAL NOCHECK NONCLUSTERED NOT NULL NULLIF OF
OFF OFFSETS ON OPEN OPENDATASOURCE OPENQUERY OPENROWSET OPENXML OPTION OR ORDER OUTER OVER PERCENT PIVOT PLAN
PRECISION PRIMARY PRINT PROC PROCEDURE PUBLIC RAISERROR READ READTEXT RECONFIGURE REFERENCES REPLICATION
RESTORE RESTRICT RETURN REVERT REVOKE RIGHT ROLLBACK ROWCOUNT ROWGUIDCOL RULE SAVE SCHEMA SECURITYAUDIT SELECT
SEMANTICKEYPHRASETABLE SEMANTICSIMILARITYDETAILSTABLE SEMANTICSIMILARITYTABLE SESSION_USER SET SETUSER
SHUTDOWN SOME STATISTICS SYSTEM_USER TABLE TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION TRIGGER TRUNCATE
TRY_CONVERT TSEQUAL UNION UNIQUE UNPIVOT UPDATE UPDATETEXT USE USER VALUES VARYING VIEW WAITFOR WHEN WHERE
WHILE WITH WRITETEXT`

// MaxNameLen bounds a schema name: the migrations name the schema's
// application role <schema>_app, and a database principal's name is at
// most 128 characters.
const MaxNameLen = 124

// ValidateName accepts an identifier of 1 to MaxNameLen ASCII letters,
// digits and underscores that does not start with a digit and is not a
// system schema.
// The name is pasted into SQL text (it cannot be a parameter), so nothing
// outside that set is allowed, not even with quoting, and T-SQL reserved
// keywords are refused.
func ValidateName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: must be 1 to %d characters (the application role <schema>_app must fit in 128)", ErrInvalidName, name, MaxNameLen)
	}
	for i, r := range name {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("%w %q: use ASCII letters, digits and '_', not starting with a digit", ErrInvalidName, name)
		}
	}
	for _, r := range reserved {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("%w %q: %s is a system schema", ErrInvalidName, name, r)
		}
	}
	for _, k := range strings.Fields(keywords) {
		if strings.EqualFold(name, k) {
			return fmt.Errorf("%w %q: %s is a T-SQL reserved keyword", ErrInvalidName, name, k)
		}
	}
	return nil
}

// Quote returns the bracket-quoted form of a valid name.
func Quote(name string) string { return "[" + name + "]" }
