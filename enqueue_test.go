package chokaq_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/chokaqtest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schedule"
)

func enqueueOnly(t *testing.T) *chokaq.Client {
	t.Helper()
	c, err := chokaq.New(t.Context(), chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true, DefaultMaxAttempts: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unencodable cannot be marshalled: a channel has no JSON form.
type unencodable struct{ C chan int }

func (unencodable) Kind() string { return "broken" }

func TestEnqueueEncodesArgsAndTakesTheKindFromThem(t *testing.T) {
	ctx := t.Context()
	c := enqueueOnly(t)
	r, err := c.Enqueue(ctx, WelcomeArgs{Email: "ada@example.com"}, &chokaq.EnqueueOpts{Tags: []string{"x"}, CreatedBy: "signup"})
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.GetJob(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Type != "mail.welcome" || string(j.Payload) != `{"email":"ada@example.com"}` || j.Queue != jobs.DefaultQueue ||
		j.MaxAttempts != 7 || j.CreatedBy != "signup" || len(j.Tags) != 1 {
		t.Fatalf("stored %+v", j)
	}
}

// Args' own defaults apply field by field under the call's options.
func TestEnqueueMergesArgsDefaultsUnderOptions(t *testing.T) {
	ctx := t.Context()
	c := enqueueOnly(t)
	r, err := c.Enqueue(ctx, ReportArgs{}, &chokaq.EnqueueOpts{Queue: "urgent"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := c.GetJob(ctx, r.ID)
	if j.Queue != "urgent" || j.MaxAttempts != 3 {
		t.Fatalf("queue %q attempts %d: want the call's queue and the Args' attempts", j.Queue, j.MaxAttempts)
	}
}

func TestEnqueueRefusesWhatItCannotEncode(t *testing.T) {
	ctx := t.Context()
	c := enqueueOnly(t)
	if _, err := c.Enqueue(ctx, nil, nil); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Fatalf("nil args: %v", err)
	}
	_, err := c.Enqueue(ctx, unencodable{}, nil)
	if err == nil || !strings.Contains(err.Error(), "encode the args of a broken job") {
		t.Fatalf("unencodable args: %v", err)
	}
	_, err = c.EnqueueMany(ctx, chokaq.EnqueueItem{Args: WelcomeArgs{}}, chokaq.EnqueueItem{Args: unencodable{}})
	if err == nil || !strings.Contains(err.Error(), "item 1") {
		t.Fatalf("EnqueueMany with a bad item: %v", err)
	}
	// All or none: the good item was not added either.
	if n, _ := c.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("%d jobs added by a refused batch", n)
	}
	if _, err := c.Enqueue(ctx, WelcomeArgs{}, &chokaq.EnqueueOpts{Queue: "bad queue name!"}); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Fatalf("bad queue: %v", err)
	}
}

func TestHandleRefusesNilAndDuplicates(t *testing.T) {
	reg := chokaq.NewRegistry()
	fn := func(context.Context, *chokaq.Job, WelcomeArgs) error { return nil }
	if err := chokaq.Handle(reg, fn); err != nil {
		t.Fatal(err)
	}
	if err := chokaq.Handle(reg, fn); err == nil || !strings.Contains(err.Error(), "mail.welcome") {
		t.Fatalf("second handler for a kind: %v", err)
	}
	if err := chokaq.Handle[WelcomeArgs](nil, fn); err == nil {
		t.Fatal("nil registry accepted")
	}
	if err := chokaq.Handle[WelcomeArgs](reg, nil); err == nil {
		t.Fatal("nil handler accepted")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustHandle of a duplicate did not panic")
		}
	}()
	chokaq.MustHandle(reg, fn)
}

// The Client's operator methods reach the store's admin role: listing,
// counting, queue control, purge.
func TestClientOperatorMethods(t *testing.T) {
	ctx := t.Context()
	w, err := chokaqtest.NewWorker(ctx, chokaq.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Client()
	for range 3 {
		if _, err := c.Enqueue(ctx, WelcomeArgs{}, &chokaq.EnqueueOpts{Queue: "mail"}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.ListJobs(ctx, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Queue: "mail"}, Limit: 2})
	if err != nil || len(page.Jobs) != 2 || page.NextBeforeID == 0 || page.Jobs[0].ID != 3 {
		t.Fatalf("ListJobs = %+v, %v", page, err)
	}
	if err := c.PauseQueue(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	qs, err := c.Queues(ctx)
	if err != nil || len(qs) != 1 || !qs[0].Paused {
		t.Fatalf("Queues after pause = %+v, %v", qs, err)
	}
	if err := c.ResumeQueue(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	mw := 2
	if s, err := c.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: &mw}); err != nil || s.Paused || s.MaxWorkers != 2 {
		t.Fatalf("UpdateQueue = %+v, %v", s, err)
	}
	// One job to the archive, then purge it.
	if o, err := w.WorkJob(ctx, 1); err != nil || o.Job.Table != jobs.TableDLQ {
		t.Fatalf("work: %+v %v", o, err) // no handler for mail.welcome: dead-lettered as Fatal
	}
	if n, err := c.Purge(ctx, jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{1}}}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if _, err := c.GetJob(ctx, 1); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("purged job: %v", err)
	}
	if n, err := c.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); err != nil || n != 2 {
		t.Fatalf("CountJobs = %d, %v", n, err)
	}
}

// Client.Cancel reports each job's fate in order; a job that never ran is
// a Cancelled dead letter at once, naming who cancelled it.
func TestClientCancel(t *testing.T) {
	ctx := t.Context()
	c := enqueueOnly(t)
	r, err := c.Enqueue(ctx, WelcomeArgs{Email: "ada@example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.CancelWith(ctx, jobs.CancelParams{IDs: []int64{r.ID, 999}, By: "support", Reason: "account deleted"})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Outcome != jobs.CancelDone || rs[1].Outcome != jobs.CancelNotFound {
		t.Fatalf("results %+v", rs)
	}
	j, err := c.GetJob(ctx, r.ID)
	if err != nil || j.FailureReason != jobs.ReasonCancelled || j.ErrorDetails != "cancelled by support: account deleted" {
		t.Fatalf("job %+v, %v", j, err)
	}
	if rs, err := c.Cancel(ctx, r.ID); err != nil || rs[0].Outcome != jobs.CancelAlreadyFinished {
		t.Fatalf("second cancel: %+v, %v", rs, err)
	}
	if _, err := c.Cancel(ctx); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Fatalf("Cancel of nothing: %v", err)
	}
}

// BenchmarkClientEnqueueRaw is one enqueue through the Client onto the
// in-memory store: the Client's own work (defaults, its limits) on top of
// the store's.
func BenchmarkClientEnqueueRaw(b *testing.B) {
	c, err := chokaq.New(b.Context(), chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := jobs.EnqueueParams{Type: "mail.welcome", Payload: []byte(`{"email":"ada@example.com"}`), Tags: []string{"signup"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.EnqueueRaw(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// Config.Limits hold on every enqueue path with a store passed in, as they
// do for the schedules' payloads: an 11-byte payload is refused under a
// 10-byte limit, naming the field, and never reaches the store.
func TestTheClientsLimitsHoldWithAGivenStore(t *testing.T) {
	ctx := t.Context()
	store := memstore.New() // its own limit is the default, 1 MiB
	c, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true, DisableRescue: true, Limits: jobs.Limits{MaxPayloadBytes: 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eleven := jobs.EnqueueParams{Type: "t", Payload: []byte(`"123456789"`)}
	ten := jobs.EnqueueParams{Type: "t", Payload: []byte(`"12345678"`)}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), "payload (11 bytes): must be at most 10 bytes") {
			t.Errorf("%s: %v, want the payload refused under the Client's 10-byte limit", what, err)
		}
	}
	_, err = c.EnqueueRaw(ctx, eleven)
	refused("EnqueueRaw", err)
	_, err = c.EnqueueRawMany(ctx, []jobs.EnqueueParams{ten, eleven})
	refused("EnqueueRawMany", err)
	_, err = c.Enqueue(ctx, WelcomeArgs{Email: "a"}, nil) // {"email":"a"} is 13 bytes
	if !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), "must be at most 10 bytes") {
		t.Errorf("Enqueue: %v", err)
	}
	_, err = c.EnqueueMany(ctx, chokaq.EnqueueItem{Args: WelcomeArgs{Email: "a"}})
	if !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Errorf("EnqueueMany: %v", err)
	}
	if n, _ := store.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("%d jobs reached the store past the Client's limit", n)
	}
	if _, err := c.EnqueueRaw(ctx, ten); err != nil {
		t.Fatalf("a payload at the limit: %v", err)
	}
	if _, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true, Limits: jobs.Limits{MaxPayloadBytes: 10},
		RawSchedules: []schedule.Schedule{{Name: "s", Cron: "@daily", Job: schedule.Job{Type: "t", Payload: eleven.Payload}}}}, nil); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Errorf("a schedule's payload over the limit: %v", err)
	}
	// A schedule another process defined, under its own limits, is
	// triggered through this Client under this Client's.
	other, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true, DisableRescue: true,
		RawSchedules: []schedule.Schedule{{Name: "s", Cron: "@daily", Job: schedule.Job{Type: "t", Payload: eleven.Payload}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.TriggerSchedule(ctx, "s")
	refused("TriggerSchedule", err)
}

// New refuses limits and defaults that would fail every enqueue, or
// silently become something else: -1 attempts used to become 3, and 5000
// passed New to fail at every enqueue.
func TestNewRefusesEnqueueDefaultsThatCannotWork(t *testing.T) {
	for _, c := range []struct {
		cfg  chokaq.Config
		want string
	}{
		{chokaq.Config{DefaultMaxAttempts: -1}, "chokaq: DefaultMaxAttempts = -1: must be between 1 and 1000 (0 takes jobs.DefaultMaxAttempts, 3)"},
		{chokaq.Config{DefaultMaxAttempts: 5000}, "chokaq: DefaultMaxAttempts = 5000: must be between 1 and 1000 (0 takes jobs.DefaultMaxAttempts, 3)"},
		{chokaq.Config{Limits: jobs.Limits{MaxPayloadBytes: -1}}, "chokaq: Limits.MaxPayloadBytes = -1: must be between 1 and 2147483647 (0 takes 1048576)"},
	} {
		c.cfg.Store, c.cfg.DisableProcessor = memstore.New(), true
		_, err := chokaq.New(t.Context(), c.cfg, nil)
		if err == nil || err.Error() != c.want || !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Errorf("New = %v, want %q", err, c.want)
		}
	}
	for _, n := range []int{0, 1, jobs.MaxMaxAttempts} {
		if _, err := chokaq.New(t.Context(), chokaq.Config{Store: memstore.New(), DisableProcessor: true, DefaultMaxAttempts: n}, nil); err != nil {
			t.Errorf("DefaultMaxAttempts %d: %v", n, err)
		}
	}
}

// PanickyArgs' Kind panics, as a Kind that reads a field of a nil pointer
// would.
type PanickyArgs struct{}

func (PanickyArgs) Kind() string { panic("no kind today") }

// NilKindArgs' Kind dereferences its receiver, and Handle calls it on the
// zero value: a nil pointer.
type NilKindArgs struct{ kind string }

func (a *NilKindArgs) Kind() string { return a.kind }

// A Kind that panics is an error naming the type, from Handle, every
// enqueue and New with a schedule of it: it never escapes into the caller.
func TestAPanickingKindIsAnErrorNamingTheType(t *testing.T) {
	ctx := t.Context()
	named := func(what string, err error, typ string) {
		t.Helper()
		if !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), typ+".Kind() panicked") {
			t.Errorf("%s: %v, want an invalid-argument error naming %s", what, err, typ)
		}
	}
	reg := chokaq.NewRegistry()
	named("Handle", chokaq.Handle(reg, func(context.Context, *chokaq.Job, PanickyArgs) error { return nil }), "chokaq_test.PanickyArgs")
	named("Handle of a pointer", chokaq.Handle(reg, func(context.Context, *chokaq.Job, *NilKindArgs) error { return nil }), "*chokaq_test.NilKindArgs")
	c := enqueueOnly(t)
	_, err := c.Enqueue(ctx, PanickyArgs{}, nil)
	named("Enqueue", err, "chokaq_test.PanickyArgs")
	_, err = c.EnqueueMany(ctx, chokaq.EnqueueItem{Args: WelcomeArgs{Email: "a"}}, chokaq.EnqueueItem{Args: PanickyArgs{}})
	named("EnqueueMany", err, "chokaq_test.PanickyArgs")
	_, err = chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableProcessor: true,
		Schedules: []chokaq.Schedule{{Name: "nightly", Cron: "@daily", Args: PanickyArgs{}}}}, nil)
	named("New with a schedule", err, "chokaq_test.PanickyArgs")
	if err == nil || !strings.Contains(err.Error(), `schedule "nightly"`) {
		t.Errorf("New: %v, want the schedule named", err)
	}
}
