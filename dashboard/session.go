package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
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

// Failed authentication is limited per client address: after
// maxFailures failures within failureWindow, that address's attempts are
// refused with 429 until the window ends.
const (
	maxFailures   = 10
	failureWindow = time.Minute
	maxFailing    = 10000 // addresses tracked at once
)

type strikes struct {
	n     int
	since time.Time
}

type limiter struct {
	mu sync.Mutex
	m  map[string]strikes
}

func newLimiter() *limiter { return &limiter{m: map[string]strikes{}} }

// blocked reports whether addr is refused now, and for how long.
func (l *limiter) blocked(addr string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.m[addr]
	if !ok || s.n < maxFailures {
		return 0, false
	}
	left := s.since.Add(failureWindow).Sub(now)
	if left <= 0 {
		delete(l.m, addr)
		return 0, false
	}
	return left, true
}

// fail counts a failure of addr; it reports whether that one reached the
// limit, so the block is logged once.
func (l *limiter) fail(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.m[addr]
	if !ok || now.Sub(s.since) >= failureWindow {
		s = strikes{since: now}
	}
	if !ok && len(l.m) >= maxFailing {
		for k, v := range l.m {
			if now.Sub(v.since) >= failureWindow {
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
	s.n++
	l.m[addr] = s
	return s.n == maxFailures
}

// clientAddr keys the failure limiter: the client's IP address, or its /64
// for IPv6, where one host commonly has a whole /64 to pick from. Behind a
// reverse proxy every client shares the proxy's address.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if a = a.Unmap(); a.Is6() {
		p, _ := a.Prefix(64) // a valid IPv6 address always has a /64
		return p.String()
	}
	return a.String()
}
