package sqlserver

import (
	"context"
	"fmt"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.FinishedCounter = (*Store)(nil)

// FinishedCounts implements jobs.FinishedCounter (qFinishedCounts).
func (s *Store) FinishedCounts(ctx context.Context, p jobs.FinishedCountsParams) ([]jobs.FinishedCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	bucket := int64(p.Bucket / time.Second)
	var out []jobs.FinishedCount
	err := s.do(ctx, "finished counts", idempotent, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, s.q.finishedCounts, named("queue", text(p.Queue)), named("bucketSeconds", bucket),
			named("from", instant(p.From)), named("to", instant(p.To)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var fc jobs.FinishedCount
			var table, n, reason int64
			if err := rows.Scan(&table, &fc.Queue, &n, &reason, &fc.Count); err != nil {
				return err
			}
			fc.Table, fc.Reason = jobs.Table(table), jobs.FailureReason(reason)
			fc.Start = time.Unix(n*bucket, 0).UTC()
			out = append(out, fc)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: finished counts: %w", err)
	}
	return out, nil
}
