package sqlserver

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// querier is what a statement needs: the pool or a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// database is where every statement of the store runs: the connection pool
// (pooled), or one transaction that someone else owns (within), which is
// how the doctor runs the store's own statements and code paths inside a
// transaction it rolls back.
type database interface {
	querier
	// BeginTx opens a transaction of the store's own (EnqueueMany,
	// FireSchedule).
	BeginTx(ctx context.Context, opts *sql.TxOptions) (transaction, error)
}

// transaction is a transaction the store opened.
type transaction interface {
	querier
	Commit() error
	Rollback() error
}

// pooled runs statements on the pool.
type pooled struct{ *sql.DB }

func (p pooled) BeginTx(ctx context.Context, opts *sql.TxOptions) (transaction, error) {
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tx, nil
}

// within runs every statement on tx. A transaction the store would open of
// its own becomes part of tx: its Commit and Rollback do nothing, and only
// tx's owner ends it (its isolation level is tx's).
type within struct{ *sql.Tx }

func (w within) BeginTx(context.Context, *sql.TxOptions) (transaction, error) {
	return nested(w), nil
}

// nested is a store's transaction inside someone else's.
type nested struct{ *sql.Tx }

func (nested) Commit() error   { return nil }
func (nested) Rollback() error { return nil }

// on returns a copy of s whose statements all run on tx and are never
// retried: an error that ended tx (a deadlock victim's, one under
// XACT_ABORT) would make a retry run outside it, in autocommit.
//
// The copy has its own owed flag, reports no workflow end (tx is rolled
// back, or the caller's), and runs no release step before its
// claims (noRelease): a release step pays every workflow's owed rows, and
// one inside tx (the doctor's, rolled back) would lock an application's
// tasks, and the workflow lock, until tx ends.
func (s *Store) on(tx *sql.Tx) *Store {
	c := *s
	c.owed, c.noRelease, c.workflowEnded = new(atomic.Bool), true, nil
	c.db = within{tx}
	c.retry = RetryPolicy{MaxAttempts: 1, BaseDelay: s.retry.BaseDelay, MaxDelay: s.retry.MaxDelay}
	return &c
}
