package sqlserver

import (
	"context"
	"fmt"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.Prober = (*Store)(nil)

// Probe implements jobs.Prober with one read of the claim index for all
// the queues (qDueProbe), far cheaper than a claim: no lock of its own, no
// write, a seek per queue that stops at the first due row.
func (s *Store) Probe(ctx context.Context, queues []string) (bool, error) {
	if err := jobs.ValidateProbe(queues); err != nil {
		return false, err
	}
	if len(queues) == 0 {
		return false, nil
	}
	var due, owed bool
	err := s.do(ctx, "probe", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.dueProbe, named("queues", s.queueTVP(queues))).Scan(&due, &owed)
	})
	if err != nil {
		return false, fmt.Errorf("sqlserver: probe: %w", err)
	}
	// A release owed is work: only a claim runs the release steps.
	s.noteOwed(owed)
	return due || owed, nil
}
