package schema

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/chokaq/chokaq-go/internal/redact/redacttest"
)

func TestValidateName(t *testing.T) {
	for _, good := range []string{"chokaq", "dbo", "Tenant_7", "_x", strings.Repeat("a", 124)} {
		if err := ValidateName(good); err != nil {
			t.Errorf("ValidateName(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "7up", "a-b", "a b", "a]b", "x;DROP", "sys", "INFORMATION_SCHEMA", "order", "User", "TABLE", "schema", "ünï", strings.Repeat("a", 125)} {
		err := ValidateName(bad)
		if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), "schema name") {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

func TestRenderedMigrations(t *testing.T) {
	fsys, err := Rendered("tenant_7")
	if err != nil {
		t.Fatal(err)
	}
	files := Files(fsys)
	if len(files) == 0 || len(files)%2 != 0 {
		t.Fatalf("migration files %v: want up/down pairs", files)
	}
	ups, downs := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		m := migrationName.FindStringSubmatch(f)
		if m[2] == "up" {
			ups[m[1]] = true
		} else {
			downs[m[1]] = true
		}
		raw, _ := fs.ReadFile(fsys, "migrations/"+f)
		sqlText := string(raw)
		t.Run(f, func(t *testing.T) {
			if strings.Contains(sqlText, "{{") {
				t.Error("unrendered template placeholder")
			}
			// golang-migrate sends a file as one batch; GO would be a syntax error.
			if regexp.MustCompile(`(?mi)^\s*GO\s*$`).MatchString(sqlText) {
				t.Error("GO batch separator in a golang-migrate file")
			}
			first := firstStatement(sqlText)
			if first != "SET QUOTED_IDENTIFIER ON;" {
				t.Errorf("first statement %q, want SET QUOTED_IDENTIFIER ON (filtered indexes need it)", first)
			}
			if !strings.Contains(sqlText, "BEGIN TRANSACTION;") || !strings.Contains(sqlText, "COMMIT TRANSACTION;") {
				t.Error("migration is not wrapped in one transaction")
			}
			// Every object is created in the configured, bracket-quoted schema.
			objects := regexp.MustCompile(`(?i)\b(CREATE|DROP)\s+(TABLE|SEQUENCE|TYPE|VIEW|PROCEDURE)\s+(IF EXISTS\s+)?(\S+)`)
			for _, m := range objects.FindAllStringSubmatch(sqlText, -1) {
				if !strings.HasPrefix(m[4], "[tenant_7].") {
					t.Errorf("%s %s %s is not in [tenant_7]", m[1], m[2], m[4])
				}
			}
			for _, m := range regexp.MustCompile(`(?i)CREATE\s+(?:UNIQUE\s+)?NONCLUSTERED\s+INDEX\s+\S+\s+ON\s+(\S+)`).FindAllStringSubmatch(sqlText, -1) {
				if !strings.HasPrefix(m[1], "[tenant_7].") {
					t.Errorf("index on %s is not in [tenant_7]", m[1])
				}
			}
			// CREATE SCHEMA and CREATE TYPE must start a batch: only through EXEC.
			for _, line := range strings.Split(sqlText, "\n") {
				l := strings.TrimSpace(line)
				if (strings.HasPrefix(l, "CREATE TYPE") || strings.HasPrefix(l, "CREATE SCHEMA")) && !strings.Contains(l, "EXEC(") {
					t.Errorf("%q must run through EXEC in a multi-statement batch", l)
				}
			}
		})
	}
	for v := range ups {
		if !downs[v] {
			t.Errorf("version %s has no down migration", v)
		}
	}
	if Latest() != uint(len(ups)) {
		t.Errorf("Latest() = %d, want %d", Latest(), len(ups))
	}
	// golang-migrate's iofs source must accept the rendered files.
	src, err := iofs.New(fsys, "migrations")
	if err != nil {
		t.Fatalf("iofs: %v", err)
	}
	if v, err := src.First(); err != nil || v != 1 {
		t.Fatalf("iofs First = %d, %v", v, err)
	}
}

// TestOutputIntoTargetsCarryNoForbiddenObjects: a DELETE ... OUTPUT ... INTO
// target may not have triggers, foreign keys or CHECK constraints.
func TestOutputIntoTargetsCarryNoForbiddenObjects(t *testing.T) {
	fsys, err := Rendered(DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Files(fsys) {
		raw, _ := fs.ReadFile(fsys, "migrations/"+f)
		upper := strings.ToUpper(withoutComments(string(raw)))
		for _, bad := range []string{"CREATE TRIGGER", "FOREIGN KEY", "REFERENCES ", " CHECK (", " CHECK(", "CREATE RULE"} {
			if strings.Contains(upper, bad) {
				t.Errorf("%s contains %q: the job tables are OUTPUT ... INTO targets", f, bad)
			}
		}
	}
}

func TestRenderedRejectsBadName(t *testing.T) {
	if _, err := Rendered("x]; DROP TABLE y; --"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("err = %v, want ErrInvalidName", err)
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		v     uint
		dirty bool
		want  error
	}{
		{1, false, nil},
		{1, true, ErrDirty},
		{0, false, ErrOutdated},
		{2, false, ErrTooNew},
	}
	for _, c := range cases {
		err := compare("s", c.v, c.dirty, 1)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("compare(v=%d dirty=%v) = %v, want %v", c.v, c.dirty, err, c.want)
		}
	}
}

func firstStatement(s string) string {
	for _, line := range strings.Split(s, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "--") {
			continue
		}
		return l
	}
	return ""
}

// withoutComments drops "--" comments.
func withoutComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Up, Down and Force check the connection string before the driver sees
// it: one it would misread is refused, and never dialled.
func TestMigrationsNeverDialAConnectionStringTheyRefuse(t *testing.T) {
	dsns, dials := redacttest.Trap(t)
	for _, dsn := range dsns {
		for name, op := range map[string]func(ctx context.Context) error{
			"Up":    func(ctx context.Context) error { return Up(ctx, dsn, DefaultName) },
			"Down":  func(ctx context.Context) error { return Down(ctx, dsn, DefaultName) },
			"Force": func(ctx context.Context) error { return Force(ctx, dsn, DefaultName, 1) },
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := op(ctx)
			cancel()
			if !errors.Is(err, ErrInvalidDSN) || !strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error(), "Tr4pS3cret") {
				t.Errorf("%s: %v, want ErrInvalidDSN saying to percent-encode, without the password", name, err)
			}
		}
	}
	if n := dials(); n != 0 {
		t.Errorf("the trap was dialled %d times", n)
	}
}
