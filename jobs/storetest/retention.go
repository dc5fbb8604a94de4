package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// retentionCases are what the retention loop (package retention) relies
// on: each table's queues, a queue's own retention, and a purge that
// takes the oldest jobs first in bounded steps.
var retentionCases = []testCase{
	{"TableQueuesListsEachTablesQueues", func(t *testing.T, h *Harness) {
		archived(t, h, jobs.EnqueueParams{Queue: "b"})
		archived(t, h, jobs.EnqueueParams{Queue: "a"})
		archived(t, h, jobs.EnqueueParams{Queue: "b"})
		j := running(t, h, jobs.EnqueueParams{Queue: "c"})
		if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal}); err != nil {
			t.Fatal(err)
		}
		enqueue(t, h, jobs.EnqueueParams{Queue: "d"})
		for table, want := range map[jobs.Table][]string{jobs.TableArchive: {"a", "b"}, jobs.TableDLQ: {"c"}, jobs.TableHot: {"d"}} {
			got, err := h.Store.TableQueues(ctxOf(t), table)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("TableQueues(%s) = %v, %v; want %v", table, got, err, want)
			}
		}
	}},
	{"QueueRetentionRoundTrips", func(t *testing.T, h *Harness) {
		week, forever := 7*24*time.Hour, jobs.KeepForever
		s, err := h.Store.UpdateQueue(ctxOf(t), "audit", jobs.QueueUpdate{ArchiveRetention: &week, DeadLetterRetention: &forever})
		if err != nil || s.ArchiveRetention != week || s.DeadLetterRetention != jobs.KeepForever {
			t.Fatalf("UpdateQueue = %+v, %v", s, err)
		}
		qs, err := h.Store.Queues(ctxOf(t))
		if err != nil || len(qs) != 1 || qs[0].ArchiveRetention != week || qs[0].DeadLetterRetention != jobs.KeepForever {
			t.Fatalf("Queues = %+v, %v", qs, err)
		}
		zero := time.Duration(0)
		if s, err = h.Store.UpdateQueue(ctxOf(t), "audit", jobs.QueueUpdate{ArchiveRetention: &zero}); err != nil || s.ArchiveRetention != 0 || s.DeadLetterRetention != jobs.KeepForever {
			t.Fatalf("clearing the archive retention: %+v, %v", s, err)
		}
		for _, bad := range []time.Duration{-2, time.Millisecond, 1500 * time.Millisecond, jobs.MaxRetention + time.Second} {
			if _, err := h.Store.UpdateQueue(ctxOf(t), "audit", jobs.QueueUpdate{ArchiveRetention: &bad}); !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("retention %v: %v, want ErrInvalidArgument", bad, err)
			}
		}
	}},
	{"PurgeWithALimitTakesTheOldestFirst", func(t *testing.T, h *Harness) {
		var ids []int64
		for range 5 {
			ids = append(ids, archived(t, h, jobs.EnqueueParams{}).ID)
			h.Advance(t, time.Second)
		}
		n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableArchive, All: true, Limit: 2})
		if err != nil || n != 2 {
			t.Fatalf("Purge(Limit 2) = %d, %v", n, err)
		}
		for i, id := range ids {
			_, err := h.Store.GetJob(ctxOf(t), id)
			if gone := errors.Is(err, jobs.ErrJobNotFound); gone != (i < 2) {
				t.Fatalf("job %d (the %d-th oldest): gone %v", id, i, gone)
			}
		}
	}},
	{"TrimByAgeTakesEachQueuesExpiredJobsOnly", func(t *testing.T, h *Harness) {
		// The retention loop's purge: one queue, an age, a limit. Jobs that
		// left the table since they first entered it (resurrected, purged
		// by ID) must neither be counted nor hold back the others.
		deadLetter := func(queue string) *jobs.Job {
			j := running(t, h, jobs.EnqueueParams{Queue: queue})
			if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal}); err != nil {
				t.Fatal(err)
			}
			return j
		}
		a := deadLetter("q")
		h.Advance(t, time.Second)
		b := deadLetter("q")
		h.Advance(t, time.Second)
		c := deadLetter("q")
		other := deadLetter("other")
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{a.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{b.ID}}}); err != nil || n != 1 {
			t.Fatalf("Purge by ID = %d, %v", n, err)
		}
		h.Advance(t, time.Minute)
		again := running(t, h, jobs.EnqueueParams{Queue: "q"}) // a, resurrected, dies again now
		if again.ID != a.ID {
			t.Fatalf("claimed job %d, want the resurrected %d", again.ID, a.ID)
		}
		if err := h.Store.DeadLetter(ctxOf(t), again.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal}); err != nil {
			t.Fatal(err)
		}
		n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{Queue: "q", OlderThan: 30 * time.Second}, Limit: 10})
		if err != nil || n != 1 {
			t.Fatalf("trim = %d, %v; want 1 (only c expired)", n, err)
		}
		for id, want := range map[int64]bool{a.ID: true, c.ID: false, other.ID: true} {
			_, err := h.Store.GetJob(ctxOf(t), id)
			if kept := err == nil; kept != want {
				t.Fatalf("job %d kept %v, want %v", id, kept, want)
			}
		}
	}},
}
