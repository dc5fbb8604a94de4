// Package sqlservertest finds a SQL Server for tests and gives each test a
// fresh, migrated schema (or a fresh database). It is exported so users can
// run the contract suite (jobs/storetest) against their own server.
//
// A server comes, in this order, from CHOKAQ_TEST_SQLSERVER (a DSN); from the
// .sqlserver.env file `make sqlserver-up` writes at the repository's root;
// or, when a Docker engine answers, from a container started once per test
// binary by the command in ./container (a module of its own, so that
// testcontainers-go is no dependency of chokaq-go). Without any, tests skip
// with one line saying why, unless CHOKAQ_REQUIRE_SQLSERVER=1 (make
// test-sqlserver), in which case they fail.
package sqlservertest

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb" // registers the sqlserver driver

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/schema"
)

// Environment variables and files this package reads.
const (
	EnvDSN     = "CHOKAQ_TEST_SQLSERVER"
	EnvRequire = "CHOKAQ_REQUIRE_SQLSERVER"
	EnvFile    = ".sqlserver.env"
)

var server struct {
	once      sync.Once
	dsn       string
	why       string    // reason there is no server
	container *exec.Cmd // the container command, when it started one
	stop      io.Closer // its stdin: closing it removes the container
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
	// A connection string the driver would misread is refused before any
	// test dials it, as the store refuses it.
	use := func(dsn, from string) {
		if err := redact.Check(dsn); err != nil {
			server.why = fmt.Sprintf("the connection string in %s: %v", from, err)
			return
		}
		server.dsn = dsn
	}
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		use(dsn, EnvDSN)
		return
	}
	root, rootErr := repositoryRoot()
	if rootErr == nil {
		if dsn := dsnFromFile(filepath.Join(root, EnvFile)); dsn != "" {
			use(dsn, EnvFile)
			return
		}
	}
	if err := dockerAnswers(); err != nil {
		server.why = fmt.Sprintf("%s is not set, no %s, and Docker is not reachable (%v)", EnvDSN, EnvFile, err)
		return
	}
	if rootErr != nil {
		server.why = fmt.Sprintf("%s is not set and the container command is not at hand: %v", EnvDSN, rootErr)
		return
	}
	dsn, err := startContainer(filepath.Join(root, "sqlserver", "sqlservertest", "container"))
	if err != nil {
		server.why = fmt.Sprintf("%s is not set and no SQL Server container started: %v", EnvDSN, err)
		return
	}
	server.dsn = dsn
}

// repositoryRoot is the directory of chokaq-go's go.mod, above the working
// directory of the test.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/chokaq/chokaq-go\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the chokaq-go repository")
		}
		dir = parent
	}
}

// dsnFromFile reads the DSN `make sqlserver-up` wrote, a shell line
// export CHOKAQ_TEST_SQLSERVER='...'.
func dsnFromFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export "+EnvDSN+"="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}

// dockerAnswers asks the Docker engine for its version, within seconds.
func dockerAnswers() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("no docker command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startContainer runs the container command and waits for its DSN line.
func startContainer(dir string) (string, error) {
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if dsn, ok := strings.CutPrefix(sc.Text(), "DSN "); ok {
			server.container, server.stop = cmd, stdin
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return dsn, nil
		}
	}
	stdin.Close()
	err = cmd.Wait()
	return "", fmt.Errorf("the container command ended without a DSN: %v", err)
}

// Main runs a package's tests and then stops the container, if one started.
// Use it from TestMain: os.Exit(sqlservertest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if server.stop != nil {
		server.stop.Close()
		_ = server.container.Wait()
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
