package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schedule"
)

// scheduleRow is one line of the Schedules page.
type scheduleRow struct {
	jobs.ScheduleState
	// Def is the stored definition, decoded; meaningless unless Decoded.
	Def     schedule.Schedule
	Decoded bool
	// Error says why the stored definition does not decode, or why its
	// cron expression or time zone does not parse in this process (a
	// definition written by a newer release, a zone this machine lacks).
	// Such a row is shown, not a failed page.
	Error string
	// Next is the next tick; zero when paused or not computable.
	Next time.Time
	// Overdue is how long Next has been due on the store's clock; 0 when
	// it is not. A tick is fired by the leader's next round, so a short
	// overdue is normal and a long one means no process fires it.
	Overdue time.Duration
}

// Zone is the definition's time zone as shown: "" is UTC.
func (r scheduleRow) Zone() string {
	if r.Def.TimeZone == "" {
		return "UTC"
	}
	return r.Def.TimeZone
}

// Queue is the queue the schedule's job goes to.
func (r scheduleRow) Queue() string {
	if r.Def.Job.Queue == "" {
		return jobs.DefaultQueue
	}
	return r.Def.Job.Queue
}

// MissedFire is the missed-fire policy as shown, with catch-up's bound.
func (r scheduleRow) MissedFire() string {
	switch r.Def.MissedFire {
	case "":
		return string(schedule.Coalesce)
	case schedule.CatchUp:
		n := r.Def.CatchUpLimit
		if n == 0 {
			n = schedule.DefaultCatchUpLimit
		}
		return fmt.Sprintf("%s (at most %d)", schedule.CatchUp, n)
	}
	return string(r.Def.MissedFire)
}

// schedulesData is the Schedules page.
type schedulesData struct {
	// Now is the store's clock, by which a tick is due.
	Now  time.Time
	Rows []scheduleRow
	// CanTrigger: actions are allowed and the store can enqueue.
	CanTrigger bool
}

func (d *Dashboard) schedulesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	states, err := d.store.Schedules(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	now, err := d.store.Now(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	data := schedulesData{Now: now, CanTrigger: !d.opts.ReadOnly && d.trigger != nil}
	for _, st := range states {
		data.Rows = append(data.Rows, scheduleRowOf(st, now))
	}
	d.render(w, r, http.StatusOK, "schedules", "Schedules", "schedules", data)
}

// scheduleRowOf reads a stored schedule for the page. A definition that
// does not decode or parse is an error in its row: one bad row must not
// hide the others.
func scheduleRowOf(st jobs.ScheduleState, now time.Time) scheduleRow {
	row := scheduleRow{ScheduleState: st}
	s, err := schedule.Decode(st.Name, st.Definition)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Def, row.Decoded = s, true
	// Parsed here too, not only through Next, which does not parse a
	// paused schedule's: a broken one should show before it is resumed.
	if _, err := schedule.Parse(s.Cron, s.TimeZone); err != nil {
		row.Error = err.Error()
		return row
	}
	if row.Next, err = schedule.Next(st); err != nil {
		row.Error = err.Error()
		return row
	}
	if !row.Next.IsZero() && row.Next.Before(now) {
		row.Overdue = now.Sub(row.Next)
	}
	return row
}

// scheduleName is the schedule a schedule action names: in its path, or
// in the "schedule" field for POST /schedules/{action} (see scheduleURL).
func scheduleName(r *http.Request) string {
	if name := r.PathValue("name"); name != "" {
		return name
	}
	return r.PostForm.Get("schedule")
}

// scheduleURL is where a schedule's form posts action (pause, resume,
// trigger), under base. Names may be dots only, as queue names may: see
// queueURL.
func scheduleURL(base, name, action string) string {
	if strings.Trim(name, ".") == "" {
		return base + "/schedules/" + action
	}
	return base + "/schedules/" + url.PathEscape(name) + "/" + action
}

// scheduleNotFound answers an action on a schedule the store does not
// have: a stale page (deleted since), or a typed URL.
func (d *Dashboard) scheduleNotFound(w http.ResponseWriter, r *http.Request, name string) {
	d.fail(w, r, http.StatusNotFound, fmt.Sprintf("no schedule is named %q: a process records its schedules when it starts, "+
		"and a schedule deleted since is gone until one defines it again", name))
}

// pauseSchedule pauses or resumes a schedule across every process, until
// an operator says otherwise or its definition changes.
func (d *Dashboard) pauseSchedule(paused bool) http.HandlerFunc {
	action, verb := "resume", "resumed"
	if paused {
		action, verb = "pause", "paused"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		name := scheduleName(r)
		if err := jobs.ValidateScheduleName(name); err != nil {
			d.failErr(w, r, err)
			return
		}
		st, err := d.store.PauseSchedule(r.Context(), name, paused)
		if errors.Is(err, jobs.ErrScheduleNotFound) {
			d.scheduleNotFound(w, r, name)
			return
		}
		text, n := verb+" schedule "+name, 1
		if err != nil {
			n = 0
		}
		if shown := d.record(r, action, text, n, err); err != nil {
			d.failAction(w, r, err, "", shown)
			return
		}
		flash := capitalize(text) + "."
		if !paused {
			// What resuming does to the ticks it missed is the policy's
			// call, and worth saying before the jobs appear.
			if s, err := schedule.Decode(st.Name, st.Definition); err == nil {
				flash = capitalize(text) + ": the ticks it missed fire by its missed-fire policy, " +
					scheduleRow{Def: s}.MissedFire() + "."
			}
		}
		d.redirectWithFlash(w, r, d.path("/schedules"), flash)
	}
}

// triggerSchedule enqueues one run of a schedule now, outside its cadence
// (schedule.Trigger): its ticks are not touched, paused or not.
func (d *Dashboard) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	name := scheduleName(r)
	if err := jobs.ValidateScheduleName(name); err != nil {
		d.failErr(w, r, err)
		return
	}
	if d.trigger == nil {
		d.fail(w, r, http.StatusNotImplemented, "this dashboard's store cannot enqueue jobs, so it cannot trigger a schedule")
		return
	}
	ctx := r.Context()
	st, err := schedule.Find(ctx, d.store, name)
	switch {
	case errors.Is(err, jobs.ErrScheduleNotFound):
		d.scheduleNotFound(w, r, name)
		return
	case err != nil:
		d.failErr(w, r, err)
		return
	}
	// Trigger would fail on it too, but as an error that reads like the
	// store's; this one is the operator's to know.
	s, err := schedule.Decode(st.Name, st.Definition)
	if err != nil {
		d.fail(w, r, http.StatusConflict, err.Error()+": it cannot be triggered until a process defines it again")
		return
	}
	res, err := schedule.Trigger(ctx, d.trigger, st.Name)
	text, n := fmt.Sprintf("triggered schedule %s: job %d (%s on %s)", st.Name, res.ID, s.Job.Type, scheduleRow{Def: s}.Queue()), 1
	if err != nil {
		text, n = "trigger of schedule "+st.Name, 0
	}
	if shown := d.record(r, "trigger", text, n, err); err != nil {
		d.failAction(w, r, err, "", shown)
		return
	}
	d.redirectWithFlashJob(w, r, d.path("/schedules"), capitalize(text)+".", res.ID)
}
