package memstore

import (
	"context"

	"github.com/chokaq/chokaq-go/jobs"
)

var _ jobs.Prober = (*Store)(nil)

// Probe implements jobs.Prober: whether a queue of queues, not paused and
// not held by its rate limit, has a ready job or a scheduled one now due. It moves nothing; a ready entry
// may be stale (the job left since), which answers true where a claim
// would find nothing, as the contract allows.
func (s *Store) Probe(ctx context.Context, queues []string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := jobs.ValidateProbe(queues); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, name := range jobs.UniqueQueues(queues) {
		q := s.queueOf(name)
		if q == nil || q.settings.Paused {
			continue
		}
		if _, held := q.hold(now); held {
			continue // its rate limit has nothing left in the open window
		}
		if q.ready.Len() > 0 || q.scheduled.Len() > 0 && !q.scheduled.peek().ScheduledAt.After(now) {
			return true, nil
		}
	}
	return false, nil
}
