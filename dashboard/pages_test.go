package dashboard

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// seed fills the store with a little of everything.
func seed(f *fixture) (dead, archived, pending int64) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: intp(4), ZombieTimeout: secs(30)}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.store.UpdateQueue(ctx, "paused-q", jobs.QueueUpdate{Paused: boolp(true)}); err != nil {
		f.t.Fatal(err)
	}
	archived = f.archive("mail", "email.send", `{"to":"a@example.com"}`)
	dead = f.deadLetter("billing", "payment.sync", `{"invoice":42}`, jobs.ReasonMaxRetriesExceeded, "payment gateway timeout\nstack line")
	pending = f.enqueue("paused-q", "report.build", `{"report":"monthly"}`)
	return dead, archived, pending
}

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

func TestEveryPageRenders(t *testing.T) {
	f := newFixture(t, Options{})
	dead, archived, pending := seed(f)
	cases := []struct {
		path string
		want []string
	}{
		{"/", []string{"Overview", `data-queue="mail"`, `data-queue="billing"`, "paused", "Jobs/s 1 min", "Oldest due lag", `id="console"`}},
		{"/queues", []string{"Queues", `action="/queues/mail/settings"`, `action="/queues/paused-q/resume"`, `action="/queues/billing/pause"`, `name="max_workers" value="4"`}},
		{"/schedules", []string{"<h1>Schedules</h1>", "No schedules."}},
		{"/workflows", []string{"<h1>Workflows</h1>", "No workflows."}},
		{"/active", []string{"Active jobs", fmt.Sprintf(`data-id="%d"`, pending), "report.build", "Pending"}},
		{"/active?queue=paused-q&status=Pending&type=report.build", []string{fmt.Sprintf(`data-id="%d"`, pending)}},
		{"/dead", []string{"Dead letters", fmt.Sprintf(`data-id="%d"`, dead), "payment.sync", "MaxRetriesExceeded", "payment gateway timeout", `data-live="1"`}},
		{"/archive", []string{"Archive", fmt.Sprintf(`data-id="%d"`, archived), "email.send"}},
		{fmt.Sprintf("/job/%d", dead), []string{"payment gateway timeout\nstack line", `&#34;invoice&#34;: 42`, "Resurrect job", "Purge job", "worker-1"}},
		{fmt.Sprintf("/job/%d", archived), []string{"Succeeded", "Purge job", `action="/archive/purge"`}},
		{fmt.Sprintf("/job/%d", pending), []string{"Pending", `data-refresh="1"`}},
		{"/static/app.js", []string{"EventSource"}},
		{"/static/style.css", []string{"table.grid"}},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			wantStatus(t, f.get(c.path), http.StatusOK, c.want...)
		})
	}
}

// The assets are files: asking for the folder, or a folder inside it,
// finds nothing, instead of a listing of what is there.
func TestStaticServesFilesNotListings(t *testing.T) {
	for _, opts := range []Options{{}, {Auth: Auth{Token: "t0ken-for-tests"}}} {
		f := newFixture(t, opts)
		for _, path := range []string{"/static/", "/static/.", "/static//", "/static/app.js/", "/static/nothing.js"} {
			r := f.get(path)
			// The router redirects an unclean path to /static/ first.
			if (r.status != http.StatusNotFound && r.status != http.StatusTemporaryRedirect) || strings.Contains(r.body, "app.js") || strings.Contains(r.body, "style.css") {
				t.Errorf("GET %s: %d\n%s", path, r.status, r.body)
			}
		}
		wantStatus(t, f.get("/static/app.js"), http.StatusOK, "EventSource")
	}
}

func TestPagesCarrySecurityHeaders(t *testing.T) {
	f := newFixture(t, Options{})
	r := f.get("/")
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	if r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", r.header)
	}
}

func TestOverviewShowsCountsLagAndRates(t *testing.T) {
	f := newFixture(t, Options{})
	for range 3 {
		f.archive("mail", "email.send", `{}`)
	}
	f.enqueue("mail", "email.send", `{}`)
	c, err := f.dash.counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Queues) != 1 {
		t.Fatalf("queues %+v", c.Queues)
	}
	q := c.Queues[0]
	if q.Archived != 3 || q.Pending != 1 || q.Rate1m != "0.05" || q.Rate5m != "0.01" || q.State != "active" || q.Lag == "-" {
		t.Fatalf("counts %+v", q)
	}
	if c.Total.Archived != 3 || c.Total.Pending != 1 {
		t.Fatalf("total %+v", c.Total)
	}
	wantStatus(t, f.get("/"), http.StatusOK, `<td class="num" data-k="rate_1m">0.05</td>`)
}

// A payload, an error text or a console line holding markup is shown as
// text, never run.
func TestPayloadsAndErrorsAreEscaped(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "evil", `{"note":"<script>alert(1)</script>"}`, jobs.ReasonFatal, `<img src=x onerror=alert(2)>`)
	raw := f.deadLetter("q", "raw", `<script>alert(3)</script>`, jobs.ReasonFatal, "boom")
	f.dash.Publish(Event{Kind: KindInfo, Text: "<script>alert(4)</script>"})
	for _, path := range []string{fmt.Sprintf("/job/%d", id), fmt.Sprintf("/job/%d", raw), "/dead", "/"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<img src=x") {
			t.Fatalf("%s renders markup from data:\n%s", path, r.body)
		}
	}
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", id)), http.StatusOK, `&lt;script&gt;alert(1)&lt;/script&gt;`, `&lt;img src=x onerror=alert(2)&gt;`)
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", raw)), http.StatusOK, `&lt;script&gt;alert(3)&lt;/script&gt;`, "not JSON")
	wantStatus(t, f.get("/"), http.StatusOK, `&lt;script&gt;alert(4)&lt;/script&gt;`)
}

func TestListsFilterAndPage(t *testing.T) {
	f := newFixture(t, Options{})
	var ids []int64
	for i := range 5 {
		ids = append(ids, f.deadLetter("a", "t1", fmt.Sprintf(`{"n":%d}`, i), jobs.ReasonFatal, "fatal one"))
	}
	zombie := f.deadLetter("b", "t2", `{"needle":true}`, jobs.ReasonZombie, "zombie: heartbeat expired")
	rowsOf := func(body string) int { return strings.Count(body, `<tr data-id=`) }

	r := f.get("/dead?queue=a&limit=2")
	wantStatus(t, r, http.StatusOK, "<span data-count=\"1\">5</span> matching", fmt.Sprintf("before=%d", ids[3]))
	if rowsOf(r.body) != 2 {
		t.Fatalf("want 2 rows:\n%s", r.body)
	}
	r = f.get(fmt.Sprintf("/dead?queue=a&limit=2&before=%d", ids[1]))
	wantStatus(t, r, http.StatusOK, fmt.Sprintf(`data-id="%d"`, ids[0]), "newest first")
	if rowsOf(r.body) != 1 || strings.Contains(r.body, "older →") {
		t.Fatalf("last page:\n%s", r.body)
	}
	for _, q := range []string{"reason=Zombie", "reason=2", "type=t2", "text=needle", "text=heartbeat", "queue=b"} {
		r := f.get("/dead?" + q)
		wantStatus(t, r, http.StatusOK, fmt.Sprintf(`data-id="%d"`, zombie))
		if rowsOf(r.body) != 1 {
			t.Fatalf("%s: want only the zombie:\n%s", q, r.body)
		}
	}
	r = f.get("/dead?from=2000-01-01T00:00&to=2001-01-01")
	wantStatus(t, r, http.StatusOK, "No dead letters match")
	r = f.get("/dead?from=2000-01-01T00:00:00Z")
	if rowsOf(r.body) != 6 {
		t.Fatalf("time filter from 2000 should keep all:\n%s", r.body)
	}
	// A filtered view does not take live rows it cannot check.
	if strings.Contains(f.get("/dead?text=x").body, `data-live="1"`) {
		t.Fatal("a text filter must turn live insertion off")
	}
	f.enqueue("a", "t1", `{}`)
	wantStatus(t, f.get("/active?status=Processing"), http.StatusOK, "No active jobs match")
	wantStatus(t, f.get("/active?status=pending&queue=a"), http.StatusOK, "<span data-count=\"1\">1</span> matching")
	f.archive("c", "t3", `{"x":1}`)
	wantStatus(t, f.get("/archive?queue=c&text=x"), http.StatusOK, "<span data-count=\"1\">1</span> succeeded jobs matching")
}

func TestPagesRefuseBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{"/job/abc", http.StatusBadRequest, "want a positive integer"},
		{"/job/-4", http.StatusBadRequest, "want a positive integer"},
		{"/job/999999", http.StatusNotFound, "not found"},
		{"/dead?reason=sleepy", http.StatusBadRequest, "reason &#34;sleepy&#34;"},
		{"/dead?from=yesterday", http.StatusBadRequest, "from &#34;yesterday&#34;"},
		{"/dead?to=31/12/2026", http.StatusBadRequest, "to &#34;31/12/2026&#34;"},
		{"/dead?from=2026-02-01&to=2026-01-01", http.StatusBadRequest, "must be before"},
		{"/dead?before=x", http.StatusBadRequest, "before"},
		{"/dead?limit=5000", http.StatusBadRequest, "limit"},
		{"/active?status=9", http.StatusBadRequest, "status &#34;9&#34;"},
		{"/active?queue=no%20spaces", http.StatusBadRequest, "queue"},
		{"/archive?text=" + strings.Repeat("x", jobs.MaxFilterTextLen+1), http.StatusBadRequest, "text"},
		{"/nowhere", http.StatusNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			wantStatus(t, f.get(c.path), c.status, c.want)
		})
	}
}

func TestMountedUnderABasePath(t *testing.T) {
	f := newFixture(t, Options{BasePath: "/ops/jobs/"})
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	outer := http.NewServeMux()
	outer.Handle("/ops/jobs/", f.dash)
	outer.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the service's own page", http.StatusTeapot)
	})
	f.srv.Config.Handler = outer

	r := f.get("/ops/jobs/")
	wantStatus(t, r, http.StatusOK, `href="/ops/jobs/dead"`, `src="/ops/jobs/static/app.js"`, `href="/ops/jobs/static/style.css"`)
	r = f.get("/ops/jobs")
	if r.status/100 != 3 || r.header.Get("Location") != "/ops/jobs/" {
		t.Fatalf("bare base path: %d %v", r.status, r.header)
	}
	wantStatus(t, f.get("/ops/jobs/dead"), http.StatusOK, fmt.Sprintf(`href="/ops/jobs/job/%d"`, id), `action="/ops/jobs/dead/resurrect"`)
	wantStatus(t, f.get("/ops/jobs/static/app.js"), http.StatusOK)
	wantStatus(t, f.get("/dead"), http.StatusTeapot)
	r = f.post("/ops/jobs/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(id), "csrf", f.csrfFrom("/ops/jobs/queues")))
	if r.status != http.StatusSeeOther || r.header.Get("Location") != fmt.Sprintf("/ops/jobs/job/%d", id) {
		t.Fatalf("resurrect under a base path: %d %v\n%s", r.status, r.header, r.body)
	}
	if f.table(id) != jobs.TableHot {
		t.Fatal("not resurrected")
	}
	// The dashboard alone answers 404 outside its base path.
	rec := httptest.NewRecorder()
	f.dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/elsewhere", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("outside the base path: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	f.dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ops/jobs?x=1", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ops/jobs/?x=1" {
		t.Fatalf("the bare base path redirects itself: %d %v", rec.Code, rec.Header())
	}
	if _, err := New(f.store, Options{BasePath: "jobs"}); err == nil {
		t.Fatal("a relative base path must be refused")
	}
}

var (
	rowID     = regexp.MustCompile(`<tr data-id="(\d+)"`)
	olderLink = regexp.MustCompile(`<p class="paging"><a href="([^"]+)">older →</a></p>`)
)

// rowsOn returns the job IDs a list page shows, in order.
func rowsOn(t *testing.T, body string) []int64 {
	t.Helper()
	var ids []int64
	for _, m := range rowID.FindAllStringSubmatch(body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// olderURL is the page's "older →" link, as the browser would follow it;
// "" when the page is the last.
func olderURL(body string) string {
	m := olderLink.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestActiveJobsFilterAndPage: every filter of the active list leaves some
// seeded job out, so a filter that is ignored, or applied to the wrong
// field, shows a different list; paging keeps the filter and ends.
func TestActiveJobsFilterAndPage(t *testing.T) {
	f := newFixture(t, Options{})
	a1 := f.enqueue("a", "t1", `{}`)
	a2 := f.enqueue("a", "t1", `{}`)
	a3 := f.enqueue("a", "t2", `{}`)
	b1 := f.enqueue("b", "t1", `{}`)
	running := f.enqueue("b", "t3", `{}`)
	f.start(running, "b") // b1 is claimed with it and given back, Pending
	fetched := f.enqueue("c", "t1", `{}`)
	if got, err := f.store.Claim(context.Background(), jobs.ClaimParams{WorkerID: "worker-2", Queues: []string{"c"}, Limit: 1}); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}

	cases := []struct {
		query string
		want  []int64 // newest first
	}{
		{"", []int64{fetched, running, b1, a3, a2, a1}},
		{"queue=a", []int64{a3, a2, a1}},
		{"type=t1", []int64{fetched, b1, a2, a1}},
		{"status=Pending", []int64{b1, a3, a2, a1}},
		{"status=Fetched", []int64{fetched}},
		{"status=Processing", []int64{running}},
		{"queue=a&type=t1", []int64{a2, a1}},
		{"queue=b&status=Pending", []int64{b1}},
		{"queue=c&type=t2", nil},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			r := f.get("/active?" + c.query)
			wantStatus(t, r, http.StatusOK, fmt.Sprintf(`<span data-count="1">%d</span> matching`, len(c.want)))
			if got := rowsOn(t, r.body); !slices.Equal(got, c.want) {
				t.Fatalf("rows %v, want %v", got, c.want)
			}
		})
	}

	// Paging through a filtered list: the "older" link carries the filter
	// and the page size, and the last page has no link.
	r := f.get("/active?type=t1&limit=3")
	if got := rowsOn(t, r.body); !slices.Equal(got, []int64{fetched, b1, a2}) {
		t.Fatalf("first page %v", got)
	}
	next := olderURL(r.body)
	if next == "" {
		t.Fatalf("no older link:\n%s", r.body)
	}
	r = f.get(next)
	wantStatus(t, r, http.StatusOK, `<span data-count="1">4</span> matching`, "newest first")
	if got := rowsOn(t, r.body); !slices.Equal(got, []int64{a1}) {
		t.Fatalf("second page (%s) %v", next, got)
	}
	if olderURL(r.body) != "" {
		t.Fatalf("the last page links to an older one:\n%s", r.body)
	}
}

func TestArchivePages(t *testing.T) {
	f := newFixture(t, Options{})
	var x []int64
	for range 3 {
		x = append(x, f.archive("x", "t", `{}`))
	}
	y := f.archive("y", "t", `{}`)
	pages := [][]int64{{y, x[2]}, {x[1], x[0]}}
	r := f.get("/archive?limit=2")
	for i, want := range pages {
		wantStatus(t, r, http.StatusOK, `<span data-count="1">4</span> succeeded jobs matching`)
		if got := rowsOn(t, r.body); !slices.Equal(got, want) {
			t.Fatalf("page %d: %v, want %v", i+1, got, want)
		}
		next := olderURL(r.body)
		if i == len(pages)-1 {
			if next != "" {
				t.Fatalf("the last page links to %s", next)
			}
			break
		}
		r = f.get(next)
	}
	// With a filter, the pages hold only its rows.
	r = f.get("/archive?queue=x&limit=2")
	if got := rowsOn(t, r.body); !slices.Equal(got, []int64{x[2], x[1]}) {
		t.Fatalf("filtered first page %v", got)
	}
	r = f.get(olderURL(r.body))
	if got := rowsOn(t, r.body); !slices.Equal(got, []int64{x[0]}) || olderURL(r.body) != "" {
		t.Fatalf("filtered last page %v:\n%s", got, r.body)
	}
}

// clockedFixture is a fixture whose store runs on a clock the test moves.
func clockedFixture(t *testing.T, start time.Time) (*fixture, *memstore.ManualClock) {
	t.Helper()
	clock := memstore.NewManualClock(start)
	return newFixtureOn(t, memstore.New(memstore.WithClock(clock.Now)), Options{}), clock
}

// TestOverviewCountsEveryStatus: each count has its own number, so a
// count shown in another's column fails; the lag is the oldest due job's
// wait on the store's clock.
func TestOverviewCountsEveryStatus(t *testing.T) {
	f, clock := clockedFixture(t, time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	ctx := context.Background()
	for range 4 {
		f.archive("mail", "email.send", `{}`)
	}
	for range 3 {
		f.deadLetter("mail", "email.send", `{}`, jobs.ReasonFatal, "x")
	}
	f.start(f.enqueue("mail", "email.send", `{}`), "mail")
	for range 2 {
		f.enqueue("mail", "email.send", `{}`)
	}
	if got, err := f.store.Claim(ctx, jobs.ClaimParams{WorkerID: "worker-2", Queues: []string{"mail"}, Limit: 2}); err != nil || len(got) != 2 {
		t.Fatalf("claim: %v %v", got, err)
	}
	f.enqueue("mail", "email.send", `{}`) // oldest due: waits 90s
	clock.Advance(time.Minute)
	for range 4 {
		f.enqueue("mail", "email.send", `{}`) // due 30s ago
	}
	if _, err := f.store.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "email.send", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)

	c, err := f.dash.counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Queues) != 1 {
		t.Fatalf("queues %+v", c.Queues)
	}
	want := queueCounts{Queue: "mail", State: "active", Pending: 5, Scheduled: 1, Fetched: 2, Processing: 1, Archived: 4, DeadLettered: 3,
		LagSeconds: 90, Lag: "1m30s",
		// The four archived 90s ago: none in the last minute, 4 in five.
		PerSecond1m: 0, PerSecond5m: 4.0 / 300, Rate1m: "0", Rate5m: "0.01", Window: "none open"}
	if !reflect.DeepEqual(c.Queues[0], want) {
		t.Fatalf("counts\n got  %+v\n want %+v", c.Queues[0], want)
	}
	want.Queue, want.State, want.Window = "all queues", "", ""
	if !reflect.DeepEqual(c.Total, want) {
		t.Fatalf("total\n got  %+v\n want %+v", c.Total, want)
	}
	wantStatus(t, f.get("/"), http.StatusOK,
		`<td class="num" data-k="pending">5</td>`, `<td class="num" data-k="scheduled">1</td>`,
		`<td class="num" data-k="fetched">2</td>`, `<td class="num" data-k="processing">1</td>`,
		`data-k="archived">4</a>`, `data-k="dead">3</a>`, `<td class="num" data-k="lag">1m30s</td>`,
		`<span class="n" data-total="processing">1</span>`, `<span class="n" data-total="dead">3</span>`,
		`<span class="n" data-total="lag">1m30s</span>`)
}

// TestInspectorShowsAttemptsAndTimes: the facts of a job that died on its
// last attempt are those of that attempt, each at its own instant.
func TestInspectorShowsAttemptsAndTimes(t *testing.T) {
	f, clock := clockedFixture(t, time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	ctx := context.Background()
	res, err := f.store.Enqueue(ctx, jobs.EnqueueParams{Queue: "billing", Type: "payment.sync", Payload: []byte(`{}`), MaxAttempts: 3})
	must(t, err)
	id := res.ID
	for _, step := range []struct{ wait, retryAfter time.Duration }{
		{5 * time.Second, 30 * time.Second}, // attempt 1 at 10:00:05, fails at :07, due again 10:00:37
		{33 * time.Second, time.Minute},     // attempt 2 at 10:00:40, fails at :42, due again 10:01:42
	} {
		clock.Advance(step.wait)
		ref := f.start(id, "billing")
		clock.Advance(2 * time.Second)
		must(t, f.store.Retry(ctx, ref, jobs.RetryParams{Delay: step.retryAfter, Error: "timeout"}))
	}
	clock.Advance(78 * time.Second) // 10:02:00
	f.worker = "worker-3"
	ref := f.start(id, "billing") // deadline in a minute
	clock.Advance(20 * time.Second)
	_, err = f.store.Heartbeat(ctx, []jobs.LeaseRef{ref})
	must(t, err)
	clock.Advance(10 * time.Second)
	must(t, f.store.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonMaxRetriesExceeded, Details: "timeout"}))

	wantStatus(t, f.get(fmt.Sprintf("/job/%d", id)), http.StatusOK,
		"<dt>Attempts</dt><dd>3 of 3</dd>",
		"<dt>Worker</dt><dd>worker-3</dd>",
		"<dt>Created</dt><dd>2026-03-04 10:00:00",
		"<dt>Due</dt><dd>2026-03-04 10:01:42</dd>",
		"<dt>Started</dt><dd>2026-03-04 10:02:00</dd>",
		"<dt>Heartbeat</dt><dd>2026-03-04 10:02:20</dd>",
		"<dt>Deadline</dt><dd>2026-03-04 10:03:00</dd>",
		"<dt>Finished</dt><dd>2026-03-04 10:02:30</dd>")

	// A succeeded job also shows how long its attempt took.
	clock.Advance(time.Minute)
	done := f.enqueue("billing", "payment.sync", `{}`)
	ref = f.start(done, "billing")
	clock.Advance(2500 * time.Millisecond)
	must(t, f.store.Complete(ctx, ref))
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", done)), http.StatusOK,
		"Succeeded</span> after 1 attempt", "<dt>Attempts</dt><dd>1 of ",
		"<dt>Started</dt><dd>2026-03-04 10:03:30</dd>",
		"<dt>Finished</dt><dd>2026-03-04 10:03:32 (took 2.5s)</dd>")
}

func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }

// The job page shows a job's metadata, escaped like any other text.
func TestJobPageShowsMetadata(t *testing.T) {
	f := newFixture(t, Options{})
	r, err := f.store.Enqueue(t.Context(), jobs.EnqueueParams{Queue: "q", Type: "t",
		Metadata: map[string]string{"request_id": "r-42", "tenant": "<b>acme</b>"}})
	if err != nil {
		t.Fatal(err)
	}
	page := f.get(fmt.Sprintf("/job/%d", r.ID))
	wantStatus(t, page, http.StatusOK, `id="metadata"`, `<code>request_id</code> = r-42`, `<code>tenant</code> = &lt;b&gt;acme&lt;/b&gt;`)
	plain := f.enqueue("q", "t", `{}`)
	if body := f.get(fmt.Sprintf("/job/%d", plain)).body; strings.Contains(body, `id="metadata"`) {
		t.Error("a job without metadata shows a metadata entry")
	}
}

// The job page shows a unique job's key and where it is held.
func TestJobPageShowsUniqueKey(t *testing.T) {
	f := newFixture(t, Options{})
	r, err := f.store.Enqueue(t.Context(), jobs.EnqueueParams{Queue: "q", Type: "t", Payload: []byte(`{"a":1}`),
		Unique: &jobs.UniqueOpts{ByArgs: true}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.store.GetJob(t.Context(), r.ID)
	if err != nil || j.UniqueKey == nil {
		t.Fatalf("GetJob: %+v, %v", j, err)
	}
	page := f.get(fmt.Sprintf("/job/%d", r.ID))
	wantStatus(t, page, http.StatusOK, `id="unique-key"`, "<code>"+j.UniqueKey.String()+"</code>", "held while Pending|Fetched|Processing")
	plain := f.enqueue("q", "t", `{}`)
	if body := f.get(fmt.Sprintf("/job/%d", plain)).body; strings.Contains(body, `id="unique-key"`) {
		t.Error("a job that is not unique shows a unique key")
	}
}

// The job page shows a running job's progress as of its last beat, and a
// finished job's output.
func TestJobPageShowsProgressAndOutput(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := t.Context()
	id := f.enqueue("q", "t", `{}`)
	ref := f.start(id, "q")
	if _, err := f.store.HeartbeatProgress(ctx, []jobs.LeaseRef{ref}, []jobs.ProgressItem{{Ref: ref, Fraction: 0.4, Message: "page <2> of 5"}}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", id)), http.StatusOK, `id="progress"`, "40%", "page &lt;2&gt; of 5", "as of the heartbeat")
	if _, err := f.store.Transition(ctx, jobs.Transitions{Completes: []jobs.LeaseRef{ref},
		Outputs: []jobs.OutputItem{{Ref: ref, Output: []byte(`{"rows":"<b>3</b>"}`)}}}); err != nil {
		t.Fatal(err)
	}
	page := f.get(fmt.Sprintf("/job/%d", id))
	wantStatus(t, page, http.StatusOK, `id="output"`, `&lt;b&gt;3&lt;/b&gt;`)
	if strings.Contains(page.body, `id="progress"`) {
		t.Error("an archived job shows progress")
	}
}

// The job page shows the running job's effective timeout and where it
// came from, and its kind's zombie policy (docs/design.md, Policy per
// kind).
func TestJobPageShowsTheEffectivePolicy(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	id := f.enqueue("mail", "email.send", `{}`)
	got, err := f.store.Claim(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail"}, Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if _, err := f.store.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Hour, Timeout: 42 * time.Second, ZombieRetryCap: 2}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, f.get(fmt.Sprintf("/job/%d", id)), http.StatusOK,
		`<dd id="job-timeout">42s (kind)</dd>`, `<dd id="job-zombie">retry 0 of 2 used</dd>`)
}

// The queue page shows the queue's weight (ADR 0032), 1 when it sets none.
func TestQueuePageShowsTheWeight(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := f.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{Weight: intp(9)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.UpdateQueue(ctx, "reports", jobs.QueueUpdate{MaxWorkers: intp(2)}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, f.get("/queue/mail"), http.StatusOK, `weight <span id="queue-weight">9</span> · zombie`)
	wantStatus(t, f.get("/queue/reports"), http.StatusOK, `weight <span id="queue-weight">1</span> <span class="sub">(default)</span>`)
}

// The queue page shows the queue's rate limit (ADR 0033), the open
// window's claims and when it closes, and the jobs the full window holds;
// the counts events carry the same, as the flow-control counts, so the
// page follows them live. A queue without a limit says none.
func TestQueuePageShowsTheRateLimitAndItsWindow(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2026, 12, 3, 12, 2, 4, 0, time.UTC))
	f := newFixtureOn(t, memstore.New(memstore.WithClock(clock.Now)), Options{})
	ctx := context.Background()
	if _, err := f.store.UpdateQueue(ctx, "partner", jobs.QueueUpdate{RateLimit: &jobs.RateLimit{Count: 3, Window: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.enqueue("partner", "call", `{}`)
	}
	f.enqueue("mail", "email.send", `{}`)
	if got, err := f.store.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"partner"}, Limit: 10}); err != nil || len(got) != 3 {
		t.Fatalf("Claim = %d jobs, %v; want the window's 3", len(got), err)
	}
	wantStatus(t, f.get("/queue/partner"), http.StatusOK,
		`<p class="note" id="rate-limit" data-counts-of="partner">Rate limit <span id="rate-limit-value">3/1m</span>, fleet-wide`,
		`this window <span data-k="window">3 claimed, closes 12:03:04 UTC</span>`,
		`waiting on the rate limit <span data-k="waiting_rate">2</span>`)
	wantStatus(t, f.get("/queue/mail"), http.StatusOK, `data-counts-of="mail">Rate limit none</p>`)

	c, err := f.dash.counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range c.Queues {
		if q.Queue == "partner" && (q.WaitingOnRate != 2 || q.WindowUsed != 3 || q.Window != "3 claimed, closes 12:03:04 UTC") {
			t.Errorf("counts of partner: waiting %d, used %d, window %q", q.WaitingOnRate, q.WindowUsed, q.Window)
		}
	}
	if c.Total.WaitingOnRate != 2 {
		t.Errorf("total waiting on a rate limit = %d, want 2", c.Total.WaitingOnRate)
	}
}

// The queue page shows its flow control: the limits, and how many Pending
// jobs wait on a key limit or a sequence (ADR 0031).
func TestQueuePageShowsFlowControl(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	hold := jobs.SequenceHold
	if _, err := f.store.UpdateQueue(ctx, "tenants", jobs.QueueUpdate{MaxWorkersPerKey: intp(2),
		KeyLimits: map[string]int{"tenant:big": 1}, SequenceOnDeadLetter: &hold}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []jobs.EnqueueParams{
		{ConcurrencyKey: "tenant:big"}, {ConcurrencyKey: "tenant:big"}, {ConcurrencyKey: "tenant:big"},
		{SequenceKey: "account:1"}, {SequenceKey: "account:1"},
	} {
		p.Queue, p.Type = "tenants", "export"
		if _, err := f.store.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// One claim takes one of the big tenant's and the sequence's head, and
	// holds the others back.
	if got, err := f.store.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"tenants"}, Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("Claim = %d jobs, %v; want 2", len(got), err)
	}
	wantStatus(t, f.get("/queue/tenants"), http.StatusOK,
		"Flow control: per-key limit 2", `own limits <span class="qname">tenant:big</span> 1`,
		"a dead letter in a sequence: hold",
		`waiting on a key limit <span data-k="waiting_key">2</span>`, `waiting on a sequence <span data-k="waiting_sequence">1</span>`,
		"Busiest concurrency keys", `<tr><td class="qname">tenant:big</td><td>1</td><td>2</td></tr>`)
}
