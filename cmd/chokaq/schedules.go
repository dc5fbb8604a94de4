package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schedule"
)

func (a *app) schedulesCommand() *cobra.Command {
	c := &cobra.Command{Use: "schedules", Short: "See and steer recurring jobs: list, show, pause, resume, trigger, delete", Args: cobra.NoArgs}
	one := func(use, short string, act func(ctx context.Context, s jobs.Store, name string) error) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := jobs.ValidateScheduleName(args[0]); err != nil {
					return err
				}
				s, err := a.openSchedules(cmd.Context())
				if err != nil {
					return err
				}
				return notFoundIf(act(cmd.Context(), s, args[0]))
			},
		}
	}
	pause := func(paused bool) func(ctx context.Context, s jobs.Store, name string) error {
		return func(ctx context.Context, s jobs.Store, name string) error {
			st, err := schedule.Find(ctx, s, name)
			if err != nil {
				return err
			}
			if st, err = s.PauseSchedule(ctx, st.Name, paused); err != nil {
				return err
			}
			return a.printSchedules(ctx, s, []jobs.ScheduleState{st})
		}
	}
	c.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List the schedules the store holds, with their next and last fire",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := a.openSchedules(cmd.Context())
				if err != nil {
					return err
				}
				all, err := s.Schedules(cmd.Context())
				if err != nil {
					return err
				}
				return a.printSchedules(cmd.Context(), s, all)
			},
		},
		one("show", "Show one schedule: its definition, ticks and state", func(ctx context.Context, s jobs.Store, name string) error {
			st, err := schedule.Find(ctx, s, name)
			if err != nil {
				return err
			}
			now, err := s.Now(ctx)
			if err != nil {
				return err
			}
			v := scheduleView(st, now)
			return a.print(v, func(w *tabwriter.Writer) {
				row := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\n", k, v) }
				row("name", v.Name)
				if v.Error != "" {
					row("definition", "cannot be read: "+v.Error)
				} else {
					d := v.Definition
					row("cron", d.Cron)
					row("time zone", orText(d.TimeZone, "UTC"))
					row("job type", d.Job.Type)
					row("queue", d.Job.Queue)
					row("payload", orText(string(d.Job.Payload), "(none)"))
					row("priority", d.Job.Priority)
					row("max attempts", intOr(d.Job.MaxAttempts, "store default"))
					row("missed fire", missedFire(*d))
				}
				row("paused", v.Paused)
				row("next fire", v.nextText())
				row("last fire", lastFire(v.LastFiredAt))
				row("last tick fired", v.LastFiredTick.Format(time.RFC3339))
				row("defined by a starting process", v.SyncedAt.Format(time.RFC3339))
				row("changed (definition or pause)", v.UpdatedAt.Format(time.RFC3339))
			})
		}),
		one("pause", "Stop a schedule's fires (across every process) until resumed", pause(true)),
		one("resume", "Let a paused schedule fire again; missed ticks follow its missed-fire policy", pause(false)),
		one("trigger", "Enqueue one run of a schedule's job now, outside its cadence", func(ctx context.Context, s jobs.Store, name string) error {
			r, err := schedule.Trigger(ctx, s, name)
			if err != nil {
				return err
			}
			a.say("enqueued job %d: one run of schedule %s, outside its cadence", r.ID, name)
			if a.output == "json" {
				return a.print(r, nil)
			}
			return nil
		}),
		one("delete", "Forget a schedule no process defines any more (a process that does records it again when it starts)",
			func(ctx context.Context, s jobs.Store, name string) error {
				st, err := schedule.Find(ctx, s, name)
				if err != nil {
					return err
				}
				if err := s.DeleteSchedule(ctx, st.Name); err != nil {
					return err
				}
				a.say("deleted schedule %s", st.Name)
				return nil
			}),
	)
	return c
}

// openSchedules opens the store of the schedules commands. On the
// in-memory store, which lives only as long as the command, the file's
// schedules are recorded first, so that list and show say how they start.
func (a *app) openSchedules(ctx context.Context) (jobs.Store, error) {
	s, err := a.openStore(ctx, false)
	if err != nil {
		return nil, err
	}
	if a.cfg.StorageKind() != "memory" || len(a.cfg.Schedules) == 0 {
		return s, nil
	}
	sc, err := schedule.New(s, schedule.Config{Schedules: a.cfg.ScheduleList()})
	if err != nil {
		return nil, err
	}
	return s, sc.Sync(ctx)
}

// scheduleState is what list and show print of a stored schedule, and
// its JSON form.
type scheduleState struct {
	Name          string             `json:"name"`
	Definition    *schedule.Schedule `json:"definition,omitempty"`
	Error         string             `json:"error,omitempty"` // the definition does not decode
	Paused        bool               `json:"paused"`
	NextFire      *time.Time         `json:"next_fire,omitempty"`
	Overdue       bool               `json:"overdue,omitempty"`
	LastFiredAt   *time.Time         `json:"last_fired_at,omitempty"`
	LastFiredTick time.Time          `json:"last_fired_tick"`
	SyncedAt      time.Time          `json:"synced_at"`
	UpdatedAt     time.Time          `json:"updated_at"`
}

// scheduleView is st as printed, now being the store's clock.
func scheduleView(st jobs.ScheduleState, now time.Time) scheduleState {
	v := scheduleState{Name: st.Name, Paused: st.Paused, LastFiredTick: st.LastFiredTick, SyncedAt: st.SyncedAt, UpdatedAt: st.UpdatedAt}
	if !st.LastFiredAt.IsZero() {
		v.LastFiredAt = &st.LastFiredAt
	}
	d, err := schedule.Decode(st.Name, st.Definition)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Definition = &d
	if next, err := schedule.Next(st); err != nil {
		v.Error = err.Error()
	} else if !next.IsZero() {
		v.NextFire, v.Overdue = &next, next.Before(now)
	}
	return v
}

func (v scheduleState) nextText() string {
	switch {
	case v.Paused:
		return "paused"
	case v.NextFire == nil:
		return "none"
	case v.Overdue:
		return v.NextFire.Format(time.RFC3339) + " (overdue: no process fired it yet)"
	}
	return v.NextFire.Format(time.RFC3339)
}

func (a *app) printSchedules(ctx context.Context, s jobs.Store, all []jobs.ScheduleState) error {
	now, err := s.Now(ctx)
	if err != nil {
		return err
	}
	views := make([]scheduleState, len(all))
	for i, st := range all {
		views[i] = scheduleView(st, now)
	}
	return a.print(views, func(w *tabwriter.Writer) {
		if len(views) == 0 {
			fmt.Fprintln(w, "no schedules (define them in code, chokaq.Config.Schedules, or in appsettings.yaml, ChokaQ.Schedules)")
			return
		}
		fmt.Fprintln(w, "NAME\tCRON\tZONE\tTYPE\tQUEUE\tMISSED FIRE\tNEXT FIRE (UTC)\tLAST FIRE (UTC)")
		for _, v := range views {
			if v.Error != "" {
				fmt.Fprintf(w, "%s\t(definition cannot be read: %s)\t\t\t\t\t\t%s\n", v.Name, v.Error, lastFire(v.LastFiredAt))
				continue
			}
			d := v.Definition
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, d.Cron, orText(d.TimeZone, "UTC"), d.Job.Type, d.Job.Queue,
				missedFire(*d), v.nextText(), lastFire(v.LastFiredAt))
		}
	})
}

func missedFire(d schedule.Schedule) string {
	if d.MissedFire == schedule.CatchUp {
		return fmt.Sprintf("%s (up to %d)", d.MissedFire, d.CatchUpLimit)
	}
	return string(d.MissedFire)
}

func orText(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func lastFire(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// notFoundIf makes an unknown schedule exit 3.
func notFoundIf(err error) error {
	if errors.Is(err, jobs.ErrScheduleNotFound) {
		return notFound("%w", err)
	}
	return err
}
