package sqlserver

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/periodic"
)

// RetryPolicy bounds the retries of transient errors inside one store call.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 1 disables retries.
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

// DefaultRetryPolicy retries for about four seconds before giving up, long
// enough to ride out a deadlock or an Azure SQL reconfiguration, short
// enough that the caller's own loop (the processor's backoff) takes over.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 6, BaseDelay: 50 * time.Millisecond, MaxDelay: 2 * time.Second}

// errorClass says what a failed call tells us about the server's state.
type errorClass int

const (
	// permanent: retrying gives the same answer.
	permanent errorClass = iota
	// notApplied: the server rolled back or never ran the request, so any
	// statement may run again.
	notApplied
	// ambiguous: the connection broke; the request may or may not have
	// committed. Only idempotent statements may run again.
	ambiguous
)

// SQL Server error numbers that mean the request was rolled back or refused.
var notAppliedNumbers = map[int32]bool{
	1205:  true, // chosen as deadlock victim; the transaction was rolled back
	1222:  true, // lock request timeout
	4060:  true, // cannot open database (Azure: during failover)
	4221:  true, // login to read-secondary failed due to long wait
	10928: true, // resource limit reached (Azure)
	10929: true, // resource limit reached (Azure)
	40501: true, // service is busy (Azure)
	40613: true, // database is not currently available (Azure)
	49918: true, // not enough resources to process the request (Azure)
	49919: true, // too many create or update operations (Azure)
	49920: true, // too many operations in progress (Azure)
	51001: true, // chokaq: an application lock (a key's, a queue's) was not granted in time
	51003: true, // chokaq: a unique key's application lock was not granted in time
}

// SQL Server error numbers after which the outcome is unknown.
var ambiguousNumbers = map[int32]bool{
	40197: true, // the service encountered an error processing the request (Azure failover)
	40143: true, // connection could not be initialized / was terminated
	233:   true, // no process is on the other end of the pipe
	10053: true, // transport-level error: connection aborted
	10054: true, // transport-level error: connection reset by peer
	10060: true, // network timeout
	64:    true, // the specified network name is no longer available
}

// rolledBack marks an error after which the server rolled the statement's
// whole transaction back, so it may run again, whatever its number.
type rolledBack struct{ err error }

func (e *rolledBack) Error() string { return e.err.Error() }
func (e *rolledBack) Unwrap() error { return e.err }

func classify(err error) errorClass {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return permanent
	}
	if _, ok := errors.AsType[*rolledBack](err); ok {
		return notApplied
	}
	var me mssql.Error
	if errors.As(err, &me) {
		switch {
		case notAppliedNumbers[me.Number]:
			return notApplied
		case ambiguousNumbers[me.Number]:
			return ambiguous
		}
		return permanent
	}
	// database/sql retries driver.ErrBadConn itself before anything is sent;
	// when it still surfaces, nothing ran.
	if errors.Is(err, driver.ErrBadConn) {
		return notApplied
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return ambiguous
	}
	return permanent
}

// idempotency says whether a statement may run twice.
type idempotency bool

const (
	// idempotent statements give the same end state when run twice: reads,
	// lease-guarded transitions (a second run finds the lease gone),
	// claims (a lost claim is rescued by phase 1) and keyed enqueues.
	idempotent idempotency = true
	// once statements would duplicate work if run twice (an enqueue without
	// an idempotency key).
	once idempotency = false
)

// do runs fn, retrying transient failures under the store's policy.
func (s *Store) do(ctx context.Context, op string, idem idempotency, fn func(ctx context.Context) error) error {
	p := s.retry
	delay := p.BaseDelay
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		class := classify(err)
		retry := class == notApplied || (class == ambiguous && idem == idempotent)
		if !retry || attempt >= p.MaxAttempts || ctx.Err() != nil {
			return err
		}
		wait := delay/2 + rand.N(delay/2+1)
		s.log.Warn("sqlserver: transient error, retrying",
			zap.String("op", op), zap.Int("attempt", attempt), zap.Duration("wait", wait), zap.Error(err))
		if err := s.sleep(ctx, wait); err != nil {
			return err
		}
		delay = min(delay*2, p.MaxDelay)
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error { return periodic.Sleep(ctx, d) }
