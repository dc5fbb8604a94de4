package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// MinCompatibilityLevel is the lowest database compatibility level the
// store's statements are written and reviewed for (130, SQL Server 2016's:
// no statement needs a later one).
const MinCompatibilityLevel = 130

// MinServerVersion is the lowest SQL Server major version the migrations
// and the store run on: 15, SQL Server 2019 (the migrations set
// OPTIMIZE_FOR_SEQUENTIAL_KEY, which older engines do not know). Azure SQL
// Database and Managed Instance always qualify.
const MinServerVersion = 15

// ErrServerVersion is wrapped by the error for an engine older than
// MinServerVersion.
var ErrServerVersion = errors.New("schema: SQL Server 2019 or later, or Azure SQL, is needed")

// ErrCompatibilityLevel is wrapped by the error for a database whose
// compatibility level is below MinCompatibilityLevel.
var ErrCompatibilityLevel = errors.New("schema: database compatibility level too low")

// ServerLevelQuery reads what CheckServerLevel judges: the database's
// compatibility level, the engine's major version (15 is SQL Server 2019)
// and its edition (SERVERPROPERTY('EngineEdition'): 5 Azure SQL Database,
// 8 Azure SQL Managed Instance, which report their own version numbers and
// are always current).
const ServerLevelQuery = `SELECT compatibility_level, CAST(SERVERPROPERTY('ProductMajorVersion') AS INT),
    CAST(SERVERPROPERTY('EngineEdition') AS INT)
FROM sys.databases WHERE database_id = DB_ID();`

// CheckServerLevel returns nil when a database at compatibility level
// level on an engine of major version major and edition edition (the
// columns of ServerLevelQuery) can hold the schema. A database upgraded
// from an older SQL Server keeps its old level, which the server does not
// raise by itself: the error says how.
func CheckServerLevel(level, major, edition int64) error {
	if err := CheckEngine(major, edition); err != nil {
		return err
	}
	return CheckCompatibility(level)
}

// CheckEngine returns nil when an engine of major version major and
// edition edition can hold the schema: SQL Server 2019 or later, or Azure
// SQL Database or Managed Instance (editions 5 and 8, always current).
func CheckEngine(major, edition int64) error {
	if cloud := edition == 5 || edition == 8; !cloud && major < MinServerVersion {
		return fmt.Errorf("%w: this server is major version %d", ErrServerVersion, major)
	}
	return nil
}

// CheckCompatibility returns nil when a database at compatibility level
// level runs the store's statements.
func CheckCompatibility(level int64) error {
	if level < MinCompatibilityLevel {
		return fmt.Errorf("%w: the database is at level %d, chokaq-go needs at least %d; raise it with "+
			"ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 150 (SQL Server 2019; 160 for 2022), after testing your own queries at that level",
			ErrCompatibilityLevel, level, MinCompatibilityLevel)
	}
	return nil
}

// checkServer reads the server's level and judges it.
func checkServer(ctx context.Context, db *sql.DB) error {
	var level, major, edition int64
	if err := db.QueryRowContext(ctx, ServerLevelQuery).Scan(&level, &major, &edition); err != nil {
		return fmt.Errorf("schema: read the server's version and the database's compatibility level: %w", err)
	}
	return CheckServerLevel(level, major, edition)
}
