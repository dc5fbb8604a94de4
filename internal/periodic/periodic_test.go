package periodic

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

type resigner struct{ resigned atomic.Int32 }

func (r *resigner) TryLead(context.Context) (bool, error) { return true, nil }
func (r *resigner) Resign(context.Context) error          { r.resigned.Add(1); return nil }

// A round runs at once and then after the wait it returned; Stop ends the
// loop and resigns; the loop runs once.
func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rounds atomic.Int32
		l := Loop{Name: "test"}
		if err := l.Stop(t.Context(), nil); !errors.Is(err, jobs.ErrNotRunning) || !strings.HasPrefix(err.Error(), "test: ") {
			t.Fatalf("Stop before Start: %v", err)
		}
		err := l.Start(t.Context(), func(ctx context.Context) time.Duration {
			rounds.Add(1)
			return time.Second
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Start(t.Context(), func(context.Context) time.Duration { return 0 }); !errors.Is(err, jobs.ErrAlreadyStarted) {
			t.Fatalf("second Start: %v", err)
		}
		time.Sleep(3500 * time.Millisecond)
		if n := rounds.Load(); n != 4 { // at 0, 1, 2 and 3 s
			t.Fatalf("%d rounds in 3.5s", n)
		}
		leader := &resigner{}
		if err := l.Stop(t.Context(), leader); err != nil || leader.resigned.Load() != 1 {
			t.Fatalf("Stop: %v, resigned %d times", err, leader.resigned.Load())
		}
		time.Sleep(5 * time.Second)
		if n := rounds.Load(); n != 4 {
			t.Fatalf("a round ran after Stop: %d", n)
		}
		if err := l.Stop(t.Context(), nil); !errors.Is(err, jobs.ErrNotRunning) {
			t.Fatalf("second Stop: %v", err)
		}
	})
}

// Stop gives up waiting for a round when its context ends, and still
// resigns; a cancelled context refuses Start.
func TestStopWaitsBoundedAndStillResigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var l Loop
		if err := l.Start(t.Context(), func(ctx context.Context) time.Duration { <-release; return time.Hour }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		leader := &resigner{}
		if err := l.Stop(ctx, leader); !errors.Is(err, context.DeadlineExceeded) || leader.resigned.Load() != 1 {
			t.Fatalf("Stop of a stuck round: %v, resigned %d", err, leader.resigned.Load())
		}
		close(release)
		done, stop := context.WithCancel(t.Context())
		stop()
		var other Loop
		if err := other.Start(done, func(context.Context) time.Duration { return 0 }); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start with an ended context: %v", err)
		}
	})
}

func TestRecover(t *testing.T) {
	err := Recover("x", func() error { panic("boom") })
	if err == nil || err.Error() != "x: round panicked: boom" {
		t.Fatalf("Recover = %v", err)
	}
	want := errors.New("plain")
	if err := Recover("x", func() error { return want }); err != want {
		t.Fatalf("Recover passed %v", err)
	}
}

// StopOnce runs the shutdown once; every other call waits for it and gets
// its result, unless its own context ends first.
func TestStopOnceRunsOnceAndEveryCallGetsItsResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o StopOnce
		abandoned := errors.New("abandoned")
		runs := 0
		shutdown := func() error { runs++; time.Sleep(time.Second); return abandoned }
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- o.Do(context.Background(), shutdown) }()
		}
		impatient, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		synctest.Wait()
		if err := o.Do(impatient, shutdown); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a call whose context ends first: %v", err)
		}
		for range 3 {
			if err := <-errs; err != abandoned {
				t.Errorf("Do = %v, want the shutdown's result", err)
			}
		}
		if err := o.Do(context.Background(), shutdown); err != abandoned || runs != 1 {
			t.Errorf("a later call: %v, after %d runs", err, runs)
		}
	})
}
