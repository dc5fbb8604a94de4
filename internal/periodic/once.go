package periodic

import (
	"context"
	"sync"
)

// StopOnce runs a component's shutdown once, for a Stop that may be called
// many times: the first call runs it, and every other call, concurrent or
// later, waits for it and returns the same result, or its own context's
// error if that ends first. Callers that disagreed would tell one operator
// the handlers were abandoned and another that all went well. The zero
// value is ready.
type StopOnce struct {
	mu   sync.Mutex
	done chan struct{} // closed when the shutdown returns
	err  error         // its result, set before done closes
}

// Do runs shutdown if no call ran it yet, else waits for that one.
func (o *StopOnce) Do(ctx context.Context, shutdown func() error) error {
	o.mu.Lock()
	if done := o.done; done != nil {
		o.mu.Unlock()
		select {
		case <-done:
			return o.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	o.done = make(chan struct{})
	o.mu.Unlock()
	o.err = shutdown()
	close(o.done)
	return o.err
}
