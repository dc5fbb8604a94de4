package periodic

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
)

type result struct {
	skipped bool
	n       int
}

// follower never leads; broken cannot tell.
type follower struct{ resigner }

func (*follower) TryLead(context.Context) (bool, error) { return false, nil }

type broken struct{ resigner }

func (*broken) TryLead(context.Context) (bool, error) { return false, errors.New("no server") }

// A round works only when it leads, reports a follower's round as Skipped
// and a failed election or a panic as its error, and Done sees every one.
func TestARoundWorksOnlyWhenItLeadsAndDoneSeesEveryRound(t *testing.T) {
	type seen struct {
		res result
		err error
	}
	var done []seen
	round := func(leader jobs.Leader) Round[result] {
		return Round[result]{Name: "test", Noun: "sweep", Leader: leader, Skipped: result{skipped: true},
			Done: func(r result, err error) { done = append(done, seen{r, err}) }}
	}
	worked := 0
	work := func(_ context.Context, res *result) error { worked++; res.n = 2; return nil }

	if res, err := round(nil).Run(t.Context(), work); err != nil || res.n != 2 {
		t.Fatalf("no leader: %+v, %v; want the work done", res, err)
	}
	if res, err := round(&resigner{}).Run(t.Context(), work); err != nil || res.n != 2 {
		t.Fatalf("leading: %+v, %v; want the work done", res, err)
	}
	if res, err := round(&follower{}).Run(t.Context(), work); err != nil || !res.skipped || res.n != 0 {
		t.Fatalf("following: %+v, %v; want skipped", res, err)
	}
	if _, err := round(&broken{}).Run(t.Context(), work); err == nil || err.Error() != "test: leader election: no server" {
		t.Fatalf("failed election: %v", err)
	}
	res, err := round(nil).Run(t.Context(), func(_ context.Context, res *result) error { res.n = 1; panic("store bug") })
	if err == nil || err.Error() != "test: sweep panicked: store bug" || res.n != 1 {
		t.Fatalf("panicking work: %+v, %v; want the panic as the error and what it did", res, err)
	}
	if worked != 2 || len(done) != 5 || !done[2].res.skipped || done[3].err == nil || done[4].err == nil {
		t.Fatalf("worked %d times; Done saw %+v", worked, done)
	}
}

// A step gives its round a timeout, turns a panic that escaped it into its
// error (and tells OnPanic), and logs a failure unless the loop stops.
func TestAStepBoundsItsRoundAndLogsAFailureUnlessTheLoopStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.ErrorLevel)
		panics := 0
		s := Step{Name: "test", Timeout: time.Second, Log: zap.New(core), Failed: "test: round failed", OnPanic: func() { panics++ }}
		err := s.Run(t.Context(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		if !errors.Is(err, context.DeadlineExceeded) || logs.FilterMessage("test: round failed").Len() != 1 {
			t.Fatalf("a round past its timeout: %v, logs %v", err, logs.All())
		}
		if err := s.Run(t.Context(), func(context.Context) error { panic("hook bug") }); err == nil ||
			err.Error() != "test: round panicked: hook bug" || panics != 1 {
			t.Fatalf("a panicking round: %v after %d panics", err, panics)
		}
		if err := s.Run(t.Context(), func(context.Context) error { return nil }); err != nil || panics != 1 || logs.Len() != 2 {
			t.Fatalf("a good round: %v, %d panics, logs %v", err, panics, logs.All())
		}
		stopping, stop := context.WithCancel(t.Context())
		stop()
		if err := s.Run(stopping, func(ctx context.Context) error { return ctx.Err() }); err == nil || logs.Len() != 2 {
			t.Fatalf("the round of a stopping loop: %v, logs %v; want its error, not logged", err, logs.All())
		}
	})
}

// Every starts the rounds every interval from the start of the last, and
// a round longer than the interval at once after it.
func TestEveryWaitsTheRestOfTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Step{Name: "test"}
		took := 300 * time.Millisecond
		round := s.Every(time.Second, func(context.Context) error { time.Sleep(took); return nil })
		if wait := round(t.Context()); wait != 700*time.Millisecond {
			t.Fatalf("wait after a 300ms round: %v, want 700ms", wait)
		}
		took = 2 * time.Second
		if wait := round(t.Context()); wait != 0 {
			t.Fatalf("wait after a 2s round: %v, want 0", wait)
		}
	})
}

// Zero fields take the defaults, set ones (a negative one too) stay, and
// a nil Logger becomes one that logs nothing.
func TestWithDefaultsFillsOnlyZeroFields(t *testing.T) {
	type config struct {
		Interval time.Duration
		Batch    int
		Pause    time.Duration
		Logger   *zap.Logger
		OnRound  func()
	}
	got := WithDefaults(config{Batch: -1, Pause: time.Second}, config{Interval: time.Minute, Batch: 500, Pause: time.Hour})
	if got.Interval != time.Minute || got.Batch != -1 || got.Pause != time.Second || got.Logger == nil || got.OnRound != nil {
		t.Fatalf("WithDefaults = %+v", got)
	}
	own := zap.NewExample()
	if got := WithDefaults(config{Logger: own}, config{}); got.Logger != own {
		t.Fatal("WithDefaults replaced a logger that was set")
	}
}
