package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
)

// seed fills the store with a little of everything.
func seed(f *fixture) (dead, archived, pending int64) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: intp(4), ZombieTimeoutSeconds: intp(30)}); err != nil {
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
