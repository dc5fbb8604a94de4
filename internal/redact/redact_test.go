package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/internal/redact/redacttest"
)

// The cases of the security review: each printed some or all of the
// password before this package existed.
func TestDSNHidesEveryPassword(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"sqlserver://sa:S3cr3t@bad host name:1?database=app", "sqlserver://sa:xxxxx@bad host name:1?database=app"},
		{"sqlserver://sa:S3cr3t@[::1:1", "sqlserver://sa:xxxxx@[::1:1"},
		{"sqlserver://sa:S3cr3t%zz@127.0.0.1:1", "sqlserver://sa:xxxxx@127.0.0.1:1"},
		{"sqlserver://sa:p@ss:w/rd?x@host:1433?database=app", "sqlserver://sa:xxxxx@host:1433?database=app"},
		{"server=h;user id=sa;password={S3cr3t;TAILSECRET};database=app", "server=h;user id=sa;password=xxxxx;database=app"},
		{`server=h;Password="S3cr3t;""TAILSECRET";database=app`, "server=h;Password=xxxxx;database=app"},
		{"server=h;Password={;00000}", "server=h;Password=xxxxx"},
		{"odbc:server=h;uid=sa;pwd={a}}b;c};database=app", "odbc:server=h;uid=sa;pwd=xxxxx;database=app"},
		{"server=h;PWD = spaced out ;database=app", "server=h;PWD = xxxxx;database=app"},
		{"server=h;password='single;quoted'", "server=h;password=xxxxx"},
		{"server=h;password=\"unterminated;database=app", "server=h;password=xxxxx"},
		{"sqlserver://sa@h:1?database=app&password=S3cr3t&encrypt=disable", "sqlserver://sa@h:1?database=app&password=xxxxx&encrypt=disable"},
		{"sqlserver://sa@h:1?password=ab&cd&database=app", "sqlserver://sa@h:1?password=xxxxx&database=app"},
		{"sqlserver://sa@h:1?password=ab;cd&x=y&app+name=z", "sqlserver://sa@h:1?password=xxxxx&app+name=z"},
		{"server=h;UserPassword=S3cr3t", "server=h;UserPassword=xxxxx"},
		{"no secret here: server=h;user id=sa", "no secret here: server=h;user id=sa"},
		{"sqlserver://h:1?database=app", "sqlserver://h:1?database=app"},
		{"see http://docs then sqlserver://sa:pw@h", "see http://docs then sqlserver:xxxxx@h"},
	}
	for _, c := range cases {
		if got := redact.DSN(c.in); got != c.want {
			t.Errorf("DSN(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A message that quotes a DSN redacted before keeps the words after it.
func TestTextKeepsTheMessageAfterARedactedDSN(t *testing.T) {
	const msg = "cannot reach sqlserver://sa@h?password=xxxxx: dial tcp: refused"
	if got := redact.Text(msg, ""); got != msg {
		t.Errorf("redact.Text(%q) = %q", msg, got)
	}
}

// The cases config tested before the one redaction function existed.
func TestDSNConfigCases(t *testing.T) {
	const secret = "S3cr3t!"
	tests := []struct{ in, want string }{
		{"", ""},
		{"sqlserver://sa:" + secret + "@db:1433?database=jobs", "sqlserver://sa:xxxxx@db:1433?database=jobs"},
		{"sqlserver://sa:" + secret + "@db/instance", "sqlserver://sa:xxxxx@db/instance"},
		{"SQLSERVER://sa:" + secret + "@db", "SQLSERVER://sa:xxxxx@db"},
		// Unescaped '/', '?', '@' and ':' in the password.
		{"sqlserver://sa:p/a?s:s@w" + secret + "@db?database=jobs", "sqlserver://sa:xxxxx@db?database=jobs"},
		{"sqlserver://sa@db?database=jobs&password=" + secret + "&encrypt=true", "sqlserver://sa@db?database=jobs&password=xxxxx&encrypt=true"},
		{"sqlserver://db?PASSWORD=a@" + secret, "sqlserver://db?PASSWORD=xxxxx"},
		{"sqlserver://sa:" + secret + "@db?password=" + secret, "sqlserver://sa:xxxxx@db?password=xxxxx"},
		{"sqlserver://db:1433?database=jobs", "sqlserver://db:1433?database=jobs"},
		{"sqlserver://sa@db", "sqlserver://sa@db"},
		{"Server=db;User Id=sa;Password=" + secret + ";Database=jobs", "Server=db;User Id=sa;Password=xxxxx;Database=jobs"},
		{"Server=db;User Id=sa;Password=" + secret, "Server=db;User Id=sa;Password=xxxxx"},
		{"server=db;pwd=" + secret + ";", "server=db;pwd=xxxxx;"},
		{"Server=db; PWD = " + secret + " ;Database=jobs", "Server=db; PWD = xxxxx;Database=jobs"},
		{"Password=" + secret + ";Server=db", "Password=xxxxx;Server=db"},
		{`Server=db;Password="a;b""` + secret + `";Database=jobs`, `Server=db;Password=xxxxx;Database=jobs`},
		{`Server=db;Password='a;` + secret + `';Database=jobs`, `Server=db;Password=xxxxx;Database=jobs`},
		{"Server=db;Pwd={a;}}" + secret + "};Database=jobs", "Server=db;Pwd=xxxxx;Database=jobs"},
		{`Server=db;Password="unterminated;` + secret, `Server=db;Password=xxxxx`},
		{"odbc:server=db;uid=sa;pwd=" + secret, "odbc:server=db;uid=sa;pwd=xxxxx"},
		{"Server=db;Integrated Security=true", "Server=db;Integrated Security=true"},
		{"Server=db;Password=", "Server=db;Password=xxxxx"},
		{"00:01:30", "00:01:30"},
		// Inside a list or a message.
		{"[sqlserver://sa:" + secret + "@db, x]", "[sqlserver://sa:xxxxx@db, x]"},
		{`queue "sqlserver://sa:` + secret + `@db" may contain only '.' and ':'`, `queue "sqlserver://sa:xxxxx@db" may contain only '.' and ':'`},
		{"[Server=db;Password=" + secret + "]", "[Server=db;Password=xxxxx"},
		{"[Password=" + secret + "]", "[Password=xxxxx"},
		// Both forms at once.
		{"Server=db;Password=" + secret + ";Application Name=http://app", "Server=db;Password=xxxxx;Application Name=http://app"},
	}
	for _, tt := range tests {
		got := redact.DSN(tt.in)
		if got != tt.want {
			t.Errorf("DSN(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, secret) {
			t.Errorf("DSN(%q) = %q leaks the password", tt.in, got)
		}
	}
}

func TestErrorHidesEveryFormOfThePassword(t *testing.T) {
	dsn := "sqlserver://sa:S3cr%3Bt@h:1?database=app"
	for _, text := range []string{
		"login failed with password S3cr;t",         // decoded
		"login failed with password S3cr%3Bt",       // as written
		"unknown key S3cr in the connection string", // a piece
	} {
		err := redact.Error(errors.New(text), dsn)
		if strings.Contains(err.Error(), "S3cr") {
			t.Errorf("redact.Error(%q) = %q: the password shows", text, err)
		}
	}
	base := errors.New("boom S3cr;t")
	wrapped := redact.Error(fmt.Errorf("connect: %w", base), dsn)
	if !errors.Is(wrapped, base) {
		t.Error("Error lost the chain")
	}
	if plain := errors.New("nothing secret"); redact.Error(plain, dsn) != plain {
		t.Error("Error wrapped an error it did not change")
	}
	if redact.Error(nil, dsn) != nil {
		t.Error("redact.Error(nil) is not nil")
	}
}

func FuzzDSN(f *testing.F) {
	for _, seed := range []string{
		"S3cr3t", "S3cr3t;TAILSECRET", `S3cr3t;"TAILSECRET`, "{;00000}", ";00000", "p@ss:w/rd?x#y",
		"S3cr3t%zz", "a://bcde@fghi", "  spaced secret  ", "}}closing{{", "ab&cdef=ghij", "pass=word;pwd=again",
		"ünïcødé-secret", "'quoted'", "\"dq\"", "xxxxx-real", "0000;password=1111", "P@ssw0rd#1", "20261202#",
		"ab/cd@evil.example", "1234?x=y@h",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, password string) {
		if strings.ContainsAny(password, "\x00\r\n") {
			t.Skip()
		}
		placeholder := redacttest.Forms("PLACEHOLDER")
		for i, dsn := range redacttest.Forms(password) {
			// What Check lets through, the driver reads with the host
			// where it was written: no piece of the password is looked up.
			if strings.HasPrefix(dsn, "sqlserver://") && redact.Check(dsn) == nil {
				if u, err := url.Parse(dsn); err != nil || u.Host != "127.0.0.1:1" {
					t.Fatalf("Check accepts %q, read with host %q (%v)", dsn, u.Host, err)
				}
			}
			if got := redacttest.Leaks(redact.DSN(dsn), placeholder[i], password); len(got) > 0 {
				t.Fatalf("DSN(%q) = %q shows %q", dsn, redact.DSN(dsn), got)
			}
			msg := "cannot reach SQL Server at " + dsn + ": dial tcp 127.0.0.1:1: connection refused"
			if got := redacttest.Leaks(redact.Text(msg, dsn), placeholder[i], password); len(got) > 0 {
				t.Fatalf("redact.Text(%q) = %q shows %q", msg, redact.Text(msg, dsn), got)
			}
			if got := redacttest.Leaks(redact.Error(errors.New("login failed: "+password), dsn).Error(), placeholder[i], password); len(got) > 0 {
				t.Fatalf("Error of a message holding the password shows %q", got)
			}
		}
	})
}
