package storetest

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Cases of a job's context (ADR 0028): its metadata in every table.

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
}
