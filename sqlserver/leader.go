package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	return &Leader{db: s.db, q: s.q, resource: "chokaq:" + s.schema + ":" + role}
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
		l.conn.Close() // lost: the connection broke or the lock is gone
		l.conn = nil
	}
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlserver: leader connection: %w", err)
	}
	var rc int
	if err := conn.QueryRowContext(ctx, l.q.tryAppLock, sql.Named("resource", text(l.resource))).Scan(&rc); err != nil {
		conn.Close()
		return false, fmt.Errorf("sqlserver: sp_getapplock: %w", err)
	}
	if rc < 0 { // -1 timeout: someone else leads
		conn.Close()
		return false, nil
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
	cerr := l.conn.Close()
	l.conn = nil
	return errors.Join(err, cerr)
}
