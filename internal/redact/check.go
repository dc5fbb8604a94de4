package redact

import (
	"errors"
	"net/url"
	"strings"
)

// urlScheme starts a connection string go-mssqldb reads as a URL; the
// driver matches it case-sensitively.
const urlScheme = "sqlserver://"

// Why Check refuses a connection string. None quotes any of it (the text
// is what would leak), and none holds an '@', which would make DSN take
// the message for user-info and hide it.
var (
	errScheme = errors.New("the scheme must be written sqlserver:// in lower case " +
		"(the driver reads any other spelling as a key=value connection string)")
	errFragment = errors.New("the URL holds a '#', where a URL ends: the driver would read what follows " +
		"(a piece of the password, say) as the host or drop it; percent-encode '#' as %23 " +
		"in the user name, the password and query values")
	errUserInfo = errors.New("the user name or password is not valid in a URL as written " +
		"(a '/', '?' or '#' ends the address early, and a space, a non-ASCII character or a '%' " +
		"not followed by two hex digits is not allowed); percent-encode both, for example with " +
		"net/url's url.UserPassword, or write '/' as %2F, '?' as %3F, '#' as %23 and '%' as %25")
	errURL = errors.New("the URL is not valid (check the host, the port and the query, " +
		"and percent-encode the user name and password)")
)

// Check refuses a connection string that go-mssqldb would misread in a way
// that sends a piece of it elsewhere, and says how to write it. It is the
// first thing done with a connection string, before any lookup or dial:
// in URL form the driver ends the address at the first '/', '?' or '#',
// so a password holding one of them, unescaped, becomes part of the host
// or the port, which the driver then resolves through DNS and names in its
// errors. Check refuses, in URL form (sqlserver://...):
//   - a scheme not in lower case, which the driver would not read as a URL;
//   - any '#': a fragment, or a password or value holding '#';
//   - user-info that is not valid in a URL (RFC 3986, as net/url reads it);
//   - an '@' after the address that is not inside the value of a
//     parameter go-mssqldb knows (user id=me@example.com is fine): the
//     password held a '/' or '?' and the real host follows;
//   - anything else net/url refuses.
//
// The key=value forms (ADO and odbc:) have no such ambiguity: the driver
// parses them whole before any I/O and refuses what it cannot read. The
// error quotes nothing of dsn.
func Check(dsn string) error {
	if len(dsn) < len(urlScheme) || !strings.EqualFold(dsn[:len(urlScheme)], urlScheme) {
		return nil
	}
	if !strings.HasPrefix(dsn, urlScheme) {
		return errScheme
	}
	if strings.Contains(dsn, "#") {
		return errFragment
	}
	rest := dsn[len(urlScheme):]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 && !validUserInfo(authority[:at]) {
		return errUserInfo
	}
	if strings.Contains(tail, "@") && !atsInKnownValues(tail) {
		return errUserInfo
	}
	if _, err := url.Parse(dsn); err != nil {
		return errURL
	}
	return nil
}

// validUserInfo reports whether s is user-info as net/url accepts it:
// unreserved and sub-delimiter characters, ':', '@' (the last '@' ends
// it) and well-formed percent escapes.
func validUserInfo(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// atsInKnownValues reports whether every '@' of tail, the part of a URL
// after its address, lies in the value of a query parameter go-mssqldb
// reads: never in the path (an instance name holds no '@'), a key, or a
// pair with no '='.
func atsInKnownValues(tail string) bool {
	path, query, _ := strings.Cut(tail, "?")
	if strings.Contains(path, "@") {
		return false
	}
	for pair := range strings.SplitSeq(query, "&") {
		if !strings.Contains(pair, "@") {
			continue
		}
		key, _, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(key, "@") {
			return false
		}
		name, err := url.QueryUnescape(key)
		if err != nil || !queryParams[strings.ToLower(name)] {
			return false
		}
	}
	return true
}
