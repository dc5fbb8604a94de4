package sqlservertest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/schema"
)

// WithDatabase returns dsn pointed at another database. It needs the URL
// form of a DSN (sqlserver://...), which is the form this package's
// servers come in.
func WithDatabase(t testing.TB, dsn, database string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "sqlserver" {
		t.Skipf("SQL Server test skipped: it needs a DSN of the URL form (sqlserver://...) to open another database")
	}
	q := u.Query()
	q.Set("database", database)
	u.RawQuery = q.Encode()
	return u.String()
}

// WithLogin returns dsn with another user's credentials.
func WithLogin(t testing.TB, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "sqlserver" {
		t.Skipf("SQL Server test skipped: it needs a DSN of the URL form (sqlserver://...) to log in as another user")
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// NewDatabase creates a database of its own for a test that changes
// database-wide settings (READ_COMMITTED_SNAPSHOT, ALLOW_SNAPSHOT_ISOLATION,
// the compatibility level), runs setup on it (ALTER DATABASE statements
// need no other connection to it yet), migrates a fresh schema in it, and
// drops it when the test ends. It returns the database's DSN and the
// schema name. The server's login needs CREATE DATABASE.
func NewDatabase(t testing.TB, setup ...string) (dsn, name string) {
	t.Helper()
	server := DSN(t)
	db := UniqueName("chokaq_db")
	admin, err := sql.Open("sqlserver", server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+schema.Quote(db)); err != nil {
		t.Fatalf("create database %s: %v", db, err)
	}
	t.Cleanup(func() {
		c, err := sql.Open("sqlserver", server)
		if err != nil {
			t.Errorf("open: %v", err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		q := fmt.Sprintf("ALTER DATABASE %s SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE %s;", schema.Quote(db), schema.Quote(db))
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Errorf("drop database %s: %v", db, err)
		}
	})
	for _, s := range setup {
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(s, schema.Quote(db))); err != nil {
			t.Fatalf("set up database %s: %s: %v", db, s, err)
		}
	}
	dsn = WithDatabase(t, server, db)
	name = UniqueName("chokaq_t")
	if err := schema.Up(ctx, dsn, name); err != nil {
		t.Fatalf("migrate %s in %s: %v", name, db, err)
	}
	return dsn, name
}

// NewRoleLogin creates a login with a random password, a user for it in the
// database of dsn, and makes the user a member of role and nothing else. It
// returns a DSN that logs in as that user; the login is dropped when the
// test ends. The server's login needs ALTER ANY LOGIN and ALTER ANY USER.
func NewRoleLogin(t testing.TB, dsn, role string) string {
	t.Helper()
	login := UniqueName("chokaq_login")
	password := "Ck1!" + randomHex(12)
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := fmt.Sprintf(`CREATE LOGIN %[1]s WITH PASSWORD = N'%[2]s', CHECK_POLICY = OFF;
CREATE USER %[1]s FOR LOGIN %[1]s;
ALTER ROLE %[3]s ADD MEMBER %[1]s;`, schema.Quote(login), password, schema.Quote(role))
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("create login %s in role %s: %v", login, role, err)
	}
	t.Cleanup(func() {
		c, err := sql.Open("sqlserver", dsn)
		if err != nil {
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Its sessions first: a login with open sessions cannot be dropped.
		_, _ = c.ExecContext(ctx, fmt.Sprintf(`DECLARE @k NVARCHAR(MAX) = N'';
SELECT @k += N'KILL ' + CAST(session_id AS NVARCHAR(10)) + N';' FROM sys.dm_exec_sessions WHERE login_name = N'%[1]s';
EXEC (@k);
ALTER ROLE %[2]s DROP MEMBER %[3]s; DROP USER %[3]s; DROP LOGIN %[3]s;`, login, schema.Quote(role), schema.Quote(login)))
	})
	return WithLogin(t, dsn, login, password)
}
