package sqlserver

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestResultColumnsMatchScans answers every statement with one row of as
// many columns as its first result set has (read from the statement's
// text), so each method's Scan meets the shape SQL Server would send. A
// Scan with a different number of destinations fails before it converts
// anything ("sql: expected N destination arguments"); the NULLs in the row
// then fail the conversion, which is expected and ends the method there.
func TestResultColumnsMatchScans(t *testing.T) {
	s, rec := recordingStore(t)
	// The statements a method must get past to reach its next one answer
	// with real values (their shapes are checked by the Scans below them).
	rec.rows = map[string][]driver.Value{
		s.q.now:         {time.Now()},  // Resurrect and Purge read the clock first
		s.q.tryAppLock:  {int64(0)},    // TryLead holds the lock...
		s.q.appLockMode: {"Exclusive"}, // ... so Resign has one to release
	}
	rec.answer = func(query string) []driver.Value {
		if n := resultColumns(lexTSQL(query)); n > 0 {
			return make([]driver.Value, n)
		}
		return nil
	}
	_, errs := exerciseStore(t, s, rec)
	names := statementNames(s.q)
	scanned := map[string]bool{}
	for _, e := range errs {
		name, ok := names[e.query]
		if !ok {
			name = "(not in queries.go) " + firstLine(e.query)
		}
		switch {
		case strings.Contains(e.err.Error(), "destination arguments in Scan"):
			t.Errorf("%s: statement %s returns %d columns: %v", e.method, name, resultColumns(lexTSQL(e.query)), e.err)
		case errors.Is(e.err, sql.ErrNoRows):
			t.Errorf("%s: scans a row, but statement %s has no result set", e.method, name)
		case strings.Contains(e.err.Error(), "Scan error on column"):
			scanned[name] = true
		}
	}
	// Methods whose Scan met a matching row and stopped at its NULLs; the
	// others got through their Scan (strings and bytes take NULL) or had
	// no row to read.
	t.Logf("%d statements met their Scan: %v", len(scanned), sortedKeys(scanned))
	if len(scanned) < 10 {
		t.Fatalf("only %d statements reached a Scan: %v", len(scanned), scanned)
	}
}

// resultColumns is the number of columns of a statement's first result
// set: a SELECT at the top level that is not part of an INSERT, not a
// variable assignment and not after UNION; or an OUTPUT list without INTO.
// Zero when the statement returns no rows.
func resultColumns(toks []token) int {
	depth := 0
	insertSource := false // the next top-level SELECT feeds an INSERT
	for i := 0; i < len(toks); i++ {
		switch toks[i].text {
		case "(":
			depth++
			continue
		case ")":
			depth--
			continue
		}
		if depth != 0 {
			continue
		}
		switch {
		case isWord(toks[i], "INSERT"):
			insertSource = true
		case isWord(toks[i], "VALUES"):
			insertSource = false
		case isWord(toks[i], "OUTPUT"):
			n, into := listUntil(toks, i+1, "INTO")
			if into < 0 && n > 0 && len(splitList(toks, i+1, "INTO")[0]) > 0 {
				return n
			}
		case isWord(toks[i], "SELECT"):
			if insertSource {
				insertSource = false
				continue
			}
			if i > 0 && (isWord(toks[i-1], "UNION") || isWord(toks[i-1], "ALL")) {
				continue
			}
			start := i + 1
			if start < len(toks) && isWord(toks[start], "DISTINCT") {
				start++
			}
			if start < len(toks) && isWord(toks[start], "TOP") {
				start = skipParens(toks, start+1)
			}
			if start+1 < len(toks) && toks[start].kind == tokVar && toks[start+1].text == "=" {
				continue // SELECT @x = ...: assigns, returns nothing
			}
			n, _ := listUntil(toks, start, "FROM")
			return n
		}
	}
	return 0
}

func TestResultColumns(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want int
	}{
		{`SET NOCOUNT ON; DECLARE @a INT; SELECT @a = COUNT(*) FROM t; SELECT @a, CAST(1 AS BIT);`, 2},
		{`UPDATE h SET x = 1 OUTPUT inserted.Id, CAST(NULL AS INT), inserted.Q FROM t AS h`, 3},
		{`DELETE h OUTPUT deleted.Id, deleted.Q INTO d (Id, Q) OUTPUT deleted.Id FROM t AS h`, 1},
		{`INSERT INTO t (a, b) SELECT x, y FROM s; SELECT COUNT(*) FROM t;`, 1},
		{`WITH c AS (SELECT a, b FROM t) SELECT TOP (5) a, b, 1 FROM c UNION ALL SELECT a, b, 2 FROM c`, 3},
		{`IF EXISTS (SELECT 1 FROM t) DELETE FROM t;`, 0},
		{`EXEC sys.sp_x @a = 1, @b = @c OUTPUT; SELECT @c;`, 1},
	} {
		if got := resultColumns(lexTSQL(c.sql)); got != c.want {
			t.Errorf("%s: %d columns, want %d", c.sql, got, c.want)
		}
	}
}

// TestUnifiedColumnListsAgree: GetJob reads one job from any table with a
// UNION ALL of the three unified lists, and every list is read by the same
// scanJobs; SQL Server refuses a UNION whose arms differ in width.
func TestUnifiedColumnListsAgree(t *testing.T) {
	widths := map[string]int{}
	for name, list := range map[string]string{"hot": unifiedHot, "archive": unifiedArchive, "dlq": unifiedDLQ} {
		widths[name] = len(splitList(lexTSQL(list), 0, ""))
	}
	if widths["hot"] != widths["archive"] || widths["hot"] != widths["dlq"] {
		t.Fatalf("unified column lists differ in width: %v", widths)
	}
	// unifiedNames declares the claim's table variable: the same columns,
	// by name, in the same order as the hot list selects them.
	hot := splitList(lexTSQL(unifiedHot), 0, "")
	if len(unifiedNames) != len(hot) {
		t.Fatalf("unifiedNames has %d columns, the unified lists %d", len(unifiedNames), len(hot))
	}
	for i, c := range unifiedNames {
		var col string
		for _, tk := range hot[i] {
			col += tk.text
		}
		if strings.HasPrefix(col, "$.") && col != "$."+c[0] {
			t.Errorf("column %d: hot list selects %s, unifiedNames declares %s", i, col, c[0])
		}
	}
}
