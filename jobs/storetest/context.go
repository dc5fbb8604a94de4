package storetest

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Cases of a job's context (ADR 0028): its metadata in every table, the
// output written with its move and the progress carried on its heartbeat,
// both fenced by the lease. The output and progress cases apply to a
// store that is a jobs.Reporter.

func reporter(t *testing.T, h *Harness) jobs.Reporter {
	t.Helper()
	r, ok := h.Store.(jobs.Reporter)
	if !ok {
		t.Skip("the store keeps no outputs or progress (not a jobs.Reporter)")
	}
	return r
}

// outputOf is a JSON string whose encoding is exactly n bytes.
func outputOf(n int) []byte { return []byte(`"` + strings.Repeat("o", n-2) + `"`) }

// wantMetadata fails unless the job's metadata is want.
func wantMetadata(t *testing.T, where string, j *jobs.Job, want map[string]string) {
	t.Helper()
	if !maps.Equal(j.Metadata, want) {
		t.Errorf("%s: job %d has metadata %v, want %v", where, j.ID, j.Metadata, want)
	}
}

// metadataOf is metadata whose JSON is exactly n bytes ({"k":"aaa..."}).
func metadataOf(n int) map[string]string {
	return map[string]string{"k": strings.Repeat("a", n-len(`{"k":""}`))}
}

var contextCases = []testCase{
	{"MetadataIsKeptInEveryTableAndThroughResurrect", func(t *testing.T, h *Harness) {
		meta := map[string]string{"request_id": "r-42", "tenant": "acme", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		p := jobs.EnqueueParams{Metadata: meta}
		id := enqueue(t, h, p)
		wantMetadata(t, "pending", get(t, h, id), meta)
		c := claimOne(t, h)
		wantMetadata(t, "claimed", c, meta)
		start(t, h, c.Ref())
		if err := h.Store.Complete(ctxOf(t), c.Ref()); err != nil {
			t.Fatal(err)
		}
		wantMetadata(t, "archived", get(t, h, id), meta)

		dead := deadLetter(t, h, p, jobs.ReasonFatal, "no")
		wantMetadata(t, "dead-lettered", get(t, h, dead.ID), meta)
		n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{dead.ID}}})
		if err != nil || n != 1 {
			t.Fatalf("Resurrect: %d, %v", n, err)
		}
		wantMetadata(t, "resurrected", get(t, h, dead.ID), meta)

		// A rescue's move and a batch's move keep it too.
		zombie := running(t, h, p)
		h.Advance(t, defaultTimeout+time.Minute)
		if rs, err := h.Store.RescueExpired(ctxOf(t), jobs.RescueParams{}); err != nil || len(rs) == 0 {
			t.Fatalf("RescueExpired: %v, %v", rs, err)
		}
		wantMetadata(t, "rescued", get(t, h, zombie.ID), meta)
		bw, ok := h.Store.(jobs.BatchWorker)
		if !ok {
			return
		}
		j := running(t, h, p)
		r, err := bw.Transition(ctxOf(t), jobs.Transitions{DeadLetters: []jobs.DeadLetterItem{{Ref: j.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal}}}})
		if err != nil || r.DeadLetters[0] != nil {
			t.Fatalf("Transition: %v, %v", r.DeadLetters, err)
		}
		wantMetadata(t, "dead-lettered in a batch", get(t, h, j.ID), meta)
		plain := enqueue(t, h, jobs.EnqueueParams{})
		wantMetadata(t, "enqueued without", get(t, h, plain), nil)
	}},
	{"MetadataAtItsLimitIsKeptAndPastItRefused", func(t *testing.T, h *Harness) {
		at := metadataOf(jobs.MaxMetadataBytes)
		ids := enqueueN(t, h, 2, jobs.EnqueueParams{Metadata: at})
		wantMetadata(t, "4 KiB, in a batch", get(t, h, ids[1]), at)
		refused := map[string]map[string]string{
			"one byte past":  metadataOf(jobs.MaxMetadataBytes + 1),
			"an empty key":   {"": "x"},
			"a space in key": {"tenant id": "x"},
			"a long key":     {strings.Repeat("k", jobs.MaxMetadataKeyLen+1): "x"},
			"invalid UTF-8":  {"k": "\xff"},
		}
		for what, m := range refused {
			_, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "test.job", Metadata: m})
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) || ve.Field != "metadata" {
				t.Errorf("%s: Enqueue gave %v, want a ValidationError of field metadata", what, err)
			}
			_, err = h.Store.EnqueueMany(ctxOf(t), []jobs.EnqueueParams{{Type: "test.job"}, {Type: "test.job", Metadata: m}})
			if !errors.As(err, &ve) || ve.Field != "metadata" {
				t.Errorf("%s: EnqueueMany gave %v, want a ValidationError of field metadata", what, err)
			}
		}
		if n, _ := h.Store.CountJobs(ctxOf(t), jobs.TableHot, jobs.Filter{}); n != 2 {
			t.Errorf("%d hot jobs, want the 2 at the limit and nothing refused", n)
		}
	}},
	{"OutputIsWrittenWithTheMoveAndFencedByTheLease", func(t *testing.T, h *Harness) {
		r := reporter(t, h)
		stale := running(t, h, jobs.EnqueueParams{})
		// stale's lease is lost: rescue takes it.
		h.Advance(t, defaultTimeout+time.Minute)
		if _, err := h.Store.RescueExpired(ctxOf(t), jobs.RescueParams{}); err != nil {
			t.Fatal(err)
		}
		done2, failed2 := running(t, h, jobs.EnqueueParams{}), running(t, h, jobs.EnqueueParams{})
		at := outputOf(jobs.MaxOutputBytes)
		res, err := r.Transition(ctxOf(t), jobs.Transitions{
			Completes:   []jobs.LeaseRef{done2.Ref(), stale.Ref()},
			DeadLetters: []jobs.DeadLetterItem{{Ref: failed2.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal}}},
			Outputs: []jobs.OutputItem{{Ref: done2.Ref(), Output: at}, {Ref: failed2.Ref(), Output: []byte(`{"rows":3}`)},
				{Ref: stale.Ref(), Output: []byte(`"late"`)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completes[0] != nil || !errors.Is(res.Completes[1], jobs.ErrLeaseLost) || res.DeadLetters[0] != nil {
			t.Fatalf("results %v %v", res.Completes, res.DeadLetters)
		}
		if got := get(t, h, done2.ID).Output; string(got) != string(at) {
			t.Errorf("archived output of %d bytes, want the %d at the limit", len(got), len(at))
		}
		if got := get(t, h, failed2.ID).Output; string(got) != `{"rows":3}` {
			t.Errorf("dead-lettered output %s", got)
		}
		if got := get(t, h, stale.ID); got.Output != nil {
			t.Errorf("a lost lease's output was written: %s", got.Output)
		}
		for what, o := range map[string][]byte{"one byte past": outputOf(jobs.MaxOutputBytes + 1), "not JSON": []byte("{")} {
			j := running(t, h, jobs.EnqueueParams{})
			_, err := r.Transition(ctxOf(t), jobs.Transitions{Completes: []jobs.LeaseRef{j.Ref()}, Outputs: []jobs.OutputItem{{Ref: j.Ref(), Output: o}}})
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) || ve.Field != "output" {
				t.Errorf("%s: %v, want a ValidationError of field output", what, err)
			}
			if got := get(t, h, j.ID); got.Table != jobs.TableHot {
				t.Errorf("%s: the refused call moved the job to %v", what, got.Table)
			}
		}
		// A resurrected job leaves its output behind.
		if _, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{failed2.ID}}}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, h, failed2.ID); got.Output != nil {
			t.Errorf("a resurrected job keeps its output %s", got.Output)
		}
	}},
	{"ProgressRidesOnTheHeartbeatAndIsFencedByTheLease", func(t *testing.T, h *Harness) {
		r := reporter(t, h)
		live := running(t, h, jobs.EnqueueParams{})
		quiet := running(t, h, jobs.EnqueueParams{})
		msg := strings.Repeat("é", jobs.MaxProgressMessageLen)
		gone := jobs.LeaseRef{ID: live.ID, Lease: live.Lease + 1}
		res, err := r.HeartbeatProgress(ctxOf(t), []jobs.LeaseRef{live.Ref(), quiet.Ref(), gone},
			[]jobs.ProgressItem{{Ref: live.Ref(), Fraction: 0.5, Message: msg}, {Ref: gone, Fraction: 0.9, Message: "stale"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Lost) != 1 || res.Lost[0] != gone {
			t.Errorf("lost %v, want only the stale ref", res.Lost)
		}
		if j := get(t, h, live.ID); j.Progress != 0.5 || j.ProgressMessage != msg {
			t.Errorf("progress %v %q, want 0.5 and the message at its limit", j.Progress, j.ProgressMessage)
		}
		if j := get(t, h, quiet.ID); j.Progress != 0 || j.ProgressMessage != "" {
			t.Errorf("a beat without progress wrote %v %q", j.Progress, j.ProgressMessage)
		}
		for what, p := range map[string]jobs.ProgressItem{
			"past 1":               {Ref: live.Ref(), Fraction: 1.01},
			"negative":             {Ref: live.Ref(), Fraction: -0.1},
			"message one too long": {Ref: live.Ref(), Message: msg + "x"},
		} {
			_, err := r.HeartbeatProgress(ctxOf(t), []jobs.LeaseRef{live.Ref()}, []jobs.ProgressItem{p})
			if !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Errorf("%s: %v, want a validation error", what, err)
			}
		}
		if err := h.Store.Complete(ctxOf(t), live.Ref()); err != nil {
			t.Fatal(err)
		}
		if j := get(t, h, live.ID); j.Progress != 0 || j.ProgressMessage != "" {
			t.Errorf("an archived job shows progress %v %q", j.Progress, j.ProgressMessage)
		}
		// A job that goes back to Pending starts its next attempt with no
		// progress: what it showed belonged to the attempt that ended.
		again := running(t, h, jobs.EnqueueParams{MaxAttempts: 3})
		if _, err := r.HeartbeatProgress(ctxOf(t), []jobs.LeaseRef{again.Ref()}, []jobs.ProgressItem{{Ref: again.Ref(), Fraction: 0.7, Message: "half"}}); err != nil {
			t.Fatal(err)
		}
		if err := h.Store.Retry(ctxOf(t), again.Ref(), jobs.RetryParams{Error: "again"}); err != nil {
			t.Fatal(err)
		}
		if j := get(t, h, again.ID); j.Progress != 0 || j.ProgressMessage != "" {
			t.Errorf("a retried job shows its last attempt's progress %v %q", j.Progress, j.ProgressMessage)
		}
	}},
}
