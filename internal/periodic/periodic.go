// Package periodic runs the background loops of chokaq-go (the rescue
// sweeps, the schedules' rounds, retention): one goroutine per loop that
// runs a round at once and then again after the wait the round asks for,
// until Stop, which then resigns the loop's leadership. A loop runs once:
// a second Start is refused, and so is a Stop of a loop never started.
//
// The loops share the rest of a round too. Round is a round's frame, also
// when called by hand: try to lead, else skip; a panic of the work as the
// round's error; one hook for every round. Step is how the loop runs it:
// under a timeout, a panic that escapes as an error, a failure logged.
// A new loop is its work, a Round and a Step.
package periodic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Loop is one background loop. The zero value is ready; Name prefixes its
// errors ("retention: already started").
type Loop struct {
	Name string

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
}

// resignTimeout bounds the leader's resignation at Stop, which runs even
// when Stop's context has ended, so another process can lead at once.
const resignTimeout = 5 * time.Second

// Start runs round now and then again after each wait it returns, until
// Stop. The loop's context outlives ctx's cancellation (only Stop ends
// it); ctx's values carry over.
func (l *Loop) Start(ctx context.Context, round func(ctx context.Context) time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return fmt.Errorf("%s: %w", l.Name, jobs.ErrAlreadyStarted)
	}
	l.started = true
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-loopCtx.Done():
				return
			case <-timer.C:
			}
			timer.Reset(round(loopCtx))
		}
	}()
	return nil
}

// Stop ends the loop, waiting for a round in progress until ctx ends, and
// then resigns leader's lead if leader is not nil.
func (l *Loop) Stop(ctx context.Context, leader jobs.Leader) error {
	l.mu.Lock()
	if !l.started || l.cancel == nil {
		l.mu.Unlock()
		return fmt.Errorf("%s: %w", l.Name, jobs.ErrNotRunning)
	}
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	cancel()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if leader != nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
		defer rcancel()
		err = errors.Join(err, leader.Resign(rctx))
	}
	return err
}

// Recover runs f, turning a panic into an error naming the loop, so that a
// panicking store call or hook ends a round, not the loop.
func Recover(name string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: round panicked: %v", name, p)
		}
	}()
	return f()
}

// Sleep waits d, or until ctx ends, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
