package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
)

// CSRF scheme: each browser gets a random session value in an HttpOnly,
// SameSite=Strict cookie; forms carry HMAC(secret, that value). A POST
// passes when its "csrf" field (or X-CSRF-Token header) matches the MAC of
// its own cookie. Another site can neither read the cookie nor compute the
// MAC, and a cookie planted from a sibling domain is useless without the
// server's secret.
const (
	csrfCookie = "chokaq_csrf"
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
	// maxFormBytes bounds an action's body: a payload of the store's default
	// limit (1 MiB) plus the rest of the form.
	maxFormBytes = 4 << 20
)

var errCSRF = errors.New("missing or wrong CSRF token: reload the page and try again")

// csrfSession returns the browser's CSRF session value, setting a new
// cookie when it has none.
func (d *Dashboard) csrfSession(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && validSession(c.Value) {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: d.cookiePath(), HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return v
}

func validSession(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// csrfToken is the token forms carry for session value v.
func (d *Dashboard) csrfToken(v string) string {
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte("csrf\x00" + v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies a parsed POST.
func (d *Dashboard) checkCSRF(r *http.Request) error {
	if !sameOrigin(r) {
		return errors.New("cross-origin request refused")
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validSession(c.Value) {
		return errCSRF
	}
	got := r.PostForm.Get(csrfField)
	if got == "" {
		got = r.Header.Get(csrfHeader)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(d.csrfToken(c.Value))) {
		return errCSRF
	}
	return nil
}

// sameOrigin refuses requests a browser marks as coming from another site;
// requests without those headers (old browsers, scripts) rely on the token.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// parsePost reads a bounded form body.
func parsePost(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	return r.ParseForm()
}

// csrfOnly wraps a POST handler that is not an action (login, logout).
func (d *Dashboard) csrfOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parsePost(w, r); err != nil {
			d.fail(w, r, http.StatusBadRequest, "cannot read the form: "+err.Error())
			return
		}
		if err := d.checkCSRF(r); err != nil {
			d.fail(w, r, http.StatusForbidden, err.Error())
			return
		}
		h(w, r)
	})
}

// action wraps an action handler: refused in read-only mode, then the form
// is read and the CSRF token checked.
func (d *Dashboard) action(h http.HandlerFunc) http.Handler {
	inner := d.csrfOnly(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.opts.ReadOnly {
			d.fail(w, r, http.StatusForbidden, "this dashboard is read-only: actions are disabled")
			return
		}
		inner.ServeHTTP(w, r)
	})
}
