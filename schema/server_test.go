package schema

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestUpChecksTheServerBeforeTheFirstMigration: on SQL Server 2017 the
// first migration fails part way (OPTIMIZE_FOR_SEQUENTIAL_KEY is new in
// 2019) and leaves version 1 dirty; at a compatibility level below 130 the
// schema migrates but the store refuses to run. Up refuses both before it
// creates anything: the schema, golang-migrate's version table or a
// migration.
func TestUpChecksTheServerBeforeTheFirstMigration(t *testing.T) {
	for _, c := range []struct {
		name                  string
		level, major, edition int64
		want                  error
	}{
		{"SQL Server 2017", 140, 14, 3, ErrServerVersion},
		{"level 120 on SQL Server 2019", 120, 15, 2, ErrCompatibilityLevel},
		{"SQL Server 2019", 150, 15, 4, nil},
		{"Azure SQL Database, which reports version 12", 160, 12, 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := &levelServer{row: []driver.Value{c.level, c.major, c.edition}}
			db := sql.OpenDB(fake)
			defer db.Close()
			err := prepare(t.Context(), db, "chokaq", true)
			created := sentPart(fake.sent, "CREATE SCHEMA")
			switch {
			case c.want != nil && (!errors.Is(err, c.want) || created):
				t.Fatalf("prepare = %v (schema created: %v); want %v before anything is created", err, created, c.want)
			case c.want == nil && (err != nil || !created):
				t.Fatalf("prepare = %v (schema created: %v); want the schema created", err, created)
			}
			if fake.sent[0] != ServerLevelQuery {
				t.Fatalf("first statement %q, want the server check", firstStatement(fake.sent[0]))
			}
		})
	}
}

// sentPart reports whether a statement containing part was sent.
func sentPart(sent []string, part string) bool {
	for _, q := range sent {
		if strings.Contains(q, part) {
			return true
		}
	}
	return false
}

// levelServer answers ServerLevelQuery with row and records every
// statement; anything else succeeds with no rows.
type levelServer struct {
	row  []driver.Value
	sent []string
}

func (f *levelServer) Connect(context.Context) (driver.Conn, error) { return levelConn{f}, nil }
func (f *levelServer) Driver() driver.Driver                        { return nil }

type levelConn struct{ f *levelServer }

func (levelConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not prepared") }
func (levelConn) Close() error                        { return nil }
func (levelConn) Begin() (driver.Tx, error)           { return nil, errors.New("no transactions") }
func (c levelConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.f.sent = append(c.f.sent, q)
	if q == ServerLevelQuery {
		return &levelRows{row: c.f.row}, nil
	}
	return &levelRows{}, nil
}
func (c levelConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	c.f.sent = append(c.f.sent, q)
	return driver.RowsAffected(0), nil
}
func (levelConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type levelRows struct {
	row  []driver.Value
	done bool
}

func (r *levelRows) Columns() []string { return make([]string, len(r.row)) }
func (r *levelRows) Close() error      { return nil }
func (r *levelRows) Next(dest []driver.Value) error {
	if r.done || r.row == nil {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}
