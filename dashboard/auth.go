package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Auth guards the dashboard. Set Token, basic credentials, or both; a
// request passes with either. The zero value means no authentication, which
// CheckListen allows only on a loopback address.
type Auth struct {
	// Token is accepted as "Authorization: Bearer <Token>", or typed into
	// the login form, which then sets a cookie. Use a long random string.
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

// ErrNeedsAuth is wrapped by CheckListen's refusal.
var ErrNeedsAuth = errors.New("dashboard: authentication required")

// CheckListen refuses to serve on addr (host:port) without authentication
// unless the host is a loopback address: anyone who reaches the dashboard
// can resurrect and purge jobs.
func CheckListen(addr string, auth Auth) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen address %q: want host:port, e.g. 127.0.0.1:8080: %w", addr, err)
	}
	if err := auth.validate(); err != nil {
		return err
	}
	if auth.Enabled() || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w: refusing to listen on %s without authentication: anyone who reaches it could resurrect and purge jobs; "+
		"listen on 127.0.0.1 or set an auth token or basic-auth credentials", ErrNeedsAuth, addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const (
	loginCookie = "chokaq_login"
	loginTTL    = 12 * time.Hour
)

type actorKey struct{}

// actor names who made r, for the action log.
func (d *Dashboard) actor(r *http.Request) string {
	if d.opts.Actor != nil {
		if a := d.opts.Actor(r); a != "" {
			return a
		}
	}
	if a, ok := r.Context().Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// authenticate lets a request through when it carries valid credentials.
// Browsers without them are sent to the login form (token) or asked for
// basic credentials; anything else gets 401.
func (d *Dashboard) authenticate(next http.Handler) http.Handler {
	if !d.opts.Auth.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who, ok := d.credentials(r); ok {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, who)))
			return
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

// credentials checks the bearer token, the basic credentials and the login
// cookie, in constant time, and names the caller.
func (d *Dashboard) credentials(r *http.Request) (string, bool) {
	a := d.opts.Auth
	h := r.Header.Get("Authorization")
	if a.Token != "" {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && equalSecret(tok, a.Token) {
			return "token", true
		}
		if c, err := r.Cookie(loginCookie); err == nil && equalSecret(c.Value, d.loginValue()) {
			return "token", true
		}
	}
	if a.BasicUser != "" {
		if user, pass, ok := r.BasicAuth(); ok {
			// Both compared every time, so timing does not tell which one was wrong.
			u, p := equalSecret(user, a.BasicUser), equalSecret(pass, a.BasicPassword)
			if u && p {
				return user, true
			}
		}
	}
	return "", false
}

// equalSecret compares digests, so neither the content nor the length of
// the secret leaks through timing.
func equalSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// loginValue is the login cookie's value: a MAC of the token, so the cookie
// never holds the token itself and stops working when the token changes.
func (d *Dashboard) loginValue() string {
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte("login\x00" + d.opts.Auth.Token))
	return hex.EncodeToString(m.Sum(nil))
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
	if !equalSecret(r.PostForm.Get("token"), d.opts.Auth.Token) {
		d.log.Warn("dashboard: failed login", zapActor(d.actor(r)))
		d.render(w, r, http.StatusUnauthorized, "login", "Log in", "", loginData{Next: next, Error: "That token is not right."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: d.loginValue(), Path: d.cookiePath(), MaxAge: int(loginTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	d.log.Info("dashboard: login", zapActor(d.actor(r)))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: d.cookiePath(), MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, d.path("/login"), http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on the dashboard's own pages.
func (d *Dashboard) safeNext(next string) string {
	if strings.HasPrefix(next, d.base+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") &&
		!strings.HasPrefix(next, d.base+"/login") {
		return next
	}
	return d.path("/")
}
