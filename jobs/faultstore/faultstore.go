// Package faultstore wraps a jobs.Store so that a worker can lose it: once
// Cut, every call through the wrapper fails with ErrCut, while the store
// itself, and everyone else using it, carries on. To the store, the worker
// behind the wrapper looks exactly like a crashed process or one cut off
// from its database. Tests and the demo use it to kill workers mid-job.
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// ErrCut is returned by every call while the wrapper is cut.
var ErrCut = errors.New("faultstore: connection to the store lost")

// Store is a jobs.Store that can be cut off and restored. It holds the
// wrapped store unexported, not embedded, so that a method added to a
// store interface does not pass through uncut: the wrapper stops
// compiling until it cuts that method too.
type Store struct {
	inner jobs.Store
	cut   atomic.Bool
}

var _ jobs.Store = (*Store)(nil)

// New wraps s.
func New(s jobs.Store) *Store { return &Store{inner: s} }

// Cut makes every following call fail until Restore.
func (s *Store) Cut() { s.cut.Store(true) }

// Restore lets calls through again.
func (s *Store) Restore() { s.cut.Store(false) }

// IsCut reports whether calls fail now.
func (s *Store) IsCut() bool { return s.cut.Load() }

func (s *Store) check() error {
	if s.cut.Load() {
		return ErrCut
	}
	return nil
}

// Enqueue fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	if err := s.check(); err != nil {
		return jobs.EnqueueResult{}, err
	}
	return s.inner.Enqueue(ctx, p)
}

// EnqueueMany fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) EnqueueMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.EnqueueMany(ctx, ps)
}

// Claim fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.Claim(ctx, p)
}

// ClaimHeld implements jobs.RateClaimer: it fails with ErrCut while the
// wrapper is cut, else calls the wrapped store's ClaimHeld (its Claim,
// with no holds, when it has none).
func (s *Store) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	if err := s.check(); err != nil {
		return jobs.ClaimResult{}, err
	}
	if rc, ok := s.inner.(jobs.RateClaimer); ok {
		return rc.ClaimHeld(ctx, p)
	}
	got, err := s.inner.Claim(ctx, p)
	return jobs.ClaimResult{Jobs: got}, err
}

// Start fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Start(ctx context.Context, r jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	if err := s.check(); err != nil {
		return jobs.Started{}, err
	}
	return s.inner.Start(ctx, r, p)
}

// Heartbeat fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	if err := s.check(); err != nil {
		return jobs.HeartbeatResult{}, err
	}
	return s.inner.Heartbeat(ctx, refs)
}

// Complete fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Complete(ctx context.Context, r jobs.LeaseRef) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.Complete(ctx, r)
}

// Retry fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Retry(ctx context.Context, r jobs.LeaseRef, p jobs.RetryParams) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.Retry(ctx, r, p)
}

// DeadLetter fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) DeadLetter(ctx context.Context, r jobs.LeaseRef, p jobs.DeadLetterParams) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.DeadLetter(ctx, r, p)
}

// Release fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.inner.Release(ctx, refs)
}

// RescueFetched fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) RescueFetched(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.RescueFetched(ctx, p)
}

// RescueZombies fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) RescueZombies(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.RescueZombies(ctx, p)
}

// RescueExpired fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) RescueExpired(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.RescueExpired(ctx, p)
}

// Resurrect fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Resurrect(ctx context.Context, p jobs.ResurrectParams) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.inner.Resurrect(ctx, p)
}

// Purge fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.inner.Purge(ctx, p)
}

// GetJob fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) GetJob(ctx context.Context, id int64) (*jobs.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.GetJob(ctx, id)
}

// ListJobs fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	if err := s.check(); err != nil {
		return jobs.JobPage{}, err
	}
	return s.inner.ListJobs(ctx, p)
}

// CountJobs fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) CountJobs(ctx context.Context, t jobs.Table, f jobs.Filter) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.inner.CountJobs(ctx, t, f)
}

// Queues fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.Queues(ctx)
}

// UpdateQueue fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	if err := s.check(); err != nil {
		return jobs.QueueSettings{}, err
	}
	return s.inner.UpdateQueue(ctx, name, u)
}

// QueueStats fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) QueueStats(ctx context.Context) ([]jobs.QueueStats, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.QueueStats(ctx)
}

// QueueDepths fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) QueueDepths(ctx context.Context, queues []string, limit int) ([]jobs.QueueDepth, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.QueueDepths(ctx, queues, limit)
}

// Now fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := s.check(); err != nil {
		return time.Time{}, err
	}
	return s.inner.Now(ctx)
}

var _ jobs.BatchWorker = (*Store)(nil)

// StartMany fails with ErrCut while the wrapper is cut, else calls the
// wrapped store's batch form (one-job calls if it has none).
func (s *Store) StartMany(ctx context.Context, refs []jobs.LeaseRef, p jobs.StartParams) ([]jobs.StartResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return jobs.Batches(s.inner).StartMany(ctx, refs, p)
}

// CompleteMany fails with ErrCut while the wrapper is cut, else calls the
// wrapped store's batch form.
func (s *Store) CompleteMany(ctx context.Context, refs []jobs.LeaseRef) ([]error, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return jobs.Batches(s.inner).CompleteMany(ctx, refs)
}

// RetryMany fails with ErrCut while the wrapper is cut, else calls the
// wrapped store's batch form.
func (s *Store) RetryMany(ctx context.Context, items []jobs.RetryItem) ([]error, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return jobs.Batches(s.inner).RetryMany(ctx, items)
}

// DeadLetterMany fails with ErrCut while the wrapper is cut, else calls
// the wrapped store's batch form.
func (s *Store) DeadLetterMany(ctx context.Context, items []jobs.DeadLetterItem) ([]error, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return jobs.Batches(s.inner).DeadLetterMany(ctx, items)
}

// Snooze fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Snooze(ctx context.Context, ref jobs.LeaseRef, p jobs.SnoozeParams) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.Snooze(ctx, ref, p)
}

// Cancel fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Cancel(ctx context.Context, p jobs.CancelParams) ([]jobs.CancelResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.Cancel(ctx, p)
}

// Transition fails with ErrCut while the wrapper is cut, else calls the
// wrapped store's.
func (s *Store) Transition(ctx context.Context, t jobs.Transitions) (jobs.TransitionResults, error) {
	if err := s.check(); err != nil {
		return jobs.TransitionResults{}, err
	}
	return jobs.Batches(s.inner).Transition(ctx, t)
}

// Schedules fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Schedules(ctx context.Context) ([]jobs.ScheduleState, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.Schedules(ctx)
}

// SyncSchedules fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) SyncSchedules(ctx context.Context, defs []jobs.ScheduleDef) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.SyncSchedules(ctx, defs)
}

// FireSchedule fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) FireSchedule(ctx context.Context, p jobs.FireParams) (jobs.FireResult, error) {
	if err := s.check(); err != nil {
		return jobs.FireResult{}, err
	}
	return s.inner.FireSchedule(ctx, p)
}

// PauseSchedule fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (jobs.ScheduleState, error) {
	if err := s.check(); err != nil {
		return jobs.ScheduleState{}, err
	}
	return s.inner.PauseSchedule(ctx, name, paused)
}

// DeleteSchedule fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.inner.DeleteSchedule(ctx, name)
}

// TableQueues fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) TableQueues(ctx context.Context, t jobs.Table, after string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.inner.TableQueues(ctx, t, after)
}

// Trim fails with ErrCut while the wrapper is cut, else calls the
// wrapped store.
func (s *Store) Trim(ctx context.Context, p jobs.TrimParams) (jobs.TrimResult, error) {
	if err := s.check(); err != nil {
		return jobs.TrimResult{}, err
	}
	return s.inner.Trim(ctx, p)
}

// Probe fails with ErrCut while the wrapper is cut, else asks the wrapped
// store (jobs.Prober), or answers true when it cannot tell.
func (s *Store) Probe(ctx context.Context, queues []string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	if p, ok := s.inner.(jobs.Prober); ok {
		return p.Probe(ctx, queues)
	}
	return true, nil
}

// HeartbeatProgress fails with ErrCut while the wrapper is cut, else asks
// the wrapped store (jobs.Reporter). Over a store that keeps no progress
// a beat that carries some is refused, so that progress is never dropped
// in silence.
func (s *Store) HeartbeatProgress(ctx context.Context, refs []jobs.LeaseRef, progress []jobs.ProgressItem) (jobs.HeartbeatResult, error) {
	if err := s.check(); err != nil {
		return jobs.HeartbeatResult{}, err
	}
	if r, ok := s.inner.(jobs.Reporter); ok {
		return r.HeartbeatProgress(ctx, refs, progress)
	}
	if len(progress) > 0 {
		return jobs.HeartbeatResult{}, fmt.Errorf("faultstore: %T keeps no progress (jobs.Reporter)", s.inner)
	}
	return s.inner.Heartbeat(ctx, refs)
}
