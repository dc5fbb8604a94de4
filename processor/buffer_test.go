package processor

import (
	"context"
	"runtime"
	"testing"
)

// TestBufferCloseWhilePopping: a worker that pops while more jobs wait pokes
// the next waiter after unlocking; Stop closing the buffer in between must
// not make that poke panic (it did when close closed the channel).
func TestBufferCloseWhilePopping(t *testing.T) {
	for i := range 20000 {
		b := newBuffer(10)
		b.push([]*fetched{{}, {}, {}})
		done := make(chan any)
		go func() {
			defer func() { done <- recover() }()
			b.pop(context.Background())
		}()
		runtime.Gosched()
		b.close()
		if r := <-done; r != nil {
			t.Fatalf("iteration %d: pop panicked after close: %v", i, r)
		}
	}
}

// TestBufferCloseWakesEveryWaiter: waiters blocked in pop all return once
// the buffer closes.
func TestBufferCloseWakesEveryWaiter(t *testing.T) {
	b := newBuffer(10)
	done := make(chan bool)
	for range 8 {
		go func() { _, ok := b.pop(context.Background()); done <- ok }()
	}
	runtime.Gosched()
	b.close()
	for range 8 {
		if <-done {
			t.Fatal("pop returned a job from an empty, closed buffer")
		}
	}
}
