package memstore

import (
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// rateWindow is a queue's open rate-limit window (ADR 0033): it opened at
// the first claim after the last one closed, and lasts the limit's Window.
type rateWindow struct {
	start time.Time
	used  int
}

// room is how many jobs a claim at now may take under the queue's rate
// limit (-1: no limit), closing a window that has run its time.
func (q *queueState) room(now time.Time) int {
	r := q.settings.RateLimit
	if r.IsZero() {
		return -1
	}
	if !q.rate.start.IsZero() && !now.Before(q.rate.start.Add(r.Window)) {
		q.rate = rateWindow{}
	}
	return max(r.Count-q.rate.used, 0)
}

// took counts n claimed jobs in the open window, opening one at now.
func (q *queueState) took(n int, now time.Time) {
	if q.settings.RateLimit.IsZero() || n == 0 {
		return
	}
	if q.rate.start.IsZero() {
		q.rate.start = now
	}
	q.rate.used += n
}

// hold is how long until the queue's window closes, if it has no claim
// left; ok false when it has or the queue has no limit.
func (q *queueState) hold(now time.Time) (time.Duration, bool) {
	r := q.settings.RateLimit
	if r.IsZero() || q.rate.start.IsZero() || q.rate.used < r.Count || !now.Before(q.rate.start.Add(r.Window)) {
		return 0, false
	}
	return q.rate.start.Add(r.Window).Sub(now), true
}

// rateStats fills st's window fields at now.
func (q *queueState) rateStats(st *jobs.QueueStats, now time.Time) {
	r := q.settings.RateLimit
	if r.IsZero() || q.rate.start.IsZero() || !now.Before(q.rate.start.Add(r.Window)) {
		return
	}
	st.WindowUsed, st.WindowEndsAt = q.rate.used, q.rate.start.Add(r.Window)
	if q.rate.used >= r.Count {
		st.WaitingOnRate = st.Pending
	}
}
