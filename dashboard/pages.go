package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
)

// queueRow is one line of the queues page: the control row and the counts.
type queueRow struct {
	jobs.QueueSettings
	Counts queueCounts
	// Archive and DeadLetters are how long the queue's finished jobs are
	// kept.
	Archive, DeadLetters keep
}

func (d *Dashboard) queuesPage(w http.ResponseWriter, r *http.Request) {
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
	rows := map[string]*queueRow{}
	var names []string
	for _, s := range settings {
		rows[s.Name] = &queueRow{QueueSettings: s}
		names = append(names, s.Name)
	}
	for _, q := range c.Queues {
		row := rows[q.Queue]
		if row == nil {
			row = &queueRow{QueueSettings: jobs.QueueSettings{Name: q.Queue}}
			rows[q.Queue] = row
			names = append(names, q.Queue)
		}
		row.Counts = q
	}
	slices.Sort(names)
	out := make([]queueRow, 0, len(names))
	for _, n := range names {
		row := rows[n]
		row.Archive, row.DeadLetters = d.keeps(row.QueueSettings)
		out = append(out, *row)
	}
	d.render(w, r, http.StatusOK, "queues", "Queues", "queues", out)
}

// listData is what the three job lists render.
type listData struct {
	Filter   filterForm
	Hidden   []field // the filter as hidden form fields
	Count    int64
	Jobs     []*jobs.Job
	First    bool // the newest page: live dead letters may be inserted
	Live     bool // the filter is one the page script can apply to arrivals
	NextURL  string
	FirstURL string
	Queues   []string
	Reasons  []string
	Statuses []string
	Limit    int
}

type field struct{ Name, Value string }

func (d *Dashboard) activePage(w http.ResponseWriter, r *http.Request) {
	d.listPage(w, r, jobs.TableHot, "active", "Active jobs")
}

func (d *Dashboard) deadPage(w http.ResponseWriter, r *http.Request) {
	d.listPage(w, r, jobs.TableDLQ, "dead", "Dead letters")
}

func (d *Dashboard) archivePage(w http.ResponseWriter, r *http.Request) {
	d.listPage(w, r, jobs.TableArchive, "archive", "Archive")
}

// listPage renders one table's jobs, newest first, filtered and paged by ID.
func (d *Dashboard) listPage(w http.ResponseWriter, r *http.Request, t jobs.Table, name, title string) {
	q := r.URL.Query()
	ff := readFilterForm(q, t)
	f, err := ff.build()
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	var before int64
	if s := q.Get("before"); s != "" {
		if before, err = parseID("before", s); err != nil {
			d.failErr(w, r, err)
			return
		}
	}
	limit := jobs.DefaultPageSize
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > jobs.MaxPageSize {
			d.failErr(w, r, badInput("limit %q: want a page size from 1 to %d", s, jobs.MaxPageSize))
			return
		}
	}
	ctx := r.Context()
	page, err := d.store.ListJobs(ctx, jobs.ListParams{Table: t, Filter: f, Limit: limit, BeforeID: before})
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	n, err := d.store.CountJobs(ctx, t, f)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	settings, err := d.store.Queues(ctx)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	data := listData{Filter: ff, Count: n, Jobs: page.Jobs, First: before == 0, Limit: limit,
		Live: ff.Text == "" && ff.From == "" && ff.To == "" && ff.Status == ""}
	for _, s := range settings {
		data.Queues = append(data.Queues, s.Name)
	}
	v := ff.values()
	for k := range v {
		data.Hidden = append(data.Hidden, field{k, v.Get(k)})
	}
	slices.SortFunc(data.Hidden, func(a, b field) int { return strings.Compare(a.Name, b.Name) })
	if limit != jobs.DefaultPageSize {
		v.Set("limit", strconv.Itoa(limit))
	}
	data.FirstURL = d.path("/"+name) + query(v)
	if page.NextBeforeID != 0 {
		v.Set("before", strconv.FormatInt(page.NextBeforeID, 10))
		data.NextURL = d.path("/"+name) + query(v)
	}
	for _, rr := range []jobs.FailureReason{jobs.ReasonMaxRetriesExceeded, jobs.ReasonCancelled, jobs.ReasonZombie, jobs.ReasonFatal,
		jobs.ReasonTimeout, jobs.ReasonHeartbeatFailure, jobs.ReasonRetryLifetimeExpired, jobs.ReasonSnoozeLimitExceeded, jobs.ReasonDependencyFailed} {
		data.Reasons = append(data.Reasons, rr.String())
	}
	data.Statuses = []string{jobs.StatusPending.String(), jobs.StatusFetched.String(), jobs.StatusProcessing.String()}
	d.render(w, r, http.StatusOK, name, title, name, data)
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// jobData is the inspector.
type jobData struct {
	Job          *jobs.Job
	Payload      string
	PayloadJSON  bool
	CanResurrect bool
	CanPurge     bool
	CanCancel    bool // an active job nobody asked to cancel yet
	PurgeAction  string
	Live         bool // a hot job: the page refreshes itself until it settles
}

func (d *Dashboard) jobPage(w http.ResponseWriter, r *http.Request) {
	id, err := parseID("job id", r.PathValue("id"))
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	j, err := d.store.GetJob(r.Context(), id)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	data := jobData{Job: j, Payload: payloadText(j.Payload), PayloadJSON: len(j.Payload) == 0 || json.Valid(j.Payload),
		Live: j.Table == jobs.TableHot}
	if !d.opts.ReadOnly {
		data.CanResurrect = j.Table == jobs.TableDLQ
		data.CanPurge = j.Table == jobs.TableDLQ || j.Table == jobs.TableArchive
		data.CanCancel = j.Table == jobs.TableHot && j.CancelRequestedAt.IsZero()
		data.PurgeAction = d.path("/dead/purge")
		if j.Table == jobs.TableArchive {
			data.PurgeAction = d.path("/archive/purge")
		}
	}
	nav := map[jobs.Table]string{jobs.TableHot: "active", jobs.TableDLQ: "dead", jobs.TableArchive: "archive"}[j.Table]
	d.render(w, r, http.StatusOK, "job", "Job "+strconv.FormatInt(j.ID, 10), nav, data)
}
