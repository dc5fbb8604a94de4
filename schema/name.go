package schema

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultName is the schema chokaq-go uses unless told otherwise.
const DefaultName = "chokaq"

// MigrationsTable is the golang-migrate version table, inside the schema.
const MigrationsTable = "SchemaMigrations"

// ErrInvalidName is wrapped by every schema-name error.
var ErrInvalidName = errors.New("schema: invalid schema name")

// reserved names belong to SQL Server itself.
var reserved = []string{"sys", "INFORMATION_SCHEMA", "guest", "db_owner", "db_accessadmin", "db_securityadmin",
	"db_ddladmin", "db_backupoperator", "db_datareader", "db_datawriter", "db_denydatareader", "db_denydatawriter"}

// ValidateName accepts an identifier of 1 to 128 ASCII letters, digits and
// underscores that does not start with a digit and is not a system schema.
// The name is pasted into SQL text (it cannot be a parameter), so nothing
// outside that set is allowed, not even with quoting.
func ValidateName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("%w %q: must be 1 to 128 characters", ErrInvalidName, name)
	}
	for i, r := range name {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("%w %q: use ASCII letters, digits and '_', not starting with a digit", ErrInvalidName, name)
		}
	}
	for _, r := range reserved {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("%w %q: %s is a system schema", ErrInvalidName, name, r)
		}
	}
	return nil
}

// Quote returns the bracket-quoted form of a valid name.
func Quote(name string) string { return "[" + name + "]" }
