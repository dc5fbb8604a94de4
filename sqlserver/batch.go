package sqlserver

import (
	"context"
	"database/sql"
	"fmt"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.BatchWorker = (*Store)(nil)

// retryRow is one row of the RetryList table type.
type retryRow struct {
	ID      int64
	Lease   int64
	DelayMs int64
	Error   string
}

// deadLetterRow is one row of the DeadLetterList table type.
type deadLetterRow struct {
	ID      int64
	Lease   int64
	Reason  int32
	Details string
}

// StartMany implements jobs.BatchWorker: one statement for every ref.
func (s *Store) StartMany(ctx context.Context, refs []jobs.LeaseRef, p jobs.StartParams) ([]jobs.StartResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := jobs.CheckBatchSize(len(refs)); err != nil {
		return nil, err
	}
	out := make([]jobs.StartResult, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	started := make(map[jobs.LeaseRef]jobs.Started, len(refs))
	err := s.do(ctx, "start-many", idempotent, func(ctx context.Context) error {
		clear(started)
		rows, err := s.db.QueryContext(ctx, s.q.startMany, named("refs", s.leaseTVP(refs)),
			named("defaultMs", p.DefaultTimeout.Milliseconds()))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r jobs.LeaseRef
			var st jobs.Started
			if err := rows.Scan(&r.ID, &r.Lease, &st.AttemptCount, &st.StartedAt, &st.DeadlineAt); err != nil {
				return err
			}
			st.StartedAt, st.DeadlineAt = st.StartedAt.UTC(), st.DeadlineAt.UTC()
			st.Timeout = st.DeadlineAt.Sub(st.StartedAt)
			started[r] = st
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: start %d jobs: %w", len(refs), err)
	}
	for i, r := range refs {
		if st, ok := started[r]; ok {
			out[i].Started = st
		} else {
			out[i].Err = fmt.Errorf("sqlserver: start job %d lease %d: %w", r.ID, r.Lease, jobs.ErrLeaseLost)
		}
	}
	return out, nil
}

// CompleteMany implements jobs.BatchWorker: one atomic move for every ref.
func (s *Store) CompleteMany(ctx context.Context, refs []jobs.LeaseRef) ([]error, error) {
	if err := jobs.CheckBatchSize(len(refs)); err != nil {
		return nil, err
	}
	return s.moveMany(ctx, "complete", s.q.completeMany, "refs", refs, make([]error, len(refs)), func() mssql.TVP {
		return s.leaseTVP(refs)
	})
}

// RetryMany implements jobs.BatchWorker: one statement for every item
// whose parameters are valid.
func (s *Store) RetryMany(ctx context.Context, items []jobs.RetryItem) ([]error, error) {
	if err := jobs.CheckBatchSize(len(items)); err != nil {
		return nil, err
	}
	refs, results := make([]jobs.LeaseRef, len(items)), make([]error, len(items))
	var rows []retryRow
	seen := make(map[jobs.LeaseRef]bool, len(items))
	for i, it := range items {
		refs[i] = it.Ref
		if err := it.Params.Validate(); err != nil {
			results[i] = err
			continue
		}
		if !seen[it.Ref] { // the first occurrence decides (jobs.BatchWorker)
			seen[it.Ref] = true
			rows = append(rows, retryRow{ID: it.Ref.ID, Lease: it.Ref.Lease, DelayMs: it.Params.Delay.Milliseconds(), Error: it.Params.Error})
		}
	}
	return s.moveMany(ctx, "retry", s.q.retryMany, "items", refs, results, func() mssql.TVP {
		return mssql.TVP{TypeName: s.schema + ".RetryList", Value: rows}
	})
}

// DeadLetterMany implements jobs.BatchWorker: one atomic move for every
// item whose parameters are valid.
func (s *Store) DeadLetterMany(ctx context.Context, items []jobs.DeadLetterItem) ([]error, error) {
	if err := jobs.CheckBatchSize(len(items)); err != nil {
		return nil, err
	}
	refs, results := make([]jobs.LeaseRef, len(items)), make([]error, len(items))
	var rows []deadLetterRow
	seen := make(map[jobs.LeaseRef]bool, len(items))
	for i, it := range items {
		refs[i] = it.Ref
		if err := it.Params.Validate(); err != nil {
			results[i] = err
			continue
		}
		if !seen[it.Ref] {
			seen[it.Ref] = true
			rows = append(rows, deadLetterRow{ID: it.Ref.ID, Lease: it.Ref.Lease, Reason: int32(it.Params.Reason), Details: it.Params.Details})
		}
	}
	return s.moveMany(ctx, "dead-letter", s.q.deadLetterMany, "items", refs, results, func() mssql.TVP {
		return mssql.TVP{TypeName: s.schema + ".DeadLetterList", Value: rows}
	})
}

// moveMany runs a batch statement that returns the (Id, RunLease) of every
// row it moved, and fills in results: nil for a moved ref, ErrLeaseLost for
// the others, leaving the results already set (a refused item) alone.
func (s *Store) moveMany(ctx context.Context, op, stmt, arg string, refs []jobs.LeaseRef, results []error, tvp func() mssql.TVP) ([]error, error) {
	pending := 0
	for _, err := range results {
		if err == nil {
			pending++
		}
	}
	if pending == 0 {
		return results, nil
	}
	moved := make(map[jobs.LeaseRef]bool, pending)
	err := s.do(ctx, op+"-many", idempotent, func(ctx context.Context) error {
		clear(moved)
		rows, err := s.db.QueryContext(ctx, stmt, named(arg, tvp()))
		if err != nil {
			return err
		}
		return scanRefs(rows, moved)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: %s %d jobs: %w", op, len(refs), err)
	}
	for i, r := range refs {
		if results[i] == nil && !moved[r] {
			results[i] = fmt.Errorf("sqlserver: %s job %d lease %d: %w", op, r.ID, r.Lease, jobs.ErrLeaseLost)
		}
	}
	return results, nil
}

// scanRefs reads rows of (Id, RunLease) into set.
func scanRefs(rows *sql.Rows, set map[jobs.LeaseRef]bool) error {
	defer rows.Close()
	for rows.Next() {
		var r jobs.LeaseRef
		if err := rows.Scan(&r.ID, &r.Lease); err != nil {
			return err
		}
		set[r] = true
	}
	return rows.Err()
}
