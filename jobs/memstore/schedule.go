package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// SyncSchedules implements jobs.Store.
func (s *Store) SyncSchedules(ctx context.Context, defs []jobs.ScheduleDef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := jobs.ValidateScheduleDefs(defs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, d := range defs {
		st := s.schedules[strings.ToLower(d.Name)]
		if st != nil && st.Hash == d.Hash {
			st.SyncedAt = now
			continue
		}
		var firedAt time.Time // kept across a change: when it last fired, whatever its definition then
		if st != nil {
			firedAt = st.LastFiredAt
		}
		name := d.Name // a changed schedule keeps the name it was created with, as a row does
		if st != nil {
			name = st.Name
		}
		s.schedules[strings.ToLower(d.Name)] = &jobs.ScheduleState{Name: name, Definition: bytes.Clone(d.Definition), Hash: d.Hash,
			LastFiredTick: now, LastFiredAt: firedAt, Paused: d.Paused, UpdatedAt: now, SyncedAt: now}
	}
	return nil
}

// FireSchedule implements jobs.Store.
func (s *Store) FireSchedule(ctx context.Context, p jobs.FireParams) (jobs.FireResult, error) {
	if err := ctx.Err(); err != nil {
		return jobs.FireResult{}, err
	}
	if err := p.Validate(); err != nil {
		return jobs.FireResult{}, err
	}
	job, err := p.Job.Normalize(s.limits)
	if err != nil {
		return jobs.FireResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.schedules[strings.ToLower(p.Name)]
	if st == nil || st.Hash != p.Hash || st.Paused || !st.LastFiredTick.Before(p.Tick) {
		return jobs.FireResult{}, nil
	}
	now := s.now()
	st.LastFiredTick, st.LastFiredAt, st.NextFire, st.UpdatedAt = p.Tick.UTC(), now, p.Next.UTC(), now
	return jobs.FireResult{Fired: true, Job: s.enqueueLocked(job, now)}, nil
}

// Schedules implements jobs.Store.
func (s *Store) Schedules(ctx context.Context) ([]jobs.ScheduleState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]jobs.ScheduleState, 0, len(s.schedules))
	for _, st := range s.schedules {
		out = append(out, cloneSchedule(st))
	}
	slices.SortFunc(out, func(a, b jobs.ScheduleState) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PauseSchedule implements jobs.Store.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (jobs.ScheduleState, error) {
	if err := ctx.Err(); err != nil {
		return jobs.ScheduleState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.schedules[strings.ToLower(name)]
	if st == nil {
		return jobs.ScheduleState{}, jobs.ScheduleNotFound(name)
	}
	if st.Paused != paused {
		st.Paused, st.UpdatedAt = paused, s.now()
	}
	return cloneSchedule(st), nil
}

// DeleteSchedule implements jobs.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schedules[strings.ToLower(name)] == nil {
		return jobs.ScheduleNotFound(name)
	}
	delete(s.schedules, strings.ToLower(name))
	return nil
}

func cloneSchedule(st *jobs.ScheduleState) jobs.ScheduleState {
	c := *st
	c.Definition = bytes.Clone(st.Definition)
	return c
}
