package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Leader elects one holder per schema and role with a session-owned
// application lock (sp_getapplock). It implements zombie.Leader: the process
// that holds the lock sweeps, the others skip. The lock lives on one pinned
// connection; if that connection dies, the server drops the lock and another
// process takes over at its next attempt.
type Leader struct {
	db       *sql.DB
	q        *queries
	resource string

	mu   sync.Mutex
	conn *sql.Conn
}

// NewLeader returns an elector for role (for example "rescue") in the
// store's schema.
func NewLeader(s *Store, role string) *Leader {
	// Upper case, as render writes the schema into lock names: the lock
	// name compares byte for byte, the schema name by collation.
	return &Leader{db: s.pool, q: s.q, resource: "chokaq:" + strings.ToUpper(s.schema) + ":" + role}
}

// TryLead reports whether this process holds the lock, taking it if free.
func (l *Leader) TryLead(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		var mode string
		err := l.conn.QueryRowContext(ctx, l.q.appLockMode, sql.Named("resource", text(l.resource))).Scan(&mode)
		if err == nil && mode == "Exclusive" {
			return true, nil
		}
		// Lost, or unknown (the check failed): never give this connection
		// back to the pool, where it could hold the lock for nobody.
		discard(l.conn)
		l.conn = nil
	}
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlserver: leader connection: %w", err)
	}
	var rc int
	if err := conn.QueryRowContext(ctx, l.q.tryAppLock, sql.Named("resource", text(l.resource))).Scan(&rc); err != nil {
		discard(conn) // the lock may have been granted with the reply lost
		return false, fmt.Errorf("sqlserver: sp_getapplock: %w", err)
	}
	switch {
	case rc == -1: // timed out at once: someone else leads
		conn.Close()
		return false, nil
	case rc < 0: // -2 cancelled, -3 deadlock victim, -999 a call error
		conn.Close()
		return false, fmt.Errorf("sqlserver: sp_getapplock for %s returned %d", l.resource, rc)
	}
	l.conn = conn
	return true, nil
}

// Resign releases the lock if held.
func (l *Leader) Resign(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	_, err := l.conn.ExecContext(ctx, l.q.releaseAppLock, sql.Named("resource", text(l.resource)))
	var cerr error
	if err != nil {
		discard(l.conn) // the lock may still be held: end the session
	} else {
		cerr = l.conn.Close()
	}
	l.conn = nil
	return errors.Join(err, cerr)
}

// discard closes conn for good instead of returning it to the pool: its
// session, and any session lock it holds, ends with it.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
