package sqlserver

import (
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
