package sqlserver

import (
	"fmt"
	"io/fs"
	"iter"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/schema"
)

// TestInsertedColumnsMatchTheirValues checks, for every statement, what
// SQL Server checks when it compiles one: an OUTPUT ... INTO or an INSERT
// gives as many values as its target takes (the column list, or the
// declared columns of a table variable). The job moves between tables are
// long column lists built from shared fragments, where an added column on
// one side is the likeliest mistake.
func TestInsertedColumnsMatchTheirValues(t *testing.T) {
	q := render("my_schema")
	tables := migratedTables(t, "my_schema")
	checked := 0
	for stmt, name := range statementNames(q) {
		for _, p := range insertTargets(lexTSQL(stmt)) {
			checked++
			if p.values != p.columns {
				t.Errorf("%s line %d: %s gives %d values for %d columns of %s", name, p.line, p.clause, p.values, p.columns, p.target)
			}
			table, ok := tables[unbracket(p.target)]
			if !ok {
				continue // a table variable: its own declaration is the check
			}
			listed := map[string]bool{}
			for _, c := range p.names {
				listed[strings.ToLower(unbracket(c))] = true
				if !slices.ContainsFunc(table, func(tc tableColumn) bool { return strings.EqualFold(tc.name, unbracket(c)) }) {
					t.Errorf("%s line %d: %s has no column %s", name, p.line, p.target, c)
				}
			}
			// Error 515 at the first insert: a NOT NULL column with no
			// default that the statement leaves out. The doctor's
			// permission probes insert no row (WHERE 1 = 0), and 515 is
			// raised per row.
			if strings.HasPrefix(name, "probes[") {
				continue
			}
			for _, tc := range table {
				if tc.required && !listed[strings.ToLower(tc.name)] {
					t.Errorf("%s line %d: %s leaves out %s, which is NOT NULL and has no default", name, p.line, p.target, tc.name)
				}
			}
		}
	}
	// The moves to the archive and the DLQ, the rescue phases, resurrect,
	// both enqueues, start: well over ten such lists; far fewer means the
	// scanner above no longer finds them.
	if checked < 10 {
		t.Fatalf("found only %d INTO lists to check", checked)
	}
}

// insertTarget is one place a statement writes a list of values into a
// table or table variable.
type insertTarget struct {
	clause          string // "OUTPUT ... INTO" or "INSERT ... SELECT" / "INSERT ... VALUES"
	target          string
	names           []string // the column list, when the statement gives one
	values, columns int
	line            int
}

// insertTargets finds every OUTPUT ... INTO and INSERT INTO in toks and
// counts the values each gives and the columns its target takes.
func insertTargets(toks []token) []insertTarget {
	tableVars := declaredTableVars(toks)
	var out []insertTarget
	for i := 0; i < len(toks); i++ {
		switch {
		case isWord(toks[i], "OUTPUT"):
			values, into := listUntil(toks, i+1, "INTO")
			if into < 0 {
				continue // OUTPUT without INTO, or a procedure's OUTPUT parameter
			}
			target, names, columns, next := intoTarget(toks, into+1, tableVars)
			if columns < 0 {
				continue
			}
			out = append(out, insertTarget{"OUTPUT ... INTO", target, names, values, columns, toks[i].line})
			i = next - 1
		case isWord(toks[i], "INSERT") && i+1 < len(toks) && isWord(toks[i+1], "INTO"):
			target, names, columns, next := intoTarget(toks, i+2, tableVars)
			if columns < 0 || next >= len(toks) {
				continue
			}
			switch {
			case isWord(toks[next], "SELECT"):
				start := next + 1
				if start < len(toks) && isWord(toks[start], "TOP") {
					start = skipParens(toks, start+1)
				}
				values, _ := listUntil(toks, start, "FROM")
				out = append(out, insertTarget{"INSERT ... SELECT", target, names, values, columns, toks[i].line})
			case isWord(toks[next], "VALUES") && next+1 < len(toks) && toks[next+1].text == "(":
				values, _ := listUntil(toks, next+2, ")")
				out = append(out, insertTarget{"INSERT ... VALUES", target, names, values, columns, toks[i].line})
			}
		}
	}
	return out
}

// intoTarget reads the target after INTO: a table with a column list, or a
// table variable whose declared columns it takes. It returns the target,
// the listed column names, the column count (-1 when it cannot tell) and
// the index after it.
func intoTarget(toks []token, i int, tableVars map[string]int) (string, []string, int, int) {
	if i >= len(toks) {
		return "", nil, -1, i
	}
	var target string
	if toks[i].kind == tokVar {
		target = "@" + toks[i].text
		i++
	} else {
		var name strings.Builder
		for i < len(toks) && (toks[i].kind == tokWord && !isWord(toks[i], "WITH") || toks[i].text == ".") {
			name.WriteString(toks[i].text)
			i++
		}
		target = name.String()
		// INSERT INTO t WITH (ROWLOCK) (columns): the hints come first.
		if i+1 < len(toks) && isWord(toks[i], "WITH") && toks[i+1].text == "(" {
			i = skipParens(toks, i+1)
		}
	}
	if i < len(toks) && toks[i].text == "(" {
		var names []string
		for _, item := range splitList(toks, i+1, ")") {
			if len(item) == 1 {
				names = append(names, item[0].text)
			}
		}
		return target, names, len(splitList(toks, i+1, ")")), skipParens(toks, i)
	}
	if n, ok := tableVars[strings.ToLower(strings.TrimPrefix(target, "@"))]; ok && strings.HasPrefix(target, "@") {
		return target, nil, n, i
	}
	return target, nil, -1, i // no column list: nothing to compare here
}

// declaredTableVars maps each DECLARE @name TABLE (...) to its column
// count; table constraints in the list are not columns.
func declaredTableVars(toks []token) map[string]int {
	out := map[string]int{}
	for i := 0; i+3 < len(toks); i++ {
		if !isWord(toks[i], "DECLARE") || toks[i+1].kind != tokVar || !isWord(toks[i+2], "TABLE") || toks[i+3].text != "(" {
			continue
		}
		n := 0
		for _, item := range splitList(toks, i+4, ")") {
			if len(item) > 0 && !isWord(item[0], "PRIMARY") && !isWord(item[0], "CONSTRAINT") &&
				!isWord(item[0], "UNIQUE") && !isWord(item[0], "INDEX") {
				n++
			}
		}
		out[strings.ToLower(toks[i+1].text)] = n
	}
	return out
}

// listUntil counts the comma-separated items from toks[i] to the first stop
// word (or closing parenthesis) outside parentheses, and returns that
// count and the stop's index (-1 when a statement boundary came first).
func listUntil(toks []token, i int, stop string) (int, int) {
	items := splitList(toks, i, stop)
	end := i
	for _, it := range items {
		end += len(it) + 1
	}
	end--
	if end >= len(toks) || !(isWord(toks[end], stop) || toks[end].text == stop) {
		return len(items), -1
	}
	return len(items), end
}

// splitList splits toks from i into the items between top-level commas, up
// to the stop word or parenthesis, a semicolon, or a keyword that ends the
// clause.
func splitList(toks []token, i int, stop string) [][]token {
	var items [][]token
	var cur []token
	depth := 0
	for ; i < len(toks); i++ {
		tk := toks[i]
		if depth == 0 && (isWord(tk, stop) || tk.text == stop || tk.text == ";" ||
			isWord(tk, "FROM") || isWord(tk, "WHERE") || isWord(tk, "OUTPUT") || isWord(tk, "VALUES")) {
			break
		}
		switch tk.text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				items = append(items, cur)
				cur = nil
				continue
			}
		}
		cur = append(cur, tk)
	}
	return append(items, cur)
}

// skipParens returns the index after the parenthesized group at toks[i],
// or i when there is none.
func skipParens(toks []token, i int) int {
	if i >= len(toks) || toks[i].text != "(" {
		return i
	}
	depth := 0
	for ; i < len(toks); i++ {
		switch toks[i].text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

func isWord(tk token, w string) bool { return tk.kind == tokWord && strings.EqualFold(tk.text, w) }

// TestInsertTargetsScanner pins the scanner on small statements, including
// the mistakes it exists to catch.
func TestInsertTargetsScanner(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want string
	}{
		{`DELETE h OUTPUT deleted.Id, deleted.Queue, 2, N'a, b' INTO s.T (Id, Queue, R, D) FROM s.H AS h`, "OUTPUT ... INTO s.T 4/4"},
		{`DELETE h OUTPUT deleted.Id, ISNULL(deleted.A, deleted.B) INTO s.T (Id) FROM s.H AS h`, "OUTPUT ... INTO s.T 2/1"},
		{`DECLARE @m TABLE (Id BIGINT NOT NULL, Q INT, PRIMARY KEY (Id)); DELETE d OUTPUT deleted.Id, deleted.Q INTO @m FROM s.D AS d`, "OUTPUT ... INTO @m 2/2"},
		{`INSERT INTO s.T (A, B, C) SELECT m.A, CASE WHEN x = 1 THEN 2 ELSE 3 END, m.C FROM @m AS m`, "INSERT ... SELECT s.T 3/3"},
		{`INSERT INTO s.T (A, B) SELECT TOP (5) m.A FROM @m AS m`, "INSERT ... SELECT s.T 1/2"},
		{`INSERT INTO s.T (A, B) VALUES (1, 2)`, "INSERT ... VALUES s.T 2/2"},
		{`EXEC p @x = 1, @y = @z OUTPUT; SELECT 1`, ""},
	} {
		var got []string
		for _, p := range insertTargets(lexTSQL(c.sql)) {
			got = append(got, fmt.Sprintf("%s %s %d/%d", p.clause, p.target, p.values, p.columns))
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.sql, strings.Join(got, "; "), c.want)
		}
	}
}

// tableColumn is a column of a migrated table; required means NOT NULL
// with no default, so every INSERT must give it.
type tableColumn struct {
	name     string
	required bool
}

var (
	createTable = regexp.MustCompile(`(?is)\bCREATE\s+TABLE\s+([^\s(]+)\s*\(`)
	alterAdd    = regexp.MustCompile(`(?is)\bALTER\s+TABLE\s+(\S+)\s+ADD\s+([^;]*);`)
)

// migratedTables reads the tables the up migrations create, by name
// without brackets ("my_schema.JobsHot").
func migratedTables(t *testing.T, schemaName string) map[string][]tableColumn {
	t.Helper()
	tables := map[string][]tableColumn{}
	for name, text := range upMigrations(t, schemaName) {
		text = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(text, "")
		for _, m := range createTable.FindAllStringSubmatchIndex(text, -1) {
			open := m[1] - 1
			end := matchingParen(text, open)
			if end < 0 {
				t.Fatalf("%s: unbalanced parentheses after %s", name, text[m[0]:m[1]])
			}
			tables[unbracket(text[m[2]:m[3]])] = tableColumns(text[open+1 : end])
		}
		// Columns later versions add (ALTER TABLE t ADD c type, ...).
		for _, m := range alterAdd.FindAllStringSubmatch(text, -1) {
			tb := unbracket(m[1])
			tables[tb] = append(tables[tb], tableColumns(m[2])...)
		}
	}
	if len(tables) < 4 {
		t.Fatalf("found %d tables in the migrations, want JobsHot, JobsArchive, JobsDLQ and Queues", len(tables))
	}
	return tables
}

// tableColumns parses the body of a CREATE TABLE: one column per top-level
// item, table constraints skipped.
func tableColumns(body string) []tableColumn {
	var cols []tableColumn
	for _, item := range splitList(lexTSQL(body), 0, "") {
		if len(item) < 2 || item[0].kind != tokWord {
			continue
		}
		first := strings.ToUpper(item[0].text)
		if slices.Contains([]string{"PRIMARY", "UNIQUE", "CONSTRAINT", "INDEX", "CHECK", "FOREIGN"}, first) {
			continue
		}
		var def []string
		for _, tk := range item[1:] {
			def = append(def, strings.ToUpper(tk.text))
		}
		words := " " + strings.Join(def, " ") + " "
		required := strings.Contains(words, " NOT NULL ") && !strings.Contains(words, " DEFAULT ") && !strings.Contains(words, " IDENTITY ")
		cols = append(cols, tableColumn{name: unbracket(item[0].text), required: required})
	}
	return cols
}

// upMigrations yields the name and text of each rendered up migration, in
// version order.
func upMigrations(t *testing.T, schemaName string) iter.Seq2[string, string] {
	t.Helper()
	fsys, err := schema.Rendered(schemaName)
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(string, string) bool) {
		for _, name := range schema.Files(fsys) {
			if !strings.HasSuffix(name, ".up.sql") {
				continue
			}
			raw, err := fs.ReadFile(fsys, "migrations/"+name)
			if err != nil {
				t.Fatal(err)
			}
			if !yield(name, string(raw)) {
				return
			}
		}
	}
}
