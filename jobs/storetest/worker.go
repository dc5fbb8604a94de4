package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var workerCases = []testCase{
	{"StartMovesToProcessing", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j := claimOne(t, h)
		before, _ := h.Store.Now(ctxOf(t))
		st := start(t, h, j.Ref())
		if st.AttemptCount != 1 || st.Timeout != defaultTimeout || !closeTo(st.DeadlineAt, st.StartedAt.Add(defaultTimeout), time.Millisecond) {
			t.Fatalf("Start = %+v, want attempt 1 and deadline = start + %v", st, defaultTimeout)
		}
		s := wantHot(t, h, j.ID, jobs.StatusProcessing)
		if s.AttemptCount != 1 || s.StartedAt.Before(before.Add(-time.Second)) || !closeTo(s.HeartbeatAt, s.StartedAt, time.Millisecond) {
			t.Fatalf("stored %+v, want attempt 1 and heartbeat = start", s)
		}
	}},
	{"StartUsesTheQueueExecutionTimeout", func(t *testing.T, h *Harness) {
		setQueue(t, h, "slow", jobs.QueueUpdate{ExecutionTimeout: secs(90)})
		enqueue(t, h, jobs.EnqueueParams{Queue: "slow"})
		st := start(t, h, claimOne(t, h, "slow").Ref())
		if st.Timeout != 90*time.Second || !closeTo(st.DeadlineAt, st.StartedAt.Add(90*time.Second), time.Millisecond) {
			t.Fatalf("Start = %+v, want the queue's 90s timeout", st)
		}
	}},
	{"StartAgainWithTheSameLeaseReportsTheFirstStart", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j := claimOne(t, h)
		first := start(t, h, j.Ref())
		h.Advance(t, time.Second)
		again := start(t, h, j.Ref())
		if again.AttemptCount != 1 || !closeTo(again.StartedAt, first.StartedAt, time.Millisecond) ||
			!closeTo(again.DeadlineAt, first.DeadlineAt, time.Millisecond) || again.Timeout != first.Timeout {
			t.Fatalf("second start %+v, want the first %+v again", again, first)
		}
		if s := wantHot(t, h, j.ID, jobs.StatusProcessing); s.AttemptCount != 1 {
			t.Fatalf("attempt %d after a repeated start, want 1", s.AttemptCount)
		}
	}},
	{"StartRejectsZeroDefaultTimeout", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		_, err := h.Store.Start(ctxOf(t), claimOne(t, h).Ref(), jobs.StartParams{})
		wantInvalid(t, err, "default_timeout")
	}},
	{"HeartbeatStampsAndReportsLost", func(t *testing.T, h *Harness) {
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		h.Advance(t, time.Minute)
		stale := jobs.LeaseRef{ID: b.ID, Lease: b.Lease + 7}
		unknown := jobs.LeaseRef{ID: 1 << 40, Lease: 1}
		hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{a.Ref(), stale, unknown})
		lost := hb.Lost
		if err != nil {
			t.Fatal(err)
		}
		if len(lost) != 2 || !containsRef(lost, stale) || !containsRef(lost, unknown) {
			t.Fatalf("lost = %v, want the stale and the unknown ref", lost)
		}
		ja, jb := get(t, h, a.ID), get(t, h, b.ID)
		if !ja.HeartbeatAt.After(ja.StartedAt.Add(30 * time.Second)) {
			t.Fatalf("heartbeat %v not moved past start %v", ja.HeartbeatAt, ja.StartedAt)
		}
		if !closeTo(jb.HeartbeatAt, jb.StartedAt, time.Millisecond) {
			t.Fatalf("a stale heartbeat moved job %d's heartbeat to %v", b.ID, jb.HeartbeatAt)
		}
		if hb, err := h.Store.Heartbeat(ctxOf(t), nil); err != nil || len(hb.Lost)+len(hb.CancelRequested) != 0 {
			t.Fatalf("empty heartbeat: %+v, %v", hb, err)
		}
	}},
	{"HeartbeatOfAFetchedJobIsLost", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j := claimOne(t, h)
		hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{j.Ref()})
		lost := hb.Lost
		if err != nil || len(lost) != 1 {
			t.Fatalf("heartbeat of a Fetched job: lost %v err %v, want it lost", lost, err)
		}
	}},
	{"CompleteArchivesUnderTheSameID", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{Payload: []byte("p")})
		h.Advance(t, 3*time.Second)
		if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
			t.Fatal(err)
		}
		a := wantTable(t, h, j.ID, jobs.TableArchive)
		if string(a.Payload) != "p" || a.AttemptCount != 1 || a.FinishedAt.IsZero() || a.Duration < 2*time.Second {
			t.Fatalf("archived %+v, want payload, attempt 1, finish time and a duration of about 3s", a)
		}
	}},
	{"RetryReturnsToPendingAfterDelay", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		if err := h.Store.Retry(ctxOf(t), j.Ref(), jobs.RetryParams{Delay: 30 * time.Second, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		p := wantHot(t, h, j.ID, jobs.StatusPending)
		if p.AttemptCount != 1 || p.LastError != "boom" || p.WorkerID != "" {
			t.Fatalf("retried job %+v, want attempt 1 kept, last error kept, no worker", p)
		}
		if got := claim(t, h, worker1, 1); len(got) != 0 {
			t.Fatal("claimed a retried job before its backoff")
		}
		h.Advance(t, 31*time.Second)
		again := claimOne(t, h)
		if again.ID != j.ID || again.Lease != j.Lease+1 {
			t.Fatalf("reclaimed %+v, want job %d with lease %d", again, j.ID, j.Lease+1)
		}
		if st := start(t, h, again.Ref()); st.AttemptCount != 2 {
			t.Fatalf("second start attempt %d, want 2", st.AttemptCount)
		}
	}},
	{"DeadLetterRecordsReasonAndDetails", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "bad input"}); err != nil {
			t.Fatal(err)
		}
		d := wantTable(t, h, j.ID, jobs.TableDLQ)
		if d.FailureReason != jobs.ReasonFatal || d.ErrorDetails != "bad input" || d.FinishedAt.IsZero() {
			t.Fatalf("dead letter %+v", d)
		}
	}},
	{"DeadLetterRejectsUnknownReason", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: 42})
		wantInvalid(t, err, "reason")
		wantHot(t, h, j.ID, jobs.StatusProcessing)
	}},
	{"ReleaseKeepsAttemptCount", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		if err := h.Store.Retry(ctxOf(t), j.Ref(), jobs.RetryParams{}); err != nil {
			t.Fatal(err)
		}
		again := claimOne(t, h)
		n, err := h.Store.Release(ctxOf(t), []jobs.LeaseRef{again.Ref(), {ID: again.ID, Lease: 999}})
		if err != nil || n != 1 {
			t.Fatalf("Release = %d, %v; want 1 released and the stale ref skipped", n, err)
		}
		p := wantHot(t, h, j.ID, jobs.StatusPending)
		if p.AttemptCount != 1 || p.WorkerID != "" {
			t.Fatalf("released job attempt %d worker %q, want 1 and none", p.AttemptCount, p.WorkerID)
		}
		if got := claimOne(t, h); got.ID != j.ID {
			t.Fatal("a released job is not claimable at once")
		}
	}},
	{"ReleaseOfAProcessingJobDoesNothing", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		if n, err := h.Store.Release(ctxOf(t), []jobs.LeaseRef{j.Ref()}); err != nil || n != 0 {
			t.Fatalf("Release of a Processing job = %d, %v; want 0", n, err)
		}
		wantHot(t, h, j.ID, jobs.StatusProcessing)
	}},
	{"StaleLeaseChangesNothing", staleLeaseCases},
}

// staleLeaseCases claims a job, lets a second claim take it over, then checks
// that every transition with the first lease is refused and changes nothing.
func staleLeaseCases(t *testing.T, h *Harness) {
	ops := []struct {
		name string
		// processing says whether the new owner should have started the job,
		// so the stale op meets the status it would otherwise accept.
		processing bool
		do         func(ctx context.Context, ref jobs.LeaseRef) error
	}{
		{"Start", false, func(ctx context.Context, ref jobs.LeaseRef) error {
			_, err := h.Store.Start(ctx, ref, jobs.StartParams{DefaultTimeout: time.Minute})
			return err
		}},
		{"Heartbeat", true, func(ctx context.Context, ref jobs.LeaseRef) error {
			hb, err := h.Store.Heartbeat(ctx, []jobs.LeaseRef{ref})
			lost := hb.Lost
			if err == nil && len(lost) == 1 {
				return jobs.ErrLeaseLost
			}
			return err
		}},
		{"Complete", true, func(ctx context.Context, ref jobs.LeaseRef) error { return h.Store.Complete(ctx, ref) }},
		{"Retry", true, func(ctx context.Context, ref jobs.LeaseRef) error {
			return h.Store.Retry(ctx, ref, jobs.RetryParams{Error: "stale"})
		}},
		{"DeadLetter", true, func(ctx context.Context, ref jobs.LeaseRef) error {
			return h.Store.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonFatal})
		}},
		{"Snooze", true, func(ctx context.Context, ref jobs.LeaseRef) error {
			return h.Store.Snooze(ctx, ref, jobs.SnoozeParams{Delay: time.Minute})
		}},
		{"Release", false, func(ctx context.Context, ref jobs.LeaseRef) error {
			n, err := h.Store.Release(ctx, []jobs.LeaseRef{ref})
			if err == nil && n == 0 {
				return jobs.ErrLeaseLost
			}
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			enqueue(t, h, jobs.EnqueueParams{Type: "stale." + op.name})
			old := claimOne(t, h)
			start(t, h, old.Ref())
			h.Advance(t, globalZombie+time.Minute)
			// The first worker went quiet: rescue takes the job away from it.
			if _, err := h.Store.RescueZombies(ctxOf(t), jobs.RescueParams{Timeout: globalZombie}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{old.ID}}}); err != nil {
				t.Fatal(err)
			}
			cur := claim(t, h, worker2, 1)
			if len(cur) != 1 || cur[0].ID != old.ID || cur[0].Lease <= old.Lease {
				t.Fatalf("new claim %v, want job %d with a higher lease than %d", cur, old.ID, old.Lease)
			}
			if op.processing {
				start(t, h, cur[0].Ref())
			}
			before := get(t, h, old.ID)
			err := op.do(ctxOf(t), old.Ref())
			if !errors.Is(err, jobs.ErrLeaseLost) {
				t.Fatalf("%s with stale lease %d (current %d): err = %v, want ErrLeaseLost", op.name, old.Lease, cur[0].Lease, err)
			}
			after := get(t, h, old.ID)
			if !sameState(before, after) {
				t.Fatalf("%s with a stale lease changed the job:\nbefore %+v\nafter  %+v", op.name, before, after)
			}
		})
	}
}

// sameState compares what a stale transition must not change.
func sameState(a, b *jobs.Job) bool {
	return a.Table == b.Table && a.Status == b.Status && a.Lease == b.Lease && a.WorkerID == b.WorkerID &&
		a.AttemptCount == b.AttemptCount && a.HeartbeatAt.Equal(b.HeartbeatAt) && a.LastError == b.LastError &&
		a.ScheduledAt.Equal(b.ScheduledAt) && a.DeadlineAt.Equal(b.DeadlineAt)
}

func containsRef(refs []jobs.LeaseRef, r jobs.LeaseRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}
