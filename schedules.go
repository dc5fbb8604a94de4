package chokaq

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schedule"
)

// MissedFire is a schedule's policy for ticks that passed while no process
// could fire them: schedule.Coalesce (the default), schedule.CatchUp or
// schedule.Skip.
type MissedFire = schedule.MissedFire

// Schedule is a recurring job in its typed form: at each tick of Cron (five
// fields, or a descriptor such as @hourly or @every 10m) read in TimeZone,
// a job of Args' kind is enqueued with Args as its payload. Each tick fires
// once across every process that defines it (ADR 0020).
//
//	chokaq.Schedule{Name: "nightly-report", Cron: "0 2 * * *", TimeZone: "Europe/Berlin",
//		Args: ReportArgs{Period: "day"}, Opts: &chokaq.EnqueueOpts{Queue: "reports"}}
type Schedule struct {
	// Name identifies the schedule in the store, the command and the
	// dashboard: 1 to 80 ASCII letters, digits, '_', '-', '.' and ':'.
	Name string
	Cron string
	// TimeZone is an IANA name; "" is UTC. "Local" is refused: each host
	// would read its own zone.
	TimeZone string
	Args     Args
	// Opts may set Queue, Priority and MaxAttempts (over Args' own
	// EnqueueOpts); the other options mean nothing for a tick's job and
	// are refused.
	Opts         *EnqueueOpts
	MissedFire   MissedFire
	CatchUpLimit int
	Paused       bool
}

// notForATick reports whether a schedule's job refuses the option: all
// but Queue, Priority and MaxAttempts, a new option too until it is known
// to mean something for a tick.
func notForATick(opt string) bool { return opt != "Queue" && opt != "Priority" && opt != "MaxAttempts" }

// definition is s in the schedule package's raw form, its Args encoded.
func (s Schedule) definition() (schedule.Schedule, error) {
	if s.Args == nil {
		return schedule.Schedule{}, fmt.Errorf("chokaq: schedule %q: %w", s.Name, &jobs.ValidationError{Field: "args", Value: nil, Rule: "must not be nil"})
	}
	if o := s.Opts; o != nil && slices.ContainsFunc(o.setOpts(), notForATick) {
		return schedule.Schedule{}, fmt.Errorf("chokaq: schedule %q: %w", s.Name, &jobs.ValidationError{Field: "opts", Value: *o,
			Rule: "a schedule's job takes only Queue, Priority and MaxAttempts: it is due at its tick, keyed by it and created by the schedule"})
	}
	if _, err := kindOf(s.Args, ""); err != nil {
		return schedule.Schedule{}, fmt.Errorf("chokaq: schedule %q: %w", s.Name, err)
	}
	p, err := params(s.Args, s.Opts, nil)
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("chokaq: schedule %q: %w", s.Name, err)
	}
	return schedule.Schedule{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, MissedFire: s.MissedFire, CatchUpLimit: s.CatchUpLimit,
		Paused: s.Paused, Job: schedule.Job{Type: p.Type, Queue: p.Queue, Payload: json.RawMessage(p.Payload), Priority: p.Priority,
			MaxAttempts: p.MaxAttempts}}, nil
}

// schedules are every schedule of cfg in the raw form, checked.
func (cfg Config) schedules() ([]schedule.Schedule, error) {
	out := append([]schedule.Schedule(nil), cfg.RawSchedules...)
	for _, s := range cfg.Schedules {
		d, err := s.definition()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := schedule.Check(out, cfg.Limits); err != nil {
		return nil, fmt.Errorf("chokaq: %w", err)
	}
	return out, nil
}

// Schedules lists the schedules the store holds, whichever process defined
// them, by name.
func (c *Client) Schedules(ctx context.Context) ([]jobs.ScheduleState, error) {
	return c.store.Schedules(ctx)
}

// PauseSchedule stops a schedule's fires until ResumeSchedule, across
// every process, until its definition changes (jobs.ErrScheduleNotFound
// if no schedule has that name).
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	_, err := c.store.PauseSchedule(ctx, name, true)
	return err
}

// ResumeSchedule lets a paused schedule fire again; the ticks it missed
// fire by its missed-fire policy.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	_, err := c.store.PauseSchedule(ctx, name, false)
	return err
}

// TriggerSchedule enqueues one run of a schedule's job now, outside its
// cadence (schedule.Trigger), through EnqueueRaw: the Client's limits and
// defaults hold for it, whichever process defined the schedule.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (jobs.EnqueueResult, error) {
	return schedule.Trigger(ctx, triggerVia{c}, name)
}

// triggerVia is the Client as schedule.Trigger's store.
type triggerVia struct{ c *Client }

func (t triggerVia) Schedules(ctx context.Context) ([]jobs.ScheduleState, error) {
	return t.c.store.Schedules(ctx)
}

func (t triggerVia) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	return t.c.EnqueueRaw(ctx, p)
}
