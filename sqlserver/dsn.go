package sqlserver

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/chokaq/chokaq-go/internal/redact"
)

// ErrInvalidDSN is wrapped by Open's and CheckDSN's error for a connection
// string go-mssqldb cannot parse (a malformed URL, an unknown value such as
// encrypt=maybe) or would misread (see CheckDSN): the caller's input, not
// a failure of the server.
var ErrInvalidDSN = errors.New("sqlserver: invalid connection string")

// CheckDSN refuses a connection string in URL form that go-mssqldb would
// misread: one holding a '#', user-info that is not valid in a URL, or a
// password whose unescaped '/' or '?' would make a piece of it the host or
// the port (which the driver would resolve and print). The error wraps
// ErrInvalidDSN, says to percent-encode, and shows the string redacted.
// Open calls it before the driver sees dsn, so no such string is ever
// resolved or dialled; call it to check a string without connecting.
func CheckDSN(dsn string) error {
	if err := redact.Check(dsn); err != nil {
		return fmt.Errorf("%w %s: %w", ErrInvalidDSN, redact.DSN(dsn), err)
	}
	return nil
}

// WithAppName adds an application name to a DSN that has none, so the
// sessions show up under that name in sys.dm_exec_sessions.
func WithAppName(dsn, app string) string {
	lower := strings.ToLower(dsn)
	if strings.Contains(lower, "app name") || strings.Contains(lower, "app+name") || strings.Contains(lower, "app%20name") {
		return dsn
	}
	if strings.HasPrefix(lower, "sqlserver://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "app+name=" + url.QueryEscape(app)
	}
	if dsn == "" {
		return dsn
	}
	sep := ";"
	if strings.HasSuffix(dsn, ";") {
		sep = ""
	}
	return dsn + sep + "app name=" + app
}
