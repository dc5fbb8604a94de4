package dashboard

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Auth guards the dashboard. Set Token, basic credentials, or both; a
// request passes with either. The zero value means no authentication, which
// CheckListen allows only on a loopback address, and with which the
// Dashboard serves only loopback clients (see Options.AllowedHosts).
//
// Failed attempts (a wrong bearer token, basic credentials or login-form
// token) are logged, never the secret, and counted per client: its IP
// address (an IPv6 client by its /64), which behind a reverse proxy is read
// from Options.TrustedProxyHeader. The first 10 failures cost nothing.
// After them, each failure makes the client wait before its next attempt
// is checked at all: 1s after the 10th, then 2s, 4s and so on, at most 5
// minutes; an attempt inside the wait gets 429 with Retry-After, even with
// the right secret, and counts for nothing. So a guesser gets some 1500
// tries a day at most, and an operator who shares its address still gets
// in once the wait is over. A success clears the client's count, and failures are
// forgotten 15 minutes after the last. A browser with an open login session
// is not guessing and is never held up.
type Auth struct {
	// Token is accepted as "Authorization: Bearer <Token>" (the scheme in
	// any case), or typed into the login form, which then opens a
	// server-side session named by a cookie. Use a long random string (at
	// least MinTokenLength).
	Token string
	// BasicUser and BasicPassword are checked as HTTP basic credentials.
	BasicUser, BasicPassword string
}

// Enabled reports whether any credential is configured.
func (a Auth) Enabled() bool { return a.Token != "" || a.BasicUser != "" || a.BasicPassword != "" }

func (a Auth) validate() error {
	if (a.BasicUser == "") != (a.BasicPassword == "") {
		return errors.New("dashboard: basic auth needs both a user and a password")
	}
	if strings.Contains(a.BasicUser, ":") {
		return errors.New("dashboard: the basic-auth user must not contain ':'")
	}
	return nil
}

// ErrNeedsAuth is wrapped by CheckListen's refusal to listen without
// authentication; ErrWeakCredentials by its refusal of a short secret.
var (
	ErrNeedsAuth       = errors.New("dashboard: authentication required")
	ErrWeakCredentials = errors.New("dashboard: credentials too weak")
)

// The shortest secrets CheckListen accepts on a non-loopback address, in
// characters, not counting surrounding spaces. Anyone who can reach the
// port can try to guess them (slowly: failures delay the client's next
// attempts, see Auth).
const (
	MinTokenLength    = 16
	MinPasswordLength = 8
)

// CheckListen refuses to serve on addr (host:port) without authentication
// unless the host is a loopback address: anyone who reaches the dashboard
// can resurrect and purge jobs. A host name counts as loopback only if it
// resolves to loopback addresses alone. On any other address it refuses a
// token shorter than MinTokenLength or a basic password shorter than
// MinPasswordLength.
//
// It guards `chokaq dashboard`; a service that embeds the dashboard
// decides where it listens, and the Dashboard itself serves only loopback
// clients and Host names when it has no Auth (see Options.AllowedHosts).
func CheckListen(addr string, auth Auth) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return checkListen(ctx, addr, auth, net.DefaultResolver.LookupIPAddr)
}

func checkListen(ctx context.Context, addr string, auth Auth, lookup func(context.Context, string) ([]net.IPAddr, error)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen address %q: want host:port, e.g. 127.0.0.1:8080: %w", addr, err)
	}
	if err := auth.validate(); err != nil {
		return err
	}
	loopback, why := listensOnLoopback(ctx, host, lookup)
	if loopback {
		return nil
	}
	if !auth.Enabled() {
		return fmt.Errorf("%w: refusing to listen on %s without authentication (%s): anyone who reaches it could resurrect and purge jobs; "+
			"listen on 127.0.0.1 or set an auth token or basic-auth credentials", ErrNeedsAuth, addr, why)
	}
	if auth.Token != "" && utf8.RuneCountInString(strings.TrimSpace(auth.Token)) < MinTokenLength {
		return fmt.Errorf("%w: refusing to listen on %s with an auth token of fewer than %d characters: "+
			"use a long random one, e.g. openssl rand -hex 24", ErrWeakCredentials, addr, MinTokenLength)
	}
	if auth.BasicUser != "" && utf8.RuneCountInString(strings.TrimSpace(auth.BasicPassword)) < MinPasswordLength {
		return fmt.Errorf("%w: refusing to listen on %s with a basic-auth password of fewer than %d characters",
			ErrWeakCredentials, addr, MinPasswordLength)
	}
	return nil
}

// listensOnLoopback reports whether a listen host is loopback only. A name
// is resolved, as net.Listen will resolve it, and must give loopback
// addresses alone: trusting the name "localhost" would trust a hosts file
// or resolver that says otherwise. If not, it says why.
func listensOnLoopback(ctx context.Context, host string, lookup func(context.Context, string) ([]net.IPAddr, error)) (bool, string) {
	if host == "" {
		return false, "every interface"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		switch a = a.Unmap(); {
		case a.IsLoopback():
			return true, ""
		case a.IsUnspecified():
			return false, "every interface"
		}
		return false, "not a loopback address"
	}
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return false, "cannot resolve " + host
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return false, host + " resolves to " + a.IP.String()
		}
	}
	return true, ""
}

const loginCookie = "chokaq_login"

// identity is who a request authenticated as.
type identity struct {
	actor string // for the action log
	// principal binds CSRF tokens to the login: "" when not
	// authenticated (or when the dashboard has no auth).
	principal string
	session   string // the login session's key, for a form login
}

type identityKey struct{}

// identify returns who made r: set by authenticate, else its login
// session (the open routes: the login form and its POST). The open routes
// read no secret from the Authorization header: a page that looked
// different for the right token would let anyone test guesses there,
// past the limit on failures.
func (d *Dashboard) identify(r *http.Request) identity {
	if id, ok := r.Context().Value(identityKey{}).(identity); ok {
		return id
	}
	if d.opts.Auth.Enabled() {
		if id, ok := d.loginSession(r); ok {
			return id
		}
	}
	return identity{}
}

// actor names who made r, for the action log.
func (d *Dashboard) actor(r *http.Request) string {
	if d.opts.Actor != nil {
		if a := d.opts.Actor(r); a != "" {
			return a
		}
	}
	if a := d.identify(r).actor; a != "" {
		return a
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// authenticate lets a request through when it carries valid credentials.
// Browsers without them are sent to the login form (token) or asked for
// basic credentials; anything else gets 401. Failed bearer and basic
// attempts are logged and delay the client's next ones (see Auth).
func (d *Dashboard) authenticate(next http.Handler) http.Handler {
	if !d.opts.Auth.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pass := func(id identity) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
		}
		// A live login session is no guess (session IDs cannot be
		// guessed), so it passes even while its address is delayed; it is
		// checked first for that, whatever Authorization header the
		// browser sends besides.
		if id, ok := d.loginSession(r); ok {
			pass(id)
			return
		}
		// Only a request that offers a secret is a guess; a stale login
		// cookie is not, so a browser left open across a restart does not
		// delay its address.
		h := r.Header.Get("Authorization")
		if h != "" {
			client := d.clientAddr(r)
			if d.refuseDelayed(w, client) {
				return
			}
			if id, ok := d.credentials(r); ok {
				d.failures.succeed(client)
				pass(id)
				return
			}
			d.authFailed(r, client, authScheme(h))
		}
		a := d.opts.Auth
		switch {
		case a.Token != "" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html"):
			http.Redirect(w, r, d.path("/login")+"?next="+url.QueryEscape(d.base+r.URL.RequestURI()), http.StatusSeeOther)
		case a.BasicUser != "":
			w.Header().Set("WWW-Authenticate", `Basic realm="chokaq dashboard", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
		default:
			http.Error(w, "authentication required: send Authorization: Bearer <token> or log in at "+d.path("/login"), http.StatusUnauthorized)
		}
	})
}

// RequireAuth wraps h, typically the metrics and readiness endpoints served
// beside the dashboard, with the dashboard's own guard: the Host and client
// checks of Options.AllowedHosts, then Options.Auth (bearer token, login
// cookie or basic credentials), with the same limit on failed attempts.
// Without Auth only the first applies.
func (d *Dashboard) RequireAuth(h http.Handler) http.Handler {
	inner := d.authenticate(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, msg := d.checkHost(r); status != 0 {
			http.Error(w, msg, status)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// delayed reports whether client must still wait before an attempt is
// checked, and sets Retry-After to the wait in whole seconds, rounded up
// so a client that honours it is not refused again.
func (d *Dashboard) delayed(w http.ResponseWriter, client string) (int, bool) {
	wait := d.failures.wait(client, d.now())
	if wait <= 0 {
		return 0, false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs, true
}

// refuseDelayed answers 429, without checking anything, while client must
// wait after its failures.
func (d *Dashboard) refuseDelayed(w http.ResponseWriter, client string) bool {
	secs, delayed := d.delayed(w, client)
	if delayed {
		http.Error(w, fmt.Sprintf("too many failed authentication attempts from your address: try again in %d seconds", secs), http.StatusTooManyRequests)
	}
	return delayed
}

// authFailed logs a failed attempt of client, never the secret, and
// counts it.
func (d *Dashboard) authFailed(r *http.Request, client, scheme string) {
	d.log.Warn("dashboard: failed authentication", zap.String("remote", r.RemoteAddr), zap.String("client", client),
		zap.String("scheme", scheme), zap.String("path", r.URL.Path))
	// Logged once, when the delays start; each later failure doubles them.
	if n, wait := d.failures.fail(client, d.now()); n == maxFailures {
		d.log.Warn("dashboard: too many failed authentication attempts; delaying further attempts",
			zap.String("client", client), zap.Int("failures", n), zap.Duration("delay", wait), zap.Duration("max_delay", maxDelay))
	}
}

// authScheme names the scheme of an Authorization header for the log, and
// nothing else of it: a client that sends a bare secret must not get it
// logged.
func authScheme(h string) string {
	scheme, _, _ := strings.Cut(h, " ")
	switch s := strings.ToLower(scheme); s {
	case "bearer", "basic":
		return s
	}
	return "other"
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme. RFC 7235 makes the scheme case-insensitive and puts one or more
// spaces (not tabs) before the token.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// loginSession checks the login cookie: a session the login form opened.
func (d *Dashboard) loginSession(r *http.Request) (identity, bool) {
	if d.opts.Auth.Token == "" {
		return identity{}, false
	}
	c, err := r.Cookie(loginCookie)
	if err != nil {
		return identity{}, false
	}
	k, ok := d.sessions.check(c.Value, d.now())
	if !ok {
		return identity{}, false
	}
	return identity{actor: "token", principal: "login:" + k, session: k}, true
}

// credentials checks the bearer token and the basic credentials of the
// Authorization header, in constant time, and names the caller.
func (d *Dashboard) credentials(r *http.Request) (identity, bool) {
	a := d.opts.Auth
	if a.Token != "" {
		if tok, ok := bearerToken(r.Header.Get("Authorization")); ok && equalSecret(tok, a.Token) {
			return identity{actor: "token", principal: "bearer"}, true
		}
	}
	if a.BasicUser != "" {
		if user, pass, ok := r.BasicAuth(); ok {
			// Both compared every time, so timing does not tell which one was wrong.
			u, p := equalSecret(user, a.BasicUser), equalSecret(pass, a.BasicPassword)
			if u && p {
				return identity{actor: user, principal: "basic:" + user}, true
			}
		}
	}
	return identity{}, false
}

// equalSecret compares digests, so neither the content nor the length of
// the secret leaks through timing.
func equalSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

type loginData struct {
	Next  string
	Error string
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if d.opts.Auth.Token == "" {
		http.Redirect(w, r, d.path("/"), http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", "Log in", "", loginData{Next: d.safeNext(r.URL.Query().Get("next"))})
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if d.opts.Auth.Token == "" {
		http.Redirect(w, r, d.path("/"), http.StatusSeeOther)
		return
	}
	next := d.safeNext(r.PostForm.Get("next"))
	client := d.clientAddr(r)
	if secs, delayed := d.delayed(w, client); delayed {
		d.render(w, r, http.StatusTooManyRequests, "login", "Log in", "",
			loginData{Next: next, Error: fmt.Sprintf("Too many failed attempts from your address: try again in %d seconds.", secs)})
		return
	}
	if !equalSecret(r.PostForm.Get("token"), d.opts.Auth.Token) {
		d.log.Warn("dashboard: failed login", zapActor(d.actor(r)))
		d.authFailed(r, client, "form")
		d.render(w, r, http.StatusUnauthorized, "login", "Log in", "", loginData{Next: next, Error: "That token is not right."})
		return
	}
	d.failures.succeed(client)
	http.SetCookie(w, d.cookie(r, loginCookie, d.sessions.create(d.now()), int(sessionMax/time.Second)))
	// A fresh CSRF session too: nothing from before the login carries over.
	d.newCSRFSession(w, r)
	d.log.Info("dashboard: login", zapActor(d.actor(r)))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the login session on the server, so the cookie is worthless
// even if a copy of it survives.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if k := d.identify(r).session; k != "" {
		d.sessions.end(k)
		d.log.Info("dashboard: logout", zapActor(d.actor(r)))
	}
	http.SetCookie(w, d.cookie(r, loginCookie, "", -1))
	http.Redirect(w, r, d.path("/login"), http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on the dashboard's own pages: a path
// under the base path, rebuilt from its parsed form. Anything a browser
// could read as another host is refused: a leading "//", a backslash
// anywhere (browsers read "/\" as "//"), and any control character, since
// browsers drop TAB and newlines from URLs ("/<TAB>/evil.example" becomes
// "//evil.example").
func (d *Dashboard) safeNext(next string) string {
	home := d.path("/")
	if len(next) > 2000 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') {
		return home
	}
	for i := 0; i < len(next); i++ {
		if next[i] < 0x20 || next[i] == 0x7f {
			return home
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, d.base+"/") || strings.HasPrefix(u.Path, "//") || strings.HasPrefix(u.Path, d.base+"/login") {
		return home
	}
	return (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String()
}
