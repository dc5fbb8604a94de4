package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// arrivalSlack widens each dead-letter poll backwards: a move that took its
// FinishedAt from the store's clock but committed a little later still
// shows up. Dedupe by ID and FinishedAt keeps it from showing twice.
const arrivalSlack = 10 * time.Second

// arrivalPage caps the dead letters one poll reports one by one.
const arrivalPage = 100

// poll runs while any event stream is open: every PollInterval it sends
// fresh counts and publishes dead letters that arrived since the last look.
// Arrivals are found in the store, not through a hook, so jobs that die in
// other processes show up too.
//
// Each poll also records every queue's lag for the sparklines and, when
// the store counts finished jobs by time and a page with a live chart is
// open, brings the chart's window up to date with one grouped read for
// all queues (liveWindow.refresh), from which every stream takes its
// queue's view.
func (d *Dashboard) poll(ctx context.Context) {
	var arr arrivals
	var failing bool
	d.lags.reset()
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	for {
		err := arr.check(ctx, d)
		if err == nil {
			var c counts
			if c, err = d.counts(ctx); err == nil {
				d.lags.record(c)
				d.lags.sparklines(&c)
				data, _ := json.Marshal(c) // plain data always marshals
				d.hub.setCounts(ctx, data)
				if d.finished != nil && d.hub.liveWanted() {
					var snap *liveSnap
					if snap, err = d.live.refresh(ctx, d.finished, c.At, true); err == nil {
						d.hub.setLive(ctx, snap)
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		// Log a failing store once, not every interval.
		if err != nil && !failing {
			// Every viewer sees the console: the error itself goes to the
			// log only.
			shown := d.storeFailure("dashboard: cannot refresh from the store", err)
			d.hub.publishFrom(ctx, Event{Time: time.Now(), Kind: KindError, Text: "dashboard: cannot refresh from the store: " + shown})
		} else if err == nil && failing {
			d.hub.publishFrom(ctx, Event{Time: time.Now(), Kind: KindInfo, Text: "dashboard: the store answers again"})
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// arrivals finds new dead letters.
type arrivals struct {
	armed bool
	since time.Time           // store time of the newest dead letter seen
	seen  map[int64]time.Time // reported dead letters in the window, by FinishedAt
}

// check reports the dead letters that are new since the last call. The
// first call only takes note of what is there already.
func (a *arrivals) check(ctx context.Context, d *Dashboard) error {
	if !a.armed {
		now, err := d.store.Now(ctx)
		if err != nil {
			return fmt.Errorf("store clock: %w", err)
		}
		a.since, a.seen = now, map[int64]time.Time{}
	}
	page, err := d.store.ListJobs(ctx, jobs.ListParams{Table: jobs.TableDLQ, Filter: jobs.Filter{From: a.since.Add(-arrivalSlack)}, Limit: arrivalPage})
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	var fresh []*jobs.Job
	for _, j := range page.Jobs {
		if at, ok := a.seen[j.ID]; ok && at.Equal(j.FinishedAt) {
			continue
		}
		a.seen[j.ID] = j.FinishedAt
		if j.FinishedAt.After(a.since) {
			a.since = j.FinishedAt
		}
		fresh = append(fresh, j)
	}
	for id, at := range a.seen {
		if at.Before(a.since.Add(-2 * arrivalSlack)) {
			delete(a.seen, id)
		}
	}
	if !a.armed {
		a.armed = true
		return nil
	}
	slices.Reverse(fresh) // oldest first, as they happened
	if page.NextBeforeID != 0 && len(fresh) == len(page.Jobs) {
		d.hub.publishFrom(ctx, Event{Time: time.Now(), Kind: KindDeadLetter, Text: fmt.Sprintf("dead letters: more than %d arrived at once; the newest follow, see the dead-letter page for all", arrivalPage)})
	}
	for _, j := range fresh {
		s := summarize(j)
		d.hub.publishFrom(ctx, Event{Time: time.Now(), Kind: KindDeadLetter, Job: &s,
			Text: fmt.Sprintf("dead letter: job %d %s on %s, %s: %s", j.ID, j.Type, j.Queue, j.FailureReason, jobs.Headline(j.ErrorDetails, 160))})
	}
	return nil
}

func summarize(j *jobs.Job) JobSummary {
	return JobSummary{ID: j.ID, Queue: j.Queue, Type: j.Type, Reason: j.FailureReason.String(), ReasonCode: int(j.FailureReason), ReasonClass: reasonClass(j.FailureReason),
		Attempts: fmt.Sprintf("%d/%d", j.AttemptCount, j.MaxAttempts), Worker: j.WorkerID, Finished: fmtTime(j.FinishedAt),
		Error: jobs.Headline(j.ErrorDetails, 120)}
}
