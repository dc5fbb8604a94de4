package config

import "strings"

// redacted replaces a password wherever configuration is shown.
const redacted = "xxxxx"

// redact replaces the password in a connection string of either form
// go-mssqldb accepts: the URL form (sqlserver://user:pass@host?password=...)
// and the key=value form (Server=...;Password=...; or Pwd=...). When the
// string is ambiguous it hides too much rather than too little: a display
// that loses the host is an annoyance, a leaked password is an incident.
//
// It is deliberately written here rather than borrowed from a driver
// package, so that package config depends on no storage implementation.
func redact(s string) string {
	if strings.Contains(s, "://") {
		s = redactURL(s)
	}
	// Key=value pairs are looked for in URLs too: a message may hold both
	// forms, and hiding a little too much is the safe side.
	return redactParams(s, ';', ";[ \t")
}

// redactURL handles the first scheme:// in s, wherever it starts, so that
// a URL inside a list or a message is covered too.
func redactURL(s string) string {
	i := strings.Index(s, "://") + len("://")
	head, rest := s[:i], s[i:]
	// Query parameters first, so a password parameter containing '@' is
	// already hidden when the user-info is cut at the last '@' below.
	rest = redactParams(rest, '&', "?&")
	// The user-info ends at the last '@'. A password may contain unescaped
	// '/', '?' or ':' that would fool a URL parser, so everything from the
	// first ':' to that '@' goes.
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
			rest = rest[:c+1] + redacted + rest[at:]
		}
	}
	return head + rest
}

// redactParams replaces the values of password and pwd parameters in a
// sep-separated list of key=value pairs. A key counts at the start of s
// or after one of the bytes in after; it is case-insensitive and may be
// surrounded by spaces. A value may be quoted with ', " or {} (ODBC), in
// which case it may contain sep.
func redactParams(s string, sep byte, after string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		start, ok := passwordValue(s, i, after)
		if !ok {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := valueEnd(s, start, sep)
		b.WriteString(s[i:start])
		b.WriteString(redacted)
		i = end
	}
	return b.String()
}

// passwordValue reports whether a password key starts at s[i] and returns
// where its value starts.
func passwordValue(s string, i int, after string) (int, bool) {
	if i > 0 && strings.IndexByte(after, s[i-1]) < 0 {
		return 0, false
	}
	for _, key := range []string{"password", "pwd"} {
		if len(s)-i < len(key) || !strings.EqualFold(s[i:i+len(key)], key) {
			continue
		}
		j := i + len(key)
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			return j, true
		}
	}
	return 0, false
}

// valueEnd returns the index just past the value starting at s[i].
func valueEnd(s string, i int, sep byte) int {
	if i >= len(s) {
		return i
	}
	closing := byte(0)
	switch s[i] {
	case '"', '\'':
		closing = s[i]
	case '{':
		closing = '}'
	}
	if closing != 0 {
		for j := i + 1; j < len(s); j++ {
			if s[j] != closing {
				continue
			}
			if j+1 < len(s) && s[j+1] == closing { // doubled: escaped
				j++
				continue
			}
			return j + 1
		}
		return len(s) // unterminated: hide the rest
	}
	if j := strings.IndexByte(s[i:], sep); j >= 0 {
		return i + j
	}
	return len(s)
}
