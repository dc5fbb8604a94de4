package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
)

func TestCheckListen(t *testing.T) {
	token := Auth{Token: "t0ken-of-16-char"}
	basic := Auth{BasicUser: "ops", BasicPassword: "password"}
	cases := []struct {
		addr   string
		auth   Auth
		refuse bool
	}{
		{"127.0.0.1:8080", Auth{}, false},
		{"127.1.2.3:8080", Auth{}, false},
		{"[::1]:8080", Auth{}, false},
		{"localhost:0", Auth{}, false},
		{"0.0.0.0:8080", Auth{}, true},
		{":8080", Auth{}, true},
		{"[::]:8080", Auth{}, true},
		{"10.0.0.5:8080", Auth{}, true},
		{"dashboard.internal:8080", Auth{}, true},
		{"0.0.0.0:8080", token, false},
		{":8080", basic, false},
	}
	for _, c := range cases {
		err := CheckListen(c.addr, c.auth)
		if c.refuse != (err != nil) {
			t.Errorf("CheckListen(%q, %+v) = %v", c.addr, c.auth, err)
		}
		if c.refuse {
			if !errors.Is(err, ErrNeedsAuth) || !strings.Contains(err.Error(), "refusing to listen on "+c.addr+" without authentication") {
				t.Errorf("message: %v", err)
			}
		}
	}
	if err := CheckListen("8080", Auth{}); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("no port: %v", err)
	}
	if err := CheckListen(":8080", Auth{BasicUser: "ops"}); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("user without password: %v", err)
	}
}

func TestTokenAuth(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{Token: "s3cret-token"}})
	f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "secret error text")
	f.dash.Publish(Event{Text: "console line only for operators"})

	// A script without credentials gets 401; a browser goes to the login form.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/dead", nil)
	wantStatus(t, f.do(req), http.StatusUnauthorized, "Authorization: Bearer")
	r := f.get("/dead?queue=q")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape("/dead?queue=q") {
		t.Fatalf("browser without login: %d %v", r.status, r.header)
	}
	for _, path := range []string{"/events", "/job/1", "/"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		wantStatus(t, f.do(req), http.StatusUnauthorized)
	}
	// Assets and the login form are open, and show nothing of the data.
	wantStatus(t, f.get("/static/style.css"), http.StatusOK)
	login := f.get("/login?next=/dead")
	wantStatus(t, login, http.StatusOK, "Access token", `name="next" value="/dead"`)
	for _, leak := range []string{"console line only for operators", "secret error text", `id="console"`, "<nav>"} {
		if strings.Contains(login.body, leak) {
			t.Fatalf("the login page shows %q", leak)
		}
	}
	// Actions need credentials before anything else.
	wantStatus(t, f.postRaw("/queues/q/pause", urlValues("csrf", f.csrfFrom("/login"))), http.StatusUnauthorized)

	// Bearer header.
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/dead", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	wantStatus(t, f.do(req), http.StatusOK, "secret error text")
	req.Header.Set("Authorization", "Bearer s3cret-tokeN")
	wantStatus(t, f.do(req), http.StatusUnauthorized)

	// The login form: a wrong token, then the right one, which sets a cookie.
	token := f.csrfFrom("/login")
	wantStatus(t, f.postRaw("/login", urlValues("csrf", token, "token", "nope", "next", "/dead")), http.StatusUnauthorized, "not right")
	wantStatus(t, f.postRaw("/login", urlValues("token", "s3cret-token")), http.StatusForbidden, "CSRF")
	r = f.postRaw("/login", urlValues("csrf", token, "token", "s3cret-token", "next", "/dead?queue=q"))
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/dead?queue=q" {
		t.Fatalf("login: %d %v\n%s", r.status, r.header, r.body)
	}
	if c := r.header.Get("Set-Cookie"); !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") || strings.Contains(c, "s3cret-token") {
		t.Fatalf("login cookie %q", c)
	}
	page := f.get("/dead")
	wantStatus(t, page, http.StatusOK, "secret error text", "console line only for operators", "log out", `<span class="actor" title="you, as the action log names you">token</span>`)
	f.wantRedirect(f.post("/queues/q/pause", nil), "/queues")
	f.logs.TakeAll()
	f.wantRedirect(f.post("/queues/q/resume", nil), "/queues")
	if e := f.logs.FilterMessage("dashboard: action").All(); len(e) != 1 || e[0].ContextMap()["actor"] != "token" {
		t.Fatalf("actor of a token login: %v", e)
	}

	// Only local redirects after login.
	for _, next := range []string{"https://evil.example/", "//evil.example/", "/\\evil.example", "/login"} {
		r := f.postRaw("/login", urlValues("csrf", f.csrfFrom("/login"), "token", "s3cret-token", "next", next))
		if r.header.Get("Location") != "/" {
			t.Fatalf("next %q redirected to %q", next, r.header.Get("Location"))
		}
	}
	// Log out.
	r = f.post("/logout", nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Fatalf("logout: %d %v", r.status, r.header)
	}
	if r := f.get("/dead"); r.status != http.StatusSeeOther {
		t.Fatalf("still logged in after logout: %d", r.status)
	}
}

func TestBasicAuth(t *testing.T) {
	f := newFixture(t, Options{Auth: Auth{BasicUser: "alice", BasicPassword: "correct horse"}})
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	r := f.do(req)
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), `Basic realm="chokaq dashboard"`) {
		t.Fatalf("no credentials: %d %v", r.status, r.header)
	}
	for _, up := range [][2]string{{"alice", "wrong"}, {"bob", "correct horse"}, {"", ""}} {
		req.SetBasicAuth(up[0], up[1])
		wantStatus(t, f.do(req), http.StatusUnauthorized)
	}
	req.SetBasicAuth("alice", "correct horse")
	wantStatus(t, f.do(req), http.StatusOK, `title="you, as the action log names you">alice</span>`)
	// /login has nothing to do with basic auth.
	if r := f.get("/login"); r.status != http.StatusSeeOther {
		t.Fatalf("/login without a token: %d", r.status)
	}

	// An action, logged with the user's name.
	page, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/dead", nil)
	page.SetBasicAuth("alice", "correct horse")
	token := csrfInput.FindStringSubmatch(f.do(page).body)[1]
	post, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/queues/mail/pause", strings.NewReader(urlValues("csrf", token).Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.SetBasicAuth("alice", "correct horse")
	if r := f.do(post); r.status != http.StatusSeeOther {
		t.Fatalf("pause: %d\n%s", r.status, r.body)
	}
	if e := f.logs.FilterMessage("dashboard: action").All(); len(e) != 1 || e[0].ContextMap()["actor"] != "alice" {
		t.Fatalf("action log: %v", e)
	}
}

func TestActorOption(t *testing.T) {
	f := newFixture(t, Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/queues/mail/pause", nil)
	req.Header.Set(csrfHeader, f.csrf())
	req.Header.Set("X-User", "carol@example.com")
	if r := f.do(req); r.status != http.StatusSeeOther {
		t.Fatalf("pause: %d", r.status)
	}
	if e := f.logs.FilterMessage("dashboard: action").All(); len(e) != 1 || e[0].ContextMap()["actor"] != "carol@example.com" {
		t.Fatalf("action log: %v", e)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	f := newFixture(t, Options{})
	for _, o := range []Options{
		{BasePath: "jobs"},
		{BasePath: "/a b"},
		{BasePath: "//evil"},
		{Auth: Auth{BasicPassword: "pw"}},
		{Auth: Auth{BasicUser: "a:b", BasicPassword: "pw"}},
		{PollInterval: -1},
	} {
		if _, err := New(f.store, o); err == nil {
			t.Errorf("New accepted %+v", o)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New accepted a nil store")
	}
}
