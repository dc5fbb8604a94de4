// Package redacttest plants passwords in connection strings and finds what
// of them shows in output, for the fuzz targets of every package that prints
// a connection string or an error about one; and it sets a trap that tells
// whether a connection string was dialled.
package redacttest

import (
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

// Trap listens on a loopback port and counts the connections made to it.
// It returns the URL connection strings, with the password "Tr4pS3cret",
// that go-mssqldb would misread so as to dial the trap (the real address
// after a '#' or after an unescaped '?' in the password), and the count so
// far. The listener closes when the test ends.
func Trap(t testing.TB) (dsns []string, dials func() int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	trap := ln.Addr().String()
	return []string{
		"sqlserver://sa:Tr4pS3cret@" + trap + "#@127.0.0.1:1?database=app",
		"sqlserver://sa:Tr4pS3cret@" + trap + "?x@127.0.0.1:1&database=app",
	}, n.Load
}

// Forms plants password in each connection-string form go-mssqldb reads,
// written as a user would write it: escaped where the form needs it, and, for
// the URL forms, also raw, as a careless user would.
func Forms(password string) []string {
	ado := password
	if strings.ContainsAny(password, `;"`) || strings.TrimSpace(password) != password {
		ado = `"` + strings.ReplaceAll(password, `"`, `""`) + `"`
	}
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword("sa", password), Host: "127.0.0.1:1", RawQuery: "database=app"}
	return []string{
		u.String(),
		"sqlserver://sa:" + password + "@127.0.0.1:1?database=app",
		"sqlserver://sa@127.0.0.1:1?database=app&password=" + url.QueryEscape(password) + "&encrypt=disable",
		"sqlserver://sa@127.0.0.1:1?database=app&password=" + password,
		"server=127.0.0.1,1;user id=sa;password=" + ado + ";database=app",
		"odbc:server=127.0.0.1,1;uid=sa;pwd={" + strings.ReplaceAll(password, "}", "}}") + "};database=app",
	}
}

// Leaks returns the distinctive pieces of password (runs of four or more
// letters and digits) that appear in out but not in the text around them
// (the same DSN with another password), so a piece cut off at a delimiter is
// caught as well as the whole.
func Leaks(out, template, password string) []string {
	var leaked []string
	for _, piece := range strings.FieldsFunc(password, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		// Masks side by side read as x's: a piece of nothing else says nothing.
		if len(piece) < 4 || strings.Contains(template, piece) || strings.Trim(piece, "x") == "" {
			continue
		}
		if strings.Contains(out, piece) {
			leaked = append(leaked, piece)
		}
	}
	return leaked
}
