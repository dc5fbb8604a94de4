package sqlserver

import (
	"net/url"
	"regexp"
	"strings"
)

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

var passwordInADO = regexp.MustCompile(`(?i)((?:password|pwd)\s*=\s*)("[^"]*"|'[^']*'|[^;]*)`)

// RedactDSN hides the password of a URL or ADO-style connection string.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "pwd") {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	return passwordInADO.ReplaceAllString(dsn, "${1}xxxxx")
}

// RedactError returns err with any copy of the DSN's password removed from
// its text. The driver sometimes echoes connection parameters in errors.
func RedactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	pw := passwordOf(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), pw, "xxxxx"), err: err}
}

// redactedError keeps the chain for errors.Is and errors.As but not the text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func passwordOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		for k, v := range u.Query() {
			if (strings.EqualFold(k, "password") || strings.EqualFold(k, "pwd")) && len(v) > 0 {
				return v[0]
			}
		}
		return ""
	}
	if m := passwordInADO.FindStringSubmatch(dsn); m != nil {
		return strings.Trim(m[2], `"'`)
	}
	return ""
}
