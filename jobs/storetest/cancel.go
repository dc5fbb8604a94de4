package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// cancel cancels ids and returns the results.
func cancel(t *testing.T, h *Harness, ids ...int64) []jobs.CancelResult {
	t.Helper()
	rs, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: ids, By: "ops", Reason: "order refunded"})
	if err != nil {
		t.Fatalf("Cancel(%v): %v", ids, err)
	}
	if len(rs) != len(ids) {
		t.Fatalf("Cancel(%v): %d results", ids, len(rs))
	}
	for i, r := range rs {
		if r.ID != ids[i] {
			t.Fatalf("Cancel result %d is for job %d, want %d", i, r.ID, ids[i])
		}
	}
	return rs
}

func wantOutcome(t *testing.T, r jobs.CancelResult, want jobs.CancelOutcome) {
	t.Helper()
	if r.Outcome != want {
		t.Fatalf("cancel of job %d: %s, want %s", r.ID, r.Outcome, want)
	}
}

// wantCancelled checks a job is a Cancelled dead letter whose details name
// the cancel and contain more (a worker's words), if given.
func wantCancelled(t *testing.T, h *Harness, id int64, more string) *jobs.Job {
	t.Helper()
	d := wantTable(t, h, id, jobs.TableDLQ)
	if d.FailureReason != jobs.ReasonCancelled || !strings.Contains(d.ErrorDetails, "cancelled by ops: order refunded") ||
		!strings.Contains(d.ErrorDetails, more) {
		t.Fatalf("dead letter %d: reason %s, details %q", id, d.FailureReason, d.ErrorDetails)
	}
	return d
}

var cancelCases = []testCase{
	{"PendingAndFetchedJobsGoToTheDLQAtOnce", func(t *testing.T, h *Harness) {
		pending := enqueue(t, h, jobs.EnqueueParams{Queue: "later", Delay: time.Hour})
		enqueue(t, h, jobs.EnqueueParams{})
		fetched := claimOne(t, h)
		rs := cancel(t, h, pending, fetched.ID)
		wantOutcome(t, rs[0], jobs.CancelDone)
		wantOutcome(t, rs[1], jobs.CancelDone)
		if rs[0].Queue != "later" || rs[0].Type == "" {
			t.Fatalf("cancel result %+v: want the job's queue and type", rs[0])
		}
		wantCancelled(t, h, pending, "")
		if d := wantCancelled(t, h, fetched.ID, ""); d.AttemptCount != 0 {
			t.Fatalf("cancelled before it ran: attempt %d", d.AttemptCount)
		}
		// I1: the worker that held it cannot start it any more.
		if _, err := h.Store.Start(ctxOf(t), fetched.Ref(), jobs.StartParams{DefaultTimeout: defaultTimeout}); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("Start of a cancelled job: %v, want ErrLeaseLost", err)
		}
		h.Advance(t, 2*time.Hour)
		if got := claim(t, h, worker2, 10, "later", jobs.DefaultQueue); len(got) != 0 {
			t.Fatalf("a cancelled job was claimed: %v", ids(got))
		}
	}},
	{"ARunningJobIsMarkedAndItsHeartbeatSaysSo", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		other := running(t, h, jobs.EnqueueParams{})
		wantOutcome(t, cancel(t, h, j.ID)[0], jobs.CancelRequested)
		s := wantHot(t, h, j.ID, jobs.StatusProcessing)
		if s.CancelRequestedAt.IsZero() || s.CancelNote != "cancelled by ops: order refunded" {
			t.Fatalf("marked job %+v", s)
		}
		h.Advance(t, time.Minute)
		hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{j.Ref(), other.Ref()})
		if err != nil {
			t.Fatal(err)
		}
		if len(hb.Lost) != 0 || len(hb.CancelRequested) != 1 || hb.CancelRequested[0] != j.Ref() {
			t.Fatalf("heartbeat %+v, want only job %d's cancel requested", hb, j.ID)
		}
		if s := get(t, h, j.ID); !s.HeartbeatAt.After(s.StartedAt) {
			t.Fatal("a marked job's heartbeat was not stamped")
		}
		// A second cancel keeps the first request.
		if _, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: []int64{j.ID}, By: "someone else"}); err != nil {
			t.Fatal(err)
		}
		if s := get(t, h, j.ID); s.CancelNote != "cancelled by ops: order refunded" {
			t.Fatalf("note after a second cancel %q", s.CancelNote)
		}
	}},
	{"AMarkedJobThatCompletesIsArchivedOnce", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		cancel(t, h, j.ID)
		if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
			t.Fatalf("Complete of a marked job: %v", err)
		}
		wantTable(t, h, j.ID, jobs.TableArchive)
		if a, d, hot := count(t, h, jobs.TableArchive, jobs.Filter{IDs: []int64{j.ID}}), count(t, h, jobs.TableDLQ, jobs.Filter{}), count(t, h, jobs.TableHot, jobs.Filter{}); a != 1 || d != 0 || hot != 0 {
			t.Fatalf("archive %d, dlq %d, hot %d", a, d, hot)
		}
		wantOutcome(t, cancel(t, h, j.ID)[0], jobs.CancelAlreadyFinished)
	}},
	{"AMarkedJobIsNeverRetriedOrSnoozed", func(t *testing.T, h *Harness) {
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		cancel(t, h, a.ID, b.ID)
		if err := h.Store.Retry(ctxOf(t), a.Ref(), jobs.RetryParams{Delay: time.Minute, Error: "card declined"}); !errors.Is(err, jobs.ErrCancelled) {
			t.Fatalf("Retry of a marked job: %v, want ErrCancelled", err)
		}
		wantCancelled(t, h, a.ID, "card declined")
		if err := h.Store.Snooze(ctxOf(t), b.Ref(), jobs.SnoozeParams{Delay: time.Minute}); !errors.Is(err, jobs.ErrCancelled) {
			t.Fatalf("Snooze of a marked job: %v, want ErrCancelled", err)
		}
		wantCancelled(t, h, b.ID, "")
	}},
	{"AWorkerDeadLettersAMarkedJobWithTheCancelsNote", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		cancel(t, h, j.ID)
		if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonCancelled, Details: "context canceled"}); err != nil {
			t.Fatal(err)
		}
		wantCancelled(t, h, j.ID, "context canceled")
		// A stale worker cannot change it afterwards (I1).
		wantLeaseLost(t, "Complete of a cancelled job", h.Store.Complete(ctxOf(t), j.Ref()))
	}},
	{"FinishedAndUnknownJobsAreReported", func(t *testing.T, h *Harness) {
		done := archived(t, h, jobs.EnqueueParams{}).ID
		dead := deadLetter(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal, "x").ID
		rs := cancel(t, h, done, 1<<40, dead)
		wantOutcome(t, rs[0], jobs.CancelAlreadyFinished)
		wantOutcome(t, rs[1], jobs.CancelNotFound)
		wantOutcome(t, rs[2], jobs.CancelAlreadyFinished)
		if d := wantTable(t, h, dead, jobs.TableDLQ); d.FailureReason != jobs.ReasonFatal {
			t.Fatalf("a cancel changed a dead letter: %+v", d)
		}
	}},
	{"CancelRefusesBadInput", func(t *testing.T, h *Harness) {
		_, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{})
		wantInvalid(t, err, "ids")
		_, err = h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: make([]int64, jobs.MaxCancelIDs+1)})
		wantInvalid(t, err, "ids")
		_, err = h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: []int64{1}, Reason: strings.Repeat("x", jobs.MaxCancelReasonLen+1)})
		wantInvalid(t, err, "cancel_reason")
	}},
	{"PhaseThreeDeadLettersAMarkedJobAsCancelled", func(t *testing.T, h *Harness) {
		setQueue(t, h, "deadline", jobs.QueueUpdate{ExecutionTimeout: secs(60)})
		j := running(t, h, jobs.EnqueueParams{Queue: "deadline"})
		cancel(t, h, j.ID)
		h.Advance(t, 61*time.Second)
		beat(t, h, j.Ref())
		rs := rescueExpired(t, h)
		if len(rs) != 1 || rs[0].Reason != jobs.ReasonCancelled {
			t.Fatalf("phase 3: %+v, want the job with reason Cancelled", rs)
		}
		wantCancelled(t, h, j.ID, "")
	}},
	{"CancelledDeadLettersAreFilteredResurrectedAndPurged", func(t *testing.T, h *Harness) {
		deadLetter(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal, "x")
		a := enqueue(t, h, jobs.EnqueueParams{Queue: "orders"})
		b := enqueue(t, h, jobs.EnqueueParams{Queue: "orders"})
		cancel(t, h, a, b)
		cancelled := jobs.ReasonCancelled
		if n := count(t, h, jobs.TableDLQ, jobs.Filter{Reason: &cancelled}); n != 2 {
			t.Fatalf("%d Cancelled dead letters, want 2", n)
		}
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{a}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		wantHot(t, h, a, jobs.StatusPending)
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{Reason: &cancelled}}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
	}},
	{"SnoozeGivesTheAttemptBack", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		now, _ := h.Store.Now(ctxOf(t))
		if err := h.Store.Snooze(ctxOf(t), j.Ref(), jobs.SnoozeParams{Delay: 10 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		s := wantHot(t, h, j.ID, jobs.StatusPending)
		if s.AttemptCount != 0 || s.SnoozeCount != 1 || !closeTo(s.ScheduledAt, now.Add(10*time.Minute), 2*time.Second) || s.WorkerID != "" {
			t.Fatalf("snoozed job %+v: want attempt 0, one snooze, due in 10 minutes", s)
		}
		wantLeaseLost(t, "Snooze again with the same lease", h.Store.Snooze(ctxOf(t), j.Ref(), jobs.SnoozeParams{}))
		h.Advance(t, 11*time.Minute)
		again := claimOne(t, h)
		if st := start(t, h, again.Ref()); st.AttemptCount != 1 {
			t.Fatalf("the run after a snooze is attempt %d, want 1", st.AttemptCount)
		}
		wantInvalid(t, h.Store.Snooze(ctxOf(t), again.Ref(), jobs.SnoozeParams{Delay: -time.Second}), "delay")
		if err := h.Store.Complete(ctxOf(t), again.Ref()); err != nil {
			t.Fatal(err)
		}
		if a := wantTable(t, h, j.ID, jobs.TableArchive); a.SnoozeCount != 1 || a.AttemptCount != 1 {
			t.Fatalf("archived %+v: want one attempt and one snooze kept", a)
		}
	}},
	{"RetryManyDeadLettersAMarkedJobAlone", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		cancel(t, h, a.ID)
		rs, err := bw.RetryMany(ctxOf(t), []jobs.RetryItem{{Ref: a.Ref()}, {Ref: b.Ref()}})
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "RetryMany", rs, jobs.ErrCancelled, nil)
		wantCancelled(t, h, a.ID, "")
		wantHot(t, h, b.ID, jobs.StatusPending)
	}},
}
