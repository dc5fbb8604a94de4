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
}
