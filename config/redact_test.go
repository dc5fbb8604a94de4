package config

import (
	"strings"
	"testing"
)

const secret = "S3cr3t!"

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
