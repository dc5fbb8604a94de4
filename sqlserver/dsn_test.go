package sqlserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/internal/redact/redacttest"
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

// A URL the driver would misread (a password holding '#' or '?') is
// refused before any dial: the trap it would connect to sees nothing, and
// the error says to percent-encode without showing the password.
func TestOpenNeverDialsAConnectionStringItRefuses(t *testing.T) {
	dsns, dials := redacttest.Trap(t)
	for _, dsn := range dsns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := Open(ctx, dsn)
		cancel()
		if !errors.Is(err, ErrInvalidDSN) || !strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error(), "Tr4pS3cret") {
			t.Errorf("Open(%q) = %v, want ErrInvalidDSN saying to percent-encode, without the password", redact.DSN(dsn), err)
		}
		if err := CheckDSN(dsn); !errors.Is(err, ErrInvalidDSN) {
			t.Errorf("CheckDSN(%q) = %v, want ErrInvalidDSN", redact.DSN(dsn), err)
		}
	}
	if n := dials(); n != 0 {
		t.Errorf("the trap was dialled %d times", n)
	}
	if err := CheckDSN("sqlserver://sa:P%23ss@127.0.0.1:1?database=app"); err != nil {
		t.Errorf("CheckDSN of a well-formed URL: %v", err)
	}
}
