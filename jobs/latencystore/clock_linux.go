//go:build linux

package latencystore

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// timerAlarm is a timerfd read through the runtime's poller, armed a
// little before the instant, then a yield loop for the rest: the waiting
// goroutine holds no thread and no processor for most of the wait, and
// the kernel's high-resolution timer wakes it within microseconds, where a
// runtime timer would round up to a millisecond on many machines. The
// short spin at the end absorbs the wake-up's own delay.
type timerAlarm struct {
	fd   int
	file *os.File
	at   atomic.Int64 // UnixNano of the instant armed for
}

// spinLast is how early the timer goes off, to be spun away.
const spinLast = 80 * time.Microsecond

func newAlarm() alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newSpinAlarm()
	}
	return &timerAlarm{fd: fd, file: os.NewFile(uintptr(fd), "latencystore-timer")}
}

func (a *timerAlarm) set(at time.Time) {
	a.at.Store(at.UnixNano())
	d := max(time.Until(at)-spinLast, time.Microsecond) // zero would disarm it
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(a.fd, 0, &spec, nil)
}

func (a *timerAlarm) wait() bool {
	var buf [8]byte
	if _, err := a.file.Read(buf[:]); err != nil { // the count of expirations
		return false
	}
	for time.Now().UnixNano() < a.at.Load() {
		runtime.Gosched()
	}
	return true
}

func (a *timerAlarm) close() { _ = a.file.Close() }
