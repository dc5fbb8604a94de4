// Package sqlservertest finds a SQL Server for tests and gives each test a
// fresh, migrated schema. It is exported so users can run the contract suite
// (jobs/storetest) against their own server.
//
// A server comes from CHOKAQ_TEST_SQLSERVER (a DSN) or, when Docker is
// reachable, from a mcr.microsoft.com/mssql/server:2022-latest container
// started once per test binary. Without either, tests skip with one line
// saying why, unless CHOKAQ_REQUIRE_SQLSERVER=1 (make test-sqlserver), in
// which case they fail.
package sqlservertest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb" // registers the sqlserver driver
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/mssql"

	"github.com/chokaq/chokaq-go/schema"
)

// Environment variables this package reads.
const (
	EnvDSN     = "CHOKAQ_TEST_SQLSERVER"
	EnvRequire = "CHOKAQ_REQUIRE_SQLSERVER"
	Image      = "mcr.microsoft.com/mssql/server:2022-latest"
)

var server struct {
	once      sync.Once
	dsn       string
	why       string // reason there is no server
	container *mssql.MSSQLServerContainer
}

// DSN returns a DSN for a reachable SQL Server, or skips t (fails it when
// CHOKAQ_REQUIRE_SQLSERVER=1) with one line saying why there is none.
func DSN(t testing.TB) string {
	t.Helper()
	server.once.Do(find)
	if server.dsn == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("SQL Server required (%s=1) but none available: %s", EnvRequire, server.why)
		}
		t.Skipf("SQL Server tests skipped: %s", server.why)
	}
	return server.dsn
}

func find() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		server.dsn = dsn
		return
	}
	if err := dockerHealthy(); err != nil {
		server.why = fmt.Sprintf("%s is not set and Docker is not reachable (%v)", EnvDSN, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := mssql.Run(ctx, Image, mssql.WithAcceptEULA(), mssql.WithPassword("Chokaq-"+randomHex(8)+"!a1"))
	if err != nil {
		server.why = fmt.Sprintf("%s is not set and the %s container did not start: %v", EnvDSN, Image, err)
		return
	}
	dsn, err := c.ConnectionString(ctx)
	if err != nil {
		server.why = fmt.Sprintf("container connection string: %v", err)
		return
	}
	server.container, server.dsn = c, dsn
}

// dockerHealthy asks the Docker engine for a health check, within seconds.
func dockerHealthy() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	p, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx)
}

// Main runs a package's tests and then stops the container, if one started.
// Use it from TestMain: os.Exit(sqlservertest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if server.container != nil {
		_ = testcontainers.TerminateContainer(server.container)
	}
	return code
}

// NewSchema migrates a fresh schema with a random name and removes it when
// the test ends. It returns the DSN and the schema name.
func NewSchema(t testing.TB) (dsn, name string) {
	t.Helper()
	dsn = DSN(t)
	name = UniqueName("chokaq_t")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := schema.Up(ctx, dsn, name); err != nil {
		t.Fatalf("migrate %s: %v", name, err)
	}
	t.Cleanup(func() { DropSchema(t, dsn, name) })
	return dsn, name
}

// DropSchema runs every down migration and drops the schema and its
// migrations table.
func DropSchema(t testing.TB, dsn, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := schema.Down(ctx, dsn, name); err != nil {
		t.Errorf("migrate down %s: %v", name, err)
	}
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Errorf("open: %v", err)
		return
	}
	defer db.Close()
	q := fmt.Sprintf("DROP TABLE IF EXISTS %s.%s; DROP SCHEMA IF EXISTS %s;", schema.Quote(name), schema.Quote(schema.MigrationsTable), schema.Quote(name))
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Errorf("drop schema %s: %v", name, err)
	}
}

// UniqueName returns prefix_<random hex>, a valid schema name for one test.
func UniqueName(prefix string) string { return prefix + "_" + randomHex(6) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
