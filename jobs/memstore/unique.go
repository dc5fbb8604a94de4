package memstore

import "github.com/chokaq/chokaq-go/jobs"

// A unique key's lifetime (ADR 0030). A job takes its key at enqueue and
// holds it while hot: retry, snooze, release and rescue back to Pending
// keep it, since the job never left. When the job finishes, settleKey lets
// the key go unless the job's states count the table it reached; a
// finished holder lets it go when retention or a purge removes it
// (dropKey). Resurrect takes it back when it is free, and otherwise drops
// it from the resurrected job, as for idempotency keys: the job that holds
// it now keeps it.

// settleKey releases j's key if j, just moved to a finished table, no
// longer holds it there.
func (s *Store) settleKey(j *jobs.Job) {
	if j.UniqueKey != nil && !j.UniqueStates.Holds(j.Table) {
		s.dropKey(j)
	}
}

// dropKey releases j's key if j holds it.
func (s *Store) dropKey(j *jobs.Job) {
	if j.UniqueKey != nil && s.uniq[*j.UniqueKey] == j.ID {
		delete(s.uniq, *j.UniqueKey)
	}
}

// retakeKey gives a resurrected job its key back, or drops the key from
// it when another job holds it.
func (s *Store) retakeKey(j *jobs.Job) {
	if j.UniqueKey == nil {
		return
	}
	if id, taken := s.uniq[*j.UniqueKey]; taken && id != j.ID {
		j.UniqueKey, j.UniqueStates = nil, 0
		return
	}
	s.uniq[*j.UniqueKey] = j.ID
}
