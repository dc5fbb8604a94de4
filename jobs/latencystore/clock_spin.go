package latencystore

import (
	"runtime"
	"sync"
	"time"
)

// spinAlarm waits by yielding until the instant: exact, portable, but it
// keeps a processor busy (yielding to anything runnable) while armed.
type spinAlarm struct {
	mu     sync.Mutex
	at     time.Time // zero: disarmed
	closed bool
	armed  chan struct{}
}

func newSpinAlarm() alarm { return &spinAlarm{armed: make(chan struct{}, 1)} }

func (a *spinAlarm) set(at time.Time) {
	a.mu.Lock()
	a.at = at
	a.mu.Unlock()
	select {
	case a.armed <- struct{}{}:
	default:
	}
}

func (a *spinAlarm) wait() bool {
	for {
		a.mu.Lock()
		at, closed := a.at, a.closed
		a.mu.Unlock()
		switch {
		case closed:
			return false
		case at.IsZero():
			<-a.armed
		case !time.Now().Before(at):
			a.mu.Lock()
			if a.at.Equal(at) {
				a.at = time.Time{}
			}
			a.mu.Unlock()
			return true
		default:
			runtime.Gosched()
		}
	}
}

func (a *spinAlarm) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	select {
	case a.armed <- struct{}{}:
	default:
	}
}
