//go:build unix

package nap

import (
	"syscall"
	"time"
)

// sleep blocks the thread for about d: nanosleep overshoots by tens of
// microseconds, not by the timer's millisecond.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
