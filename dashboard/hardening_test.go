package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Regression tests for the second round of the dashboard security review.

// A text filter of spaces selects nothing in particular: a bulk action
// with it and no other filter is an action on every job.
func TestBulkRefusesABlankTextFilter(t *testing.T) {
	f := newFixture(t, Options{})
	// Every job has a space somewhere, so a text filter of " " matches
	// them all.
	dead := []int64{
		f.deadLetter("q", "t", `{"a": 1}`, jobs.ReasonFatal, "connection refused"),
		f.deadLetter("q", "t", `{"a": 2}`, jobs.ReasonFatal, "connection refused"),
	}
	archived := f.archive("q", "t", `{"a": 3}`)
	for _, c := range []struct{ path, kind string }{
		{"/dead/resurrect", "dead letter"},
		{"/dead/purge", "dead letter"},
		{"/archive/purge", "archived job"},
	} {
		for _, text := range []string{" ", "\t\n", "\u00a0\u3000"} {
			for _, confirm := range []string{"", "2", "1"} {
				form := urlValues("scope", "matching", "text", text)
				if confirm != "" {
					form.Set("confirm", confirm)
				}
				wantStatus(t, f.post(c.path, form), http.StatusBadRequest, "the filter is empty", "every "+c.kind)
			}
		}
	}
	for _, id := range dead {
		if f.table(id) != jobs.TableDLQ {
			t.Fatalf("dead letter %d was moved by a blank filter", id)
		}
	}
	if f.table(archived) != jobs.TableArchive {
		t.Fatal("the archived job was purged by a blank filter")
	}
	// The list page treats it as no filter too, and says so.
	wantStatus(t, f.get("/dead?text=%20"), http.StatusOK, `name="all"`)
}

// RFC 7235: the auth scheme is case-insensitive, and one or more spaces
// separate it from the token.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "a-long-enough-token"}})
	for _, h := range []string{
		"Bearer a-long-enough-token", "bearer a-long-enough-token", "BEARER a-long-enough-token",
		"bEaReR   a-long-enough-token",
	} {
		wantStatus(t, f.doWith(newClient(), f.request(http.MethodGet, "/queues", nil, "Authorization", h)), http.StatusOK)
	}
	for _, h := range []string{
		"Bearera-long-enough-token", "Bearer\ta-long-enough-token", "Bearer a-long-enough-token x",
		"Bearer", "Beare a-long-enough-token", "a-long-enough-token",
	} {
		wantStatus(t, f.doWith(newClient(), f.request(http.MethodGet, "/queues", nil, "Authorization", h)), http.StatusUnauthorized)
	}
}

// authFixture is a token-and-basic dashboard on a fake clock.
func authFixture(t *testing.T, opts Options) (*fixture, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	opts.Auth = Auth{Token: "a-long-enough-token", BasicUser: "ops", BasicPassword: "pass-word"}
	return newFixture(t, opts, func(d *Dashboard) { d.now = clock.now }), clock
}

// bearer sends a token from a fresh browser, with header pairs besides.
func (f *fixture) bearer(tok string, header ...string) response {
	f.t.Helper()
	return f.doWith(newClient(), f.request(http.MethodGet, "/queues", nil, append([]string{"Authorization", "Bearer " + tok}, header...)...))
}

// wantDelayed wants a 429 that asks to wait secs seconds.
func wantDelayed(t *testing.T, r response, secs int) {
	t.Helper()
	wantStatus(t, r, http.StatusTooManyRequests, "too many failed authentication attempts")
	if got := r.header.Get("Retry-After"); got != strconv.Itoa(secs) {
		t.Fatalf("Retry-After %q, want %d", got, secs)
	}
}

// failTimes makes n wrong guesses, each answered 401.
func (f *fixture) failTimes(n int, header ...string) {
	f.t.Helper()
	for i := range n {
		wantStatus(f.t, f.bearer(fmt.Sprintf("guess-%d", i), header...), http.StatusUnauthorized)
	}
}

// failPatiently makes n wrong guesses, each once any delay is over, as a
// guesser who honours Retry-After would.
func (f *fixture) failPatiently(clock *fakeClock, n int, header ...string) {
	f.t.Helper()
	for i := range n {
		r := f.bearer(fmt.Sprintf("guess-%d", i), header...)
		if r.status == http.StatusTooManyRequests {
			secs, err := strconv.Atoi(r.header.Get("Retry-After"))
			if err != nil {
				f.t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
			}
			clock.advance(time.Duration(secs) * time.Second)
			r = f.bearer(fmt.Sprintf("guess-%d", i), header...)
		}
		wantStatus(f.t, r, http.StatusUnauthorized)
	}
}

func TestFailedAuthenticationDelaysGrow(t *testing.T) {
	f, clock := authFixture(t, Options{})
	f.failTimes(maxFailures - 1)
	f.failTimes(1) // the 10th: from now on each failure delays the next attempt
	want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300}
	for _, secs := range want {
		wantDelayed(t, f.bearer("guess"), secs)
		// Retry-After rounds up: half a second into a 1 s delay is 1 s more.
		clock.advance(time.Duration(secs)*time.Second - 500*time.Millisecond)
		wantDelayed(t, f.bearer("guess"), 1)
		clock.advance(500 * time.Millisecond)
		wantStatus(t, f.bearer("guess"), http.StatusUnauthorized) // checked, and failed again
	}
	if n := len(f.logs.FilterMessage("dashboard: failed authentication").All()); n != maxFailures+len(want) {
		t.Fatalf("%d failures logged, want %d: attempts inside the delay were checked", n, maxFailures+len(want))
	}
	if n := len(f.logs.FilterMessage("dashboard: too many failed authentication attempts; delaying further attempts").All()); n != 1 {
		t.Fatalf("the delay was logged %d times", n)
	}
	// The basic credentials and the login form wait too.
	req := f.request(http.MethodGet, "/queues", nil)
	req.SetBasicAuth("ops", "pass-word")
	wantDelayed(t, f.doWith(newClient(), req), 300)
	r := f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "a-long-enough-token"))
	wantStatus(t, r, http.StatusTooManyRequests, "Too many failed attempts from your address: try again in 300 seconds.")
}

// An attempt inside the delay is refused without being checked: it does
// not count, does not lengthen the delay, and the right secret does not
// pass either, until the delay is over.
func TestAttemptsInsideTheDelayAreNotChecked(t *testing.T) {
	f, clock := authFixture(t, Options{})
	f.failTimes(maxFailures)
	for range 5 {
		wantDelayed(t, f.bearer("guess"), 1)
	}
	wantDelayed(t, f.bearer("a-long-enough-token"), 1)
	if n := len(f.logs.FilterMessage("dashboard: failed authentication").All()); n != maxFailures {
		t.Fatalf("%d failures logged, want %d", n, maxFailures)
	}
	clock.advance(time.Second)
	wantStatus(t, f.bearer("a-long-enough-token"), http.StatusOK)

	// The login form, the same.
	f.failTimes(maxFailures)
	login := func() response {
		return f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "a-long-enough-token", "next", "/dead"))
	}
	wantStatus(t, login(), http.StatusTooManyRequests, "try again in 1 seconds")
	clock.advance(time.Second)
	if r := login(); r.status != http.StatusSeeOther || r.header.Get("Location") != "/dead" {
		t.Fatalf("login after the delay: %d\n%s", r.status, r.body)
	}
}

func TestSuccessResetsFailures(t *testing.T) {
	f, clock := authFixture(t, Options{})
	f.failTimes(maxFailures - 1)
	wantStatus(t, f.bearer("a-long-enough-token"), http.StatusOK)
	f.failTimes(maxFailures - 1) // 18 in all, but 9 since the success
	wantStatus(t, f.bearer("a-long-enough-token"), http.StatusOK)

	// Once delayed, too: the success after the delay starts afresh.
	f.failPatiently(clock, maxFailures+3) // an 8 s delay
	clock.advance(8 * time.Second)
	wantStatus(t, f.bearer("a-long-enough-token"), http.StatusOK)
	f.failTimes(maxFailures)
	wantDelayed(t, f.bearer("guess"), 1)

	// And a form login.
	clock.advance(time.Second)
	f.failTimes(1)
	clock.advance(2 * time.Second)
	f.login("a-long-enough-token")
	f.failTimes(maxFailures - 1)
	wantStatus(t, f.bearer("a-long-enough-token"), http.StatusOK)
}

func TestFailuresAreForgotten(t *testing.T) {
	f, clock := authFixture(t, Options{})
	f.failPatiently(clock, maxFailures+4) // a 16 s delay
	clock.advance(forgetFailures - time.Second)
	f.failTimes(1) // the 15th, 14 min 59 s later: still remembered
	wantDelayed(t, f.bearer("guess"), 32)
	clock.advance(forgetFailures)
	f.failTimes(maxFailures) // a clean slate: ten more before a delay
	wantDelayed(t, f.bearer("guess"), 1)
}

// A browser logged in before is not guessing, even from an address that is
// delayed, and even when it also sends an Authorization header.
func TestLoginSessionPassesWhileItsAddressIsDelayed(t *testing.T) {
	f, clock := authFixture(t, Options{})
	f.login("a-long-enough-token")
	f.failPatiently(clock, maxFailures+2)
	wantDelayed(t, f.bearer("guess"), 4)
	wantStatus(t, f.get("/dead"), http.StatusOK)
	for _, h := range []string{"Bearer wrong-token", "Basic b3BzOndyb25n", "Bearer a-long-enough-token", "junk"} {
		wantStatus(t, f.do(f.request(http.MethodGet, "/queues", nil, "Authorization", h)), http.StatusOK)
	}
	f.wantRedirect(f.post("/queues/q/pause", nil), "/queues")
	// None of that counted.
	if n := len(f.logs.FilterMessage("dashboard: failed authentication").All()); n != maxFailures+2 {
		t.Fatalf("%d failures logged", n)
	}
	// A stale or made-up cookie is no pass.
	req := f.request(http.MethodGet, "/queues", nil, "Authorization", "Bearer a-long-enough-token")
	req.AddCookie(&http.Cookie{Name: loginCookie, Value: strings.Repeat("A", 43)})
	wantDelayed(t, f.doWith(newClient(), req), 4)
}

// The open routes (the login form and its POST) read no secret from the
// Authorization header: they would be a way to test guesses past the limit.
func TestOpenRoutesAreNoOracleForSecrets(t *testing.T) {
	f, _ := authFixture(t, Options{})
	f.failTimes(maxFailures)
	open := func(h string) response {
		return f.doWith(newClient(), f.request(http.MethodGet, "/login", nil, "Authorization", h))
	}
	right, wrong := open("Bearer a-long-enough-token"), open("Bearer guess")
	for _, r := range []response{right, wrong} {
		wantStatus(t, r, http.StatusOK, "Access token")
		if strings.Contains(r.body, "<nav>") || strings.Contains(r.body, `id="console"`) {
			t.Fatalf("the login page answers to an Authorization header:\n%s", r.body)
		}
	}
}

// proxyFixture is a dashboard behind a proxy at 127.0.0.1 (where the test
// client connects from) that sets X-Forwarded-For.
func proxyFixture(t *testing.T) (*fixture, *fakeClock) {
	t.Helper()
	return authFixture(t, Options{TrustedProxyHeader: "X-Forwarded-For", TrustedProxies: []string{"127.0.0.0/8", "10.9.8.7"}})
}

func TestTrustedProxyHeaderKeysClients(t *testing.T) {
	f, _ := proxyFixture(t)
	a := []string{"X-Forwarded-For", "203.0.113.5"}
	f.failTimes(maxFailures, a...)
	wantDelayed(t, f.bearer("a-long-enough-token", a...), 1)
	// The same client, through a second proxy, or with a made-up address
	// of its own in front (which its proxy passes on), is still itself.
	for _, xff := range []string{"203.0.113.5, 10.9.8.7", "198.51.100.1, 203.0.113.5", "198.51.100.1,203.0.113.5,127.0.0.1"} {
		wantDelayed(t, f.bearer("a-long-enough-token", "X-Forwarded-For", xff), 1)
	}
	// Other clients of the same proxy are not delayed by it.
	for _, xff := range []string{"203.0.113.6", "203.0.113.5:4000, 203.0.113.7", "2001:db8::1"} {
		wantStatus(t, f.bearer("guess", "X-Forwarded-For", xff), http.StatusUnauthorized)
		wantStatus(t, f.bearer("a-long-enough-token", "X-Forwarded-For", xff), http.StatusOK)
	}
	r := f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "a-long-enough-token"))
	if r.status != http.StatusSeeOther {
		t.Fatalf("a login through the proxy, without the header: %d\n%s", r.status, r.body)
	}
	// An IPv6 client is keyed by its /64.
	v6 := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	f.failTimes(maxFailures, v6("2001:db8:1:2::1")...)
	wantDelayed(t, f.bearer("guess", v6("2001:db8:1:2:ffff::9")...), 1)
	wantStatus(t, f.bearer("guess", v6("2001:db8:1:3::1")...), http.StatusUnauthorized)
	// A client logs with the address it was keyed by.
	e := f.logs.FilterMessage("dashboard: failed authentication").All()
	if got := e[len(e)-1].ContextMap()["client"]; got != "2001:db8:1:3::/64" {
		t.Fatalf("logged client %v", got)
	}
}

// The header counts only from a trusted proxy: anyone else could pick a new
// address for every guess.
func TestSpoofedForwardedForIsIgnored(t *testing.T) {
	for _, opts := range []Options{
		{},
		{TrustedProxyHeader: "X-Forwarded-For", TrustedProxies: []string{"10.0.0.0/8"}},
		{TrustedProxyHeader: "X-Real-IP", TrustedProxies: []string{"::1", "192.0.2.1"}},
	} {
		f, _ := authFixture(t, opts)
		for i := range maxFailures {
			addr := fmt.Sprintf("203.0.113.%d", i)
			f.failTimes(1, "X-Forwarded-For", addr, "X-Real-IP", addr)
		}
		wantDelayed(t, f.bearer("guess", "X-Forwarded-For", "198.51.100.1", "X-Real-IP", "198.51.100.1"), 1)
	}
}

func TestClientAddr(t *testing.T) {
	f := newFixture(t, Options{TrustedProxyHeader: "x-forwarded-for", TrustedProxies: []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1"}})
	xRealIP := newFixture(t, Options{TrustedProxyHeader: "X-Real-IP", TrustedProxies: []string{"10.0.0.1"}})
	for _, c := range []struct {
		d           *Dashboard
		remote      string
		xff, realIP []string
		want        string
	}{
		{f.dash, "198.51.100.7:5000", []string{"203.0.113.1"}, nil, "198.51.100.7"}, // not a proxy
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.1"}, nil, "203.0.113.1"},
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.9, 203.0.113.1, 10.0.0.2"}, nil, "203.0.113.1"},
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.9", "203.0.113.1", "10.0.0.2"}, nil, "203.0.113.1"}, // one line each
		{f.dash, "10.1.2.3:5000", []string{" 203.0.113.1 ,10.0.0.2"}, nil, "203.0.113.1"},
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.1:443"}, nil, "203.0.113.1"},
		{f.dash, "10.1.2.3:5000", []string{"[2001:db8::1]:443"}, nil, "2001:db8::/64"},
		{f.dash, "10.1.2.3:5000", []string{"::ffff:203.0.113.1"}, nil, "203.0.113.1"},
		{f.dash, "[2001:db8:ffff:1::1]:5000", []string{"2001:db8:aaaa:bbbb:1:2:3:4"}, nil, "2001:db8:aaaa:bbbb::/64"},
		{f.dash, "[::ffff:10.0.0.1]:5000", []string{"203.0.113.1"}, nil, "203.0.113.1"},
		{f.dash, "10.1.2.3:5000", nil, nil, "10.1.2.3"},                                        // no header: the proxy itself
		{f.dash, "10.1.2.3:5000", []string{"10.0.0.2, 192.0.2.1"}, nil, "10.1.2.3"},            // only proxies
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.1, garbage"}, nil, "10.1.2.3"},           // malformed
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.1, "}, nil, "10.1.2.3"},                  // empty
		{f.dash, "10.1.2.3:5000", []string{"unknown"}, nil, "10.1.2.3"},                        // as some proxies send
		{f.dash, "10.1.2.3:5000", []string{"203.0.113.1/24"}, nil, "10.1.2.3"},                 // not an address
		{f.dash, "10.1.2.3:5000", nil, []string{"203.0.113.1"}, "10.1.2.3"},                    // another header
		{xRealIP.dash, "10.0.0.1:5000", nil, []string{"203.0.113.1"}, "203.0.113.1"},           // X-Real-IP: one address
		{xRealIP.dash, "10.0.0.1:5000", nil, []string{"203.0.113.1, 203.0.113.2"}, "10.0.0.1"}, // not one address
		{xRealIP.dash, "10.0.0.1:5000", nil, []string{"203.0.113.1", "203.0.113.2"}, "10.0.0.1"},
		{xRealIP.dash, "10.0.0.2:5000", nil, []string{"203.0.113.1"}, "10.0.0.2"},
		{xRealIP.dash, "10.0.0.1:5000", []string{"203.0.113.1"}, nil, "10.0.0.1"},
		{xRealIP.dash, "no-port", nil, []string{"203.0.113.1"}, "no-port"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		for _, v := range c.realIP {
			r.Header.Add("X-Real-IP", v)
		}
		if got := c.d.clientAddr(r); got != c.want {
			t.Errorf("%s, X-Forwarded-For %q, X-Real-IP %q: %q, want %q", c.remote, c.xff, c.realIP, got, c.want)
		}
	}
}

func TestNewRefusesBadProxyOptions(t *testing.T) {
	f := newFixture(t, Options{})
	for _, c := range []struct {
		header  string
		proxies []string
		want    string
	}{
		{"X-Forwarded-For", nil, "TrustedProxyHeader \"X-Forwarded-For\" needs TrustedProxies"},
		{"", []string{"10.0.0.1"}, "TrustedProxies needs TrustedProxyHeader"},
		{"X-Forwarded-For", []string{"10.0.0.0/33"}, `TrustedProxies entry "10.0.0.0/33"`},
		{"X-Forwarded-For", []string{"10.0.0.1", "proxy.internal"}, `TrustedProxies entry "proxy.internal"`},
		{"X-Forwarded-For", []string{""}, `TrustedProxies entry ""`},
		{"X-Forwarded-For", []string{"0.0.0.0/0"}, `TrustedProxies entry "0.0.0.0/0": trusts every address`},
		{"X-Forwarded-For", []string{"::/0"}, `TrustedProxies entry "::/0": trusts every address`},
		{"X Forwarded For", []string{"10.0.0.1"}, `TrustedProxyHeader "X Forwarded For": not a header name`},
		{"X-Forwarded-For:", []string{"10.0.0.1"}, `TrustedProxyHeader "X-Forwarded-For:": not a header name`},
		{"Forwarded", []string{"10.0.0.1"}, `TrustedProxyHeader "Forwarded": RFC 7239 Forwarded is not supported`},
	} {
		_, err := New(f.store, Options{TrustedProxyHeader: c.header, TrustedProxies: c.proxies})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "dashboard: ") {
			t.Errorf("%q %q: %v, want %q", c.header, c.proxies, err, c.want)
		}
	}
	for _, proxies := range [][]string{{"10.0.0.1"}, {"10.0.0.0/8", "fd00::/8", " 192.0.2.1 ", "fe80::1%eth0"}} {
		if _, err := New(f.store, Options{TrustedProxyHeader: "X-Real-IP", TrustedProxies: proxies}); err != nil {
			t.Errorf("%q: %v", proxies, err)
		}
	}
}

// selectedForm is a bulk purge of n selected ids, the first of them a
// dead letter, with every other field a bulk form can carry.
func selectedForm(first int64, n int) []string {
	kv := []string{"scope", "selected", "queue", "", "type", "", "status", "", "reason", "", "from", "", "to", "", "text", "",
		"all", "1", "edit_payload", "", "payload", "", "confirm", ""}
	for i := range n {
		id := first
		if i > 0 {
			id = 1_000_000 + int64(i)
		}
		kv = append(kv, "ids", strconv.FormatInt(id, 10))
	}
	return kv
}

// net/url refuses a form of more than 10000 fields; the dashboard's cap on
// selected jobs leaves room for the rest, and a form over the limit gets a
// message about the selection, not net/url's.
func TestSelectedIDsFitTheFormLimit(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")

	r := f.post("/dead/purge", urlValues(selectedForm(id, MaxSelected)...))
	wantStatus(t, r, http.StatusOK, "Confirm: purge 1 dead letter", fmt.Sprintf("(the %d selected)", MaxSelected))
	// The confirmation posts it all back, with its own fields.
	form := confirmForm(t, r)
	if len(form["ids"]) != MaxSelected {
		t.Fatalf("the confirmation carries %d ids", len(form["ids"]))
	}
	form.Set("confirm", "1")
	if flash := f.wantRedirect(f.post("/dead/purge", form), "/dead"); !strings.Contains(flash, "Purged 1 dead letter") {
		t.Fatalf("flash %q", flash)
	}

	id = f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	tooMany := fmt.Sprintf("at most %d jobs can be selected at once", MaxSelected)
	for _, n := range []int{MaxSelected + 1, 9999, jobs.MaxFilterIDs, 20000} {
		r := f.post("/dead/purge", urlValues(selectedForm(id, n)...))
		wantStatus(t, r, http.StatusBadRequest, tooMany)
		if strings.Contains(r.body, "exceeded limit") || strings.Contains(r.body, "number of URL query parameters") {
			t.Fatalf("%d ids: net/url's message:\n%s", n, r.body)
		}
	}
	if f.table(id) != jobs.TableDLQ {
		t.Fatal("the dead letter was purged")
	}
	// So do pages: a query string over the limit is no selection, but
	// says what is wrong.
	wantStatus(t, f.post("/queues/q/pause?"+strings.Repeat("x&", 10001), nil), http.StatusBadRequest, "too many fields")
}
