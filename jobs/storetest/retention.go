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
			got, err := h.Store.TableQueues(ctxOf(t), table, "")
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("TableQueues(%s) = %v, %v; want %v", table, got, err, want)
			}
		}
		// A caller pages on with the last name it has.
		if got, err := h.Store.TableQueues(ctxOf(t), jobs.TableArchive, "a"); err != nil || !slices.Equal(got, []string{"b"}) {
			t.Fatalf("TableQueues after a = %v, %v", got, err)
		}
		if got, err := h.Store.TableQueues(ctxOf(t), jobs.TableArchive, "b"); err != nil || len(got) != 0 {
			t.Fatalf("TableQueues after b = %v, %v", got, err)
		}
	}},
	{"TrimStepsThroughAQueueOldestFirst", func(t *testing.T, h *Harness) {
		var old []int64
		for range 5 {
			old = append(old, archived(t, h, jobs.EnqueueParams{Queue: "q"}).ID)
			h.Advance(t, time.Second)
		}
		other := archived(t, h, jobs.EnqueueParams{Queue: "other"}).ID
		h.Advance(t, time.Hour)
		recent := archived(t, h, jobs.EnqueueParams{Queue: "q"}).ID
		p := jobs.TrimParams{Table: jobs.TableArchive, Queue: "q", OlderThan: 30 * time.Minute, Limit: 2}
		var deleted []int
		for i, wantLast := range []int64{old[1], old[3], old[4], 0} {
			r, err := h.Store.Trim(ctxOf(t), p)
			if err != nil {
				t.Fatalf("Trim(%+v): %v", p, err)
			}
			deleted = append(deleted, r.Deleted)
			if r.Last.ID != wantLast || (wantLast != 0 && r.Last.FinishedAt.IsZero()) {
				t.Fatalf("step %d: last deleted %+v, want job %d", i, r.Last, wantLast)
			}
			if r.Deleted > 0 {
				p.After = r.Last
			}
		}
		if !slices.Equal(deleted, []int{2, 2, 1, 0}) {
			t.Fatalf("trim steps deleted %v, want [2 2 1 0]", deleted)
		}
		for _, id := range old {
			if _, err := h.Store.GetJob(ctxOf(t), id); !errors.Is(err, jobs.ErrJobNotFound) {
				t.Fatalf("expired job %d survived the trim: %v", id, err)
			}
		}
		wantTable(t, h, recent, jobs.TableArchive)
		wantTable(t, h, other, jobs.TableArchive)
	}},
	{"TrimRefusesWhatIsNotATrim", func(t *testing.T, h *Harness) {
		for _, p := range []jobs.TrimParams{
			{Table: jobs.TableHot, Queue: "q", OlderThan: time.Hour, Limit: 10},
			{Table: jobs.TableArchive, Queue: "q", Limit: 10},
			{Table: jobs.TableArchive, Queue: "q", OlderThan: time.Hour},
			{Table: jobs.TableDLQ, Queue: "q", OlderThan: time.Hour, Limit: jobs.MaxRescueBatch + 1},
			{Table: jobs.TableDLQ, Queue: "bad queue", OlderThan: time.Hour, Limit: 10},
			{Table: jobs.TableDLQ, OlderThan: time.Hour, Limit: 10},
		} {
			if _, err := h.Store.Trim(ctxOf(t), p); !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("Trim(%+v): %v, want ErrInvalidArgument", p, err)
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
