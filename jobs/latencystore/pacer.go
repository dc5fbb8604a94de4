package latencystore

import (
	"container/heap"
	"sync"
	"time"
)

// pacer releases waiters at their deadlines, exactly, without taking a
// processor from the code being measured while it waits: a database's
// latency costs its client no CPU. How it waits is the platform's (see
// clock_linux.go and clock_other.go); the waiters are kept here.
type pacer struct {
	mu      sync.Mutex
	waiters deadlines
	clock   alarm
	once    sync.Once
	done    chan struct{}
}

// alarm is what the pacer waits on: set arms it for an instant (replacing
// any earlier setting), wait blocks until it goes off or close is called.
type alarm interface {
	set(at time.Time)
	wait() bool // false once closed
	close()
}

func newPacer() *pacer {
	p := &pacer{clock: newAlarm(), done: make(chan struct{})}
	go p.run()
	return p
}

type waiter struct {
	at   time.Time
	wake chan struct{}
}

type deadlines []waiter

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(waiter)) }
func (d *deadlines) Pop() any {
	old := *d
	w := old[len(old)-1]
	*d = old[:len(old)-1]
	return w
}

// wait returns d after it was called.
func (p *pacer) wait(d time.Duration) {
	w := waiter{at: time.Now().Add(d), wake: make(chan struct{})}
	p.mu.Lock()
	heap.Push(&p.waiters, w)
	if p.waiters[0].wake == w.wake { // the earliest now: arm for it
		p.clock.set(w.at)
	}
	p.mu.Unlock()
	select {
	case <-w.wake:
	case <-p.done:
	}
}

func (p *pacer) run() {
	for p.clock.wait() {
		p.mu.Lock()
		now := time.Now()
		for len(p.waiters) > 0 && !p.waiters[0].at.After(now) {
			close(heap.Pop(&p.waiters).(waiter).wake)
		}
		if len(p.waiters) > 0 {
			p.clock.set(p.waiters[0].at)
		}
		p.mu.Unlock()
	}
}

func (p *pacer) close() {
	p.once.Do(func() {
		close(p.done)
		p.clock.close()
	})
}
