package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

func TestMain(m *testing.M) { os.Exit(sqlservertest.Main(m)) }

// TestMigrationsUpDownUp runs on a real server only.
func TestMigrationsUpDownUp(t *testing.T) {
	dsn := sqlservertest.DSN(t)
	name := sqlservertest.UniqueName("chokaq_mig")
	ctx := t.Context()
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })

	if err := schema.Check(ctx, db, name); !errors.Is(err, schema.ErrNotMigrated) {
		t.Fatalf("before Up: Check = %v, want ErrNotMigrated", err)
	}
	// Several processes starting at once must all succeed.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- schema.Up(ctx, dsn, name) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Up: %v", err)
		}
	}
	if err := schema.Check(ctx, db, name); err != nil {
		t.Fatalf("after Up: %v", err)
	}
	if err := schema.Down(ctx, dsn, name); err != nil {
		t.Fatalf("Down: %v", err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sys.tables WHERE schema_id = SCHEMA_ID(@p1) AND name <> @p2`, name, schema.MigrationsTable).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("after Down %d tables remain", tables)
	}
	if err := schema.Up(ctx, dsn, name); err != nil {
		t.Fatalf("Up again: %v", err)
	}
	if err := schema.Check(ctx, db, name); err != nil {
		t.Fatalf("after Up again: %v", err)
	}
}

// TestSQLServerUpRefusesALowCompatibilityLevelBeforeMigrating: in a
// database at compatibility level 120, Up refuses with
// ErrCompatibilityLevel and leaves nothing behind: no migrations table,
// no version, dirty or not.
func TestSQLServerUpRefusesALowCompatibilityLevelBeforeMigrating(t *testing.T) {
	dsn, _ := sqlservertest.NewDatabase(t)
	ctx := t.Context()
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 120;"); err != nil {
		t.Fatal(err)
	}
	name := sqlservertest.UniqueName("chokaq_low")
	if err := schema.Up(ctx, dsn, name); !errors.Is(err, schema.ErrCompatibilityLevel) || !strings.Contains(err.Error(), "level 120") {
		t.Fatalf("Up at level 120 = %v, want ErrCompatibilityLevel naming the level", err)
	}
	if _, _, err := schema.Status(ctx, db, name); !errors.Is(err, schema.ErrNotMigrated) {
		t.Fatalf("after the refused Up, Status = %v; want ErrNotMigrated (nothing created)", err)
	}
}

// migrateTo migrates a fresh schema to version and drops it when the test
// ends.
func migrateTo(t *testing.T, version uint) (dsn, name string, db *sql.DB) {
	t.Helper()
	dsn = sqlservertest.DSN(t)
	name = sqlservertest.UniqueName("chokaq_mig")
	t.Cleanup(func() { sqlservertest.DropSchema(t, dsn, name) })
	if err := schema.Migrate(t.Context(), dsn, name, version); err != nil {
		t.Fatalf("migrate %s to %d: %v", name, version, err)
	}
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, name, db
}

// engineEdition is SERVERPROPERTY('EngineEdition'): 3 Enterprise,
// Developer or Evaluation, 5 Azure SQL Database, 8 Azure SQL Managed
// Instance have online index operations and metadata-only column adds.
func engineEdition(t *testing.T, db *sql.DB) (edition int, full bool) {
	t.Helper()
	if err := db.QueryRowContext(t.Context(), "SELECT CAST(SERVERPROPERTY('EngineEdition') AS INT);").Scan(&edition); err != nil {
		t.Fatal(err)
	}
	return edition, edition == 3 || edition == 5 || edition == 8
}

// fillFinished puts n archived and n/10 dead-lettered jobs of five queues,
// finished over the last 14 days, into a schema at version 3 or later.
func fillFinished(t *testing.T, db *sql.DB, name string, n int) {
	t.Helper()
	q := fmt.Sprintf(`WITH n AS (SELECT TOP (%[2]d) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i
    FROM sys.all_columns a CROSS JOIN sys.all_columns b CROSS JOIN sys.all_columns c)
INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
SELECT NEXT VALUE FOR %[1]s.JobIds, CONCAT(N'q', i %% 5), N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1,
    DATEADD(SECOND, -CAST(i %% 1209600 AS INT), SYSUTCDATETIME()) FROM n;
WITH n AS (SELECT TOP (%[3]d) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i
    FROM sys.all_columns a CROSS JOIN sys.all_columns b CROSS JOIN sys.all_columns c)
INSERT INTO %[1]s.JobsDLQ (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc, FailureReason)
SELECT NEXT VALUE FOR %[1]s.JobIds, CONCAT(N'q', i %% 5), N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1,
    DATEADD(SECOND, -CAST(i %% 1209600 AS INT), SYSUTCDATETIME()), CASE i %% 3 WHEN 0 THEN 0 WHEN 1 THEN 2 ELSE 7 END FROM n;`,
		schema.Quote(name), n, n/10)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("fill: %v", err)
	}
}

// TestSQLServerMigration6RebuildsWithoutHoldingTheTablesWhereItCan runs
// migration 6 over an archive of 1,000,000 jobs and a DLQ of 100,000 while
// a writer appends to both tables one row at a time, as completes and dead
// letters do (this binary's store needs version 7, so the writer is plain
// T-SQL), and logs how long the migration took per million archived rows
// and the slowest append to each table meanwhile. Where the edition has
// online index operations (3, 5, 8) the rebuilds hold their tables only at
// their ends, so no append waits for most of the migration; elsewhere they
// run offline and hold each table for its own rebuild, which the log shows
// (run it in a maintenance window: README, SQL Server).
func TestSQLServerMigration6RebuildsWithoutHoldingTheTablesWhereItCan(t *testing.T) {
	const archived = 1_000_000
	dsn, name, db := migrateTo(t, 5)
	edition, online := engineEdition(t, db)
	fillFinished(t, db, name, archived)
	appends := map[string]string{
		"archive": fmt.Sprintf(`INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
VALUES (NEXT VALUE FOR %[1]s.JobIds, N'live', N't', 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1, SYSUTCDATETIME());`, schema.Quote(name)),
		"dlq": fmt.Sprintf(`INSERT INTO %[1]s.JobsDLQ (Id, Queue, Type, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc, FailureReason)
VALUES (NEXT VALUE FOR %[1]s.JobIds, N'live', N't', 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1, SYSUTCDATETIME(), 6);`, schema.Quote(name)),
	}
	ctx, stop := context.WithCancel(t.Context())
	var mu sync.Mutex
	slowest, done := map[string]time.Duration{}, map[string]int{}
	var wg sync.WaitGroup
	for table, stmt := range appends {
		wg.Go(func() {
			for ctx.Err() == nil {
				began := time.Now()
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					continue
				}
				mu.Lock()
				slowest[table], done[table] = max(slowest[table], time.Since(began)), done[table]+1
				mu.Unlock()
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the writers are under way
	began := time.Now()
	err := schema.Migrate(t.Context(), dsn, name, 6)
	took := time.Since(began)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("migration 6: %v", err)
	}
	t.Logf("migration 6 over %d archived and %d dead-lettered jobs, engine edition %d (online: %v): %v, %v per million archived rows; "+
		"meanwhile %d archive and %d DLQ appends, the slowest %v and %v",
		archived, archived/10, edition, online, took, time.Duration(float64(took)*1e6/archived),
		done["archive"], done["dlq"], slowest["archive"], slowest["dlq"])
	var included int
	err = db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM sys.index_columns AS ic
JOIN sys.indexes AS i ON i.object_id = ic.object_id AND i.index_id = ic.index_id
WHERE ic.is_included_column = 1 AND i.object_id IN (OBJECT_ID(@a), OBJECT_ID(@d))
  AND i.name IN (N'IX_JobsArchive_Finished', N'IX_JobsDLQ_Finished', N'IX_JobsDLQ_Queue')`,
		sql.Named("a", name+".JobsArchive"), sql.Named("d", name+".JobsDLQ")).Scan(&included)
	if err != nil {
		t.Fatal(err)
	}
	if included != 4 { // Queue; Queue, FailureReason; FailureReason
		t.Fatalf("after migration 6 the finish-time indexes include %d columns, want 4", included)
	}
	if done["archive"] == 0 || done["dlq"] == 0 {
		t.Fatalf("the writers appended %v during the migration: nothing to measure", done)
	}
	if online && took > 2*time.Second {
		for table, d := range slowest {
			if d > took/2 {
				t.Errorf("an append to the %s waited %v of the online migration's %v: the rebuild held the table", table, d, took)
			}
		}
	}
}

// TestSQLServerMigration4AddsItsColumnsByMetadataWhereItCan runs migration
// 4, which adds NOT NULL columns with a default to the three job tables,
// over an archive of 1,000,000 jobs, and logs how long it took and the
// archive's pages before and after. Where the edition allows (3, 5, 8)
// the change is to metadata only: no page is written. Elsewhere every row
// is rewritten under a schema-modification lock, which the log measures;
// later migrations add such columns as NULL (ADR 0008).
func TestSQLServerMigration4AddsItsColumnsByMetadataWhereItCan(t *testing.T) {
	const archived = 1_000_000
	dsn, name, db := migrateTo(t, 3)
	edition, full := engineEdition(t, db)
	fillFinished(t, db, name, archived)
	pages := func() int64 {
		var n int64
		err := db.QueryRowContext(t.Context(), `SELECT SUM(used_page_count) FROM sys.dm_db_partition_stats
WHERE object_id = OBJECT_ID(@t) AND index_id IN (0, 1)`, sql.Named("t", name+".JobsArchive")).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := pages()
	began := time.Now()
	if err := schema.Migrate(t.Context(), dsn, name, 4); err != nil {
		t.Fatalf("migration 4: %v", err)
	}
	took := time.Since(began)
	after := pages()
	t.Logf("migration 4 over %d archived jobs, engine edition %d: %v (%v per million rows); archive pages %d before, %d after",
		archived, edition, took, time.Duration(float64(took)*1e6/archived), before, after)
	if full && after != before {
		t.Fatalf("on edition %d migration 4 changed the archive from %d to %d pages: it rewrote rows", edition, before, after)
	}
}
