package sqlserver

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func nopLogger() *zap.Logger { return zap.NewNop() }

func TestWithAppName(t *testing.T) {
	cases := map[string]string{
		"sqlserver://u:p@h:1433":                  "sqlserver://u:p@h:1433?app+name=chokaq",
		"sqlserver://u:p@h?database=d":            "sqlserver://u:p@h?database=d&app+name=chokaq",
		"sqlserver://h?app+name=mine":             "sqlserver://h?app+name=mine",
		"server=h;user id=u;password=p":           "server=h;user id=u;password=p;app name=chokaq",
		"server=h;app name=mine;":                 "server=h;app name=mine;",
		"server=h;user id=u;password=p;database=": "server=h;user id=u;password=p;database=;app name=chokaq",
	}
	for in, want := range cases {
		if got := WithAppName(in, "chokaq"); got != want {
			t.Errorf("WithAppName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for _, dsn := range []string{
		"sqlserver://sa:S3cr3t!pw@db:1433?database=x",
		"sqlserver://db:1433?user+id=sa&password=S3cr3t!pw",
		"server=db;user id=sa;password=S3cr3t!pw;database=x",
		"Server=db;User Id=sa;Pwd='S3cr3t!pw';",
	} {
		got := RedactDSN(dsn)
		if strings.Contains(got, "S3cr3t") {
			t.Errorf("RedactDSN(%q) = %q still shows the password", dsn, got)
		}
		if !strings.Contains(got, "db") {
			t.Errorf("RedactDSN(%q) = %q lost the host", dsn, got)
		}
	}
}

func TestRedactErrorKeepsChain(t *testing.T) {
	sentinel := errors.New("login failed for password S3cr3t!pw")
	err := RedactError(sentinel, "sqlserver://sa:S3cr3t!pw@db")
	if strings.Contains(err.Error(), "S3cr3t") || !errors.Is(err, sentinel) {
		t.Fatalf("RedactError = %q (is sentinel: %v)", err, errors.Is(err, sentinel))
	}
}
