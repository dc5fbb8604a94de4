package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Login sessions. The login cookie holds a random session ID; the server
// keeps the sessions, so logging out ends one for good and each expires on
// the server, whatever the browser does with the cookie.
const (
	sessionIdle  = 12 * time.Hour // unused this long: logged out
	sessionMax   = 24 * time.Hour // logged out this long after the login
	maxSessions  = 10000          // the oldest are dropped beyond it
	sessionBytes = 32
)

type loginSession struct{ created, seen time.Time }

// sessions are the open login sessions, by a digest of their ID, so the
// IDs themselves are kept only in browsers.
type sessions struct {
	mu sync.Mutex
	m  map[string]loginSession
}

func newSessions() *sessions { return &sessions{m: map[string]loginSession{}} }

func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// create opens a session and returns its ID, for the cookie.
func (s *sessions) create(now time.Time) string {
	b := make([]byte, sessionBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxSessions {
		s.pruneLocked(now)
	}
	if len(s.m) >= maxSessions {
		// Still full of live sessions: drop the least recently used.
		oldest := ""
		for k, v := range s.m {
			if oldest == "" || v.seen.Before(s.m[oldest].seen) {
				oldest = k
			}
		}
		delete(s.m, oldest)
	}
	s.m[sessionKey(id)] = loginSession{created: now, seen: now}
	return id
}

// check reports whether id is a live session, and marks it used. It
// returns the session's key, which names it without being the cookie.
func (s *sessions) check(id string, now time.Time) (string, bool) {
	if len(id) != base64.RawURLEncoding.EncodedLen(sessionBytes) {
		return "", false
	}
	k := sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return "", false
	}
	if expired(v, now) {
		delete(s.m, k)
		return "", false
	}
	v.seen = now
	s.m[k] = v
	return k, true
}

// end closes the session with key k.
func (s *sessions) end(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
}

func (s *sessions) pruneLocked(now time.Time) {
	for k, v := range s.m {
		if expired(v, now) {
			delete(s.m, k)
		}
	}
}

func expired(v loginSession, now time.Time) bool {
	return now.Sub(v.seen) >= sessionIdle || now.Sub(v.created) >= sessionMax
}

// Failed authentication is limited per client (see clientAddr). The
// first maxFailures failures cost nothing, so an operator who mistypes is
// not held up; after that, each failure makes the client wait before its
// next attempt is even checked: firstDelay after the maxFailures-th
// failure, twice as long after each further one, at most maxDelay. That
// slows a guesser to some 1500 guesses a day (the best it can do is to
// spend the free ones and a few cheap delays, then wait to be forgotten),
// while the right secret still gets in once the delay is over, so a
// guesser who shares an address with operators cannot keep them out. A success starts the client
// afresh, and its failures are forgotten forgetFailures after the last.
const (
	maxFailures    = 10
	firstDelay     = time.Second
	maxDelay       = 5 * time.Minute
	forgetFailures = 15 * time.Minute // longer than maxDelay, so a patient guesser stays delayed
	maxFailing     = 10000            // clients tracked at once
)

type strikes struct {
	n    int
	last time.Time // of the latest failure
}

// delay is how long after its latest failure a client with n failures
// must wait.
func delay(n int) time.Duration {
	if n < maxFailures {
		return 0
	}
	d := firstDelay
	for i := maxFailures; i < n && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

type limiter struct {
	mu sync.Mutex
	m  map[string]strikes
}

func newLimiter() *limiter { return &limiter{m: map[string]strikes{}} }

// wait reports how long client must still wait before its next attempt
// is checked; 0 when it may try now.
func (l *limiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.m[client]
	if !ok {
		return 0
	}
	if now.Sub(s.last) >= forgetFailures {
		delete(l.m, client)
		return 0
	}
	return max(s.last.Add(delay(s.n)).Sub(now), 0)
}

// fail counts a failure of client and returns its failures so far and
// the delay it must now wait.
func (l *limiter) fail(client string, now time.Time) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.m[client]
	if ok && now.Sub(s.last) >= forgetFailures {
		s = strikes{}
	}
	if !ok && len(l.m) >= maxFailing {
		for k, v := range l.m {
			if now.Sub(v.last) >= forgetFailures {
				delete(l.m, k)
			}
		}
		for k := range l.m {
			if len(l.m) < maxFailing {
				break
			}
			delete(l.m, k) // still full: forget someone rather than grow
		}
	}
	// Past the cap the count tells nothing more; kept from growing, it
	// cannot overflow however long a guesser keeps at it.
	if delay(s.n) < maxDelay {
		s.n++
	}
	s.last = now
	l.m[client] = s
	return s.n, delay(s.n)
}

// succeed forgets client's failures: it has just proved it knows the
// secret.
func (l *limiter) succeed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, client)
}

// clientAddr keys the failure limiter: the client's IP address, or its /64
// for IPv6, where one host commonly has a whole /64 to pick from. The
// address is the connection's, unless that comes from one of
// Options.TrustedProxies and Options.TrustedProxyHeader names the client
// (see forwardedClient); any other client could send the header to pick a
// new key for every guess.
func (d *Dashboard) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if d.proxyHeader != "" && d.trustedProxy(a) {
		if c, ok := d.forwardedClient(r.Header); ok {
			a = c
		}
	}
	if a.Is6() {
		p, _ := a.Prefix(64) // a valid IPv6 address always has a /64
		return p.String()
	}
	return a.String()
}

func (d *Dashboard) trustedProxy(a netip.Addr) bool {
	for _, p := range d.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedClient reads the client's address from the trusted proxy's
// header. X-Forwarded-For is a list each proxy appends to, so only its
// right end is the proxies' word: the client is the right-most address that
// is not a trusted proxy, and whatever stands left of it the client may
// have sent itself. Any other header must hold one address. A value that
// is not an address is not guessed at: the caller keeps the proxy's.
func (d *Dashboard) forwardedClient(h http.Header) (netip.Addr, bool) {
	values := h.Values(d.proxyHeader)
	if d.proxyHeader != "X-Forwarded-For" {
		if len(values) != 1 {
			return netip.Addr{}, false
		}
		return parseForwarded(values[0])
	}
	list := strings.Split(strings.Join(values, ","), ",")
	for i := len(list) - 1; i >= 0; i-- {
		a, ok := parseForwarded(list[i])
		if !ok {
			return netip.Addr{}, false
		}
		if !d.trustedProxy(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// parseForwarded reads one address of a forwarding header, which some
// proxies send with a port.
func parseForwarded(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

// trustedProxies parses Options.TrustedProxies.
func trustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		e := strings.TrimSpace(s)
		p, err := netip.ParsePrefix(e)
		if err != nil {
			a, aerr := netip.ParseAddr(e)
			if aerr != nil {
				return nil, fmt.Errorf("dashboard: TrustedProxies entry %q: want an IP address or a CIDR such as 10.0.0.0/8", s)
			}
			a = a.Unmap().WithZone("")
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("dashboard: TrustedProxies entry %q: trusts every address, so any client could name itself in the header: "+
				"list the proxies' addresses", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// proxyHeader checks Options.TrustedProxyHeader and returns it in
// canonical form.
func proxyHeader(h string, proxies int) (string, error) {
	if h == "" {
		if proxies > 0 {
			return "", errors.New("dashboard: TrustedProxies needs TrustedProxyHeader, the header the proxies name the client in, e.g. X-Forwarded-For")
		}
		return "", nil
	}
	for i := 0; i < len(h); i++ {
		if !isTokenChar(h[i]) {
			return "", fmt.Errorf("dashboard: TrustedProxyHeader %q: not a header name", h)
		}
	}
	c := http.CanonicalHeaderKey(h)
	if c == "Forwarded" {
		return "", fmt.Errorf("dashboard: TrustedProxyHeader %q: RFC 7239 Forwarded is not supported; use X-Forwarded-For or X-Real-IP", h)
	}
	if proxies == 0 {
		return "", fmt.Errorf("dashboard: TrustedProxyHeader %q needs TrustedProxies, the addresses of the proxies that set it", h)
	}
	return c, nil
}

// isTokenChar reports whether b may appear in a header name (RFC 9110
// token).
func isTokenChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
