package sqlserver

import (
	"errors"
	"net/url"
	"strings"
)

// ErrInvalidDSN is wrapped by Open's error for a connection string
// go-mssqldb cannot parse (a malformed URL, an unknown value such as
// encrypt=maybe): the caller's input, not a failure of the server.
var ErrInvalidDSN = errors.New("sqlserver: invalid connection string")

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
