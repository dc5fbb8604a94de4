package schema

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
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
			switch {
			case rebuildsOnly(sqlText):
				// Index rebuilds commit one by one (TestIndexRebuildsRunOnlineWhereTheEditionHasThem).
			case !strings.Contains(sqlText, "BEGIN TRANSACTION;") || !strings.Contains(sqlText, "COMMIT TRANSACTION;"):
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

// statementsOf splits a migration into its statements, comments dropped.
func statementsOf(sqlText string) []string {
	var out []string
	for _, st := range strings.Split(withoutComments(sqlText), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// onlineChoice is how a migration picks ONLINE by edition: online index
// operations exist where SERVERPROPERTY('EngineEdition') is 3 (Enterprise,
// Developer, Evaluation), 5 (Azure SQL Database) or 8 (Azure SQL Managed
// Instance).
const onlineChoice = "DECLARE @online NVARCHAR(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS INT) IN (3, 5, 8)\n    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END"

var rebuild = regexp.MustCompile(`(?s)^EXEC\(N'CREATE NONCLUSTERED INDEX \w+ ON \[\w+\]\.\w+ \([^)]*\)( INCLUDE \([^)]*\))?\s+WITH \(DROP_EXISTING = ON, (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON, )?' \+ @online \+ N'\)'\)$`)

// rebuildsOnly reports whether a migration does nothing but rebuild
// indexes, each statement on its own (no transaction around the file),
// online where the edition has it.
func rebuildsOnly(sqlText string) bool {
	sts := statementsOf(sqlText)
	if !strings.Contains(sqlText, onlineChoice) || strings.Contains(sqlText, "BEGIN TRAN") {
		return false
	}
	rebuilds := 0
	for _, st := range sts {
		switch {
		case strings.HasPrefix(st, "SET ") || st == strings.TrimSuffix(onlineChoice, ";"):
		case rebuild.MatchString(st):
			rebuilds++
		default:
			return false
		}
	}
	return rebuilds > 0
}

// TestIndexRebuildsRunOnlineWhereTheEditionHasThem: a migration that
// rebuilds an index (CREATE INDEX ... DROP_EXISTING) builds it online where
// the edition has online index operations, and commits each rebuild on its
// own: offline, a rebuild holds a schema-modification lock on its table
// for its whole run, and inside the file's transaction either kind holds
// its locks until the file's COMMIT, so every complete and dead letter
// would wait for all the rebuilds together. Nothing else may go in such a
// file, so that each statement can run again after a failure part way.
func TestIndexRebuildsRunOnlineWhereTheEditionHasThem(t *testing.T) {
	fsys, err := Rendered("tenant_7")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range Files(fsys) {
		raw, _ := fs.ReadFile(fsys, "migrations/"+f)
		text := string(raw)
		if !strings.Contains(withoutComments(text), "DROP_EXISTING") {
			continue
		}
		checked++
		if !rebuildsOnly(text) {
			t.Errorf("%s rebuilds an index: want only repeatable rebuilds, each its own statement outside any transaction, "+
				"with ONLINE chosen by SERVERPROPERTY('EngineEdition') (%s)", f, onlineChoice)
		}
	}
	if checked == 0 {
		t.Fatal("no migration rebuilds an index: the check no longer finds migration 6")
	}
	// The check itself: the first form of migration 6, one transaction
	// around three offline rebuilds, is refused.
	old := "SET QUOTED_IDENTIFIER ON;\nBEGIN TRANSACTION;\nCREATE NONCLUSTERED INDEX IX_JobsArchive_Finished ON [t].JobsArchive (FinishedAtUtc) INCLUDE (Queue)\n" +
		"    WITH (DROP_EXISTING = ON, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);\nCOMMIT TRANSACTION;"
	if rebuildsOnly(old) {
		t.Error("rebuildsOnly accepts offline rebuilds inside one transaction")
	}
}

// bigTables are the job tables, which can hold millions of rows.
var bigTables = []string{"JobsHot", "JobsArchive", "JobsDLQ"}

var addColumns = regexp.MustCompile(`(?is)\bALTER\s+TABLE\s+\[\w+\]\.(\w+)\s+ADD\s+([^;]*);`)

// notNullAdds returns the columns a migration adds to a job table as NOT
// NULL or with a default.
func notNullAdds(sqlText string) []string {
	var out []string
	for _, m := range addColumns.FindAllStringSubmatch(withoutComments(sqlText), -1) {
		if !slices.Contains(bigTables, m[1]) {
			continue
		}
		for _, col := range strings.Split(m[2], ",") {
			def := " " + strings.ToUpper(strings.Join(strings.Fields(col), " ")) + " "
			if strings.Contains(def, " NOT NULL ") || strings.Contains(def, " DEFAULT ") || !strings.Contains(def, " NULL ") {
				out = append(out, m[1]+"."+strings.Fields(col)[0])
			}
		}
	}
	return out
}

// TestJobTableColumnsAreAddedAsNull is ADR 0008's rule for every migration
// after 4: a column added to a job table is NULL, with no default. Adding
// a NOT NULL column with a default is a change of metadata only where
// SERVERPROPERTY('EngineEdition') is 3, 5 or 8; on Standard and Express it
// rewrites every row under a schema-modification lock. Migration 4 did so
// (SnoozeCount), before the rule: the check finds it.
func TestJobTableColumnsAreAddedAsNull(t *testing.T) {
	fsys, err := Rendered("tenant_7")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Files(fsys) {
		m := migrationName.FindStringSubmatch(f)
		if m[2] != "up" {
			continue
		}
		raw, _ := fs.ReadFile(fsys, "migrations/"+f)
		bad := notNullAdds(string(raw))
		switch v, _ := strconv.Atoi(m[1]); {
		case v == 4:
			if want := []string{"JobsHot.SnoozeCount", "JobsArchive.SnoozeCount", "JobsDLQ.SnoozeCount"}; !slices.Equal(bad, want) {
				t.Errorf("%s: the check finds %v, want %v (it no longer reads ALTER TABLE ... ADD)", f, bad, want)
			}
		case v > 4 && len(bad) > 0:
			t.Errorf("%s adds %v to a job table as NOT NULL or with a default: add it as NULL (ADR 0008)", f, bad)
		}
	}
}
