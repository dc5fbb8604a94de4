package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// CSRF scheme: each browser gets a random session value in an HttpOnly,
// SameSite=Strict cookie; forms carry HMAC(secret, that value and the
// login). The login is the server-side login session, the basic-auth user,
// or nothing when the dashboard has no auth. A POST passes when its "csrf"
// field (or X-CSRF-Token header) matches the MAC of its own cookie and its
// own login, and its Origin, if any, is the dashboard's.
//
// Another site can neither read the cookie nor compute the MAC. A
// same-site attacker (a sibling subdomain, another port) can plant a CSRF
// cookie and can fetch the unauthenticated login page for a token, but
// that token is bound to no login, so it does not pass for an action,
// which always runs logged in when there is auth. Without auth the token
// binds only the browser, and the Origin and Host checks carry the load.
const (
	csrfCookie = "chokaq_csrf"
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// Body limits. Forms are small except the job actions': an edited payload
// of the store's default limit (1 MiB), which form encoding can triple
// (JSON's quotes, colons and braces become %XX), and up to MaxSelected
// selected IDs.
const (
	smallForm      = 16 << 10
	maxActionBytes = 3*jobs.DefaultMaxPayloadBytes + 1<<20
	// formReadTimeout bounds reading a form's body.
	formReadTimeout = 30 * time.Second
)

var errCSRF = errors.New("missing or wrong CSRF token: reload the page and try again")

// csrfSession returns the browser's CSRF session value, setting a new
// cookie when it has none.
func (d *Dashboard) csrfSession(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && validSession(c.Value) {
		return c.Value
	}
	return d.newCSRFSession(w, r)
}

// newCSRFSession sets a new CSRF session cookie and returns its value.
func (d *Dashboard) newCSRFSession(w http.ResponseWriter, r *http.Request) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, d.cookie(r, csrfCookie, v, 0))
	return v
}

func validSession(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// csrfToken is the token forms carry for session value v and a login
// (identity.principal).
func (d *Dashboard) csrfToken(v, principal string) string {
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte("csrf\x00" + v + "\x00" + principal))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies a parsed POST.
func (d *Dashboard) checkCSRF(r *http.Request) error {
	if err := d.checkOrigin(r); err != nil {
		return err
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validSession(c.Value) {
		return errCSRF
	}
	got := r.PostForm.Get(csrfField)
	if got == "" {
		got = r.Header.Get(csrfHeader)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(d.csrfToken(c.Value, d.identify(r).principal))) {
		return errCSRF
	}
	return nil
}

// parsePost reads a form body of at most limit bytes, within
// d.bodyTimeout, so a client cannot hold the handler by trickling it.
func (d *Dashboard) parsePost(w http.ResponseWriter, r *http.Request, limit int64) (int, error) {
	if r.Body != nil && r.Body != http.NoBody {
		// The server clears this deadline itself once the body is read.
		// A request without a body is left alone: the server is already
		// reading ahead on its connection.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d.bodyTimeout))
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("the form is larger than %d bytes", limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return http.StatusRequestTimeout, errors.New("the form took too long to arrive")
		}
		// net/url gives no error value to test for, only this text.
		if strings.Contains(err.Error(), "number of URL query parameters exceeded limit") {
			return http.StatusBadRequest, errors.New("too many fields: " + tooManySelected())
		}
		return http.StatusBadRequest, err
	}
	return 0, nil
}

// csrfOnly wraps a POST handler that is not an action (login, logout).
func (d *Dashboard) csrfOnly(limit int64, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, err := d.parsePost(w, r, limit); err != nil {
			d.fail(w, r, status, "cannot read the form: "+err.Error())
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
func (d *Dashboard) action(limit int64, h http.HandlerFunc) http.Handler {
	inner := d.csrfOnly(limit, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.opts.ReadOnly {
			d.fail(w, r, http.StatusForbidden, "this dashboard is read-only: actions are disabled")
			return
		}
		inner.ServeHTTP(w, r)
	})
}
