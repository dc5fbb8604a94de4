package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// TriggerStore is what Trigger needs: the stored schedules and an enqueue.
type TriggerStore interface {
	// Schedules is jobs.Admin's: the stored state of every schedule.
	Schedules(ctx context.Context) ([]jobs.ScheduleState, error)
	// Enqueue is jobs.Enqueuer's.
	Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error)
}

// TriggerTag marks the jobs Trigger enqueues.
const TriggerTag = "trigger"

// Trigger enqueues one run of a stored schedule now, outside its cadence:
// the job its definition describes, due now, tagged TriggerTag. The
// schedule's ticks are not touched, paused or not. It reads the definition
// from the store, so an operator's tool needs no copy of the code or file
// that defined it.
func Trigger(ctx context.Context, store TriggerStore, name string) (jobs.EnqueueResult, error) {
	st, err := Find(ctx, store, name)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	s, err := Decode(st.Name, st.Definition)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	p := s.jobAt(time.Time{}, "")
	p.Tags = []string{TriggerTag}
	r, err := store.Enqueue(ctx, p)
	if err != nil {
		return jobs.EnqueueResult{}, fmt.Errorf("schedule %q: trigger: %w", st.Name, err)
	}
	return r, nil
}

// Find returns the stored schedule of that name, compared as stores do
// (ignoring case), or an error wrapping jobs.ErrScheduleNotFound.
func Find(ctx context.Context, store interface {
	Schedules(ctx context.Context) ([]jobs.ScheduleState, error)
}, name string) (jobs.ScheduleState, error) {
	all, err := store.Schedules(ctx)
	if err != nil {
		return jobs.ScheduleState{}, err
	}
	for _, st := range all {
		if strings.EqualFold(st.Name, name) {
			return st, nil
		}
	}
	return jobs.ScheduleState{}, jobs.ScheduleNotFound(name)
}

// Next is a stored schedule's next tick: the first after the last one
// fired. It may be in the past (a tick is due and no leader fired it yet).
// Zero for a paused schedule; an error for a definition that does not
// decode or parse (one written by a newer release, say).
func Next(st jobs.ScheduleState) (time.Time, error) {
	if st.Paused {
		return time.Time{}, nil
	}
	s, err := Decode(st.Name, st.Definition)
	if err != nil {
		return time.Time{}, err
	}
	c, err := Parse(s.Cron, s.TimeZone)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule %q: %w", st.Name, err)
	}
	return c.Next(st.LastFiredTick), nil
}
