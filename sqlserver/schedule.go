package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

// scheduleRow is one row of the ScheduleList table type, in column order.
type scheduleRow struct {
	Name           string
	Definition     string
	DefinitionHash string
	IsPaused       bool
}

// SyncSchedules implements jobs.Store (qSyncSchedules), all definitions in
// one transaction.
func (s *Store) SyncSchedules(ctx context.Context, defs []jobs.ScheduleDef) error {
	if err := jobs.ValidateScheduleDefs(defs); err != nil {
		return err
	}
	rows := make([]scheduleRow, 0, len(defs))
	for _, d := range defs {
		rows = append(rows, scheduleRow{Name: d.Name, Definition: string(d.Definition), DefinitionHash: d.Hash, IsPaused: d.Paused})
	}
	if len(rows) == 0 {
		return nil
	}
	err := s.do(ctx, "sync schedules", idempotent, func(ctx context.Context) error {
		_, err := s.db.ExecContext(ctx, s.q.syncSchedules, named("defs", mssql.TVP{TypeName: s.schema + ".ScheduleList", Value: rows}),
			named("lockTimeoutMs", s.lockTimeoutMs()))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlserver: sync %d schedules: %w", len(rows), err)
	}
	return nil
}

// FireSchedule implements jobs.Store: the compare-and-set of the tick
// (qFireSchedule) and the job's enqueue in one transaction. A retry after a
// lost reply finds the tick taken and reports Fired false, though the job
// exists: the tick fired once.
func (s *Store) FireSchedule(ctx context.Context, p jobs.FireParams) (jobs.FireResult, error) {
	if err := p.Validate(); err != nil {
		return jobs.FireResult{}, err
	}
	job, err := p.Job.Normalize(s.limits)
	if err != nil {
		return jobs.FireResult{}, err
	}
	var res jobs.FireResult
	err = s.do(ctx, "fire schedule", idempotent, func(ctx context.Context) error {
		res = jobs.FireResult{}
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var moved int64
		err = tx.QueryRowContext(ctx, s.q.fireSchedule, named("name", text(p.Name)), named("hash", text(p.Hash)),
			named("tick", instant(p.Tick)), named("hasNext", flag(!p.Next.IsZero())), named("next", instant(p.Next))).Scan(&moved)
		if err != nil || moved == 0 {
			return err
		}
		r, err := s.enqueueOne(ctx, tx, job, true)
		if err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		res = jobs.FireResult{Fired: true, Job: r}
		return nil
	})
	if err != nil {
		return jobs.FireResult{}, fmt.Errorf("sqlserver: fire schedule %s at %s: %w", p.Name, p.Tick.UTC().Format(time.RFC3339Nano), err)
	}
	return res, nil
}

// Schedules implements jobs.Store.
func (s *Store) Schedules(ctx context.Context) ([]jobs.ScheduleState, error) {
	var out []jobs.ScheduleState
	err := s.do(ctx, "schedules", idempotent, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, s.q.schedules)
		if err != nil {
			return err
		}
		out, err = scanSchedules(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: schedules: %w", err)
	}
	return out, nil
}

// PauseSchedule implements jobs.Store.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (jobs.ScheduleState, error) {
	if err := jobs.ValidateScheduleName(name); err != nil {
		return jobs.ScheduleState{}, err
	}
	var out []jobs.ScheduleState
	err := s.do(ctx, "pause schedule", idempotent, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, s.q.pauseSchedule, named("name", text(name)), named("paused", paused))
		if err != nil {
			return err
		}
		out, err = scanSchedules(rows)
		return err
	})
	if err != nil {
		return jobs.ScheduleState{}, fmt.Errorf("sqlserver: pause schedule %s: %w", name, err)
	}
	if len(out) == 0 {
		return jobs.ScheduleState{}, jobs.ScheduleNotFound(name)
	}
	return out[0], nil
}

// DeleteSchedule implements jobs.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := jobs.ValidateScheduleName(name); err != nil {
		return err
	}
	var n int64
	err := s.do(ctx, "delete schedule", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.deleteSchedule, named("name", text(name))).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("sqlserver: delete schedule %s: %w", name, err)
	}
	if n == 0 {
		return jobs.ScheduleNotFound(name)
	}
	return nil
}

// TableQueues implements jobs.Store.
func (s *Store) TableQueues(ctx context.Context, t jobs.Table, after string) ([]string, error) {
	if !t.Valid() {
		return nil, &jobs.ValidationError{Field: "table", Value: t, Rule: "must be hot, archive or dlq"}
	}
	var out []string
	err := s.do(ctx, "table queues", idempotent, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, s.q.tableQueues[t], named("after", text(after)), named("maxQueues", int64(jobs.MaxStatsQueues)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				return err
			}
			out = append(out, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: queues of %s: %w", t, err)
	}
	return out, nil
}

// Trim implements jobs.Store (qTrim).
func (s *Store) Trim(ctx context.Context, p jobs.TrimParams) (jobs.TrimResult, error) {
	if err := p.Validate(); err != nil {
		return jobs.TrimResult{}, err
	}
	var r jobs.TrimResult
	err := s.do(ctx, "trim", idempotent, func(ctx context.Context) error {
		var n int64
		var last sql.NullTime
		var lastID sql.NullInt64
		err := s.db.QueryRowContext(ctx, s.q.trim[p.Table], named("queue", text(p.Queue)), named("olderThanMs", p.OlderThan.Milliseconds()),
			named("limit", int64(p.Limit)), named("hasAfter", flag(p.After.ID != 0)), named("afterUtc", instant(p.After.FinishedAt)),
			named("afterId", p.After.ID)).Scan(&n, &last, &lastID)
		if err != nil {
			return err
		}
		r = jobs.TrimResult{Deleted: int(n)}
		if last.Valid && lastID.Valid {
			r.Last = jobs.TrimKey{FinishedAt: last.Time.UTC(), ID: lastID.Int64}
		}
		return nil
	})
	if err != nil {
		return jobs.TrimResult{}, fmt.Errorf("sqlserver: trim %s of queue %s: %w", p.Table, p.Queue, err)
	}
	return r, nil
}

// scanSchedules reads rows of scheduleColumns.
func scanSchedules(rows *sql.Rows) ([]jobs.ScheduleState, error) {
	defer rows.Close()
	var out []jobs.ScheduleState
	for rows.Next() {
		var st jobs.ScheduleState
		var def string
		var firedAt, next sql.NullTime
		if err := rows.Scan(&st.Name, &def, &st.Hash, &st.LastFiredTick, &firedAt, &next, &st.Paused, &st.UpdatedAt, &st.SyncedAt); err != nil {
			return nil, err
		}
		st.Definition = []byte(def)
		st.LastFiredTick, st.UpdatedAt, st.SyncedAt = st.LastFiredTick.UTC(), st.UpdatedAt.UTC(), st.SyncedAt.UTC()
		if firedAt.Valid {
			st.LastFiredAt = firedAt.Time.UTC()
		}
		if next.Valid {
			st.NextFire = next.Time.UTC()
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
