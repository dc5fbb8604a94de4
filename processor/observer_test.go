package processor_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

type recordingObserver struct {
	mu        sync.Mutex
	claimed   int
	started   int
	lags      []time.Duration
	outcomes  map[processor.Outcome]int
	reasons   map[jobs.FailureReason]int
	handlerEr int
	errs      []error // every Result.HandlerErr
	degraded  int
}

func (o *recordingObserver) JobsClaimed(js []*jobs.Job) {
	o.mu.Lock()
	o.claimed += len(js)
	o.mu.Unlock()
}
func (o *recordingObserver) JobStarted(j *jobs.Job, st jobs.Started) {
	o.mu.Lock()
	o.started++
	o.lags = append(o.lags, st.StartedAt.Sub(j.ScheduledAt))
	o.mu.Unlock()
}
func (o *recordingObserver) JobFinished(j *jobs.Job, r processor.Result) {
	o.mu.Lock()
	o.outcomes[r.Outcome]++
	if r.Outcome == processor.OutcomeDeadLettered {
		o.reasons[r.Reason]++
	}
	if r.HandlerErr != nil {
		o.handlerEr++
		o.errs = append(o.errs, r.HandlerErr)
	}
	o.mu.Unlock()
}
func (o *recordingObserver) HeartbeatDegraded(jobs.LeaseRef) {
	o.mu.Lock()
	o.degraded++
	o.mu.Unlock()
}

// TestObserverSeesEveryOutcome: a scripted run of one success, one retry
// then success, one permanent failure and one panic-to-exhaustion.
func TestObserverSeesEveryOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		obs := &recordingObserver{outcomes: map[processor.Outcome]int{}, reasons: map[jobs.FailureReason]int{}}
		reg := processor.NewRegistry()
		reg.MustHandle("ok", func(context.Context, *processor.Job) error { return nil })
		reg.MustHandle("flaky", func(ctx context.Context, j *processor.Job) error {
			if j.Attempt == 1 {
				return errors.New("once")
			}
			return nil
		})
		reg.MustHandle("fatal", func(context.Context, *processor.Job) error { return processor.Permanent(errors.New("no")) })
		reg.MustHandle("panics", func(context.Context, *processor.Job) error { panic("boom") })
		for _, typ := range []string{"ok", "flaky", "fatal"} {
			enqueue(t, s, jobs.EnqueueParams{Type: typ})
		}
		enqueue(t, s, jobs.EnqueueParams{Type: "panics", MaxAttempts: 1})
		delayed := enqueue(t, s, jobs.EnqueueParams{Type: "ok", Delay: time.Minute})
		cfg := testConfig()
		cfg.Observer = obs
		p := startProcessor(t, s, reg, cfg)
		waitFor(t, 5*time.Minute, "all settled", func() bool { return countIn(t, s, jobs.TableHot) == 0 })
		stop(t, p)
		want := map[processor.Outcome]int{processor.OutcomeSucceeded: 3, processor.OutcomeRetried: 1, processor.OutcomeDeadLettered: 2}
		for o, n := range want {
			if obs.outcomes[o] != n {
				t.Fatalf("outcomes %v, want %v", obs.outcomes, want)
			}
		}
		if obs.reasons[jobs.ReasonFatal] != 1 || obs.reasons[jobs.ReasonMaxRetriesExceeded] != 1 {
			t.Fatalf("reasons %v", obs.reasons)
		}
		if obs.claimed != 6 || obs.started != 6 || obs.handlerEr != 3 {
			t.Fatalf("claimed %d started %d handler errors %d; want 6, 6, 3", obs.claimed, obs.started, obs.handlerEr)
		}
		// Lag runs from the due time, so the delayed job's minute and the
		// retried job's backoff do not count.
		for _, lag := range obs.lags {
			if lag < 0 || lag > 5*time.Second {
				t.Fatalf("queue lag %v out of range (delayed job %d)", lag, delayed)
			}
		}
	})
}
