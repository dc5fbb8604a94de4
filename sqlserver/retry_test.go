package sqlserver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want errorClass
	}{
		{"deadlock victim", mssql.Error{Number: 1205}, notApplied},
		{"lock timeout", fmt.Errorf("wrapped: %w", mssql.Error{Number: 1222}), notApplied},
		{"azure busy", mssql.Error{Number: 40501}, notApplied},
		{"azure db unavailable", mssql.Error{Number: 40613}, notApplied},
		{"azure failover", mssql.Error{Number: 40197}, ambiguous},
		{"unique key", mssql.Error{Number: 2627}, permanent},
		{"syntax", mssql.Error{Number: 102}, permanent},
		{"bad conn", driver.ErrBadConn, notApplied},
		{"network", &net.OpError{Op: "read", Err: errors.New("reset")}, ambiguous},
		{"eof", io.ErrUnexpectedEOF, ambiguous},
		{"cancelled", context.Canceled, permanent},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), permanent},
		{"other", errors.New("boom"), permanent},
		{"rolled back whole", &rolledBack{mssql.Error{Number: 2601}}, notApplied},
		{"network timeout", fmt.Errorf("read: %w", timeoutError{}), ambiguous},
		{"read deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, ambiguous},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("%s: classify(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// errorNumberClasses is ADR 0005's list, plus the permanent codes
// SQLSERVER.md names. It is written out rather than read from the maps in
// retry.go, so moving a code between classes, or adding one without
// deciding here what it proves, fails TestClassifyEveryErrorNumber.
var errorNumberClasses = map[int32]errorClass{
	1205: notApplied, 1222: notApplied, 4060: notApplied, 4221: notApplied,
	10928: notApplied, 10929: notApplied, 40501: notApplied, 40613: notApplied,
	49918: notApplied, 49919: notApplied, 49920: notApplied, 51001: notApplied, 51003: notApplied,

	40197: ambiguous, 40143: ambiguous, 233: ambiguous, 10053: ambiguous,
	10054: ambiguous, 10060: ambiguous, 64: ambiguous,

	2601: permanent, 2627: permanent, 547: permanent,
}

func TestClassifyEveryErrorNumber(t *testing.T) {
	for n, want := range errorNumberClasses {
		for _, err := range []error{mssql.Error{Number: n}, fmt.Errorf("exec: %w", mssql.Error{Number: n})} {
			if got := classify(err); got != want {
				t.Errorf("classify(%v) = %d, want %d", err, got, want)
			}
		}
	}
	for _, m := range []map[int32]bool{notAppliedNumbers, ambiguousNumbers} {
		for n := range m {
			if _, ok := errorNumberClasses[n]; !ok {
				t.Errorf("error %d is retried but has no class in errorNumberClasses (and ADR 0005)", n)
			}
		}
	}
	for n := range notAppliedNumbers {
		if ambiguousNumbers[n] {
			t.Errorf("error %d is both not-applied and ambiguous", n)
		}
	}
}

// timeoutError is a net.Error for a network timeout: the request may have
// reached the server, so only an idempotent statement may run again.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func newRetryStore(t *testing.T, attempts int) (*Store, *[]time.Duration) {
	t.Helper()
	var waits []time.Duration
	s := &Store{retry: RetryPolicy{MaxAttempts: attempts, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}}
	s.log = nopLogger()
	s.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return s, &waits
}

func TestDoRetriesByClassAndIdempotency(t *testing.T) {
	deadlock := mssql.Error{Number: 1205}
	network := &net.OpError{Op: "read", Err: errors.New("reset")}
	cases := []struct {
		name      string
		idem      idempotency
		errs      []error // returned by successive calls; nil after
		wantCalls int
		wantErr   bool
	}{
		{"deadlock then success, once", once, []error{deadlock, deadlock}, 3, false},
		{"network error is not retried for once", once, []error{network}, 1, true},
		{"network error is retried when idempotent", idempotent, []error{network, network}, 3, false},
		{"permanent error is not retried", idempotent, []error{mssql.Error{Number: 2627}}, 1, true},
		{"gives up after MaxAttempts", idempotent, []error{deadlock, deadlock, deadlock, deadlock, deadlock}, 4, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, waits := newRetryStore(t, 4)
			calls := 0
			err := s.do(context.Background(), "op", c.idem, func(context.Context) error {
				calls++
				if calls <= len(c.errs) {
					return c.errs[calls-1]
				}
				return nil
			})
			if calls != c.wantCalls || (err != nil) != c.wantErr {
				t.Fatalf("calls %d err %v; want %d calls, error %v", calls, err, c.wantCalls, c.wantErr)
			}
			for i, w := range *waits {
				ceiling := s.retry.BaseDelay << i
				if ceiling > s.retry.MaxDelay {
					ceiling = s.retry.MaxDelay
				}
				if w <= 0 || w > ceiling {
					t.Errorf("wait %d = %v, want in (0, %v]", i, w, ceiling)
				}
			}
		})
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	s, _ := newRetryStore(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := s.do(ctx, "op", idempotent, func(context.Context) error {
		calls++
		cancel()
		return mssql.Error{Number: 1205}
	})
	if calls != 1 || err == nil {
		t.Fatalf("calls %d err %v; want 1 call and an error", calls, err)
	}
}
