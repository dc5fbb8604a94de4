package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// cancelJob cancels one job as an operator would.
func cancelJob(t *testing.T, s jobs.Store, id int64) jobs.CancelOutcome {
	t.Helper()
	rs, err := s.Cancel(context.Background(), jobs.CancelParams{IDs: []int64{id}, By: "ops", Reason: "refunded"})
	if err != nil {
		t.Fatal(err)
	}
	return rs[0].Outcome
}

// A running job an operator cancels: its handler's context is cancelled,
// with cause ErrCancelled, within HeartbeatIntervalMax of the request (the
// next beat brings it), and the job is dead-lettered as Cancelled with the
// operator's note; its heartbeats went on meanwhile.
func TestCancelOfARunningJobStopsItsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "long"})
		started := make(chan struct{})
		stopped := make(chan time.Time, 1)
		reg := processor.NewRegistry()
		reg.MustHandle("long", func(ctx context.Context, _ *processor.Job) error {
			close(started)
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), processor.ErrCancelled) {
				t.Errorf("cause %v, want ErrCancelled", context.Cause(ctx))
			}
			stopped <- time.Now()
			return ctx.Err()
		})
		cfg := testConfig()
		p := startProcessor(t, mem, reg, cfg)
		<-started
		asked := time.Now()
		if o := cancelJob(t, mem, id); o != jobs.CancelRequested {
			t.Fatalf("cancel of a running job: %s", o)
		}
		at := <-stopped
		if took := at.Sub(asked); took > cfg.HeartbeatIntervalMax {
			t.Fatalf("the handler stopped %v after the cancel, more than HeartbeatIntervalMax %v", took, cfg.HeartbeatIntervalMax)
		}
		waitFor(t, time.Minute, "the job dead-lettered", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableDLQ })
		j, _ := mem.GetJob(context.Background(), id)
		if j.FailureReason != jobs.ReasonCancelled || !strings.Contains(j.ErrorDetails, "cancelled by ops: refunded") {
			t.Fatalf("dead letter: %s %q", j.FailureReason, j.ErrorDetails)
		}
		if st := p.Stats(); st.CancelRequests != 1 || st.DeadLettered != 1 || st.Failed != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A handler that finishes its work in spite of a cancel succeeds: the job
// is archived, once.
func TestACancelledHandlerThatFinishesIsArchived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "stubborn"})
		started := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("stubborn", func(ctx context.Context, _ *processor.Job) error {
			close(started)
			<-ctx.Done()
			return nil // the work was done anyway
		})
		startProcessor(t, mem, reg, testConfig())
		<-started
		cancelJob(t, mem, id)
		waitFor(t, time.Minute, "the job archived", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableArchive })
	})
}

// A handler that fails after the cancel was requested but before its
// worker heard of it is not retried: the store dead-letters the job as
// Cancelled in place of the retry.
func TestACancelledJobIsNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "fails"})
		reg := processor.NewRegistry()
		reg.MustHandle("fails", func(ctx context.Context, _ *processor.Job) error {
			cancelJob(t, mem, id) // the request lands while the handler runs
			return errors.New("card declined")
		})
		p := startProcessor(t, mem, reg, testConfig())
		waitFor(t, time.Minute, "the job dead-lettered", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableDLQ })
		j, _ := mem.GetJob(context.Background(), id)
		if j.FailureReason != jobs.ReasonCancelled || !strings.Contains(j.ErrorDetails, "card declined") {
			t.Fatalf("dead letter: %s %q", j.FailureReason, j.ErrorDetails)
		}
		if st := p.Stats(); st.Retried != 0 || st.DeadLettered != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Cancel(err) from the handler dead-letters at once as Cancelled.
func TestHandlerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "refunded", MaxAttempts: 5})
		reg := processor.NewRegistry()
		reg.MustHandle("refunded", func(context.Context, *processor.Job) error {
			return processor.Cancel(errors.New("the order was refunded"))
		})
		startProcessor(t, mem, reg, testConfig())
		waitFor(t, time.Minute, "the job dead-lettered", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableDLQ })
		j, _ := mem.GetJob(context.Background(), id)
		if j.FailureReason != jobs.ReasonCancelled || j.AttemptCount != 1 || !strings.Contains(j.ErrorDetails, "the order was refunded") {
			t.Fatalf("dead letter: %+v", j)
		}
		if processor.Cancel(nil) != nil {
			t.Fatal("Cancel(nil) is not nil")
		}
	})
}

// Snooze puts the job back without using an attempt; a job with one
// attempt snoozes twice and then runs, and succeeds, on that attempt.
func TestSnoozeDoesNotUseAnAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "later", MaxAttempts: 1})
		runs := 0
		reg := processor.NewRegistry()
		reg.MustHandle("later", func(_ context.Context, j *processor.Job) error {
			runs++
			if j.Attempt != 1 || j.Snoozes != runs-1 {
				t.Errorf("run %d: attempt %d, snoozes %d", runs, j.Attempt, j.Snoozes)
			}
			if runs < 3 {
				return processor.Snooze(time.Minute)
			}
			return nil
		})
		p := startProcessor(t, mem, reg, testConfig())
		waitFor(t, 10*time.Minute, "the job archived", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableArchive })
		j, _ := mem.GetJob(context.Background(), id)
		if j.AttemptCount != 1 || j.SnoozeCount != 2 {
			t.Fatalf("archived with %d attempts and %d snoozes, want 1 and 2", j.AttemptCount, j.SnoozeCount)
		}
		if st := p.Stats(); st.Snoozed != 2 || st.Failed != 0 || st.Succeeded != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A snooze beyond jobs.MaxDelay is capped at it, and the log says so with
// what was asked: the job is due in ten years, not in the twenty asked.
func TestASnoozeBeyondTheCapIsCappedAndSaidSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "later"})
		reg := processor.NewRegistry()
		reg.MustHandle("later", func(context.Context, *processor.Job) error { return processor.Snooze(2 * jobs.MaxDelay) })
		core, logs := observer.New(zap.WarnLevel)
		cfg := testConfig()
		cfg.Logger = zap.New(core)
		began := time.Now()
		startProcessor(t, mem, reg, cfg)
		waitFor(t, time.Minute, "the job snoozed", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.SnoozeCount == 1 })
		j, _ := mem.GetJob(context.Background(), id)
		if due := j.ScheduledAt.Sub(began); due < jobs.MaxDelay || due > jobs.MaxDelay+time.Minute {
			t.Fatalf("due in %v, want jobs.MaxDelay (%v)", due, jobs.MaxDelay)
		}
		warned := logs.FilterMessage("snooze capped at jobs.MaxDelay").All()
		if len(warned) != 1 || warned[0].ContextMap()["requested"] != 2*jobs.MaxDelay || warned[0].ContextMap()["job_id"] != id {
			t.Fatalf("warnings %+v, want one naming the job and the delay asked", logs.All())
		}
	})
}

// A handler that snoozes forever is stopped after MaxSnoozes.
func TestSnoozeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "never"})
		reg := processor.NewRegistry()
		reg.MustHandle("never", func(context.Context, *processor.Job) error { return processor.Snooze(time.Second) })
		cfg := testConfig()
		cfg.MaxSnoozes = 3
		startProcessor(t, mem, reg, cfg)
		waitFor(t, 10*time.Minute, "the job dead-lettered", func() bool { j, _ := mem.GetJob(context.Background(), id); return j.Table == jobs.TableDLQ })
		j, _ := mem.GetJob(context.Background(), id)
		if j.FailureReason != jobs.ReasonSnoozeLimitExceeded || j.SnoozeCount != 3 {
			t.Fatalf("dead letter: reason %s, snoozes %d", j.FailureReason, j.SnoozeCount)
		}
	})
}
