package sqlserver

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/schema"
)

// grantsOf replays the GRANT and REVOKE statements of the up migrations
// for the schema's application role: the rights it ends with, as
// "SCHEMA INSERT" or "OBJECT Queues DELETE".
func grantsOf(t *testing.T, schemaName string) map[string]bool {
	t.Helper()
	stmt := regexp.MustCompile(`(GRANT|REVOKE) ([A-Z, ]+?) ON (SCHEMA|OBJECT)::\[` + schemaName + `\](?:\.(\w+))? (?:TO|FROM) \[` + schemaName + `_app\]`)
	rights := map[string]bool{}
	for _, text := range upMigrations(t, schemaName) {
		for _, m := range stmt.FindAllStringSubmatch(text, -1) {
			for perm := range strings.SplitSeq(m[2], ",") {
				on := m[3]
				if m[4] != "" {
					on += " " + m[4]
				}
				rights[on+" "+strings.TrimSpace(perm)] = m[1] == "GRANT"
			}
		}
	}
	for k, granted := range rights {
		if !granted {
			delete(rights, k)
		}
	}
	return rights
}

// writtenTables names the tables the statements insert into, update or
// delete from, directly or through an alias (UPDATE h ... FROM t AS h).
func writtenTables(stmts []string) map[string]bool {
	direct := regexp.MustCompile(`(?:INSERT INTO|UPDATE|DELETE FROM|INTO) \[my_schema\]\.(\w+)`)
	aliased := regexp.MustCompile(`(?m)^(?:UPDATE|DELETE) (\w+)$`)
	out := map[string]bool{}
	for _, s := range stmts {
		for _, m := range direct.FindAllStringSubmatch(s, -1) {
			out[m[1]] = true
		}
		for _, m := range aliased.FindAllStringSubmatch(s, -1) {
			if t := regexp.MustCompile(`\[my_schema\]\.(\w+) AS ` + m[1] + `\b`).FindStringSubmatch(s); t != nil {
				out[t[1]] = true
			}
		}
	}
	return out
}

// TestTheApplicationRoleWritesWhatTheStoreWritesAndNoMore: after every
// migration, the role may insert, update and delete in exactly the tables
// the store's statements write (and use the sequence), not in the schema
// as a whole, where golang-migrate's SchemaMigrations would be writable
// too. It reads what it must (SELECT on the schema: CheckSchema reads the
// version) and uses the table types (EXECUTE on the schema).
func TestTheApplicationRoleWritesWhatTheStoreWritesAndNoMore(t *testing.T) {
	rights := grantsOf(t, "my_schema")
	q := render("my_schema")
	var stmts []string
	for stmt, name := range statementNames(q) {
		if name != "ageForTest" && name != "resetForTest" { // test hooks run as the migrating login
			stmts = append(stmts, stmt)
		}
	}
	written := writtenTables(stmts)
	if len(written) < 5 {
		t.Fatalf("the statements write %v: the scanner no longer finds the job tables", slices.Sorted(maps.Keys(written)))
	}
	for _, perm := range []string{"INSERT", "UPDATE", "DELETE"} {
		if rights["SCHEMA "+perm] {
			t.Errorf("the role holds %s on the whole schema: it could write %s", perm, schema.MigrationsTable)
		}
		for table := range written {
			if !rights["OBJECT "+table+" "+perm] {
				t.Errorf("the store writes %s, but the role lacks %s on it", table, perm)
			}
		}
	}
	for k := range rights {
		if strings.HasPrefix(k, "OBJECT ") {
			obj := strings.Fields(k)[1]
			if obj != "JobIds" && obj != "WorkflowIds" && !written[obj] { // sequences: NEXT VALUE FOR and sp_sequence_get_range
				t.Errorf("the role holds %q on %s, which the store never writes", k, obj)
			}
		}
	}
	for _, need := range []string{"SCHEMA SELECT", "SCHEMA EXECUTE", "OBJECT JobIds UPDATE", "OBJECT WorkflowIds UPDATE"} {
		if !rights[need] {
			t.Errorf("the role lacks %s", need)
		}
	}
	if rights["OBJECT "+schema.MigrationsTable+" INSERT"] || written[schema.MigrationsTable] {
		t.Errorf("the migrations table is writable by the role or written by the store")
	}
}
