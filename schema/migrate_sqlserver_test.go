package schema_test

import (
	"database/sql"
	"errors"
	"os"
	"sync"
	"testing"

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
