package sqlserver

import (
	"context"
	"database/sql"
	"fmt"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.Reporter = (*Store)(nil)

// forms gives the Store its one-list batch forms (StartMany, CompleteMany,
// RetryMany, DeadLetterMany), each one call of Transition.
type forms = jobs.BatchForms

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

// The lists of qTransition, as its rows name them.
const (
	kindStart      = 1
	kindComplete   = 2
	kindRetry      = 3
	kindDeadLetter = 4
	// kindRetryCancelled: a retry found the job's cancel requested and
	// moved it to the DLQ as Cancelled.
	kindRetryCancelled = 5
)

// transitioned is what qTransition reports it moved.
type transitioned struct {
	started map[jobs.LeaseRef]jobs.Started
	moved   [kindRetryCancelled + 1]map[jobs.LeaseRef]bool
}

// Transition implements jobs.BatchWorker: one round trip, one statement
// per list (qTransition).
func (s *Store) Transition(ctx context.Context, t jobs.Transitions) (jobs.TransitionResults, error) {
	var r jobs.TransitionResults
	if err := t.Validate(); err != nil {
		return r, err
	}
	r.Retries, r.DeadLetters = make([]error, len(t.Retries)), make([]error, len(t.DeadLetters))
	retries := make([]retryRow, 0, len(t.Retries))
	seen := make(map[jobs.LeaseRef]bool, len(t.Retries)+len(t.DeadLetters))
	for i, it := range t.Retries {
		if err := it.Params.Validate(); err != nil {
			r.Retries[i] = err
		} else if !seen[it.Ref] { // the first occurrence decides (jobs.BatchWorker)
			seen[it.Ref] = true
			retries = append(retries, retryRow{ID: it.Ref.ID, Lease: it.Ref.Lease, DelayMs: it.Params.Delay.Milliseconds(), Error: it.Params.Error})
		}
	}
	clear(seen)
	deadLetters := make([]deadLetterRow, 0, len(t.DeadLetters))
	for i, it := range t.DeadLetters {
		if err := it.Params.Validate(); err != nil {
			r.DeadLetters[i] = err
		} else if !seen[it.Ref] {
			seen[it.Ref] = true
			deadLetters = append(deadLetters, deadLetterRow{ID: it.Ref.ID, Lease: it.Ref.Lease, Reason: int32(it.Params.Reason), Details: it.Params.Details})
		}
	}
	if len(t.Starts)+len(t.Completes)+len(retries)+len(deadLetters) > 0 {
		var got transitioned
		err := s.do(ctx, "transition", idempotent, func(ctx context.Context) error {
			rows, err := s.db.QueryContext(ctx, s.q.transition, append([]any{
				named("starts", s.leaseTVP(t.Starts)), named("completes", s.leaseTVP(t.Completes)),
				named("retries", mssql.TVP{TypeName: s.schema + ".RetryList", Value: retries}),
				named("deadLetters", mssql.TVP{TypeName: s.schema + ".DeadLetterList", Value: deadLetters}),
				named("outputs", s.outputTVP(t.Outputs))},
				startArgs(t.StartParams)...)...)
			if err != nil {
				return err
			}
			got, err = scanTransitioned(rows)
			return err
		})
		if err != nil {
			return jobs.TransitionResults{}, fmt.Errorf("sqlserver: transition of %d jobs: %w", t.Len(), err)
		}
		r.Starts = make([]jobs.StartResult, len(t.Starts))
		for i, ref := range t.Starts {
			if st, ok := got.started[ref]; ok {
				r.Starts[i].Started = st
			} else {
				r.Starts[i].Err = lost("start", ref)
			}
		}
		r.Completes = make([]error, len(t.Completes))
		for i, ref := range t.Completes {
			if !got.moved[kindComplete][ref] {
				r.Completes[i] = lost("complete", ref)
			}
		}
		for i, it := range t.Retries {
			switch {
			case r.Retries[i] != nil, got.moved[kindRetry][it.Ref]:
			case got.moved[kindRetryCancelled][it.Ref]:
				r.Retries[i] = fmt.Errorf("sqlserver: retry job %d lease %d: %w", it.Ref.ID, it.Ref.Lease, jobs.ErrCancelled)
			default:
				r.Retries[i] = lost("retry", it.Ref)
			}
		}
		for i, it := range t.DeadLetters {
			if r.DeadLetters[i] == nil && !got.moved[kindDeadLetter][it.Ref] {
				r.DeadLetters[i] = lost("dead-letter", it.Ref)
			}
		}
	}
	return r, nil
}

func lost(op string, ref jobs.LeaseRef) error {
	return fmt.Errorf("sqlserver: %s job %d lease %d: %w", op, ref.ID, ref.Lease, jobs.ErrLeaseLost)
}

// scanTransitioned reads every result set of qTransition: rows of (Kind,
// Id, RunLease, AttemptCount, StartedAtUtc, DeadlineUtc), the last three
// for starts only.
func scanTransitioned(rows *sql.Rows) (transitioned, error) {
	defer rows.Close()
	got := transitioned{started: map[jobs.LeaseRef]jobs.Started{}}
	for i := range got.moved {
		got.moved[i] = map[jobs.LeaseRef]bool{}
	}
	for more := true; more; more = rows.NextResultSet() {
		for rows.Next() {
			var kind int64
			var ref jobs.LeaseRef
			var attempts sql.NullInt64
			var started, deadline sql.NullTime
			var from sql.NullInt64
			if err := rows.Scan(&kind, &ref.ID, &ref.Lease, &attempts, &started, &deadline, &from); err != nil {
				return got, err
			}
			switch kind {
			case kindStart:
				st := jobs.Started{AttemptCount: int(attempts.Int64), StartedAt: started.Time.UTC(), DeadlineAt: deadline.Time.UTC(),
					TimeoutFrom: jobs.PolicySource(from.Int64)}
				st.Timeout = st.DeadlineAt.Sub(st.StartedAt)
				got.started[ref] = st
			case kindComplete, kindRetry, kindDeadLetter, kindRetryCancelled:
				got.moved[kind][ref] = true
			default:
				return got, fmt.Errorf("sqlserver: transition returned a row of unknown kind %d", kind)
			}
		}
		if err := rows.Err(); err != nil {
			return got, err
		}
	}
	return got, rows.Err()
}

// outputTVP is the OutputList of outputs, one row per ref (the first
// wins, as for the moves it rides with).
func (s *Store) outputTVP(outputs []jobs.OutputItem) mssql.TVP {
	rows := make([]outputRow, 0, len(outputs))
	seen := make(map[jobs.LeaseRef]bool, len(outputs))
	for _, o := range outputs {
		if !seen[o.Ref] {
			seen[o.Ref] = true
			rows = append(rows, outputRow{ID: o.Ref.ID, Lease: o.Ref.Lease, OutputJSON: string(o.Output)})
		}
	}
	return mssql.TVP{TypeName: s.schema + ".OutputList", Value: rows}
}
