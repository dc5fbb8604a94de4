package memstore

import (
	"slices"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// flightEntry indexes one claim of an in-flight job under an instant: its
// claim (phase 1), its last sign of life (phase 2) or its deadline (phase 3).
type flightEntry struct {
	job   *jobs.Job
	lease int64 // the claim the entry stands for
	at    int64 // Unix nanoseconds
}

// flightIndex is a min-heap of in-flight jobs by instant, so that a rescue
// phase reads only the jobs whose instant is past its cutoff instead of
// the whole hot table (ADR 0026). An entry is never removed when its job
// moves on (started, finished, retried): it goes stale, told by the job's
// lease and status, and is dropped when popped or when the index compacts.
// An entry's instant is a lower bound of its job's: a heartbeat moves the
// job's instant forward without touching the index, and the phase that
// pops the entry too early pushes it again under the job's instant.
type flightIndex struct {
	items []flightEntry
	// compactAt is the length at which the next push drops stale entries,
	// so that the index stays within twice its live entries when no rescue
	// pops them.
	compactAt int
}

const minCompact = 1024

func nanos(t time.Time) int64 { return t.UnixNano() }

func (x *flightIndex) less(a, b int) bool {
	ea, eb := x.items[a], x.items[b]
	if ea.at != eb.at {
		return ea.at < eb.at
	}
	return ea.job.ID < eb.job.ID
}

// push adds e; live tells the entries to keep when the index compacts.
func (x *flightIndex) push(e flightEntry, live func(flightEntry) bool) {
	if len(x.items) >= max(x.compactAt, minCompact) {
		x.items = slices.DeleteFunc(x.items, func(e flightEntry) bool { return !live(e) })
		for i := len(x.items)/2 - 1; i >= 0; i-- {
			x.down(i)
		}
		x.compactAt = 2 * len(x.items)
	}
	x.items = append(x.items, e)
	x.up(len(x.items) - 1)
}

// popBefore removes and returns the entries before cutoff whose jobs live
// says are still in the state the index stands for; stale ones are dropped.
func (x *flightIndex) popBefore(cutoff int64, live func(flightEntry) bool) []flightEntry {
	var out []flightEntry
	for len(x.items) > 0 && x.items[0].at < cutoff {
		if e := x.popTop(); live(e) {
			out = append(out, e)
		}
	}
	return out
}

// popTop removes and returns the entry of lowest instant.
func (x *flightIndex) popTop() flightEntry {
	e := x.items[0]
	n := len(x.items) - 1
	x.items[0] = x.items[n]
	x.items[n] = flightEntry{}
	x.items = x.items[:n]
	if n > 0 {
		x.down(0)
	}
	return e
}

func (x *flightIndex) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !x.less(i, p) {
			return
		}
		x.items[i], x.items[p] = x.items[p], x.items[i]
		i = p
	}
}

func (x *flightIndex) down(i int) {
	n := len(x.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && x.less(r, c) {
			c = r
		}
		if !x.less(c, i) {
			return
		}
		x.items[i], x.items[c] = x.items[c], x.items[i]
		i = c
	}
}

// inState returns whether e's claim still holds its job in status st.
func (s *Store) inState(e flightEntry, st jobs.Status) bool {
	j := e.job
	return s.hot[j.ID] == j && j.Lease == e.lease && j.Status == st
}

func (s *Store) isFetched(e flightEntry) bool    { return s.inState(e, jobs.StatusFetched) }
func (s *Store) isProcessing(e flightEntry) bool { return s.inState(e, jobs.StatusProcessing) }

// indexFetched indexes a job just claimed by its claim (phase 1).
func (s *Store) indexFetched(j *jobs.Job) {
	s.fetched.push(flightEntry{job: j, lease: j.Lease, at: nanos(j.LastUpdatedAt)}, s.isFetched)
}

// indexStarted indexes a job just started by its heartbeat, in its queue
// (phase 2: the zombie timeout is the queue's), and by its deadline.
func (s *Store) indexStarted(j *jobs.Job) {
	s.queue(j.Queue).beats.push(flightEntry{job: j, lease: j.Lease, at: nanos(lastSeen(j))}, s.isProcessing)
	s.deadlines.push(flightEntry{job: j, lease: j.Lease, at: nanos(j.DeadlineAt)}, s.isProcessing)
}

// lastSeen is a Processing job's last sign of life.
func lastSeen(j *jobs.Job) time.Time {
	if j.HeartbeatAt.IsZero() {
		return j.LastUpdatedAt
	}
	return j.HeartbeatAt
}

// byID orders candidates by job ID: a phase's batch limit takes the lowest
// IDs, as the SQL Server store's clustered-index walk does.
func byID(a, b flightEntry) int { return compareInt64(a.job.ID, b.job.ID) }
