// Package nap sleeps for short, exact durations. time.Sleep rounds a sleep
// up to the runtime timer's resolution, a millisecond or more on many Linux
// machines, so a 200 us wait takes five times as long. Nap sleeps the
// thread (nanosleep, where the system has it) until shortly before the
// instant and yields the processor for the rest, so it is exact to a few
// microseconds at the cost of a little spinning at the end.
package nap

import (
	"runtime"
	"time"
)

// spinLast is how long before the instant nap stops sleeping and spins:
// more than the system sleep's usual overshoot.
const spinLast = 120 * time.Microsecond

// Until returns at t, or at once if t has passed. It sleeps in chunks of
// at most chunk (0: no bound), so a caller that must look at something
// else from time to time gets control back; it then returns early, false.
// It returns true when t has come.
func Until(t time.Time, chunk time.Duration) bool {
	for {
		rem := time.Until(t)
		if rem <= 0 {
			return true
		}
		if rem <= spinLast {
			runtime.Gosched()
			continue
		}
		d := rem - spinLast
		if chunk > 0 && d > chunk {
			sleep(chunk)
			return false
		}
		sleep(d)
	}
}
