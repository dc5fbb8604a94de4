package memstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// The operator reads (QueueStats, TableQueues, CountJobs by queue and
// status) answer from counts and indexes kept as jobs move, instead of
// walking a table under the store's one lock (ADR 0026). Every job enters
// and leaves a table through enter and exit, and every Pending job through
// pushPending and leavePending: the four places the counts are kept.

// spelling counts a queue's jobs of one table under one spelling of its name.
type spelling struct {
	name string
	n    int
}

// tableCount is one queue's jobs in one table. Queues compare ignoring case
// (jobs.QueueKey) and a list shows the smallest spelling among the jobs, so
// the count is kept by spelling; a queue rarely has more than one.
type tableCount struct {
	total     int
	spellings []spelling
}

func (c *tableCount) add(name string, d int) {
	c.total += d
	for i := range c.spellings {
		if c.spellings[i].name == name {
			if c.spellings[i].n += d; c.spellings[i].n == 0 {
				c.spellings = slices.Delete(c.spellings, i, i+1)
			}
			return
		}
	}
	c.spellings = append(c.spellings, spelling{name: name, n: d})
}

// smallest returns the smallest spelling among the jobs counted, or "".
func (c *tableCount) smallest() string {
	name := ""
	for i, sp := range c.spellings {
		if i == 0 || sp.name < name {
			name = sp.name
		}
	}
	return name
}

// enter puts j into its table (j.Table), its queue's count and ID set.
func (s *Store) enter(j *jobs.Job) {
	s.table(j.Table)[j.ID] = j
	q, t := s.queue(j.Queue), j.Table-jobs.TableHot
	q.tables[t].add(j.Queue, 1)
	q.ids[t].add(j.ID)
	q.joined(j)
}

// exit takes j out of its table (j.Table), its queue's count and ID set.
func (s *Store) exit(j *jobs.Job) {
	delete(s.table(j.Table), j.ID)
	q, t := s.queue(j.Queue), j.Table-jobs.TableHot
	q.tables[t].add(j.Queue, -1)
	q.ids[t].remove(j.ID)
	q.left(j)
}

// dueIndex orders a queue's Pending jobs by due time, so that QueueStats
// splits them into due and scheduled and finds the oldest due one without
// reading each: the jobs due by mark are in due (its top, once stale
// entries are dropped, is the oldest due job), the others in later, which
// later counts. Moving mark to now moves the jobs that fell due from later
// to due. As the flight indexes, entries go stale when their job leaves
// Pending (or is claimed again) and are dropped when popped or compacted.
// A job has at most one live entry in later, which is what lets later be
// counted: a job leaves Pending before it is due only when cancelled, and
// comes back by Resurrect due now. It can have two in due (cancelled and
// resurrected at one instant), which the oldest does not mind.
type dueIndex struct {
	mark       int64 // Unix nanoseconds
	due, later flightIndex
	nLater     int // Pending jobs due after mark
}

// isPending reports whether e still stands for a Pending job due at e.at.
// A job's Table says whether it is in the hot table (enter and exit keep
// them together), which spares a map lookup per entry when an index compacts.
func isPending(e flightEntry) bool {
	j := e.job
	return j.Table == jobs.TableHot && j.Status == jobs.StatusPending && j.Lease == e.lease && nanos(j.ScheduledAt) == e.at
}

// indexDue indexes a job that just became Pending by its due time.
func (q *queueState) indexDue(j *jobs.Job, now time.Time) {
	if n := nanos(now); n > q.due.mark {
		q.advanceDue(n)
	}
	e := flightEntry{job: j, lease: j.Lease, at: nanos(j.ScheduledAt)}
	if e.at > q.due.mark {
		q.due.later.push(e, isPending)
		q.due.nLater++
		return
	}
	q.due.due.push(e, isPending)
}

// leavePending records that a Pending job of the queue left Pending.
func (q *queueState) leavePending(j *jobs.Job) {
	q.counts[jobs.StatusPending]--
	if nanos(j.ScheduledAt) > q.due.mark {
		q.due.nLater--
	}
}

// advanceDue moves the mark forward to n: the jobs due by then go to due.
func (q *queueState) advanceDue(n int64) {
	d := &q.due
	if len(d.later.items) == 0 {
		d.mark = n
		return
	}
	cutoff := n + 1
	if n == math.MaxInt64 {
		cutoff = n
	}
	for _, e := range d.later.popBefore(cutoff, isPending) {
		d.nLater--
		d.due.push(e, isPending)
	}
	d.mark = n
}

// rewindDue moves the mark back to n, when the store's clock went back:
// the rare case that reads every entry of the queue's index. Twins in due
// are counted once in later.
func (q *queueState) rewindDue(n int64) {
	d := &q.due
	all := append(d.due.items, d.later.items...)
	*d = dueIndex{mark: n}
	counted := map[flightEntry]bool{}
	for _, e := range all {
		switch {
		case !isPending(e):
		case e.at <= n:
			d.due.push(e, isPending)
		case !counted[e]:
			counted[e] = true
			d.later.push(e, isPending)
			d.nLater++
		}
	}
}

// oldestDue returns the oldest job due by the mark, or nil.
func (q *queueState) oldestDue() *jobs.Job {
	x := &q.due.due
	for len(x.items) > 0 {
		if e := x.items[0]; isPending(e) {
			return e.job
		}
		x.popTop()
	}
	return nil
}

// dueAt brings the queue's due index to the instant n.
func (q *queueState) dueAt(n int64) {
	switch {
	case n > q.due.mark:
		q.advanceDue(n)
	case n < q.due.mark:
		q.rewindDue(n)
	}
}

// jobCount is how many jobs of every table the queue has.
func (q *queueState) jobCount() int {
	n := 0
	for _, c := range q.tables {
		n += c.total
	}
	return n
}

// QueueStats implements jobs.Store. It reads each queue's kept counts and
// due index: no job is read but the stale index entries it drops.
func (s *Store) QueueStats(ctx context.Context) ([]jobs.QueueStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c := int64(s.statsCap)
	capped := func(n int) int64 { return min(int64(n), c) }
	out := make([]jobs.QueueStats, 0, len(s.queues))
	for _, q := range s.queues {
		if !q.hasRow && q.jobCount() == 0 {
			continue
		}
		// One entry per queue as stores compare names (jobs.QueueKey), shown
		// by its control row's name, else by the smallest spelling among its
		// jobs, so that the name does not change from one poll to the next.
		st := jobs.QueueStats{Queue: q.settings.Name}
		if q.hasRow {
			st.Paused, st.MaxWorkers = q.settings.Paused, q.settings.MaxWorkers
		} else {
			st.Queue = ""
			for _, t := range q.tables {
				if n := t.smallest(); n != "" && (st.Queue == "" || n < st.Queue) {
					st.Queue = n
				}
			}
		}
		q.dueAt(nanos(now))
		scheduled := q.due.nLater
		if j := q.oldestDue(); j != nil {
			st.OldestDueAt = j.ScheduledAt
			st.Lag = now.Sub(j.ScheduledAt)
		}
		st.Pending, st.Scheduled = capped(q.counts[jobs.StatusPending]-scheduled), capped(scheduled)
		st.Fetched, st.Processing = capped(q.counts[jobs.StatusFetched]), capped(q.counts[jobs.StatusProcessing])
		st.Archived = capped(q.tables[jobs.TableArchive-jobs.TableHot].total)
		st.DeadLettered = capped(q.tables[jobs.TableDLQ-jobs.TableHot].total)
		st.WaitingOnKey, st.WaitingOnSequence = q.waiting()
		st.BusiestKeys = q.busiestKeys()
		q.rateStats(&st, now)
		st.WaitingOnParents = capped(q.waitingOnParents)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b jobs.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	if len(out) > jobs.MaxStatsQueues {
		out = out[:jobs.MaxStatsQueues]
	}
	return out, nil
}

// TableQueues implements jobs.Store, from each queue's kept counts.
func (s *Store) TableQueues(ctx context.Context, t jobs.Table, after string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !t.Valid() {
		return nil, &jobs.ValidationError{Field: "table", Value: t, Rule: "must be hot, archive or dlq"}
	}
	// One name per queue as stores compare names (jobs.QueueKey), its
	// smallest spelling, in key order; the page starts after after's key.
	type named struct{ key, name string }
	var found []named
	s.mu.Lock()
	for key, q := range s.queues {
		if c := &q.tables[t-jobs.TableHot]; c.total > 0 && key > jobs.QueueKey(after) {
			found = append(found, named{key: key, name: c.smallest()})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(found, func(a, b named) int { return strings.Compare(a.key, b.key) })
	out := make([]string, 0, min(len(found), jobs.MaxStatsQueues))
	for _, n := range found[:min(len(found), jobs.MaxStatsQueues)] {
		out = append(out, n.name)
	}
	return out, nil
}

// countKept answers a count by queue and status alone from the kept
// counts; ok is false for any other filter.
func (s *Store) countKept(t jobs.Table, f jobs.Filter) (n int64, ok bool) {
	if len(f.IDs) > 0 || f.Type != "" || f.Reason != nil || !f.From.IsZero() || !f.To.IsZero() || f.OlderThan > 0 || f.Text != "" {
		return 0, false
	}
	count := func(q *queueState) int {
		if f.Status != nil {
			return q.counts[*f.Status]
		}
		return q.tables[t-jobs.TableHot].total
	}
	if f.Queue != "" {
		if q := s.queueOf(f.Queue); q != nil {
			return int64(count(q)), true
		}
		return 0, true
	}
	if f.Status == nil {
		return int64(len(s.table(t))), true
	}
	for _, q := range s.queues {
		n += int64(count(q))
	}
	return n, true
}

// eachNewest calls fn with the jobs of table t that f selects below the ID
// before (any when 0), so that fn sees, among them, the limit of highest ID
// (it may see more). A filter by IDs looks them up; Fetched or Processing
// jobs are read off the flight indexes, which hold each of them; any other
// filter walks the ID set of each queue it selects from its highest ID
// down, until limit jobs of that queue matched.
func (s *Store) eachNewest(t jobs.Table, f jobs.Filter, before int64, limit int, now time.Time, fn func(*jobs.Job)) {
	switch {
	case len(f.IDs) > 0:
		s.each(t, f, now, func(j *jobs.Job) {
			if before <= 0 || j.ID < before {
				fn(j)
			}
		})
		return
	case f.Status != nil && *f.Status != jobs.StatusPending:
		x, live := &s.fetched, s.isFetched
		if *f.Status == jobs.StatusProcessing {
			x, live = &s.deadlines, s.isProcessing
		}
		seen := map[*jobs.Job]bool{}
		for _, e := range x.items {
			if j := e.job; live(e) && !seen[j] && (before <= 0 || j.ID < before) && matches(j, f, now) {
				seen[j] = true
				fn(j)
			}
		}
		return
	}
	m := s.table(t)
	walk := func(q *queueState) {
		n := 0
		q.ids[t-jobs.TableHot].descending(before, func(id int64) bool {
			if j := m[id]; matches(j, f, now) {
				fn(j)
				n++
			}
			return n < limit
		})
	}
	if f.Queue != "" {
		if q := s.queueOf(f.Queue); q != nil {
			walk(q)
		}
		return
	}
	for _, q := range s.queues {
		walk(q)
	}
}
