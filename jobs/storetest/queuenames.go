package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Queue names compare ignoring case in every store (jobs.QueueKey), as SQL
// Server's default collations compare them: "orders" and "Orders" are one
// queue, with one control row, and each job keeps its own spelling.
var queueNameCases = []testCase{
	{"AClaimTakesTheJobsOfEverySpellingOfItsQueue", func(t *testing.T, h *Harness) {
		a := enqueue(t, h, jobs.EnqueueParams{Queue: "Orders"})
		b := enqueue(t, h, jobs.EnqueueParams{Queue: "orders"})
		got := claim(t, h, worker1, 10, "ORDERS", "orders")
		if !slices.Equal(sortedIDs(got), []int64{a, b}) {
			t.Fatalf("a claim of ORDERS took %v, want jobs %d and %d", ids(got), a, b)
		}
		for _, j := range got {
			if j.ID == a && j.Queue != "Orders" || j.ID == b && j.Queue != "orders" {
				t.Fatalf("job %d reads queue %q: a job keeps the spelling it was enqueued with", j.ID, j.Queue)
			}
		}
	}},
	{"OneControlRowServesEverySpelling", func(t *testing.T, h *Harness) {
		setQueue(t, h, "orders", jobs.QueueUpdate{Paused: boolp(true)})
		enqueue(t, h, jobs.EnqueueParams{Queue: "Orders"})
		if got := claim(t, h, worker1, 10, "ORDERS"); len(got) != 0 {
			t.Fatalf("a claim of ORDERS took %v from a queue paused as orders", ids(got))
		}
		s, err := h.Store.UpdateQueue(ctxOf(t), "ORDERS", jobs.QueueUpdate{Paused: boolp(false), MaxWorkers: intp(2)})
		if err != nil {
			t.Fatal(err)
		}
		qs, err := h.Store.Queues(ctxOf(t))
		if err != nil || len(qs) != 1 || !qs[0].Equal(s) || s.Name != "orders" || s.MaxWorkers != 2 || s.Paused {
			t.Fatalf("Queues() = %+v, %v (UpdateQueue returned %+v); want the one row, still named orders, resumed with MaxWorkers 2", qs, err, s)
		}
		if got := claim(t, h, worker1, 10, "Orders"); len(got) != 1 {
			t.Fatalf("after the resume a claim took %d jobs, want 1", len(got))
		}
	}},
	{"APerQueueZombieTimeoutAppliesToEverySpelling", func(t *testing.T, h *Harness) {
		setQueue(t, h, "mail", jobs.QueueUpdate{ZombieTimeout: secs(60)})
		j := running(t, h, jobs.EnqueueParams{Queue: "MAIL"})
		h.Advance(t, 61*time.Second)
		if got := rescuedIDs(rescueZombies(t, h)); !slices.Equal(got, []int64{j.ID}) {
			t.Fatalf("after 61s phase 2 rescued %v, want job %d (queue mail's 60s)", got, j.ID)
		}
	}},
	{"FiltersCountsAndDepthsTakeEverySpelling", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{Queue: "Orders"})
		enqueue(t, h, jobs.EnqueueParams{Queue: "orders"})
		enqueue(t, h, jobs.EnqueueParams{Queue: "other"})
		if n := count(t, h, jobs.TableHot, jobs.Filter{Queue: "ORDERS"}); n != 2 {
			t.Fatalf("CountJobs(queue ORDERS) = %d, want 2", n)
		}
		// A list naming one queue twice in two spellings is one queue (on
		// SQL Server the table type's key refused it with error 2627).
		ds, err := h.Store.QueueDepths(ctxOf(t), []string{"orders", "Orders", "other"}, 100)
		if err != nil {
			t.Fatalf("QueueDepths(orders, Orders, other): %v", err)
		}
		if len(ds) != 2 || !strings.EqualFold(ds[0].Queue, "orders") || ds[0].Pending != 2 || ds[1].Queue != "other" || ds[1].Pending != 1 {
			t.Fatalf("QueueDepths = %+v, want orders with 2 pending, then other with 1", ds)
		}
		stats, err := h.Store.QueueStats(ctxOf(t))
		if err != nil {
			t.Fatal(err)
		}
		var orders []jobs.QueueStats
		for _, st := range stats {
			if strings.EqualFold(st.Queue, "orders") {
				orders = append(orders, st)
			}
		}
		if len(orders) != 1 || orders[0].Pending != 2 {
			t.Fatalf("QueueStats has %+v for orders, want one entry with 2 pending", orders)
		}
		names, err := h.Store.TableQueues(ctxOf(t), jobs.TableHot, "")
		if err != nil || len(names) != 2 || !strings.EqualFold(names[0], "orders") || names[1] != "other" {
			t.Fatalf("TableQueues(hot) = %v, %v; want one name for orders, then other", names, err)
		}
		if after, err := h.Store.TableQueues(ctxOf(t), jobs.TableHot, "ORDERS"); err != nil || !slices.Equal(after, []string{"other"}) {
			t.Fatalf("TableQueues(hot, after ORDERS) = %v, %v; want [other]", after, err)
		}
	}},
	{"ATrimTakesEverySpellingOfItsQueue", func(t *testing.T, h *Harness) {
		a := archived(t, h, jobs.EnqueueParams{Queue: "Audit"})
		b := archived(t, h, jobs.EnqueueParams{Queue: "audit"})
		h.Advance(t, time.Hour)
		r, err := h.Store.Trim(ctxOf(t), jobs.TrimParams{Table: jobs.TableArchive, Queue: "AUDIT", OlderThan: time.Minute, Limit: 10})
		if err != nil || r.Deleted != 2 {
			t.Fatalf("Trim(AUDIT) = %+v, %v; want jobs %d and %d deleted", r, err, a.ID, b.ID)
		}
	}},
}

func sortedIDs(js []*jobs.Job) []int64 {
	out := ids(js)
	slices.Sort(out)
	return out
}
