package redact_test

import (
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/internal/redact"
)

// Check refuses each URL connection string whose password the driver would
// misread into the host or the port, and passes the well-formed ones and
// the key=value forms, which the driver parses whole before any I/O.
func TestCheckRefusesAURLTheDriverWouldMisread(t *testing.T) {
	refused := []string{
		"sqlserver://sa:P@ssw0rd#1@127.0.0.1:1?database=app", // '#' ends the URL: host "ssw0rd"
		"sqlserver://sa:20261202#@127.0.0.1:1",               // port "20261202"
		"sqlserver://sa:pw@127.0.0.1:1?database=app#frag",    // a fragment
		"sqlserver://sa@127.0.0.1:1?password=ab#cd",          // a query value holding '#'
		"sqlserver://sa:p/ss@127.0.0.1:1?database=app",       // '/' ends the address: host "sa", port "p"
		"sqlserver://sa:1234/ss@127.0.0.1:1",                 // ... and a numeric port
		"sqlserver://sa:p?ss@127.0.0.1:1?database=app",       // '?' ends the address
		"sqlserver://sa:12?x=1@127.0.0.1:1",                  // the '@' lands in an unknown parameter
		"sqlserver://sa@h:1?password=a&b@c",                  // an unescaped '&' in a query password
		"sqlserver://sa:S3cr3t%zz@127.0.0.1:1",               // a bad percent escape
		"sqlserver://sa:pass word@127.0.0.1:1",               // a space
		"sqlserver://sa:pässwörd@127.0.0.1:1",                // non-ASCII, unescaped
		"sqlserver://sa:S3cr3t@bad host name:1?database=app", // not a URL
		"sqlserver://sa:S3cr3t@[::1:1",                       // not a URL
		"SQLServer://sa:S3cr3t@127.0.0.1:1",                  // read as key=value by the driver
	}
	for _, dsn := range refused {
		err := redact.Check(dsn)
		if err == nil {
			t.Errorf("Check(%q) = nil, want a refusal", dsn)
			continue
		}
		if redact.Text(err.Error(), "") != err.Error() {
			t.Errorf("Check(%q) = %q: the redaction of every output hides part of it", dsn, err)
		}
		for _, piece := range []string{"ssw0rd", "20261202", "S3cr3t", "pässwörd", "127.0.0.1"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("Check(%q) = %q: quotes the connection string", dsn, err)
			}
		}
	}
	for _, dsn := range []string{
		"sqlserver://sa:P%40ssw0rd%231@127.0.0.1:1?database=app",
		"sqlserver://sa:p@ss@127.0.0.1:1", // the last '@' ends the user-info, as net/url and the driver read it
		"sqlserver://sa:a;b=c!$&'()*+,~-._@h/instance?database=app",
		"sqlserver://h:1433?user+id=me@contoso.com&fedauth=ActiveDirectoryPassword&password=p@ss",
		"sqlserver://h?user%20id=me@contoso.com",
		"sqlserver://h:1?database=app",
		"sqlserver://sa@h",
		"server=h;user id=sa;password=p#ss/w?rd;database=app",
		"odbc:server=h;uid=sa;pwd={p#ss}",
		"",
	} {
		if err := redact.Check(dsn); err != nil {
			t.Errorf("Check(%q) = %v, want nil", dsn, err)
		}
	}
}

// A piece of a password cut at '#' is hidden like one cut at '/' or '?':
// the driver prints the piece it took for the host.
func TestTextHidesAPieceOfThePasswordCutAtAHash(t *testing.T) {
	for _, c := range []struct{ dsn, msg, piece string }{
		{"sqlserver://sa:P@ssw0rd#1@127.0.0.1:1?database=app", "dial tcp: lookup ssw0rd on 127.0.0.53:53: no such host", "ssw0rd"},
		{"sqlserver://sa:20261202#@127.0.0.1:1", "invalid tcp port '20261202'", "20261202"},
		{"server=h;password=abcd#efgh", "unknown value efgh", "efgh"},
	} {
		if got := redact.Text(c.msg, c.dsn); strings.Contains(got, c.piece) {
			t.Errorf("Text(%q) = %q: shows %q", c.msg, got, c.piece)
		}
	}
}
