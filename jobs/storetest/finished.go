package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// counter is the store's jobs.FinishedCounter; a store without the
// optional capability skips these cases, saying so.
var counter = capability[jobs.FinishedCounter]

func finishedCounts(t *testing.T, c jobs.FinishedCounter, p jobs.FinishedCountsParams) map[jobs.FinishedCount]int64 {
	t.Helper()
	got, err := c.FinishedCounts(ctxOf(t), p)
	if err != nil {
		t.Fatalf("FinishedCounts(%+v): %v", p, err)
	}
	out := map[jobs.FinishedCount]int64{}
	for _, fc := range got {
		n := fc.Count
		fc.Count, fc.Start = 0, fc.Start.UTC()
		if _, dup := out[fc]; dup {
			t.Fatalf("FinishedCounts returned %+v twice", fc)
		}
		out[fc] = n
	}
	return out
}

// finishedAt is a job's FinishedAt as the store recorded it.
func finishedAt(t *testing.T, h *Harness, id int64) time.Time {
	t.Helper()
	return get(t, h, id).FinishedAt
}

func deadLettered(t *testing.T, h *Harness, p jobs.EnqueueParams, reason jobs.FailureReason) *jobs.Job {
	t.Helper()
	j := running(t, h, p)
	if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: reason}); err != nil {
		t.Fatal(err)
	}
	return j
}

var finishedCases = []testCase{
	{"CountsEachBucketQueueAndReason", func(t *testing.T, h *Harness) {
		c := counter(t, h)
		var ids []int64
		ids = append(ids, archived(t, h, jobs.EnqueueParams{Queue: "mail"}).ID, archived(t, h, jobs.EnqueueParams{Queue: "mail"}).ID)
		h.Advance(t, 10*time.Second)
		ids = append(ids, archived(t, h, jobs.EnqueueParams{Queue: "sms"}).ID)
		ids = append(ids, deadLettered(t, h, jobs.EnqueueParams{Queue: "mail"}, jobs.ReasonFatal).ID)
		h.Advance(t, 10*time.Second)
		ids = append(ids, deadLettered(t, h, jobs.EnqueueParams{Queue: "mail"}, jobs.ReasonTimeout).ID,
			deadLettered(t, h, jobs.EnqueueParams{Queue: "mail"}, jobs.ReasonFatal).ID)
		p := jobs.FinishedCountsParams{Bucket: 5 * time.Second}
		p.From, p.To = finishedAt(t, h, ids[0]).Add(-time.Minute), finishedAt(t, h, ids[len(ids)-1]).Add(time.Minute)
		want := map[jobs.FinishedCount]int64{}
		for _, id := range ids {
			j := get(t, h, id)
			k := jobs.FinishedCount{Start: p.BucketOf(j.FinishedAt), Queue: j.Queue, Table: j.Table}
			if j.Table == jobs.TableDLQ {
				k.Reason = j.FailureReason
			}
			want[k]++
		}
		got := finishedCounts(t, c, p)
		if len(got) != len(want) {
			t.Fatalf("FinishedCounts = %v, want %v", got, want)
		}
		for k, n := range want {
			if got[k] != n {
				t.Fatalf("FinishedCounts = %v, want %v", got, want)
			}
		}
		// One queue.
		p.Queue = "sms"
		if got := finishedCounts(t, c, p); len(got) != 1 {
			t.Fatalf("FinishedCounts of sms = %v", got)
		}
		// A day's bucket is a UTC day.
		p.Queue, p.Bucket = "", 24*time.Hour
		day := finishedCounts(t, c, p)
		var total int64
		for k, n := range day {
			if k.Start.Hour() != 0 || k.Start.Minute() != 0 || k.Start.Second() != 0 || k.Start.Nanosecond() != 0 {
				t.Fatalf("a day bucket starts at %v", k.Start)
			}
			total += n
		}
		if total != int64(len(ids)) {
			t.Fatalf("day buckets count %d jobs, want %d", total, len(ids))
		}
	}},
	{"TheWindowIsFromInclusiveToExclusive", func(t *testing.T, h *Harness) {
		c := counter(t, h)
		a := archived(t, h, jobs.EnqueueParams{})
		h.Advance(t, 3*time.Second)
		b := archived(t, h, jobs.EnqueueParams{})
		p := jobs.FinishedCountsParams{From: finishedAt(t, h, a.ID), To: finishedAt(t, h, b.ID), Bucket: time.Second}
		var total int64
		for _, n := range finishedCounts(t, c, p) {
			total += n
		}
		if total != 1 {
			t.Fatalf("a window from a's finish to b's counts %d jobs, want a alone", total)
		}
	}},
	{"JobsThatLeftAreNotCounted", func(t *testing.T, h *Harness) {
		c := counter(t, h)
		a := deadLettered(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal)
		b := deadLettered(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal)
		kept := archived(t, h, jobs.EnqueueParams{})
		from := finishedAt(t, h, a.ID).Add(-time.Second)
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{a.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{b.ID}}}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		p := jobs.FinishedCountsParams{From: from, To: finishedAt(t, h, kept.ID).Add(time.Second), Bucket: time.Hour}
		got := finishedCounts(t, c, p)
		var dead, arc int64
		for k, n := range got {
			if k.Table == jobs.TableDLQ {
				dead += n
			} else {
				arc += n
			}
		}
		if dead != 0 || arc != 1 {
			t.Fatalf("after a resurrect and a purge: %v", got)
		}
	}},
	{"BadWindowsAreRefused", func(t *testing.T, h *Harness) {
		c := counter(t, h)
		now, _ := h.Store.Now(ctxOf(t))
		for _, p := range []jobs.FinishedCountsParams{
			{From: now, To: now.Add(time.Hour), Bucket: 0},
			{From: now, To: now.Add(time.Hour), Bucket: 1500 * time.Millisecond},
			{From: now, To: now.Add(time.Hour), Bucket: 48 * time.Hour},
			{From: now.Add(time.Hour), To: now, Bucket: time.Second},
			{From: now.Add(-365 * 24 * time.Hour), To: now, Bucket: time.Second},
			{From: now, To: now.Add(time.Hour), Bucket: time.Second, Queue: "bad queue"},
		} {
			if _, err := c.FinishedCounts(ctxOf(t), p); !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("FinishedCounts(%+v): %v, want ErrInvalidArgument", p, err)
			}
		}
	}},
}
