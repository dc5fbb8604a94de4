package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
)

// historyTTL is how long one read of the history serves every viewer: the
// 14 days by the day read a whole finish-time index (ADR 0022).
const historyTTL = time.Minute

// historyRange is one history chart: n buckets of bucket, the last one
// the bucket now is in.
type historyRange struct {
	Name   string // "hours" or "days", the ?history= value
	bucket time.Duration
	n      int
	unit   string // of the y axes, in the panel titles
	column string // the table's first column
	label  string // a bucket's start in the table
	tick   string // a bucket's start under the axis
}

var (
	historyHours = historyRange{Name: "hours", bucket: time.Hour, n: 48, unit: "jobs per hour", column: "Hour from (UTC)",
		label: "2006-01-02 15:04", tick: "Jan 2 15:04"}
	historyDays = historyRange{Name: "days", bucket: 24 * time.Hour, n: 14, unit: "jobs per day", column: "Day (UTC)",
		label: "2006-01-02", tick: "Jan 2"}
)

// historyCounts is one queue's jobs that finished in one bucket.
type historyCounts struct {
	archived int64
	dead     map[jobs.FailureReason]int64
}

// historyData is one read of the history, for every queue.
type historyData struct {
	r       historyRange
	fetched time.Time // the dashboard's clock (d.now) when it was read
	at      time.Time // the store's clock it was read by
	start   time.Time // the first bucket's start
	counts  []map[string]*historyCounts
}

// historyCache keeps the last read of each range for historyTTL, for all
// viewers: one grouped read serves every queue's chart.
type historyCache struct {
	mu      sync.Mutex
	entries map[string]*historyData
}

// get returns range r's counts as of at most historyTTL ago, reading them
// (as of now, the store's clock) if need be. The read happens under the
// lock, so viewers that arrive together share it.
func (c *historyCache) get(ctx context.Context, fc jobs.FinishedCounter, r historyRange, now, wall time.Time) (*historyData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.entries[r.Name]; h != nil && wall.Sub(h.fetched) < historyTTL && !wall.Before(h.fetched) {
		return h, nil
	}
	p := jobs.FinishedCountsParams{Bucket: r.bucket}
	end := p.BucketOf(now).Add(r.bucket)
	p.From, p.To = end.Add(-time.Duration(r.n)*r.bucket), end
	rows, err := fc.FinishedCounts(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("finished counts: %w", err)
	}
	h := &historyData{r: r, fetched: wall, at: now, start: p.From, counts: make([]map[string]*historyCounts, r.n)}
	for _, row := range rows {
		i := int(row.Start.Sub(p.From) / r.bucket)
		if row.Start.Before(p.From) || i >= r.n {
			continue
		}
		if h.counts[i] == nil {
			h.counts[i] = map[string]*historyCounts{}
		}
		qc := h.counts[i][row.Queue]
		if qc == nil {
			qc = &historyCounts{dead: map[jobs.FailureReason]int64{}}
			h.counts[i][row.Queue] = qc
		}
		switch row.Table {
		case jobs.TableArchive:
			qc.archived += row.Count
		case jobs.TableDLQ:
			qc.dead[row.Reason] += row.Count
		}
	}
	if c.entries == nil {
		c.entries = map[string]*historyData{}
	}
	c.entries[r.Name] = h
	return h, nil
}

// queues are the queues the read saw.
func (h *historyData) queues() []string {
	var out []string
	for _, m := range h.counts {
		for q := range m {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// kept is how long one table keeps the jobs of the queues a chart shows.
type kept struct {
	shortest, longest time.Duration // of the finite retentions known; 0: none
	forever           bool          // some queue keeps them forever
	unknown           bool          // some queue's retention is not known here
}

// keptFor works out kept for table t over queues, from each one's own
// retention or else the global one (Options.Retention; unknown when nil).
func (d *Dashboard) keptFor(t jobs.Table, queues []string, settings map[string]jobs.QueueSettings) kept {
	var k kept
	for _, q := range queues {
		s := settings[q]
		own := s.ArchiveRetention
		if t == jobs.TableDLQ {
			own = s.DeadLetterRetention
		}
		var keep time.Duration
		switch {
		case own != 0:
			keep = own
		case d.global != nil:
			keep = retention.KeepFor(s, t, *d.global)
		default:
			k.unknown = true
			continue
		}
		if keep == jobs.KeepForever {
			k.forever = true
			continue
		}
		if k.shortest == 0 || keep < k.shortest {
			k.shortest = keep
		}
		k.longest = max(k.longest, keep)
	}
	return k
}

// Bucket states against retention.
const (
	keptWhole   = ""
	keptPartly  = "partly beyond retention"
	keptBeyond  = "beyond retention"
	classBeyond = "beyond"
)

// state says whether a bucket [start, end) is kept whole, partly or not at
// all, as of at: beyond retention once every queue shown has let it go
// (so, for all queues, the longest retention decides), partly once the
// shortest has.
func (k kept) state(start, end, at time.Time) string {
	if !k.unknown && !k.forever && k.longest > 0 && !end.After(at.Add(-k.longest)) {
		return keptBeyond
	}
	if k.shortest > 0 && start.Before(at.Add(-k.shortest)) {
		return keptPartly
	}
	return keptWhole
}

// text says what k is, for the chart's note: "kept 7d", "kept 3d to 7d by
// queue", "kept forever", "retention not known here".
func (k kept) text() string {
	var parts []string
	switch {
	case k.shortest == 0:
	case k.shortest == k.longest:
		parts = append(parts, "kept "+retention.Text(k.longest))
	default:
		parts = append(parts, "kept "+retention.Text(k.shortest)+" to "+retention.Text(k.longest)+" by queue")
	}
	if k.forever {
		if len(parts) == 0 {
			parts = append(parts, "kept forever")
		} else {
			parts = append(parts, "forever by some")
		}
	}
	if k.unknown {
		parts = append(parts, "retention of some queues not known to this dashboard (Options.Retention is not set)")
		if k.shortest == 0 && !k.forever {
			parts = []string{"retention not known to this dashboard (Options.Retention is not set)"}
		}
	}
	return strings.Join(parts, ", ")
}

// historyChart is the history as the template draws it.
type historyChart struct {
	Range   string // "hours" or "days"
	Queue   string // "" for all queues
	AsOf    time.Time
	Empty   bool
	Panels  [2]historyPanel
	XLabels []axisLabel
	XTitle  string
	Column  string
	Reasons []reasonKey // the reasons present, in legend order
	Rows    []historyRow
	Notes   []string
	// Beyond and Partly: some bucket is (partly) beyond retention, so the
	// legend explains the marking.
	Beyond, Partly bool
}

// historyPanel is one half of the history: bars, a band for the buckets
// beyond retention, and a scale.
type historyPanel struct {
	Title     string
	EmptyText string
	Empty     bool
	scale
	Bars   []bar
	Beyond *band
}

// bar is one rectangle of a bar chart, with its number for the tooltip
// and the tests.
type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Start      string // the bucket's start, RFC 3339
	N          int64
}

// band marks the buckets beyond retention.
type band struct {
	X, W  float64
	Label bool // wide enough to say so in the chart
	Title string
}

// axisLabel is one time label under the chart.
type axisLabel struct {
	X    float64
	Text string
}

// reasonKey is a failure reason as the chart names and colours it.
type reasonKey struct {
	Reason jobs.FailureReason
	Name   string // FailureReason.String()
	Class  string
}

// historyRow is one bucket in the table.
type historyRow struct {
	Start    string // RFC 3339, for data attributes
	Label    string
	SoFar    bool // the bucket now is in
	Archived cell
	Dead     cell
	ByReason []cell // by Reasons
}

// cell is one number of the table, or why it is not shown whole.
type cell struct {
	N     int64
	State string // keptWhole, keptPartly or keptBeyond
}

// Data is what a data attribute holds: the number, or "beyond".
func (c cell) Data() string {
	if c.State == keptBeyond {
		return classBeyond
	}
	return strconv.FormatInt(c.N, 10)
}

// Text is what the table shows.
func (c cell) Text() string {
	switch c.State {
	case keptBeyond:
		return keptBeyond
	case keptPartly:
		return strconv.FormatInt(c.N, 10) + " (" + keptPartly + ")"
	}
	return strconv.FormatInt(c.N, 10)
}

// reasonOrder is the legend's order of the failure reasons; an unknown one
// comes after, by number.
var reasonOrder = []jobs.FailureReason{jobs.ReasonMaxRetriesExceeded, jobs.ReasonTimeout, jobs.ReasonZombie, jobs.ReasonHeartbeatFailure,
	jobs.ReasonFatal, jobs.ReasonCancelled, jobs.ReasonSnoozeLimitExceeded, jobs.ReasonDependencyFailed, jobs.ReasonRetryLifetimeExpired}

func reasonKeyOf(r jobs.FailureReason) reasonKey {
	if !r.Valid() {
		return reasonKey{Reason: r, Name: r.String(), Class: "rs-other"}
	}
	return reasonKey{Reason: r, Name: r.String(), Class: "rs-" + strings.ToLower(r.String())}
}

func reasonRank(r jobs.FailureReason) int {
	if i := slices.Index(reasonOrder, r); i >= 0 {
		return i
	}
	return len(reasonOrder) + int(r)
}

// historyView draws h for queue ("" for all queues), marking the buckets
// beyond each table's retention.
func (d *Dashboard) historyView(h *historyData, queue string, settings []jobs.QueueSettings, known []string) historyChart {
	r := h.r
	c := historyChart{Range: r.Name, Queue: queue, AsOf: h.at, Column: r.column}
	// What each bucket holds of the queue (or queues) shown.
	archived := make([]int64, r.n)
	dead := make([]map[jobs.FailureReason]int64, r.n)
	present := map[jobs.FailureReason]bool{}
	for i, m := range h.counts {
		dead[i] = map[jobs.FailureReason]int64{}
		for q, qc := range m {
			if queue != "" && q != queue {
				continue
			}
			archived[i] += qc.archived
			for reason, n := range qc.dead {
				dead[i][reason] += n
				present[reason] = true
			}
		}
	}
	for reason := range present {
		c.Reasons = append(c.Reasons, reasonKeyOf(reason))
	}
	slices.SortFunc(c.Reasons, func(a, b reasonKey) int { return reasonRank(a.Reason) - reasonRank(b.Reason) })

	// Retention, per table, of the queues shown.
	bySetting := map[string]jobs.QueueSettings{}
	for _, s := range settings {
		bySetting[s.Name] = s
	}
	shown := []string{queue}
	if queue == "" {
		shown = slices.Concat(known, h.queues())
		for _, s := range settings {
			shown = append(shown, s.Name)
		}
		slices.Sort(shown)
		shown = slices.Compact(shown)
	}
	keeps := [2]kept{d.keptFor(jobs.TableArchive, shown, bySetting), d.keptFor(jobs.TableDLQ, shown, bySetting)}
	if len(shown) > 0 {
		c.Notes = append(c.Notes, "Succeeded (archive): "+keeps[0].text()+". Dead letters: "+keeps[1].text()+".")
	}
	if queue == "" && (keeps[0].shortest != keeps[0].longest || keeps[1].shortest != keeps[1].longest) {
		c.Notes = append(c.Notes, "With retentions that differ by queue, a bucket reads \"beyond retention\" once the longest has passed, "+
			"and \"partly beyond retention\" once the shortest has: some queues' jobs are gone from it.")
	}

	states := [2][]string{make([]string, r.n), make([]string, r.n)}
	slot := float64(plotWidth) / float64(r.n)
	var peak [2]int64
	for i := range r.n {
		start := h.start.Add(time.Duration(i) * r.bucket)
		for t := range keeps {
			states[t][i] = keeps[t].state(start, start.Add(r.bucket), h.at)
		}
		if states[0][i] != keptBeyond {
			peak[0] = max(peak[0], archived[i])
		}
		if states[1][i] != keptBeyond {
			var sum int64
			for _, n := range dead[i] {
				sum += n
			}
			peak[1] = max(peak[1], sum)
		}
	}
	names := [2]string{"succeeded", "dead-lettered"}
	for p := range c.Panels {
		sc := newScale(panelTops[p], float64(peak[p]), 2)
		c.Panels[p] = historyPanel{Title: names[p] + ", " + r.unit, scale: sc, Empty: peak[p] == 0,
			EmptyText: "no jobs " + names[p] + " in this window"}
		beyond := 0
		for beyond < r.n && states[p][beyond] == keptBeyond {
			beyond++
		}
		if beyond > 0 {
			w := round1(float64(beyond) * slot)
			c.Panels[p].Beyond = &band{X: plotLeft, W: w, Label: w >= 120,
				Title: fmt.Sprintf("%s: beyond retention (%s)", names[p], keeps[p].text())}
			if beyond == r.n {
				c.Panels[p].EmptyText = ""
			}
		}
	}
	c.Empty = c.Panels[0].Empty && c.Panels[1].Empty
	for i := range r.n {
		start := h.start.Add(time.Duration(i) * r.bucket)
		row := historyRow{Start: start.Format(time.RFC3339), Label: start.Format(r.label), SoFar: i == r.n-1,
			Archived: cell{N: archived[i], State: states[0][i]}}
		var sum int64
		for _, rk := range c.Reasons {
			n := dead[i][rk.Reason]
			sum += n
			row.ByReason = append(row.ByReason, cell{N: n, State: states[1][i]})
		}
		row.Dead = cell{N: sum, State: states[1][i]}
		c.Rows = append(c.Rows, row)
		for _, st := range []string{states[0][i], states[1][i]} {
			c.Beyond = c.Beyond || st == keptBeyond
			c.Partly = c.Partly || st == keptPartly
		}

		x := round1(plotLeft + float64(i)*slot + slot*0.15)
		w := round1(slot * 0.7)
		label := start.Format(r.label) + " UTC"
		if states[0][i] != keptBeyond && archived[i] > 0 {
			sc := c.Panels[0].scale
			y := sc.y(float64(archived[i]))
			c.Panels[0].Bars = append(c.Panels[0].Bars, bar{X: x, Y: y, W: w, H: round1(sc.Bottom - y), Class: partlyClass("bar-ok", states[0][i]),
				Title: fmt.Sprintf("%s: %s succeeded", label, row.Archived.Text()), Start: row.Start, N: archived[i]})
		}
		if states[1][i] != keptBeyond && sum > 0 {
			sc := c.Panels[1].scale
			base := 0.0
			for _, rk := range c.Reasons {
				n := dead[i][rk.Reason]
				if n == 0 {
					continue
				}
				top, bottom := sc.y(base+float64(n)), sc.y(base)
				base += float64(n)
				c.Panels[1].Bars = append(c.Panels[1].Bars, bar{X: x, Y: top, W: w, H: round1(bottom - top), Class: partlyClass(rk.Class, states[1][i]),
					Title: fmt.Sprintf("%s: %s dead-lettered, %s", label, cell{N: n, State: states[1][i]}.Text(), rk.Name), Start: row.Start, N: n})
			}
		}
		if tick(r, i, start) {
			c.XLabels = append(c.XLabels, axisLabel{X: round1(plotLeft + (float64(i)+0.5)*slot), Text: start.Format(r.tick)})
		}
	}
	c.XTitle = map[string]string{"hours": "hour (UTC, store clock)", "days": "day (UTC, store clock)"}[r.Name]
	return c
}

func partlyClass(class, state string) string {
	if state == keptPartly {
		return class + " partly"
	}
	return class
}

// tick reports whether bucket i gets a time label: every 8 hours, every
// other day (ending with today's).
func tick(r historyRange, i int, start time.Time) bool {
	if r.Name == "days" {
		return (r.n-1-i)%2 == 0
	}
	return start.UTC().Hour()%8 == 0
}
