package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/sqlserver"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/internal/redact"
)

// Sentinel errors of the start-up version check.
var (
	// ErrNotMigrated: the schema has no migrations table or no version.
	ErrNotMigrated = errors.New("schema: not migrated")
	// ErrDirty: a migration failed part way and needs an operator.
	ErrDirty = errors.New("schema: a migration failed part way (dirty)")
	// ErrOutdated: the database is older than this binary expects.
	ErrOutdated = errors.New("schema: database schema is older than this binary")
	// ErrTooNew: the database was migrated by a newer binary.
	ErrTooNew = errors.New("schema: database schema is newer than this binary")
	// ErrInvalidDSN: Up, Down or Force was given a connection string that
	// the driver cannot parse or would misread (see sqlserver.CheckDSN),
	// refused before any dial.
	ErrInvalidDSN = errors.New("schema: invalid connection string")
)

// Up migrates the schema to Latest. It opens its own connection from dsn
// (golang-migrate closes the pool it is given) and is safe to run from many
// processes at once. Before anything else it refuses a server or a
// database the schema cannot run on (ErrServerVersion,
// ErrCompatibilityLevel): a migration that fails there part way would
// leave the schema dirty.
func Up(ctx context.Context, dsn, name string) error {
	return run(ctx, dsn, name, true, func(m *migrate.Migrate) error { return m.Up() })
}

// Migrate moves the schema up or down to exactly version, checking the
// server as Up does: for an upgrade in steps, one migration per
// maintenance window (docs/operations.md), and for tests of one migration.
func Migrate(ctx context.Context, dsn, name string, version uint) error {
	return run(ctx, dsn, name, true, func(m *migrate.Migrate) error { return m.Migrate(version) })
}

// Down runs every down migration: the schema keeps only its migrations table.
func Down(ctx context.Context, dsn, name string) error {
	return run(ctx, dsn, name, false, func(m *migrate.Migrate) error { return m.Down() })
}

// Force sets the recorded version without running anything, to recover
// from a dirty state after an operator repaired the schema by hand.
func Force(ctx context.Context, dsn, name string, version int) error {
	return run(ctx, dsn, name, false, func(m *migrate.Migrate) error { return m.Force(version) })
}

// run opens dsn and runs op, checking the server first when check is set.
// Its error is redacted: the driver's and golang-migrate's errors may
// quote the connection string.
func run(ctx context.Context, dsn, name string, check bool, op func(*migrate.Migrate) error) error {
	return redact.Error(migrateDSN(ctx, dsn, name, check, op), dsn)
}

func migrateDSN(ctx context.Context, dsn, name string, check bool, op func(*migrate.Migrate) error) error {
	// Checked before the driver sees it, which would resolve a piece of
	// a misread password as the host.
	if err := redact.Check(dsn); err != nil {
		return fmt.Errorf("%w %s: %w", ErrInvalidDSN, redact.DSN(dsn), err)
	}
	src, err := Rendered(name)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrInvalidDSN, redact.DSN(dsn), err)
	}
	defer db.Close()
	if err := prepare(ctx, db, name, check); err != nil {
		return err
	}
	source, err := iofs.New(src, "migrations")
	if err != nil {
		return fmt.Errorf("schema: migrations source: %w", err)
	}
	driver, err := sqlserver.WithInstance(db, &sqlserver.Config{SchemaName: name, MigrationsTable: MigrationsTable})
	if err != nil {
		return fmt.Errorf("schema: migrations driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", source, "sqlserver", driver)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer m.Close()
	// golang-migrate takes no context; ask it to stop between migrations.
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	defer stop()
	if err := op(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	return ctx.Err()
}

// prepare checks the server (when check is set) and then creates the
// schema: both before golang-migrate writes its version table.
func prepare(ctx context.Context, db *sql.DB, name string, check bool) error {
	if check {
		if err := checkServer(ctx, db); err != nil {
			return fmt.Errorf("schema: %s not migrated: %w", name, err)
		}
	}
	return ensureSchema(ctx, db, name)
}

// ensureSchema creates the schema if it is missing, before golang-migrate
// creates its version table inside it. The app lock makes concurrent
// starters wait for each other instead of racing to CREATE SCHEMA.
func ensureSchema(ctx context.Context, db *sql.DB, name string) error {
	q := `SET XACT_ABORT ON;
BEGIN TRANSACTION;
DECLARE @rc INT;
EXEC @rc = sp_getapplock @Resource = @resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 60000;
IF @rc < 0 THROW 51000, N'chokaq: timed out waiting for the schema creation lock', 1;
IF SCHEMA_ID(@name) IS NULL EXEC(N'CREATE SCHEMA ` + Quote(name) + `');
COMMIT TRANSACTION;`
	if _, err := db.ExecContext(ctx, q, sql.Named("resource", "chokaq:schema:"+name), sql.Named("name", name)); err != nil {
		return fmt.Errorf("schema: create schema %s: %w", name, err)
	}
	return nil
}

// Status reports the recorded version of a schema and whether it is dirty.
// A schema never migrated reports version 0 and ErrNotMigrated.
func Status(ctx context.Context, db *sql.DB, name string) (version uint, dirty bool, err error) {
	if err := ValidateName(name); err != nil {
		return 0, false, err
	}
	var v int64
	q := `SELECT TOP (1) version, dirty FROM ` + Quote(name) + `.` + Quote(MigrationsTable)
	err = db.QueryRowContext(ctx, q).Scan(&v, &dirty)
	var me mssql.Error
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, fmt.Errorf("%w: %s (the migrations table is empty)", ErrNotMigrated, name)
	case errors.As(err, &me) && me.Number == 208: // invalid object name
		return 0, false, fmt.Errorf("%w: %s (run `chokaq migrate up`)", ErrNotMigrated, name)
	case err != nil:
		return 0, false, fmt.Errorf("schema: %s: read version: %w", name, err)
	}
	return uint(v), dirty, nil
}

// Check returns nil when the schema is clean and exactly at Latest.
func Check(ctx context.Context, db *sql.DB, name string) error {
	v, dirty, err := Status(ctx, db, name)
	if err != nil {
		return err
	}
	return compare(name, v, dirty, Latest())
}

func compare(name string, v uint, dirty bool, latest uint) error {
	switch {
	case dirty:
		return fmt.Errorf("%w: %s at version %d; repair it, then `chokaq migrate force`", ErrDirty, name, v)
	case v < latest:
		return fmt.Errorf("%w: %s at version %d, this binary needs %d (run `chokaq migrate up`)", ErrOutdated, name, v, latest)
	case v > latest:
		return fmt.Errorf("%w: %s at version %d, this binary knows up to %d (upgrade this service)", ErrTooNew, name, v, latest)
	}
	return nil
}
