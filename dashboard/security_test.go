package dashboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Regression tests for the findings of the dashboard security review.

// port is the fixture server's port.
func (f *fixture) port() string {
	u, _ := url.Parse(f.srv.URL)
	return u.Port()
}

// request builds a request to the fixture; header holds name, value pairs,
// and "Host" sets the Host header.
func (f *fixture) request(method, path string, body url.Values, header ...string) *http.Request {
	f.t.Helper()
	var req *http.Request
	if body != nil {
		req, _ = http.NewRequest(method, f.srv.URL+path, strings.NewReader(body.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, _ = http.NewRequest(method, f.srv.URL+path, nil)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return req
}

// newClient is another browser: its own cookies, no redirects followed.
func newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) doWith(c *http.Client, req *http.Request) response {
	f.t.Helper()
	saved := f.client
	f.client = c
	defer func() { f.client = saved }()
	return f.do(req)
}

// login logs the fixture's browser in with the login form.
func (f *fixture) login(token string) response {
	f.t.Helper()
	return f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", token, "next", "/dead"))
}

func (f *fixture) cookie(name string) string {
	u, _ := url.Parse(f.srv.URL + "/")
	for _, c := range f.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (f *fixture) setCookie(name, value string) {
	u, _ := url.Parse(f.srv.URL + "/")
	f.client.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// fakeClock is a clock for login sessions and the failure limiter.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// V1: a page on an attacker's domain, re-pointed at 127.0.0.1, is same-origin
// with the dashboard as far as the browser can tell. The Host header still
// names the attacker's domain.
func TestDNSRebindingHostIsRefused(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{"secret":1}`, jobs.ReasonFatal, "x")
	token := f.csrf()
	rebound := "rebind.attacker.example:" + f.port()
	origin := "http://" + rebound

	for _, path := range []string{"/", "/dead", fmt.Sprintf("/job/%d", id), "/events"} {
		r := f.do(f.request(http.MethodGet, path, nil, "Host", rebound))
		wantStatus(t, r, http.StatusMisdirectedRequest, "does not answer to the host name")
		if strings.Contains(r.body, "secret") {
			t.Fatalf("GET %s leaks through a rebound host:\n%s", path, r.body)
		}
	}
	r := f.do(f.request(http.MethodPost, "/dead/purge", urlValues("csrf", token, "scope", "one", "id", fmt.Sprint(id)),
		"Host", rebound, "Origin", origin, "Sec-Fetch-Site", "same-origin"))
	wantStatus(t, r, http.StatusMisdirectedRequest)
	if f.table(id) != jobs.TableDLQ {
		t.Fatal("a rebound page purged the job")
	}
	// Loopback names and addresses, with any port, are this machine.
	for _, host := range []string{"127.0.0.1:" + f.port(), "localhost:" + f.port(), "LOCALHOST", "[::1]:8080", "127.8.9.10", "[::ffff:127.0.0.1]:80"} {
		wantStatus(t, f.do(f.request(http.MethodGet, "/dead", nil, "Host", host)), http.StatusOK)
	}
	for _, host := range []string{"localhost.evil.example", "127.0.0.1.nip.io", "0.0.0.0:" + f.port(), "10.0.0.1", "[::]:80"} {
		wantStatus(t, f.do(f.request(http.MethodGet, "/dead", nil, "Host", host)), http.StatusMisdirectedRequest)
	}
}

func TestAllowedHosts(t *testing.T) {
	named := newFixture(t, Options{AllowedHosts: []string{"Jobs.Example.com", "10.1.2.3:8080"}})
	for host, want := range map[string]int{
		"jobs.example.com":      http.StatusOK,
		"JOBS.example.com:8443": http.StatusOK,
		"10.1.2.3":              http.StatusOK,
		"127.0.0.1":             http.StatusOK,
		"evil.example":          http.StatusMisdirectedRequest,
	} {
		wantStatus(t, named.do(named.request(http.MethodGet, "/", nil, "Host", host)), want)
	}
	wantStatus(t, newFixture(t, Options{AllowedHosts: []string{"*"}}).get("/"), http.StatusOK)
	anyHost := newFixture(t, Options{AllowedHosts: []string{"*"}})
	wantStatus(t, anyHost.do(anyHost.request(http.MethodGet, "/", nil, "Host", "evil.example")), http.StatusOK)

	// With auth, the credentials protect it: any Host, unless a list is set.
	authed := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}})
	wantStatus(t, authed.do(authed.request(http.MethodGet, "/", nil, "Host", "jobs.example.com", "Authorization", "Bearer a-long-enough-token")), http.StatusOK)
	listed := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}, AllowedHosts: []string{"jobs.example.com"}})
	wantStatus(t, listed.do(listed.request(http.MethodGet, "/", nil, "Host", "other.example.com", "Authorization", "Bearer a-long-enough-token")),
		http.StatusMisdirectedRequest)

	if _, err := New(named.store, Options{AllowedHosts: []string{"https://jobs.example.com/"}}); err == nil {
		t.Fatal("New accepted a URL as a host")
	}
}

// Without auth and without AllowedHosts, a client from another machine is
// refused even if it names a loopback Host.
func TestUnauthenticatedDashboardServesLoopbackClientsOnly(t *testing.T) {
	for _, c := range []struct {
		opts   Options
		header []string
		want   int
	}{
		{Options{}, nil, http.StatusForbidden},
		{Options{AllowedHosts: []string{"*"}}, nil, http.StatusOK},
		{Options{AllowedHosts: []string{"jobs.internal"}}, nil, http.StatusOK},
		{Options{Auth: Auth{Token: "a-long-enough-token"}}, []string{"Authorization", "Bearer a-long-enough-token"}, http.StatusOK},
	} {
		f := newFixture(t, c.opts)
		req := httptest.NewRequest(http.MethodGet, "/queues", nil)
		req.Host = "127.0.0.1:8080"
		req.RemoteAddr = "192.0.2.7:40000"
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		rec := httptest.NewRecorder()
		f.dash.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%+v: %d, want %d: %s", c.opts, rec.Code, c.want, rec.Body)
		}
	}
}

// R1 and V1: the Origin is compared with the request's scheme and host.
func TestOriginMustMatchSchemeAndHost(t *testing.T) {
	f := newFixture(t, Options{})
	token := f.csrf()
	pause := func(origin string) response {
		return f.do(f.request(http.MethodPost, "/queues/q/pause", urlValues("csrf", token), "Origin", origin))
	}
	own := "http://127.0.0.1:" + f.port()
	wantStatus(t, pause("https://127.0.0.1:"+f.port()), http.StatusForbidden, "cross-origin", "SecureCookies")
	wantStatus(t, pause("http://localhost:"+f.port()), http.StatusForbidden, "cross-origin")
	wantStatus(t, pause("null"), http.StatusForbidden, "cross-origin")
	f.wantRedirect(pause(own), "/queues")
	// A sibling site is refused even when its Origin is not sent.
	r := f.do(f.request(http.MethodPost, "/queues/q/pause", urlValues("csrf", token), "Sec-Fetch-Site", "same-site"))
	wantStatus(t, r, http.StatusForbidden, "cross-origin")

	// Under a base path, the form's own origin passes.
	b := newFixture(t, Options{BasePath: "/ops/jobs"})
	tok := b.csrfFrom("/ops/jobs/dead")
	b.wantRedirect(b.do(b.request(http.MethodPost, "/ops/jobs/queues/q/pause", urlValues("csrf", tok), "Origin", "http://127.0.0.1:"+b.port())),
		"/ops/jobs/queues")

	// Behind a TLS-terminating proxy, SecureCookies says the scheme is https.
	s := newFixture(t, Options{SecureCookies: true})
	page := s.do(s.request(http.MethodGet, "/dead", nil))
	session := ""
	for _, c := range (&http.Response{Header: page.header}).Cookies() {
		if c.Name == csrfCookie {
			session = c.Value
		}
	}
	tok = csrfInput.FindStringSubmatch(page.body)[1]
	post := func(origin string) response {
		req := s.request(http.MethodPost, "/queues/q/pause", urlValues("csrf", tok), "Origin", origin)
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: session})
		return s.do(req)
	}
	wantStatus(t, post("http://127.0.0.1:"+s.port()), http.StatusForbidden, "cross-origin")
	if r := post("https://127.0.0.1:" + s.port()); r.status != http.StatusSeeOther {
		t.Fatalf("https origin with SecureCookies: %d\n%s", r.status, r.body)
	}
}

// W1: only a path of the dashboard is a place to go after logging in.
func TestLoginNextMustBeASameSitePath(t *testing.T) {
	for _, base := range []string{"", "/ops"} {
		f := newFixture(t, Options{BasePath: base, Auth: Auth{Token: "a-long-enough-token"}})
		d := f.dash
		for _, next := range []string{
			"/\t/evil.example/phish", "/\n/evil.example", "/\r\n/evil.example", "/\x00/evil.example", "/x\x7f",
			"\t//evil.example", " /dead", "//evil.example/", "/\\evil.example", "/\\/evil.example", "https://evil.example/",
			"javascript:alert(1)", "/%2F/evil.example", base + "/login", "", "dead",
		} {
			if got := d.safeNext(next); got != base+"/" {
				t.Errorf("base %q: next %q gives %q", base, next, got)
			}
		}
		for next, want := range map[string]string{
			base + "/dead?queue=q":     base + "/dead?queue=q",
			base + "/job/12":           base + "/job/12",
			base + "/dead?text=a%20b":  base + "/dead?text=a%20b",
			base + "/queues#fragment":  base + "/queues",
			base + "/%09/evil.example": base + "/%09/evil.example", // an encoded TAB stays in the path
		} {
			if got := d.safeNext(next); got != want {
				t.Errorf("base %q: next %q gives %q, want %q", base, next, got, want)
			}
		}
		// End to end: the TAB payload of the review.
		r := f.postRaw(base+"/login", urlValues("csrf", f.csrfFrom(base+"/login"), "token", "a-long-enough-token", "next", "/\t/evil.example/phish"))
		if r.status != http.StatusSeeOther || r.header.Get("Location") != base+"/" {
			t.Fatalf("login with a TAB in next: %d %q", r.status, r.header.Get("Location"))
		}
	}
}

// W2: (*Dashboard).RequireAuth guards handlers served beside the dashboard.
func TestRequireAuthGuardsOtherHandlers(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "chokaq_jobs_total 1") })
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token", BasicUser: "ops", BasicPassword: "pass-word"}})
	mux := http.NewServeMux()
	mux.Handle("/metrics", f.dash.RequireAuth(metrics))
	mux.Handle("/", f.dash)
	f.srv.Config.Handler = mux

	r := f.do(f.request(http.MethodGet, "/metrics", nil))
	wantStatus(t, r, http.StatusUnauthorized)
	if strings.Contains(r.body, "chokaq_jobs_total") {
		t.Fatal("metrics without credentials")
	}
	wantStatus(t, f.do(f.request(http.MethodGet, "/metrics", nil, "Authorization", "Bearer a-long-enough-token")), http.StatusOK, "chokaq_jobs_total")
	req := f.request(http.MethodGet, "/metrics", nil)
	req.SetBasicAuth("ops", "pass-word")
	wantStatus(t, f.do(req), http.StatusOK, "chokaq_jobs_total")
	// A browser logged in with the form reads it too.
	f.login("a-long-enough-token")
	wantStatus(t, f.do(f.request(http.MethodGet, "/metrics", nil)), http.StatusOK, "chokaq_jobs_total")

	// Without auth, the Host and client checks still apply.
	open := newFixture(t, Options{})
	mux = http.NewServeMux()
	mux.Handle("/metrics", open.dash.RequireAuth(metrics))
	open.srv.Config.Handler = mux
	wantStatus(t, open.do(open.request(http.MethodGet, "/metrics", nil)), http.StatusOK, "chokaq_jobs_total")
	wantStatus(t, open.do(open.request(http.MethodGet, "/metrics", nil, "Host", "rebind.attacker.example")), http.StatusMisdirectedRequest)
}

// arrivingStore runs a function once, right after the next CountJobs: a
// change that lands between the confirmation's count and the action.
type arrivingStore struct {
	jobs.Admin
	mu    sync.Mutex
	after func()
}

func (s *arrivingStore) arm(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = fn
}

func (s *arrivingStore) CountJobs(ctx context.Context, t jobs.Table, f jobs.Filter) (int64, error) {
	n, err := s.Admin.CountJobs(ctx, t, f)
	s.mu.Lock()
	fn := s.after
	s.after = nil
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
	return n, err
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// confirmForm is the form a confirmation page posts back.
func confirmForm(t *testing.T, r response) url.Values {
	t.Helper()
	if r.status != http.StatusOK || !strings.Contains(r.body, "to confirm") {
		t.Fatalf("not a confirmation: %d\n%s", r.status, r.body)
	}
	v := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(r.body, -1) {
		v.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return v
}

// W3: a bulk action touches exactly the rows whose number was confirmed.
func TestBulkTouchesExactlyTheRowsConfirmed(t *testing.T) {
	var store *arrivingStore
	f := newFixture(t, Options{}, func(d *Dashboard) {
		store = &arrivingStore{Admin: d.store}
		d.store = store
	})
	die := func(n int) []int64 {
		var ids []int64
		for range n {
			ids = append(ids, f.deadLetter("mail", "t", `{}`, jobs.ReasonFatal, "x"))
		}
		return ids
	}
	gone := func(ids ...int64) bool {
		for _, id := range ids {
			if _, err := f.store.GetJob(context.Background(), id); !errors.Is(err, jobs.ErrJobNotFound) {
				return false
			}
		}
		return true
	}

	t.Run("RowsArrivingAfterTheCountAreLeftAlone", func(t *testing.T) {
		shown := die(2)
		form := confirmForm(t, f.post("/dead/purge", urlValues("scope", "matching", "queue", "mail")))
		form.Set("confirm", "2")
		var late []int64
		store.arm(func() { late = die(3) })
		flash := f.wantRedirect(f.post("/dead/purge", form), "/dead?queue=mail")
		if !strings.Contains(flash, "Purged 2 dead letters") || !gone(shown...) || len(late) != 3 {
			t.Fatalf("flash %q, late %v", flash, late)
		}
		for _, id := range late {
			if f.table(id) != jobs.TableDLQ {
				t.Fatalf("job %d, which arrived after the count, was purged", id)
			}
		}
		f.post("/dead/purge", urlValues("scope", "matching", "queue", "mail", "confirm", "3"))
	})

	t.Run("MoreRowsAtExecutionAreRefused", func(t *testing.T) {
		// A script that posts the count without the confirmation step.
		die(2)
		token := f.csrf()
		store.arm(func() { die(3) })
		r := f.post("/dead/purge", urlValues("csrf", token, "scope", "matching", "queue", "mail", "confirm", "2"))
		wantStatus(t, r, http.StatusConflict, "The selection changed (now 5 dead letters); review and confirm again.", "Type <strong>5</strong>")
		if n := f.count(jobs.TableDLQ, jobs.Filter{Queue: "mail"}); n != 5 {
			t.Fatalf("%d dead letters left, want 5", n)
		}
		f.wantRedirect(f.post("/dead/purge", urlValues("scope", "matching", "queue", "mail", "confirm", "5")), "/dead?queue=mail")
	})

	t.Run("SameCountDifferentRowsAreRefused", func(t *testing.T) {
		shown := die(2)
		form := confirmForm(t, f.post("/dead/purge", urlValues("scope", "matching", "queue", "mail")))
		form.Set("confirm", "2")
		// Meanwhile the two shown are resurrected, and two others die.
		if n, err := f.store.Resurrect(context.Background(), jobs.ResurrectParams{Filter: jobs.Filter{IDs: shown}}); err != nil || n != 2 {
			t.Fatal(n, err)
		}
		others := die(2)
		r := f.post("/dead/purge", form)
		wantStatus(t, r, http.StatusConflict, "The selection changed (now 2 dead letters); review and confirm again.")
		for _, id := range others {
			if f.table(id) != jobs.TableDLQ {
				t.Fatalf("job %d, never shown, was purged", id)
			}
		}
		// Confirming what is shown now goes ahead.
		form = confirmForm(t, wantStatusOK(r))
		form.Set("confirm", "2")
		f.wantRedirect(f.post("/dead/purge", form), "/dead?queue=mail")
		if !gone(others...) {
			t.Fatal("the confirmed rows were not purged")
		}
	})

	t.Run("SelectedIDsAreCountedOnce", func(t *testing.T) {
		id := die(1)[0]
		form := urlValues("scope", "selected", "ids", fmt.Sprint(id), "ids", fmt.Sprint(id), "ids", fmt.Sprint(id))
		wantStatus(t, f.post("/dead/purge", form), http.StatusOK, "Confirm: purge 1 dead letter", "(the 1 selected)")
		form.Set("confirm", "1")
		flash := f.wantRedirect(f.post("/dead/purge", form), "/dead")
		if !strings.Contains(flash, "Purged 1 dead letter (the 1 selected)") || !gone(id) {
			t.Fatalf("flash %q", flash)
		}
	})
}

// wantStatusOK turns a 409 confirmation back into the page it is, for
// confirmForm.
func wantStatusOK(r response) response {
	r.status = http.StatusOK
	return r
}

func TestBulkActsInChunksOfMaxFilterIDs(t *testing.T) {
	f := newFixture(t, Options{})
	var sizes []int
	o := op{verb: "purge", done: "purged", table: jobs.TableDLQ, run: func(_ context.Context, ids []int64) (int, error) {
		sizes = append(sizes, len(ids))
		return len(ids), nil
	}}
	ids := make([]int64, jobs.MaxFilterIDs+1)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	rec := httptest.NewRecorder()
	f.dash.runBulk(rec, httptest.NewRequest(http.MethodPost, "/dead/purge", nil), o, ids, "matching no filter", "/dead")
	if rec.Code != http.StatusSeeOther || fmt.Sprint(sizes) != fmt.Sprint([]int{jobs.MaxFilterIDs, 1}) {
		t.Fatalf("%d, chunks %v", rec.Code, sizes)
	}
}

// W4: a token minted for the login page, or for another login, is no good
// for an action.
func TestCSRFTokenIsBoundToTheLogin(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}})
	// The attacker picks a CSRF session and asks the open login page for
	// its token.
	chosen := "slSZ" + strings.Repeat("A", 39)
	if !validSession(chosen) {
		t.Fatal("bad test session")
	}
	req := f.request(http.MethodGet, "/login", nil, "Accept", "text/html")
	req.AddCookie(&http.Cookie{Name: csrfCookie, Value: chosen})
	stolen := csrfInput.FindStringSubmatch(f.doWith(newClient(), req).body)[1]

	// The victim is logged in; the attacker's cookie is tossed into the
	// victim's browser, and the form carries no Origin.
	f.login("a-long-enough-token")
	f.setCookie(csrfCookie, chosen)
	wantStatus(t, f.postRaw("/queues/q/pause", urlValues("csrf", stolen)), http.StatusForbidden, "CSRF")
	if qs, _ := f.store.Queues(context.Background()); len(qs) != 0 {
		t.Fatalf("the forged form paused: %+v", qs)
	}
	// The victim's own page has a token that works with that cookie.
	f.wantRedirect(f.post("/queues/q/pause", nil), "/queues")

	// A token of another login session does not pass either.
	other := newClient()
	f.doWith(other, f.request(http.MethodGet, "/login", nil))
	u, _ := url.Parse(f.srv.URL + "/")
	loginTok := csrfInput.FindStringSubmatch(f.doWith(other, f.request(http.MethodGet, "/login", nil)).body)[1]
	f.doWith(other, f.request(http.MethodPost, "/login", urlValues("csrf", loginTok, "token", "a-long-enough-token")))
	other.Jar.SetCookies(u, []*http.Cookie{{Name: csrfCookie, Value: chosen, Path: "/"}})
	otherTok := csrfInput.FindStringSubmatch(f.doWith(other, f.request(http.MethodGet, "/queues", nil, "Accept", "text/html")).body)[1]
	wantStatus(t, f.postRaw("/queues/q/resume", urlValues("csrf", otherTok)), http.StatusForbidden, "CSRF")
}

// W5: the login cookie names a server-side session that logout ends.
func TestLogoutRevokesTheLoginSession(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}})
	f.login("a-long-enough-token")
	first := f.cookie(loginCookie)
	f.login("a-long-enough-token")
	second := f.cookie(loginCookie)
	if first == "" || first == second || strings.Contains(first, "a-long-enough-token") {
		t.Fatalf("login cookies %q, %q", first, second)
	}
	withCookie := func(v string) response {
		req := f.request(http.MethodGet, "/dead", nil)
		req.AddCookie(&http.Cookie{Name: loginCookie, Value: v})
		return f.doWith(newClient(), req)
	}
	wantStatus(t, withCookie(first), http.StatusOK)
	if r := f.post("/logout", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Fatalf("logout: %d %v", r.status, r.header)
	}
	wantStatus(t, withCookie(second), http.StatusUnauthorized)
	wantStatus(t, withCookie(first), http.StatusOK) // another session, still open
	if e := f.logs.FilterMessage("dashboard: logout").All(); len(e) != 1 {
		t.Fatalf("logout log: %v", e)
	}
}

func TestLoginSessionsExpire(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}}, func(d *Dashboard) { d.now = clock.now })
	f.login("a-long-enough-token")
	// Used every 11 hours, a session lasts 24 hours from the login.
	for range 2 {
		clock.advance(11 * time.Hour)
		wantStatus(t, f.get("/dead"), http.StatusOK)
	}
	clock.advance(2 * time.Hour)
	if r := f.get("/dead"); r.status != http.StatusSeeOther {
		t.Fatalf("after 24h: %d", r.status)
	}
	// Unused for 12 hours, it ends.
	f.login("a-long-enough-token")
	clock.advance(12 * time.Hour)
	if r := f.get("/dead"); r.status != http.StatusSeeOther {
		t.Fatalf("after 12h unused: %d", r.status)
	}
}

func TestSessionsAreBounded(t *testing.T) {
	s := newSessions()
	now := time.Now()
	first := s.create(now)
	for i := range maxSessions {
		s.create(now.Add(time.Duration(i+1) * time.Millisecond))
	}
	if len(s.m) != maxSessions {
		t.Fatalf("%d sessions", len(s.m))
	}
	if _, ok := s.check(first, now.Add(time.Hour)); ok {
		t.Fatal("the least recently used session was kept")
	}
}

// W6: failed attempts are limited per address and logged without the
// secret. (The delays themselves are tested in hardening_test.go.)
func TestFailedAuthenticationIsLimitedAndLogged(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token", BasicUser: "ops", BasicPassword: "pass-word"}},
		func(d *Dashboard) { d.now = clock.now })
	f.login("a-long-enough-token") // a browser already logged in from the same address
	bearer := func(tok string) response {
		return f.doWith(newClient(), f.request(http.MethodGet, "/", nil, "Authorization", "Bearer "+tok))
	}
	for i := range maxFailures {
		wantStatus(t, bearer(fmt.Sprintf("guess-%d", i)), http.StatusUnauthorized)
	}
	r := bearer("a-long-enough-token")
	wantStatus(t, r, http.StatusTooManyRequests, "too many failed authentication attempts")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	req := f.request(http.MethodGet, "/", nil)
	req.SetBasicAuth("ops", "pass-word")
	wantStatus(t, f.doWith(newClient(), req), http.StatusTooManyRequests)
	login := f.doWith(newClient(), f.request(http.MethodPost, "/login", urlValues("token", "a-long-enough-token")))
	if login.status == http.StatusSeeOther {
		t.Fatal("a blocked address logged in")
	}
	// The session opened before goes on working.
	wantStatus(t, f.get("/dead"), http.StatusOK)

	failed := f.logs.FilterMessage("dashboard: failed authentication").All()
	if len(failed) != maxFailures || len(f.logs.FilterMessage("dashboard: too many failed authentication attempts; delaying further attempts").All()) != 1 {
		t.Fatalf("logged %d failures: %v", len(failed), failed)
	}
	for _, e := range f.logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "guess-") {
			t.Fatalf("a secret was logged: %v", e)
		}
	}

	clock.advance(firstDelay)
	wantStatus(t, bearer("a-long-enough-token"), http.StatusOK)

	// The login form counts too.
	for range maxFailures {
		wantStatus(t, f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "wrong")), http.StatusUnauthorized)
	}
	r = f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "a-long-enough-token"))
	wantStatus(t, r, http.StatusTooManyRequests, "Too many failed attempts")
}

func TestCheckListenRefusesWeakSecrets(t *testing.T) {
	for _, c := range []struct {
		addr string
		auth Auth
		ok   bool
	}{
		{"0.0.0.0:8080", Auth{Token: strings.Repeat("x", MinTokenLength-1)}, false},
		{"0.0.0.0:8080", Auth{Token: strings.Repeat(" ", 40)}, false},
		{"0.0.0.0:8080", Auth{Token: " " + strings.Repeat("x", MinTokenLength-1) + " "}, false},
		{"0.0.0.0:8080", Auth{Token: strings.Repeat("x", MinTokenLength)}, true},
		{":8080", Auth{BasicUser: "ops", BasicPassword: "1234567"}, false},
		{":8080", Auth{BasicUser: "ops", BasicPassword: "12345678"}, true},
		{":8080", Auth{Token: strings.Repeat("x", MinTokenLength), BasicUser: "ops", BasicPassword: "pw"}, false},
		{"127.0.0.1:8080", Auth{Token: "x"}, true},
	} {
		err := CheckListen(c.addr, c.auth)
		if c.ok != (err == nil) || !c.ok && !errors.Is(err, ErrWeakCredentials) {
			t.Errorf("CheckListen(%q, %+v) = %v", c.addr, c.auth, err)
		}
	}
}

// W11: a name counts as loopback only when it resolves to loopback alone.
func TestCheckListenResolvesNames(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "localhost": // a tampered hosts file
			return []net.IPAddr{{IP: net.ParseIP("10.0.0.7")}}, nil
		case "both.local":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("192.0.2.1")}}, nil
		case "loop.local":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("::1")}}, nil
		}
		return nil, errors.New("no such host")
	}
	ctx := context.Background()
	for addr, want := range map[string]string{
		"localhost:8080":  "resolves to 10.0.0.7",
		"both.local:8080": "resolves to 192.0.2.1",
		"nowhere:8080":    "cannot resolve nowhere",
	} {
		err := checkListen(ctx, addr, Auth{}, lookup)
		if !errors.Is(err, ErrNeedsAuth) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "refusing to listen on "+addr+" without authentication") {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := checkListen(ctx, "loop.local:8080", Auth{}, lookup); err != nil {
		t.Errorf("loop.local: %v", err)
	}
	// A weak token on a name that is not loopback is refused too.
	if err := checkListen(ctx, "localhost:8080", Auth{Token: "short"}, lookup); !errors.Is(err, ErrWeakCredentials) {
		t.Errorf("weak token on a non-loopback name: %v", err)
	}
}

// W7: cookies are Secure over TLS and with SecureCookies.
func TestSecureCookies(t *testing.T) {
	setCookies := func(f *fixture, client *http.Client) []string {
		f.t.Helper()
		r := f.doWith(client, f.request(http.MethodGet, "/login", nil))
		tok := csrfInput.FindStringSubmatch(r.body)[1]
		req := f.request(http.MethodPost, "/login", urlValues("csrf", tok, "token", "a-long-enough-token"))
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			req.AddCookie(c)
		}
		login := f.doWith(client, req)
		if login.status != http.StatusSeeOther {
			f.t.Fatalf("login: %d\n%s", login.status, login.body)
		}
		return append(r.header.Values("Set-Cookie"), login.header.Values("Set-Cookie")...)
	}
	auth := Auth{Token: "a-long-enough-token"}
	plain := setCookies(newFixture(t, Options{Auth: auth}), newClient())
	secure := setCookies(newFixture(t, Options{Auth: auth, SecureCookies: true}), newClient())
	for _, c := range plain {
		if strings.Contains(c, "Secure") {
			t.Fatalf("plain HTTP cookie %q", c)
		}
	}
	tls := newFixture(t, Options{Auth: auth})
	tls.srv.Close()
	tls.srv = httptest.NewTLSServer(tls.dash)
	tlsClient := tls.srv.Client()
	tlsClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, c := range append(secure, setCookies(tls, tlsClient)...) {
		if !strings.Contains(c, "; Secure") || !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
			t.Fatalf("cookie %q", c)
		}
	}
	if len(secure) < 3 {
		t.Fatalf("cookies %q", secure)
	}
}

// W8: store errors reach neither the pages nor the console.
func TestStoreErrorsReachOnlyTheLog(t *testing.T) {
	var fs *failingStore
	f := newFixture(t, Options{}, func(d *Dashboard) {
		fs = &failingStore{Admin: d.store}
		d.store = fs
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := f.stream(ctx, "", "")
	next(t, ch, "counts")
	token := f.csrf()
	fs.fail.Store(true)
	e := nextConsole(t, ch)
	if e.Kind != KindError || !strings.Contains(e.Text, "cannot refresh from the store: the store failed (reference ") || strings.Contains(e.Text, "disk on fire") {
		t.Fatalf("console %+v", e)
	}
	r := f.postRaw("/queues/q/pause", urlValues("csrf", token))
	wantStatus(t, r, http.StatusInternalServerError, "the store failed (reference ")
	if strings.Contains(r.body, "disk on fire") {
		t.Fatalf("the page shows the store's error:\n%s", r.body)
	}
	if e := nextConsole(t, ch); e.Kind != KindError || !strings.Contains(e.Text, "pause paused queue q failed") || strings.Contains(e.Text, "disk on fire") {
		t.Fatalf("console %+v", e)
	}
	for _, msg := range []string{"dashboard: cannot refresh from the store", "dashboard: action failed"} {
		logged := f.logs.FilterMessage(msg).All()
		if len(logged) == 0 || !strings.Contains(fmt.Sprint(logged[0].ContextMap()["error"]), "disk on fire") || logged[0].ContextMap()["ref"] == "" {
			t.Fatalf("%s: %v", msg, logged)
		}
	}
}

func (s *failingStore) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	if err := s.err(); err != nil {
		return jobs.QueueSettings{}, err
	}
	return s.Admin.UpdateQueue(ctx, name, u)
}

// W9: a form that trickles in is cut off; a big one is refused.
func TestSlowFormBodiesAreCutOff(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}}, func(d *Dashboard) { d.bodyTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncsrf=")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "408") {
		t.Fatalf("status line %q, %v", status, err)
	}
}

func TestFormBodiesAreCapped(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}})
	big := strings.Repeat("x", 20<<10)
	wantStatus(t, f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", big)), http.StatusRequestEntityTooLarge)
	f.login("a-long-enough-token")
	wantStatus(t, f.post("/queues/q/pause", urlValues("pad", big)), http.StatusRequestEntityTooLarge)
	wantStatus(t, f.post("/dead/purge", urlValues("pad", strings.Repeat("x", maxActionBytes))), http.StatusRequestEntityTooLarge)
	// A payload of the store's limit still fits a resurrect form.
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	payload := `{"a":"` + strings.Repeat(`"`, (jobs.DefaultMaxPayloadBytes-20)/2) + `"}`
	payload = strings.ReplaceAll(payload, `""`, `\"`)
	r := f.post("/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(id), "edit_payload", "1", "payload", payload))
	if r.status == http.StatusRequestEntityTooLarge {
		t.Fatalf("a %d-byte payload was refused as too large", len(payload))
	}
}

// W10: event streams are capped.
func TestEventStreamsAreCapped(t *testing.T) {
	f := newFixture(t, Options{MaxStreams: 2})
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	for _, ctx := range []context.Context{ctx1, ctx2} {
		if _, status := f.stream(ctx, "", ""); status != http.StatusOK {
			t.Fatalf("stream: %d", status)
		}
	}
	r := f.do(f.request(http.MethodGet, "/events", nil))
	wantStatus(t, r, http.StatusServiceUnavailable, "too many open event streams")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	cancel1()
	waitFor(t, "a stream to close", func() bool {
		f.dash.hub.mu.Lock()
		defer f.dash.hub.mu.Unlock()
		return len(f.dash.hub.subs) == 1
	})
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	if _, status := f.stream(ctx3, "", ""); status != http.StatusOK {
		t.Fatalf("stream after one closed: %d", status)
	}
	if d := newFixture(t, Options{}).dash; d.opts.MaxStreams != DefaultMaxStreams {
		t.Fatalf("default MaxStreams %d", d.opts.MaxStreams)
	}
}

// R2: unclean paths under a base path stay under it.
func TestUncleanPathsStayUnderTheBasePath(t *testing.T) {
	f := newFixture(t, Options{BasePath: "/jobs"})
	for path, want := range map[string]string{
		"/jobs//dead":              "/jobs/dead",
		"/jobs/static/../job/1":    "/jobs/job/1",
		"/jobs/./dead?queue=a%20b": "/jobs/dead?queue=a%20b",
		"/jobs/queues/":            "", // clean already: the mux answers
	} {
		r := f.get(path)
		if want == "" {
			if r.status/100 == 3 {
				t.Errorf("%s: %d %s", path, r.status, r.header.Get("Location"))
			}
			continue
		}
		if r.status != http.StatusTemporaryRedirect || r.header.Get("Location") != want {
			t.Errorf("%s: %d %q, want %q", path, r.status, r.header.Get("Location"), want)
		}
	}
	wantStatus(t, f.get("/jobs/../dead"), http.StatusNotFound)
	wantStatus(t, f.get("/jobs/x/../../dead"), http.StatusNotFound)
}

// R3: queues named "." and ".." can be paused, resumed and set.
func TestDotQueuesCanBeManaged(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, q := range []string{".", ".."} {
		if _, err := f.store.UpdateQueue(ctx, q, jobs.QueueUpdate{}); err != nil {
			t.Fatal(err)
		}
	}
	page := f.get("/queues")
	wantStatus(t, page, http.StatusOK, `action="/queues/pause"`, `name="queue" value=".."`)
	if strings.Contains(page.body, `/queues/../`) || strings.Contains(page.body, `/queues/./`) {
		t.Fatalf("a dot queue in a path:\n%s", page.body)
	}
	for _, q := range []string{".", ".."} {
		f.wantRedirect(f.post("/queues/pause", urlValues("queue", q)), "/queues")
		f.wantRedirect(f.post("/queues/settings", urlValues("queue", q, "max_workers", "3")), "/queues")
	}
	qs, _ := f.store.Queues(ctx)
	for _, s := range qs {
		if !s.Paused || s.MaxWorkers != 3 {
			t.Fatalf("queue %+v", s)
		}
	}
	f.wantRedirect(f.post("/queues/resume", urlValues("queue", "..")), "/queues")
	wantStatus(t, f.post("/queues/pause", nil), http.StatusBadRequest, "queue")
}

// `chokaq dashboard` sets a server ReadTimeout against slow clients; an
// event stream, which reads nothing after its request, must outlive it,
// and so must a POST whose handler runs long after its body was read.
func TestEventStreamsOutliveTheServerReadTimeout(t *testing.T) {
	f := newFixture(t, Options{PollInterval: 50 * time.Millisecond})
	f.srv.Close()
	f.srv = httptest.NewUnstartedServer(f.dash)
	f.srv.Config.ReadTimeout = 200 * time.Millisecond
	f.srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, status := f.stream(ctx, "", "")
	if status != http.StatusOK {
		t.Fatalf("stream: %d", status)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		next(t, ch, "counts")
	}
	f.wantRedirect(f.post("/queues/q/pause", nil), "/queues")
}
