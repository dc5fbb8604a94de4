package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// The live throughput chart: jobs that succeeded and that were
// dead-lettered, per second, in 2 s buckets over the last 5 minutes,
// counted from the store's finish instants (jobs.FinishedCounter), so the
// whole fleet's work shows, whichever process did it.
const (
	liveBucket  = 2 * time.Second
	liveBuckets = 150 // 5 minutes
	liveSpan    = liveBuckets * liveBucket
	// liveOverlap is how far back each read goes into what the last one
	// read already: a job's FinishedAt is taken from the store's clock
	// when it moves, but the move may commit a few seconds later (on SQL
	// Server the read skips rows still locked, READPAST), so the last
	// buckets are read again and replaced until they are this old. A poll
	// every 2 s thus reads 8 s of rows.
	liveOverlap = 3 * liveBucket
)

// finished is one queue's jobs that finished in one bucket.
type finished struct{ archived, dead int64 }

// liveCounts is one bucket's jobs by queue. Once in a snapshot it is
// never changed: a later read replaces the bucket's map.
type liveCounts map[string]finished

// liveWindow is the rolling 5-minute window, shared by every viewer: the
// poller refreshes it every poll, and a page rendered while nobody
// watches refreshes it itself. Only complete buckets are kept, so the
// newest point is the last whole 2 s, never a bucket half counted.
type liveWindow struct {
	mu      sync.Mutex
	end     time.Time            // exclusive end of what was read; zero: nothing yet
	buckets map[int64]liveCounts // by bucket start, Unix seconds
	snap    *liveSnap
}

// liveParams is the store read of [from, to) in live buckets.
func liveParams(from, to time.Time) jobs.FinishedCountsParams {
	return jobs.FinishedCountsParams{From: from, To: to, Bucket: liveBucket}
}

// refresh brings the window up to now (the store's clock) and returns its
// snapshot. The first read covers the whole window; later ones re-read
// from liveOverlap before the last read's end, replacing those buckets.
// Unless force, a window already ending at now's bucket is returned as it
// is: a page rendered between two polls costs nothing. The read happens
// under the lock, so viewers that arrive together share it.
func (w *liveWindow) refresh(ctx context.Context, fc jobs.FinishedCounter, now time.Time, force bool) (*liveSnap, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := liveParams(now, now).BucketOf(now)
	if !force && w.snap != nil && w.end.Equal(end) {
		return w.snap, nil
	}
	start := end.Add(-liveSpan)
	from, kept := start, w.buckets
	if w.end.IsZero() || end.Before(w.end) || !w.end.After(start) {
		// The first read, a clock that went back, or a window that went
		// stale while nobody watched: read it all.
		kept = nil
	} else {
		from = w.end.Add(-liveOverlap)
		if from.Before(start) {
			from = start
		}
	}
	rows, err := fc.FinishedCounts(ctx, liveParams(from, end))
	if err != nil {
		return nil, fmt.Errorf("finished counts: %w", err)
	}
	fresh := map[int64]liveCounts{}
	for _, r := range rows {
		k := r.Start.Unix()
		if k < from.Unix() || k >= end.Unix() {
			continue
		}
		m := fresh[k]
		if m == nil {
			m = liveCounts{}
			fresh[k] = m
		}
		f := m[r.Queue]
		switch r.Table {
		case jobs.TableArchive:
			f.archived += r.Count
		case jobs.TableDLQ:
			f.dead += r.Count
		}
		m[r.Queue] = f
	}
	buckets := make(map[int64]liveCounts, liveBuckets)
	for k, m := range kept {
		if k >= start.Unix() && k < from.Unix() {
			buckets[k] = m
		}
	}
	for k, m := range fresh {
		buckets[k] = m
	}
	w.end, w.buckets = end, buckets
	snap := &liveSnap{start: start}
	for i := range snap.buckets {
		snap.buckets[i] = buckets[start.Unix()+int64(i)*int64(liveBucket/time.Second)]
	}
	w.snap = snap
	return snap, nil
}

// liveSnap is the window as one read left it. It is shared by every
// stream and never changed, but for the memo of its views.
type liveSnap struct {
	start   time.Time
	buckets [liveBuckets]liveCounts

	mu    sync.Mutex
	views map[string][]byte // the JSON of each queue's view ("" all queues)
}

// json is the view of queue ("" for all queues) as a live event carries it,
// marshalled once per snapshot however many streams show it.
func (s *liveSnap) json(queue string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.views[queue]; ok {
		return b
	}
	b, _ := json.Marshal(s.view(queue)) // plain data always marshals
	if s.views == nil {
		s.views = map[string][]byte{}
	}
	s.views[queue] = b
	return b
}

// series is the window's counts of queue, or of all queues when queue is "".
func (s *liveSnap) series(queue string) (archived, dead []int64) {
	archived, dead = make([]int64, liveBuckets), make([]int64, liveBuckets)
	for i, m := range s.buckets {
		if queue != "" {
			f := m[queue]
			archived[i], dead[i] = f.archived, f.dead
			continue
		}
		for _, f := range m {
			archived[i] += f.archived
			dead[i] += f.dead
		}
	}
	return archived, dead
}

// liveChart is a live chart as the template draws it and as the `live`
// event carries it: the page's script copies the points, labels and
// numbers into the SVG and the table.
type liveChart struct {
	Queue string `json:"queue"` // "" for all queues
	// Start and End bound the window: End is the end of the last whole
	// bucket by the store's clock.
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	BucketSeconds int       `json:"bucket_seconds"`
	// Empty: no job finished in the window, neither way.
	Empty   bool         `json:"empty"`
	Panels  [2]livePanel `json:"panels"`
	XLabels [3]string    `json:"x_labels"`
	Summary string       `json:"summary"`
	// Archived and Dead are the counts of each bucket, oldest first.
	Archived []int64 `json:"archived"`
	Dead     []int64 `json:"dead"`
	// Times are the buckets' start times, for the table (not sent: the
	// script works them out from Start).
	Times []string `json:"-"`
}

// livePanel is one half of a chart: one line and its scale.
type livePanel struct {
	Title  string `json:"-"`
	Class  string `json:"-"` // the line's CSS class
	Total  int64  `json:"total"`
	Empty  bool   `json:"empty"`
	Points string `json:"points"`
	scale
}

// view draws queue's chart ("" for all queues).
func (s *liveSnap) view(queue string) liveChart {
	archived, dead := s.series(queue)
	end := s.start.Add(liveSpan)
	c := liveChart{Queue: queue, Start: s.start, End: end, BucketSeconds: int(liveBucket / time.Second),
		Archived: archived, Dead: dead,
		XLabels: [3]string{clockText(s.start), clockText(s.start.Add(liveSpan / 2)), clockText(end) + " UTC"}}
	c.Times = make([]string, liveBuckets)
	for i := range c.Times {
		c.Times[i] = clockText(s.start.Add(time.Duration(i) * liveBucket))
	}
	xs := make([]float64, liveBuckets)
	for i := range xs {
		xs[i] = round1(plotLeft + (float64(i)+0.5)*plotWidth/liveBuckets)
	}
	perSecond := liveBucket.Seconds()
	var summary [2]string
	for p, series := range [2][]int64{archived, dead} {
		var total, peak int64
		for _, n := range series {
			total += n
			peak = max(peak, n)
		}
		sc := newScale(panelTops[p], float64(peak)/perSecond, 0.5)
		ys := make([]float64, liveBuckets)
		for i, n := range series {
			ys[i] = sc.y(float64(n) / perSecond)
		}
		panel := livePanel{Total: total, Empty: total == 0, scale: sc}
		if total > 0 {
			panel.Points = points(xs, ys)
		}
		name := [2]string{"succeeded", "dead-lettered"}[p]
		panel.Title = name + ", jobs per second"
		panel.Class = [2]string{"line-ok", "line-bad"}[p]
		c.Panels[p] = panel
		latest := float64(series[len(series)-1]) / perSecond
		summary[p] = fmt.Sprintf("%d %s (peak %s/s, last 2 s %s/s)", total, name, num(float64(peak)/perSecond), num(latest))
	}
	c.Empty = c.Panels[0].Empty && c.Panels[1].Empty
	span := clockText(s.start) + " to " + clockText(end) + " UTC"
	if c.Empty {
		c.Summary = "No jobs finished in this window (" + span + ")."
	} else {
		c.Summary = "From " + span + ": " + summary[0] + "; " + summary[1] + "."
	}
	return c
}
