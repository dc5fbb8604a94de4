package sqlserver

import (
	"slices"
	"strings"
	"testing"
)

// keptOnPurpose names the variables a statement reads into a second time
// without resetting them first, and why the value kept when no row
// matches is the right one.
var keptOnPurpose = map[string]map[string]string{
	// The second read of the queue's row is under the same shared queue
	// lock as the first: UpdateQueue needs it exclusively, and nothing
	// deletes a Queues row, so the row cannot change or vanish in between.
	"claim": {"max": "read again under the lock the first read holds", "n": "an aggregate without GROUP BY: always one row"},
}

// staleAssignments returns, for one statement, every SELECT @v = ... that
// runs after @v already holds a value the statement gave it (DECLARE ... =,
// SET, EXEC @v =, an earlier SELECT) with no SET @v = NULL in between. A
// SELECT that assigns a variable leaves it unchanged when no row matches,
// so such a read can report the earlier value as if it were found.
func staleAssignments(stmt string) []string {
	toks := lexTSQL(stmt)
	// lastValue[v] is true when the last assignment of @v gave it a value,
	// false when it set NULL (a DECLARE without a value sets NULL too).
	lastValue := map[string]bool{}
	var stale []string
	isNull := func(i int) bool {
		return i < len(toks) && isWord(toks[i], "NULL") && (i+1 >= len(toks) || toks[i+1].text == ";")
	}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		switch {
		case isWord(tk, "DECLARE"):
			// DECLARE @a T [= x], @b T [= y] ...: each name at depth 0.
			depth := 0
			for j := i + 1; j < len(toks) && toks[j].text != ";"; j++ {
				if toks[j].kind == tokWord && depth == 0 && statementStart[strings.ToUpper(toks[j].text)] {
					break
				}
				switch toks[j].text {
				case "(":
					depth++
				case ")":
					depth--
				}
				if toks[j].kind != tokVar || depth != 0 || (j > i+1 && toks[j-1].text != ",") {
					continue
				}
				v := toks[j].text
				lastValue[v] = false
				// An initializer: '=' at depth 0 before the next ',' or ';'.
				d := 0
				for k := j + 1; k < len(toks) && toks[k].text != ";"; k++ {
					switch toks[k].text {
					case "(":
						d++
					case ")":
						d--
					}
					if d == 0 && toks[k].text == "," {
						break
					}
					if d == 0 && toks[k].text == "=" {
						lastValue[v] = !isNull(k + 1)
						break
					}
				}
			}
		case (isWord(tk, "SET") || isWord(tk, "EXEC") || isWord(tk, "EXECUTE")) && i+2 < len(toks) &&
			toks[i+1].kind == tokVar && (toks[i+2].text == "=" || toks[i+2].text == "+"):
			lastValue[toks[i+1].text] = !isNull(i + 3)
		case isWord(tk, "SELECT"):
			start := i + 1
			if start < len(toks) && isWord(toks[start], "TOP") {
				start = skipParens(toks, start+1)
			}
			if start+1 >= len(toks) || toks[start].kind != tokVar || toks[start+1].text != "=" {
				continue // a SELECT that returns rows (assignment and retrieval cannot mix)
			}
			for _, item := range splitList(toks, start, "FROM") {
				if len(item) < 2 || item[0].kind != tokVar || item[1].text != "=" {
					continue
				}
				v := item[0].text
				if lastValue[v] {
					stale = append(stale, v)
				}
				lastValue[v] = true
			}
		}
	}
	return stale
}

// TestSelectIntoAVariableResetsItFirst: every statement that reads a row
// into a variable that already holds a value resets it first, so "no row"
// reads as NULL. The keyed enqueue's re-read after error 2601 kept the new
// sequence value otherwise, and reported a duplicate with an ID no job has.
func TestSelectIntoAVariableResetsItFirst(t *testing.T) {
	for stmt, name := range statementNames(render("my_schema")) {
		base, _, _ := strings.Cut(name, "[")
		for _, v := range staleAssignments(stmt) {
			if _, ok := keptOnPurpose[base][v]; ok {
				continue
			}
			t.Errorf("%s: SELECT @%s = ... reads into @%s, which holds an earlier value; when no row matches it keeps that value: SET @%s = NULL first", name, v, v, v)
		}
	}
	for name, vars := range keptOnPurpose {
		stmt := renderedStatements()[name]
		for v := range vars {
			if !slices.Contains(staleAssignments(stmt), v) {
				t.Errorf("keptOnPurpose lists @%s of %s, which the statement no longer reads twice", v, name)
			}
		}
	}
}

// TestStaleAssignmentsScanner pins the scanner on small statements,
// including the mistake it exists to catch.
func TestStaleAssignmentsScanner(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{"DECLARE @id BIGINT; SELECT @id = Id FROM t WHERE k = @k;", nil},
		{"DECLARE @id BIGINT; SET @id = NEXT VALUE FOR s; SELECT @id = Id FROM t WHERE k = @k;", []string{"id"}},
		{"DECLARE @id BIGINT; SET @id = NEXT VALUE FOR s; SET @id = NULL; SELECT @id = Id FROM t WHERE k = @k;", nil},
		{"DECLARE @a INT = 1, @b INT; SELECT @b = x, @a = y FROM t;", []string{"a"}},
		{"DECLARE @n INT = NULL; SELECT TOP (1) @n = x FROM t;", nil},
		{"DECLARE @rc INT; EXEC @rc = sp_getapplock @Resource = N'x'; SELECT @rc = 1 FROM t;", []string{"rc"}},
		{"DECLARE @q NVARCHAR(100) = @queue; INSERT INTO t SELECT CASE WHEN @q = N'' THEN 1 END FROM u;", nil},
		{"DECLARE @next INT; WHILE 1 = 1 BEGIN SET @next = NULL; SELECT TOP (1) @next = x FROM t; SET @q = @next; END", nil},
	} {
		if got := staleAssignments(c.sql); !slices.Equal(got, c.want) {
			t.Errorf("%s\n got %v, want %v", c.sql, got, c.want)
		}
	}
}
