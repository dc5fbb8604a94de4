package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/jobs/storetest"
)

// fixture is a dashboard over a fresh in-memory store, served by httptest,
// with a cookie-keeping client that does not follow redirects.
type fixture struct {
	t      *testing.T
	store  *memstore.Store
	dash   *Dashboard
	srv    *httptest.Server
	client *http.Client
	logs   *observer.ObservedLogs
	worker string // the worker that start claims as
}

// newFixture serves a new dashboard; setup runs on it before the server
// starts (to set a clock, for example).
func newFixture(t *testing.T, opts Options, setup ...func(*Dashboard)) *fixture {
	t.Helper()
	return newFixtureOn(t, memstore.New(), opts, setup...)
}

// newFixtureOn serves a new dashboard over store, for tests that need the
// store's clock in hand.
func newFixtureOn(t *testing.T, store *memstore.Store, opts Options, setup ...func(*Dashboard)) *fixture {
	t.Helper()
	return newFixtureOver(t, store, store, opts, setup...)
}

// newFixtureOver serves a new dashboard over admin, a wrapper of store
// (which the seeding helpers use), for tests that count or hide what the
// dashboard asks of the store.
func newFixtureOver(t *testing.T, store *memstore.Store, admin jobs.Admin, opts Options, setup ...func(*Dashboard)) *fixture {
	t.Helper()
	f := &fixture{t: t, store: store, worker: "worker-1"}
	core, logs := observer.New(zapcore.InfoLevel)
	f.logs = logs
	if opts.Logger == nil {
		opts.Logger = zap.New(core)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	d, err := New(admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range setup {
		s(d)
	}
	f.dash = d
	f.srv = httptest.NewServer(d)
	jar, _ := cookiejar.New(nil)
	f.client = &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		d.Close()
		f.srv.Close()
	})
	return f
}

// response is a finished request.
type response struct {
	status int
	body   string
	header http.Header
}

func (f *fixture) do(req *http.Request) response {
	f.t.Helper()
	res, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{res.StatusCode, string(b), res.Header}
}

func (f *fixture) get(path string) response {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	req.Header.Set("Accept", "text/html")
	return f.do(req)
}

// post sends a form as the browser would, with the page's CSRF token
// unless the form sets "csrf" itself.
func (f *fixture) post(path string, form url.Values) response {
	f.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", f.csrf())
	}
	return f.postRaw(path, form)
}

func (f *fixture) postRaw(path string, form url.Values) response {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return f.do(req)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads a page and returns the token its forms carry.
func (f *fixture) csrf() string {
	f.t.Helper()
	return f.csrfFrom("/dead")
}

func (f *fixture) csrfFrom(path string) string {
	f.t.Helper()
	r := f.get(path)
	m := csrfInput.FindStringSubmatch(r.body)
	if m == nil {
		f.t.Fatalf("no CSRF token on %s (%d):\n%s", path, r.status, r.body)
	}
	return m[1]
}

func wantStatus(t *testing.T, r response, status int, inBody ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d\n%s", r.status, status, r.body)
	}
	for _, s := range inBody {
		if !strings.Contains(r.body, s) {
			t.Fatalf("body lacks %q:\n%s", s, r.body)
		}
	}
}

// Seeding. Each helper makes one job reach a table through the store's own
// transitions (storetest.Seeder), as f.worker.

func (f *fixture) seeder() storetest.Seeder {
	return storetest.Seeder{T: f.t, Store: f.store, Worker: f.worker}
}

func (f *fixture) enqueue(queue, typ, payload string) int64 {
	f.t.Helper()
	return f.seeder().Enqueue(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)})
}

// start claims and starts the job id; other jobs the claim takes are
// released at once, untouched.
func (f *fixture) start(id int64, queue string) jobs.LeaseRef {
	f.t.Helper()
	return f.seeder().Start(id, queue)
}

func (f *fixture) deadLetter(queue, typ, payload string, reason jobs.FailureReason, details string) int64 {
	f.t.Helper()
	return f.seeder().DeadLettered(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)}, reason, details)
}

func (f *fixture) archive(queue, typ, payload string) int64 {
	f.t.Helper()
	return f.seeder().Archived(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)})
}

func (f *fixture) table(id int64) jobs.Table {
	f.t.Helper()
	j, err := f.store.GetJob(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j.Table
}

func (f *fixture) count(t jobs.Table, flt jobs.Filter) int64 {
	f.t.Helper()
	n, err := f.store.CountJobs(context.Background(), t, flt)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// urlValues builds a form from key, value pairs; a key may repeat.
func urlValues(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
