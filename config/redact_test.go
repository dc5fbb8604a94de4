package config

import (
	"strings"
	"testing"
)

const secret = "S3cr3t!"

func TestRedact(t *testing.T) {
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
		got := redact(tt.in)
		if got != tt.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, secret) {
			t.Errorf("redact(%q) = %q leaks the password", tt.in, got)
		}
		c := Default()
		c.ConnectionString = tt.in
		if c.RedactedConnectionString() != got {
			t.Errorf("RedactedConnectionString() = %q, want %q", c.RedactedConnectionString(), got)
		}
	}
}

// The password never reaches an error or String.
func TestPasswordNeverShown(t *testing.T) {
	for _, cs := range []string{
		"sqlserver://sa:" + secret + "@db?database=jobs",
		"Server=db;User Id=sa;Password=" + secret + ";Database=jobs",
	} {
		env := "CHOKAQ__CONNECTIONSTRING=" + cs
		t.Run(cs[:9], func(t *testing.T) {
			c := mustLoad(t, source{env: []string{env}})
			if c.ConnectionString != cs {
				t.Fatalf("ConnectionString = %q", c.ConnectionString)
			}
			if s := c.String(); strings.Contains(s, secret) || !strings.Contains(s, "xxxxx") || !strings.Contains(s, "storage: sqlserver") {
				t.Errorf("String() =\n%s", s)
			}

			errorCases := []source{
				// The connection string is valid; another key is not.
				{env: []string{env, "CHOKAQ__EXECUTION__CONCURRENCY=0"}},
				// The connection string itself is refused.
				{yaml: "ChokaQ:\n  ConnectionString: [\"" + cs + "\"]\n"},
				// It is written under a misspelled key.
				{env: []string{"CHOKAQ__CONECTIONSTRING=" + cs}},
				{overrides: map[string]string{"ConnectionStrings": cs}},
				{yaml: "ConnectionString: \"" + cs + "\"\n"},
				// It is written where another value belongs.
				{env: []string{"CHOKAQ__SCHEMA=" + cs}},
				{env: []string{"CHOKAQ__STORAGE=" + cs}},
				{env: []string{"CHOKAQ__QUEUES=" + cs}},
				{env: []string{"CHOKAQ__EXECUTION__POLLINTERVAL=" + cs}},
				{env: []string{"CHOKAQ__WORKERID=" + cs + "\n"}},
			}
			for _, src := range errorCases {
				_, _, err := load(t, src)
				if err == nil {
					t.Errorf("%+v: no error", src)
					continue
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks the password: %v", err)
				}
				if e, ok := err.(*Error); ok && strings.Contains(e.Value, secret) {
					t.Errorf("Error.Value leaks the password: %q", e.Value)
				}
			}
		})
	}

	// A value under a key named like a secret is hidden whole.
	_, _, err := load(t, source{env: []string{"CHOKAQ__PASSWORD=hunter2"}, overrides: map[string]string{"Schema": "x"}})
	if e := wantInvalid(t, err, "ChokaQ.PASSWORD = xxxxx (environment (CHOKAQ__PASSWORD)): unknown key"); e.Value != "xxxxx" {
		t.Errorf("Value = %q", e.Value)
	}

	// An Error built by hand is redacted when printed.
	e := &Error{Key: "ChokaQ.ConnectionString", Value: "Server=db;Password=" + secret, Rule: "r"}
	if strings.Contains(e.Error(), secret) {
		t.Errorf("Error() leaks the password: %v", e)
	}
}
