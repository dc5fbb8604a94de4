package dashboard

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
)

// chartsData is what the chart templates draw on the overview and on a
// queue's page.
type chartsData struct {
	// Available: the store counts finished jobs by time. Without it the
	// page shows a note instead of the charts.
	Available bool
	Queue     string // "" for all queues
	Self      string // the page's path, which the selector and links go to
	Live      liveChart
	History   historyChart
	Frame     frame
	// Ranges link to the history by hour and by day.
	Ranges []rangeLink
	// Choices are the overview's queue selector ("" is all queues); nil on
	// a queue's page.
	Choices []string
}

// rangeLink is one of the history's two views.
type rangeLink struct {
	Name, Text, URL string
	On              bool
}

// historyRangeOf reads ?history=: hours (the default) or days.
func historyRangeOf(q url.Values) (historyRange, error) {
	switch v := q.Get("history"); v {
	case "", historyHours.Name:
		return historyHours, nil
	case historyDays.Name:
		return historyDays, nil
	default:
		return historyRange{}, badInput("history %q: want hours or days", v)
	}
}

// charts assembles the charts of queue ("" for all queues) for a page at
// self (its path) with query v. c is the page's counts, read just now:
// its store time is the charts' now.
func (d *Dashboard) charts(r *http.Request, self string, v url.Values, c counts, settings []jobs.QueueSettings, queue string) (chartsData, error) {
	hr, err := historyRangeOf(v)
	if err != nil {
		return chartsData{}, err
	}
	data := chartsData{Queue: queue, Self: self, Frame: chartFrame, Available: d.finished != nil}
	for _, rr := range []historyRange{historyHours, historyDays} {
		link := url.Values{}
		for k, vs := range v {
			link[k] = vs
		}
		link.Set("history", rr.Name)
		text := map[string]string{"hours": "48 hours by the hour", "days": "14 days by the day"}[rr.Name]
		data.Ranges = append(data.Ranges, rangeLink{Name: rr.Name, Text: text, URL: self + "?" + link.Encode(), On: rr == hr})
	}
	if !data.Available {
		return data, nil
	}
	ctx := r.Context()
	snap, err := d.live.refresh(ctx, d.finished, c.At, false)
	if err != nil {
		return chartsData{}, err
	}
	h, err := d.history.get(ctx, d.finished, hr, c.At, d.now())
	if err != nil {
		return chartsData{}, err
	}
	known := make([]string, 0, len(c.Queues))
	for _, q := range c.Queues {
		known = append(known, q.Queue)
	}
	data.Live = snap.view(queue)
	data.History = d.historyView(h, queue, settings, known)
	return data, nil
}

// overviewData is the overview: the counts, the charts of the queue
// chosen, and each queue's lag sparkline.
type overviewData struct {
	counts
	Charts chartsData
}

func (d *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	queue := v.Get("queue")
	if queue != "" {
		if err := jobs.ValidateQueueName(queue); err != nil {
			d.failErr(w, r, badInput("queue %q: %v", queue, err))
			return
		}
	} else {
		v.Del("queue")
	}
	c, err := d.counts(r.Context())
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	settings, err := d.store.Queues(r.Context())
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	d.lags.sparklines(&c)
	ch, err := d.charts(r, d.path("/"), v, c, settings, queue)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	ch.Choices = []string{""}
	for _, q := range c.Queues {
		ch.Choices = append(ch.Choices, q.Queue)
	}
	if queue != "" && !slices.Contains(ch.Choices, queue) {
		ch.Choices = append(ch.Choices, queue)
	}
	d.render(w, r, http.StatusOK, "overview", "Overview", "overview", overviewData{counts: c, Charts: ch})
}

// queueData is one queue's page.
type queueData struct {
	Name     string
	Counts   queueCounts
	Settings jobs.QueueSettings
	// Archive and DeadLetters are how long the queue's finished jobs are
	// kept.
	Archive, DeadLetters keep
	Charts               chartsData
	// KeyLimits are the queue's own limits per concurrency key, by key.
	KeyLimits []keyLimit
}

// keyLimit is one key's own limit, as the queue page lists it.
type keyLimit struct {
	Key   string
	Limit int
}

// keyLimits lists s's own key limits sorted by key.
func keyLimits(s jobs.QueueSettings) []keyLimit {
	out := make([]keyLimit, 0, len(s.KeyLimits))
	for _, k := range slices.Sorted(maps.Keys(s.KeyLimits)) {
		out = append(out, keyLimit{Key: k, Limit: s.KeyLimits[k]})
	}
	return out
}

// queuePageURL is where queue name's page is, under base. A name of dots
// only would be resolved away as a path segment, so it goes in ?name=.
func queuePageURL(base, name string) string {
	if strings.Trim(name, ".") == "" {
		return base + "/queue?name=" + url.QueryEscape(name)
	}
	return base + "/queue/" + url.PathEscape(name)
}

// queuePage shows one queue: its counts and lag, live, and its charts.
func (d *Dashboard) queuePage(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	name := r.PathValue("name")
	if name == "" {
		name = v.Get("name")
	}
	if err := jobs.ValidateQueueName(name); err != nil {
		d.failErr(w, r, badInput("queue %q: %v", name, err))
		return
	}
	ctx := r.Context()
	c, err := d.counts(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	settings, err := d.store.Queues(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	d.lags.sparklines(&c)
	data := queueData{Name: name, Settings: jobs.QueueSettings{Name: name}}
	found := false
	// Stores compare queue names ignoring case (jobs.QueueKey).
	for _, q := range c.Queues {
		if jobs.QueueKey(q.Queue) == jobs.QueueKey(name) {
			data.Counts, found = q, true
		}
	}
	for _, s := range settings {
		if jobs.QueueKey(s.Name) == jobs.QueueKey(name) {
			data.Settings, found = s, true
		}
	}
	if !found {
		d.fail(w, r, http.StatusNotFound, "no queue named "+name+": it has no jobs and no settings")
		return
	}
	if data.Counts.Queue == "" {
		data.Counts = queueCounts{Queue: name, Paused: data.Settings.Paused, MaxWorkers: data.Settings.MaxWorkers}.withText()
		data.Counts.sparkline = drawSparkline(name, nil, lagSample{at: c.At})
	}
	data.Archive, data.DeadLetters = d.keeps(data.Settings)
	data.KeyLimits = keyLimits(data.Settings)
	self, _, _ := strings.Cut(queuePageURL(d.base, name), "?")
	if self == d.path("/queue") {
		v.Set("name", name)
	}
	if data.Charts, err = d.charts(r, self, v, c, settings, name); err != nil {
		d.failErr(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "queue", "Queue "+name, "queues", data)
}
