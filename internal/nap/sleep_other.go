//go:build !unix

package nap

import (
	"runtime"
	"time"
)

// sleep waits about d: time.Sleep for what is longer than the timer's
// resolution can spoil, yielding for the rest.
func sleep(d time.Duration) {
	if d > 2*time.Millisecond {
		time.Sleep(d - 2*time.Millisecond)
	}
	until := time.Now().Add(min(d, 2*time.Millisecond))
	for time.Now().Before(until) {
		runtime.Gosched()
	}
}
