package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
)

// ErrInvalid is wrapped by every error about a key or its value: unknown
// keys, values of the wrong type, values out of range and alias conflicts.
var ErrInvalid = errors.New("config: invalid configuration")

// ErrSyntax is wrapped by the error for a file that YAML cannot parse. The
// error names the file and the line.
var ErrSyntax = errors.New("config: file is not valid YAML")

// Error is one configuration mistake. It unwraps to ErrInvalid.
type Error struct {
	// Key is the full key path as chokaq knows it, e.g.
	// "ChokaQ.Execution.Concurrency"; for an unknown key, as written.
	Key string
	// Value is the offending value as written, with any connection-string
	// password replaced; "" leaves it out of the message.
	Value string
	// Rule says what is wrong, e.g. "must be at least 1".
	Rule string
	// Source is where the value came from: a file path,
	// "environment (CHOKAQ__...)" or "override"; empty for a value that was
	// never configured (a default, or a Config built in code).
	Source string
}

// Error reads
//
//	config: ChokaQ.Execution.HeartbeatIntervalMin = 20s (appsettings.yaml): must be <= Execution.HeartbeatIntervalMax (12s)
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	b.WriteString(e.Key)
	if e.Value != "" {
		b.WriteString(" = ")
		// Redacted again here because Error's fields are exported and a
		// caller may build one; a password must not leak that way either.
		b.WriteString(displayValue(redact.DSN(e.Value)))
	}
	if e.Source != "" {
		b.WriteString(" (")
		b.WriteString(e.Source)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(redact.DSN(e.Rule)) // a rule may quote a value
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// displayValue quotes a value only when its spaces would otherwise be
// invisible in a message.
func displayValue(s string) string {
	if strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// newError builds an *Error with the value and rule redacted, so that the
// fields are safe to log one by one. The value of a key whose name says it
// holds a secret is hidden whole: only connection strings have a shape
// redact.DSN recognises.
func newError(key, value, source, rule string) *Error {
	value = redact.DSN(value)
	if value != "" && secretName(key) {
		value = redact.Mask
	}
	return &Error{Key: key, Value: clipValue(value), Source: source, Rule: redact.DSN(rule)}
}

// maxValueShown bounds the value an error shows: a schedule's payload may
// be megabytes, and a message is one line. 256 shows whole a value one
// byte over any bounded field (a 201-character worker ID).
const maxValueShown = 256

// clipValue is value cut to maxValueShown bytes, its length said, as the
// job and schedule errors show long values. It cuts after redaction, so
// no piece of a secret is left for the cut to expose.
func clipValue(value string) string {
	if len(value) <= maxValueShown {
		return value
	}
	return jobs.Clip(value, maxValueShown) + " (" + strconv.Itoa(len(value)) + " bytes)"
}

// secretName reports whether a key's last segment names a secret, such as
// a misspelled or unknown ChokaQ.Password.
func secretName(key string) bool {
	last := strings.ToLower(key[strings.LastIndexByte(key, '.')+1:])
	for _, w := range []string{"password", "pwd", "secret", "token"} {
		if strings.Contains(last, w) {
			return true
		}
	}
	return false
}
