// Package redact hides the secrets of connection strings wherever chokaq
// prints one or text that may hold one: `config show`, error messages, logs
// and the dashboard. It is the one place that knows how passwords are
// written in the three forms go-mssqldb accepts, and it depends on the
// standard library only, so every package can use it without linking a
// driver or a configuration library.
//
// The rule is conservative. A string is never parsed and then printed back:
// every span that could be a credential is replaced in place, so text that
// no parser accepts (a host name with spaces, an unbalanced bracket, a bad
// percent escape) loses its secrets all the same. Hiding too much is an
// annoyance; a leaked password is an incident.
//
// Check is the other half: it refuses, before any lookup or dial, a URL
// connection string the driver would misread so that a piece of the
// password becomes the host or the port (a '#', '/' or '?' in it,
// unescaped), which the driver would resolve through DNS and print.
package redact

import (
	"net/url"
	"sort"
	"strings"
)

// Mask replaces every hidden value.
const Mask = "xxxxx"

// DSN returns s with every credential of a connection string in it replaced
// by Mask:
//   - the user-info password of anything URL-like (scheme://user:pass@...),
//     from the first ':' after the scheme to the last '@' before the next
//     URL, so a password holding '@', '/' or ':' is covered;
//   - the value of every key whose name holds "password", "passwd" or "pwd"
//     (any case, spaces around '='), in the ADO form
//     (Password=...;), the ODBC form (Pwd={...}) and URL queries
//     (?password=...&). A value in double or single quotes runs to the
//     closing quote, a doubled quote being an escaped one; a value in braces
//     runs to the closing brace, "}}" being an escaped one; an unterminated
//     one runs to the end of s. A bare value runs to the next ';', or, in a
//     URL query, to the next '&' that starts a parameter go-mssqldb knows
//     (a password written unescaped may hold '&', ';' or '=').
//
// s may be a whole message that quotes a connection string.
func DSN(s string) string { return mask(s, false) }

// mask replaces the spans of s. With inMessage, a value that is Mask already
// (a message quoting a DSN redacted before) ends with the mask, so that the
// message after it stays readable.
func mask(s string, inMessage bool) string {
	var b strings.Builder
	last := 0
	for _, sp := range spans(s, inMessage) {
		b.WriteString(s[last:sp[0]])
		b.WriteString(Mask)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// spans returns the spans of s that DSN hides, in order and merged. They
// are found on s as given, the user-info's and the key values' alike, so
// that neither hides the other's end (a password parameter may hold an '@',
// a user-info password may hold "pwd=").
func spans(s string, inMessage bool) [][2]int {
	var all [][2]int
	if c, at, ok := userInfoSpan(s); ok {
		all = append(all, [2]int{c, at})
	}
	for i := 0; i < len(s); {
		start, inQuery, ok := secretValueAt(s, i)
		if !ok {
			i++
			continue
		}
		end := valueEnd(s, start, inQuery)
		if inMessage && masked(s, start) {
			// Redacted already (a message quoting a redacted DSN): the
			// text after the mask is the message's, not the value's.
			end = start + len(Mask)
		}
		all = append(all, [2]int{start, end})
		i = max(end, i+1)
	}
	sort.Slice(all, func(i, j int) bool { return all[i][0] < all[j][0] })
	var out [][2]int
	for _, sp := range all {
		if n := len(out); n > 0 && sp[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

// userInfoSpan returns the span [c, at) userInfo hides.
func userInfoSpan(s string) (c, at int, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return 0, 0, false
	}
	i += len("://")
	at = strings.LastIndexByte(s, '@')
	if at < i {
		return 0, 0, false
	}
	j := strings.IndexByte(s[i:at], ':')
	if j < 0 {
		return 0, 0, false
	}
	return i + j + 1, at, true
}

// secretKeys are the key names, lower case, whose values are hidden.
var secretKeys = []string{"password", "passwd", "pwd"}

// masked reports whether the value at s[i] is Mask alone.
func masked(s string, i int) bool {
	if !strings.HasPrefix(s[i:], Mask) {
		return false
	}
	rest := s[i+len(Mask):]
	return rest == "" || strings.IndexByte(";&: \t\n,)", rest[0]) >= 0
}

// secretValueAt reports whether a secret key starts at s[i] and returns
// where its value starts, and whether the pair is in a URL query (the key
// follows '?' or '&').
func secretValueAt(s string, i int) (start int, inQuery bool, ok bool) {
	for _, key := range secretKeys {
		if len(s)-i < len(key) || !strings.EqualFold(s[i:i+len(key)], key) {
			continue
		}
		j := skipSpaces(s, i+len(key))
		if j >= len(s) || s[j] != '=' {
			continue
		}
		// The key is the whole name when it starts the pair; a longer name
		// holding it (UserPassword, app_pwd) is hidden too.
		k := i
		for k > 0 && isKeyByte(s[k-1]) {
			k--
		}
		inQuery = k > 0 && (s[k-1] == '?' || s[k-1] == '&')
		return skipSpaces(s, j+1), inQuery, true
	}
	return 0, false, false
}

func isKeyByte(c byte) bool {
	return c == '_' || c == ' ' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipSpaces(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j
}

// valueEnd returns the index just past the value that starts at s[i]. A
// quoted or braced part is skipped whole, then the value runs on as a bare
// one: a parser that reads `""0000` or `{a}b` reads more than the quotes.
func valueEnd(s string, i int, inQuery bool) int {
	if i >= len(s) {
		return i
	}
	var closing byte
	switch s[i] {
	case '"', '\'':
		closing = s[i]
	case '{':
		closing = '}'
	}
	if closing != 0 {
		j := i + 1
		for ; j < len(s); j++ {
			if s[j] != closing {
				continue
			}
			if j+1 < len(s) && s[j+1] == closing { // doubled: an escaped delimiter
				j++
				continue
			}
			break
		}
		if j >= len(s) {
			return len(s) // unterminated: hide the rest
		}
		i = j + 1
	}
	for j := i; j < len(s); j++ {
		switch {
		case inQuery && s[j] == '&' && startsKnownParam(s[j+1:]):
			return j
		case !inQuery && s[j] == ';':
			return j
		}
	}
	return len(s)
}

// queryParams are the connection-string parameters go-mssqldb reads, lower
// case: the only names after which a URL query value is known to have ended.
var queryParams = map[string]bool{
	"database": true, "encrypt": true, "user id": true, "port": true, "trustservercertificate": true,
	"certificate": true, "servercertificate": true, "tlsmin": true, "packet size": true, "log": true,
	"connection timeout": true, "hostnameincertificate": true, "keepalive": true, "serverspn": true,
	"workstation id": true, "app name": true, "applicationintent": true, "failoverpartner": true,
	"failoverport": true, "failoverpartnerspn": true, "disableretry": true, "server": true, "protocol": true,
	"dial timeout": true, "pipe": true, "multisubnetfailover": true, "notraceid": true, "guid conversion": true,
	"timezone": true, "epa enabled": true, "columnencryption": true, "fedauth": true, "uid": true,
	"password": true, "pwd": true, "change password": true,
}

// startsKnownParam reports whether s starts with name= for a parameter of
// queryParams.
func startsKnownParam(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 || eq > 40 {
		return false
	}
	name := strings.ToLower(s[:eq])
	name = strings.ReplaceAll(strings.ReplaceAll(name, "%20", " "), "+", " ")
	return queryParams[name]
}

// Text returns s with the secrets of dsn removed: every form in which one of
// dsn's passwords can appear (as written, unquoted, percent-decoded, and each
// piece of it between delimiters) and, through DSN, anything in s that looks
// like a credential.
//
// The known secrets go first, so that what is left of them cannot pass for
// a mask that is already there.
func Text(s, dsn string) string {
	for _, p := range secrets(dsn) {
		s = strings.ReplaceAll(s, p, Mask)
	}
	return mask(s, true)
}

// Error returns err with its text passed through Text, keeping the chain for
// errors.Is and errors.As. It returns err itself when nothing changes.
func Error(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := Text(msg, dsn)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError keeps the chain but not the text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// minPiece is the shortest piece of a password replaced on its own: a piece
// cut at a delimiter ("S3cr3t;TAILSECRET" gives "TAILSECRET") may reach a
// message alone, but one or two characters would blank unrelated text.
const minPiece = 4

// secrets lists the strings that would give away a password of dsn, longest
// first, so a longer form is replaced before a piece of it.
func secrets(dsn string) []string {
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || p == Mask {
			return
		}
		seen[p] = true
		if u, err := url.PathUnescape(p); err == nil {
			seen[u] = true
		}
		if u, err := url.QueryUnescape(p); err == nil {
			seen[u] = true
		}
	}
	for _, raw := range rawSecrets(dsn) {
		add(raw)
		add(unquote(raw))
	}
	var out []string
	for p := range seen {
		if p == "" {
			continue
		}
		out = append(out, p)
		for _, piece := range strings.FieldsFunc(p, isDelimiter) {
			if len(piece) >= minPiece {
				out = append(out, piece)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// rawSecrets returns the spans DSN would hide, as written in dsn.
func rawSecrets(dsn string) []string {
	var out []string
	for _, sp := range spans(dsn, false) {
		out = append(out, dsn[sp[0]:sp[1]])
	}
	return out
}

// unquote strips one level of quotes or braces, undoubling escaped
// delimiters, as the ADO and ODBC parsers read a value.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) < 2 {
		return v
	}
	switch {
	case v[0] == '"' && v[len(v)-1] == '"':
		return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
	case v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], `''`, `'`)
	case v[0] == '{' && v[len(v)-1] == '}':
		return strings.ReplaceAll(v[1:len(v)-1], `}}`, `}`)
	}
	return v
}

func isDelimiter(r rune) bool {
	return strings.ContainsRune(";=&?#@:/\"'{}[] \t\r\n,", r)
}
