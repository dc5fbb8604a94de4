package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var claimCases = []testCase{
	{"SetsFetchedWorkerAndNewLease", func(t *testing.T, h *Harness) {
		id := enqueue(t, h, jobs.EnqueueParams{})
		j := claimOne(t, h)
		if j.ID != id || j.Status != jobs.StatusFetched || j.WorkerID != worker1 || j.Lease != 1 || j.AttemptCount != 0 {
			t.Fatalf("claimed %+v, want job %d Fetched by %s with lease 1 and no attempt", j, id, worker1)
		}
		stored := wantHot(t, h, id, jobs.StatusFetched)
		if stored.Lease != 1 || stored.WorkerID != worker1 {
			t.Fatalf("stored lease %d worker %q", stored.Lease, stored.WorkerID)
		}
	}},
	{"LeaseGoesUpAtEveryClaim", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		for want := int64(1); want <= 3; want++ {
			j := claimOne(t, h)
			if j.Lease != want {
				t.Fatalf("claim %d gave lease %d", want, j.Lease)
			}
			if n, err := h.Store.Release(ctxOf(t), []jobs.LeaseRef{j.Ref()}); err != nil || n != 1 {
				t.Fatalf("Release: %d, %v", n, err)
			}
		}
	}},
	{"OrderIsPriorityThenDueTimeThenID", func(t *testing.T, h *Harness) {
		low := enqueue(t, h, jobs.EnqueueParams{Priority: -5})
		mid1 := enqueue(t, h, jobs.EnqueueParams{})
		high := enqueue(t, h, jobs.EnqueueParams{Priority: 10})
		mid2 := enqueue(t, h, jobs.EnqueueParams{})
		early := enqueue(t, h, jobs.EnqueueParams{Delay: time.Minute})
		h.Advance(t, 2*time.Minute)
		var got []int64
		for range 5 {
			got = append(got, claimOne(t, h).ID)
		}
		want := []int64{high, mid1, mid2, early, low}
		if !slices.Equal(got, want) {
			t.Fatalf("claim order %v, want %v (priority desc, then due time, then id)", got, want)
		}
	}},
	{"RespectsLimitAndQueues", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 5, jobs.EnqueueParams{Queue: "a"})
		enqueueN(t, h, 5, jobs.EnqueueParams{Queue: "b"})
		enqueueN(t, h, 5, jobs.EnqueueParams{Queue: "c"})
		if got := claim(t, h, worker1, 0, "a"); len(got) != 0 {
			t.Fatalf("limit 0 claimed %d", len(got))
		}
		got := claim(t, h, worker1, 7, "a", "b")
		if len(got) != 7 {
			t.Fatalf("claimed %d, want 7", len(got))
		}
		for _, j := range got {
			if j.Queue == "c" {
				t.Fatalf("claimed job %d of queue c, which was not asked for", j.ID)
			}
		}
		if rest := claim(t, h, worker1, 100, "a", "b"); len(rest) != 3 {
			t.Fatalf("second claim got %d, want the 3 left in a and b", len(rest))
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{Queue: "c", Status: statusp(jobs.StatusPending)}); n != 5 {
			t.Fatalf("queue c has %d pending, want 5", n)
		}
	}},
	{"PausedQueueGivesNothing", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 3, jobs.EnqueueParams{Queue: "p"})
		setQueue(t, h, "p", jobs.QueueUpdate{Paused: boolp(true)})
		if got := claim(t, h, worker1, 10, "p"); len(got) != 0 {
			t.Fatalf("claimed %v from a paused queue", ids(got))
		}
		setQueue(t, h, "p", jobs.QueueUpdate{Paused: boolp(false)})
		if got := claim(t, h, worker1, 10, "p"); len(got) != 3 {
			t.Fatalf("claimed %d after resume, want 3", len(got))
		}
	}},
	{"MaxWorkersCapsFetchedPlusProcessing", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 10, jobs.EnqueueParams{Queue: "bulk"})
		setQueue(t, h, "bulk", jobs.QueueUpdate{MaxWorkers: intp(3)})
		got := claim(t, h, worker1, 10, "bulk")
		if len(got) != 3 {
			t.Fatalf("claimed %d with MaxWorkers 3", len(got))
		}
		start(t, h, got[0].Ref())
		if more := claim(t, h, worker2, 10, "bulk"); len(more) != 0 {
			t.Fatalf("second worker claimed %d while 3 are active", len(more))
		}
		if err := h.Store.Complete(ctxOf(t), got[0].Ref()); err != nil {
			t.Fatal(err)
		}
		if more := claim(t, h, worker2, 10, "bulk"); len(more) != 1 {
			t.Fatalf("after one finished, claimed %d, want 1", len(more))
		}
		setQueue(t, h, "bulk", jobs.QueueUpdate{MaxWorkers: intp(0)})
		if more := claim(t, h, worker2, 10, "bulk"); len(more) != 6 {
			t.Fatalf("with MaxWorkers cleared, claimed %d, want the 6 left", len(more))
		}
	}},
	{"Concurrent20ClaimersOver2000RowsAreDisjointAndComplete", func(t *testing.T, h *Harness) {
		const rows, claimers, batch = 2000, 20, 20
		var want []int64
		for range rows / 500 {
			want = append(want, enqueueN(t, h, 500, jobs.EnqueueParams{})...)
		}
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		errs := make(chan error, claimers)
		for c := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker := "claimer-" + string(rune('A'+c))
				for {
					got, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{WorkerID: worker, Queues: []string{jobs.DefaultQueue}, Limit: batch})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						if prev, dup := seen[j.ID]; dup {
							mu.Unlock()
							t.Errorf("job %d claimed by %s and %s", j.ID, prev, worker)
							return
						}
						seen[j.ID] = worker
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("claim: %v", err)
		}
		if len(seen) != rows {
			t.Fatalf("claimed %d distinct jobs, want all %d", len(seen), rows)
		}
		for _, id := range want {
			if _, ok := seen[id]; !ok {
				t.Fatalf("job %d never claimed", id)
			}
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{Status: statusp(jobs.StatusFetched)}); n != rows {
			t.Fatalf("%d Fetched rows, want %d", n, rows)
		}
	}},
	{"RejectsEmptyWorkerID", func(t *testing.T, h *Harness) {
		_, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{Queues: []string{"default"}, Limit: 1})
		wantInvalid(t, err, "worker_id")
	}},
	{"RejectsALimitAboveMaxClaimLimit", func(t *testing.T, h *Harness) {
		id := enqueue(t, h, jobs.EnqueueParams{})
		_, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{WorkerID: worker1, Queues: []string{"default"}, Limit: jobs.MaxClaimLimit + 1})
		wantInvalid(t, err, "limit")
		wantHot(t, h, id, jobs.StatusPending)
	}},
}

func statusp(s jobs.Status) *jobs.Status { return &s }

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", field)
	}
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || ve.Field != field {
		t.Fatalf("err = %v, want a ValidationError for %q", err, field)
	}
}
