package sqlserver

import (
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// doctorWarnings are the warnings the doctor documents for a database
// set up as the README says (docs/operations.md): the owner's login has
// more rights than a service needs; the application role may not read
// locks, so the claim's locks go unchecked; Express is capped.
func doctorWarnings(c DoctorCheck, owner bool) bool {
	switch {
	case owner && c.Name == "least privilege", !owner && c.Name == "claim locks":
		return true
	case c.Name == "engine":
		return strings.Contains(c.Detail, "Express")
	}
	return false
}

// TestSQLServerDoctorPassesForTheApplicationRole runs the doctor on a
// fresh database as its owner, and as a login that holds only the schema's
// application role (on a database with READ_COMMITTED_SNAPSHOT on, as on
// Azure SQL): every check passes but the documented warnings, and nothing
// is left behind.
func TestSQLServerDoctorPassesForTheApplicationRole(t *testing.T) {
	sqlservertest.DSN(t) // one line when it skips
	for _, c := range []struct {
		name  string
		owner bool
		setup []string
	}{
		{"owner", true, nil},
		{"application role, read committed snapshot on", false, []string{"ALTER DATABASE %s SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, name := sqlservertest.NewDatabase(t, c.setup...)
			if !c.owner {
				dsn = sqlservertest.NewRoleLogin(t, dsn, name+"_app")
			}
			s := openOn(t, dsn, name)
			r := s.Doctor(t.Context())
			printReport(t, r)
			for _, check := range r.Checks {
				if check.Status != CheckOK && !doctorWarnings(check, c.owner) {
					t.Errorf("%s: %s: %s (remedy: %s)", check.Name, check.Status, check.Detail, check.Remedy)
				}
			}
			if got := checkNamed(t, r, "read committed snapshot").Detail; c.setup != nil && !strings.HasPrefix(got, "on:") {
				t.Errorf("read committed snapshot: %s", got)
			}
			if c.owner && checkNamed(t, r, "claim locks").Status != CheckOK {
				t.Error("the owner may read locks: the claim's locks must be checked")
			}
		})
	}
}
