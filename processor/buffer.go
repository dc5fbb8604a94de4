package processor

import (
	"context"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// fetched is a claimed job waiting in the prefetch buffer.
type fetched struct {
	job       *jobs.Job
	claimedAt time.Time // local clock; only ages the buffer, never judges expiry in the store
}

// buffer is the bounded FIFO between the fetch loop and the workers.
type buffer struct {
	mu     sync.Mutex
	items  []*fetched
	limit  int
	ready  chan struct{} // poked when items may be waiting, or the buffer closed
	closed bool
}

func newBuffer(limit int) *buffer {
	return &buffer{limit: limit, ready: make(chan struct{}, 1)}
}

func (b *buffer) poke() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// free is how many more jobs the buffer takes.
func (b *buffer) free() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - len(b.items)
}

func (b *buffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// push buffers fs, or, once the buffer is closed, refuses them: the caller
// must give them back, since no worker will ever pop them.
func (b *buffer) push(fs []*fetched) (ok bool) {
	if len(fs) == 0 {
		return true
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.items = append(b.items, fs...)
	b.mu.Unlock()
	b.poke()
	return true
}

// pop blocks until a job is buffered, the buffer is closed or ctx ends.
func (b *buffer) pop(ctx context.Context) (*fetched, bool) {
	for {
		b.mu.Lock()
		if b.closed || ctx.Err() != nil {
			b.mu.Unlock()
			b.poke() // pass the wake-up on to the next waiter
			return nil, false
		}
		if len(b.items) > 0 {
			return b.takeFirstLocked(), true
		}
		b.mu.Unlock()
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// tryPop takes the first buffered job without waiting, or returns nil.
func (b *buffer) tryPop() *fetched {
	b.mu.Lock()
	if b.closed || len(b.items) == 0 {
		b.mu.Unlock()
		return nil
	}
	return b.takeFirstLocked()
}

// takeFirstLocked takes the first job, unlocks, and lets the next idle
// worker in if more are buffered.
func (b *buffer) takeFirstLocked() *fetched {
	f := b.items[0]
	b.items[0] = nil
	b.items = b.items[1:]
	more := len(b.items) > 0
	b.mu.Unlock()
	if more {
		b.poke()
	}
	return f
}

// takeIf removes and returns the buffered jobs for which drop is true.
func (b *buffer) takeIf(drop func(*fetched) bool) []*fetched {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*fetched
	kept := b.items[:0]
	for _, f := range b.items {
		if drop(f) {
			out = append(out, f)
		} else {
			kept = append(kept, f)
		}
	}
	clear(b.items[len(kept):])
	b.items = kept
	return out
}

// close empties the buffer, returns what it held and wakes the waiters.
// ready is never closed: a worker may still poke it after popping, and a
// send on a closed channel would panic. Each woken waiter sees closed and
// pokes the next.
func (b *buffer) close() []*fetched {
	b.mu.Lock()
	out := b.items
	b.items = nil
	b.closed = true
	b.mu.Unlock()
	b.poke()
	return out
}
