package chokaqtest_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/chokaqtest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

type chargeArgs struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

func (chargeArgs) Kind() string { return "billing.charge" }

type otherArgs struct{}

func (otherArgs) Kind() string { return "other" }

// newWorker registers one charge handler that runs fn.
func newWorker(t *testing.T, fn func(ctx context.Context, job *chokaq.Job, a chargeArgs) error) *chokaqtest.Worker {
	t.Helper()
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, fn)
	w, err := chokaqtest.NewWorker(t.Context(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWorkSucceeds(t *testing.T) {
	var got chargeArgs
	w := newWorker(t, func(_ context.Context, _ *chokaq.Job, a chargeArgs) error { got = a; return nil })
	o, err := w.Work(t.Context(), chargeArgs{Order: "A-1", Cents: 500}, &chokaq.EnqueueOpts{Queue: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Outcome != processor.OutcomeSucceeded || o.Job.Table != jobs.TableArchive || o.Attempt != 1 || o.HandlerErr != nil {
		t.Fatalf("outcome %+v, job in %s", o.Result, o.Job.Table)
	}
	if got != (chargeArgs{Order: "A-1", Cents: 500}) || o.Job.Queue != "billing" {
		t.Fatalf("handler saw %+v on queue %s", got, o.Job.Queue)
	}
}

// A failing job is retried on the backoff schedule, on the manual clock,
// until its last attempt dead-letters it.
func TestWorkRetriesThenDeadLetters(t *testing.T) {
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return errors.New("card declined") })
	start := w.Clock().Now()
	o, err := w.Work(t.Context(), chargeArgs{Order: "A-2"}, &chokaq.EnqueueOpts{MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if o.Outcome != processor.OutcomeRetried || o.Job.Status != jobs.StatusPending || o.Job.LastError != "card declined" {
		t.Fatalf("attempt 1: %+v, job %+v", o.Result, o.Job)
	}
	if want := start.Add(3 * time.Second); !o.Job.ScheduledAt.Equal(want) {
		t.Fatalf("retry due at %v, want %v (3s base delay, no jitter)", o.Job.ScheduledAt, want)
	}
	o, err = w.WorkJob(t.Context(), o.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Outcome != processor.OutcomeRetried || o.Attempt != 2 {
		t.Fatalf("attempt 2: %+v", o)
	}
	if want := start.Add(3*time.Second + 6*time.Second); !o.Job.ScheduledAt.Equal(want) {
		t.Fatalf("second retry due at %v, want %v", o.Job.ScheduledAt, want)
	}
	o, err = w.WorkJob(t.Context(), o.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Outcome != processor.OutcomeDeadLettered || o.Reason != jobs.ReasonMaxRetriesExceeded || o.Job.Table != jobs.TableDLQ || o.Attempt != 3 {
		t.Fatalf("attempt 3: %+v, job in %s", o.Result, o.Job.Table)
	}
	if !strings.Contains(o.Job.ErrorDetails, "card declined") {
		t.Fatalf("details %q", o.Job.ErrorDetails)
	}
}

func TestWorkOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fn      func(context.Context, *chokaq.Job, chargeArgs) error
		outcome processor.Outcome
		reason  jobs.FailureReason
		check   func(error) bool
	}{
		{"permanent", func(context.Context, *chokaq.Job, chargeArgs) error {
			return chokaq.Permanent(errors.New("order cancelled"))
		}, processor.OutcomeDeadLettered, jobs.ReasonFatal, chokaq.IsPermanent},
		{"panic", func(context.Context, *chokaq.Job, chargeArgs) error { panic("nil map") },
			processor.OutcomeRetried, 0, func(err error) bool { _, ok := errors.AsType[*chokaq.PanicError](err); return ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, tc.fn)
			o, err := w.Work(t.Context(), chargeArgs{Order: "A-3"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.Outcome != tc.outcome || o.Reason != tc.reason || !tc.check(o.HandlerErr) {
				t.Fatalf("outcome %+v", o.Result)
			}
		})
	}
}

// A payload the handler cannot decode, and a kind with no handler, are
// dead-lettered at once.
func TestWorkUndecodableAndUnknown(t *testing.T) {
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return nil })
	ctx := t.Context()
	bad, err := w.Client().EnqueueRaw(ctx, jobs.EnqueueParams{Type: "billing.charge", Payload: []byte(`{"cents":"five"}`)})
	if err != nil {
		t.Fatal(err)
	}
	o, err := w.WorkJob(ctx, bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := errors.AsType[*chokaq.DecodeError](o.HandlerErr); !ok || o.Reason != jobs.ReasonFatal {
		t.Fatalf("undecodable payload: %+v", o.Result)
	}
	o, err = w.Work(ctx, otherArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reason != jobs.ReasonFatal || !strings.Contains(o.Job.ErrorDetails, `unknown job type "other"`) {
		t.Fatalf("unknown kind: %+v %q", o.Result, o.Job.ErrorDetails)
	}
}

func TestWorkExecutionTimeout(t *testing.T) {
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, _ *chokaq.Job, _ chargeArgs) error {
		<-ctx.Done()
		return ctx.Err()
	})
	w, err := chokaqtest.NewWorker(t.Context(), reg, &chokaqtest.WorkerConfig{ExecutionTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o, err := w.Work(t.Context(), chargeArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reason != jobs.ReasonTimeout {
		t.Fatalf("outcome %+v", o.Result)
	}
}

// WorkJob runs exactly the job it is given, or refuses.
func TestWorkJobRefusesWhatItCannotRunAlone(t *testing.T) {
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return nil })
	ctx := t.Context()
	a, _ := w.Client().Enqueue(ctx, chargeArgs{Order: "1"}, nil)
	b, _ := w.Client().Enqueue(ctx, chargeArgs{Order: "2"}, nil)
	if _, err := w.WorkJob(ctx, b.ID); !errors.Is(err, chokaqtest.ErrNotRunnable) || !strings.Contains(err.Error(), "come first") {
		t.Fatalf("two due jobs: %v", err)
	}
	if o, err := w.WorkJob(ctx, a.ID); err != nil || o.Outcome != processor.OutcomeSucceeded {
		t.Fatalf("first job: %v %v", o, err)
	}
	if _, err := w.WorkJob(ctx, a.ID); !errors.Is(err, chokaqtest.ErrNotRunnable) {
		t.Fatalf("archived job: %v", err)
	}
	if err := w.Client().PauseQueue(ctx, jobs.DefaultQueue); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WorkJob(ctx, b.ID); !errors.Is(err, chokaqtest.ErrNotRunnable) || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("paused queue: %v", err)
	}
	if _, err := w.WorkJob(ctx, 999); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("missing job: %v", err)
	}
}

// A delayed job is made due by moving the clock, not by waiting.
func TestWorkJobAdvancesTheClockToADelayedJob(t *testing.T) {
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return nil })
	start := w.Clock().Now()
	o, err := w.Work(t.Context(), chargeArgs{}, &chokaq.EnqueueOpts{Delay: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if o.Outcome != processor.OutcomeSucceeded || !w.Clock().Now().Equal(start.Add(24*time.Hour)) {
		t.Fatalf("outcome %v, clock moved %v", o.Outcome, w.Clock().Now().Sub(start))
	}
}

// fakeTB records a failure instead of failing the test.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	for _, a := range args {
		f.failed += a.(string)
	}
	f.mu.Unlock()
	runtime.Goexit()
}

// failure runs fn with a fakeTB and returns what it failed with.
func failure(fn func(tb testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.failed
}

func TestRequireEnqueued(t *testing.T) {
	ctx := t.Context()
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return nil })
	c := w.Client()
	if _, err := c.Enqueue(ctx, chargeArgs{Order: "A", Cents: 100}, &chokaq.EnqueueOpts{Queue: "billing", Priority: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, chargeArgs{Order: "B", Cents: 200}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, otherArgs{}, &chokaq.EnqueueOpts{Queue: "misc"}); err != nil {
		t.Fatal(err)
	}

	got := chokaqtest.RequireEnqueued(t, c.Admin(), &chokaqtest.Match[chargeArgs]{Queue: "billing"})
	if got.Args.Order != "A" || got.Job.Priority != 5 {
		t.Fatalf("found %+v", got)
	}
	chokaqtest.RequireEnqueued(t, c.Admin(), &chokaqtest.Match[chargeArgs]{Args: func(a chargeArgs) bool { return a.Cents == 200 }})
	all := chokaqtest.RequireEnqueuedN[chargeArgs](t, c.Admin(), 2, nil)
	if all[0].Args.Order != "A" || all[1].Args.Order != "B" {
		t.Fatalf("order %+v", all)
	}
	chokaqtest.RequireNotEnqueued(t, c.Admin(), &chokaqtest.Match[chargeArgs]{Queue: "misc"})

	// Each assertion can fail, and says what it found instead.
	msg := failure(func(tb testing.TB) { chokaqtest.RequireEnqueued[chargeArgs](tb, c.Admin(), nil) })
	if !strings.Contains(msg, "want 1 enqueued billing.charge job(s), found 2") || !strings.Contains(msg, `"order":"B"`) {
		t.Fatalf("two matches: %q", msg)
	}
	msg = failure(func(tb testing.TB) {
		chokaqtest.RequireEnqueued(tb, c.Admin(), &chokaqtest.Match[chargeArgs]{Queue: "refunds"})
	})
	if !strings.Contains(msg, `on queue "refunds"`) || !strings.Contains(msg, "1 x other on misc") || !strings.Contains(msg, "1 x billing.charge on billing") {
		t.Fatalf("no match: %q", msg)
	}
	msg = failure(func(tb testing.TB) { chokaqtest.RequireNotEnqueued[otherArgs](tb, c.Admin(), nil) })
	if !strings.Contains(msg, "want 0 enqueued other job(s), found 1") {
		t.Fatalf("unexpected job: %q", msg)
	}

	// A job that ran is still found: in the archive.
	if _, err := w.Work(ctx, otherArgs{}, &chokaq.EnqueueOpts{Queue: "ran"}); err != nil {
		t.Fatal(err)
	}
	if e := chokaqtest.RequireEnqueued(t, c.Admin(), &chokaqtest.Match[otherArgs]{Queue: "ran"}); e.Job.Table != jobs.TableArchive && e.Job.Table != jobs.TableDLQ {
		t.Fatalf("ran job in %s", e.Job.Table)
	}
}

func TestEnqueuedJobsReportsAnUndecodablePayload(t *testing.T) {
	w := newWorker(t, func(context.Context, *chokaq.Job, chargeArgs) error { return nil })
	r, err := w.Client().EnqueueRaw(t.Context(), jobs.EnqueueParams{Type: "billing.charge", Payload: []byte(`[1]`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chokaqtest.EnqueuedJobs[chargeArgs](t.Context(), w.Client().Admin(), nil)
	if err == nil || !strings.Contains(err.Error(), "does not decode") || !strings.Contains(err.Error(), strconv.FormatInt(r.ID, 10)) {
		t.Fatalf("err = %v", err)
	}
}
