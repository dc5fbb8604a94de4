package storetest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// flowEnqueue enqueues p, skipping the case on a store that refuses flow
// control (ADR 0031).
func flowEnqueue(t *testing.T, h *Harness, p jobs.EnqueueParams) int64 {
	t.Helper()
	if p.Type == "" {
		p.Type = "test.job"
	}
	r, err := h.Store.Enqueue(ctxOf(t), p)
	if errors.Is(err, jobs.ErrFlowControlUnsupported) {
		t.Skipf("%T: %v", h.Store, err)
	}
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", p, err)
	}
	return r.ID
}

func flowQueue(t *testing.T, h *Harness, u jobs.QueueUpdate) {
	t.Helper()
	_, err := h.Store.UpdateQueue(ctxOf(t), jobs.DefaultQueue, u)
	if errors.Is(err, jobs.ErrFlowControlUnsupported) {
		t.Skipf("%T: %v", h.Store, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func claimedKeys(got []*jobs.Job) map[string]int {
	n := map[string]int{}
	for _, j := range got {
		n[j.ConcurrencyKey]++
	}
	return n
}

var flowCases = []testCase{
	{"KeyAtItsLimitLetsOtherKeysThrough", func(t *testing.T, h *Harness) {
		one, three := 1, 3
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &one, KeyLimits: map[string]int{"big": three}})
		for range 20 { // a hot key's backlog in front of the others
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "hot", Priority: 5})
		}
		for range 5 {
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "big", Priority: 5})
		}
		for _, k := range []string{"a", "b", ""} {
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: k})
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: k})
		}
		got := claim(t, h, worker1, 100)
		n := claimedKeys(got)
		if n["hot"] != 1 || n["big"] != 3 || n["a"] != 1 || n["b"] != 1 || n[""] != 2 || len(got) != 8 {
			t.Fatalf("claimed by key %v, want hot 1, big 3 (its own limit), a 1, b 1, no key 2", n)
		}
		st := stats(t, h)
		if st.WaitingOnKey != 20-1+5-3+1+1 {
			t.Errorf("waiting on a key limit: %d, want %d", st.WaitingOnKey, 20-1+5-3+1+1)
		}
		if bk := st.BusiestKeys; len(bk) != 4 || bk[0] != (jobs.KeyCount{Key: "big", Running: 3, Waiting: 2}) ||
			bk[1] != (jobs.KeyCount{Key: "a", Running: 1, Waiting: 1}) || bk[3] != (jobs.KeyCount{Key: "hot", Running: 1, Waiting: 19}) {
			t.Errorf("busiest keys %+v, want big (3 running, 2 waiting) first, then a, b and hot by key (a job without a key is no key's)", bk)
		}
		if again := claim(t, h, worker2, 100); len(again) != 0 {
			t.Fatalf("a second claimer took %v while every key is at its limit", claimedKeys(again))
		}
		// Each finished job makes room for one more of its key, and only one.
		var hot *jobs.Job
		for _, j := range got {
			if j.ConcurrencyKey == "hot" {
				hot = j
			}
		}
		start(t, h, hot.Ref())
		if err := h.Store.Complete(ctxOf(t), hot.Ref()); err != nil {
			t.Fatal(err)
		}
		if n := claimedKeys(claim(t, h, worker2, 100)); n["hot"] != 1 || len(n) != 1 {
			t.Fatalf("after one hot job finished: claimed %v, want one hot job", n)
		}
		// A raised limit lets more in at the next claim; a lowered one
		// stops none that run.
		five := 5
		flowQueue(t, h, jobs.QueueUpdate{KeyLimits: map[string]int{"hot": five}})
		if n := claimedKeys(claim(t, h, worker2, 100)); n["hot"] != 4 {
			t.Fatalf("after the limit was raised to 5: claimed %v, want 4 more hot jobs", n)
		}
	}},
	{"RescueReturnsAKeysPlace", func(t *testing.T, h *Harness) {
		one := 1
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &one})
		flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "k"})
		flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "k"})
		first := claimOne(t, h)
		if got := claim(t, h, worker2, 10); len(got) != 0 {
			t.Fatalf("claimed %d beside the key's one running job", len(got))
		}
		h.Advance(t, fetchedTimeout+1)
		if rs := rescueFetched(t, h); len(rs) != 1 || rs[0].ID != first.ID {
			t.Fatalf("rescued %v", rs)
		}
		if got := claim(t, h, worker2, 10); len(got) != 1 {
			t.Fatalf("after the crashed worker's job was rescued: claimed %d, want 1", len(got))
		}
	}},
	{"IS_SequenceRunsInEnqueueOrderOneAtATime", func(t *testing.T, h *Harness) {
		ids := []int64{}
		for range 3 {
			ids = append(ids, flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "acct", Priority: 0}))
		}
		flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "other", Priority: 9})
		got := claim(t, h, worker1, 10)
		if len(got) != 2 {
			t.Fatalf("claimed %d, want the head of each sequence", len(got))
		}
		var head *jobs.Job
		for _, j := range got {
			if j.SequenceKey == "acct" {
				head = j
			}
		}
		if head == nil || head.ID != ids[0] {
			t.Fatalf("the acct sequence started %v, want job %d first", head, ids[0])
		}
		// A retried head keeps its place.
		start(t, h, head.Ref())
		if err := h.Store.Retry(ctxOf(t), head.Ref(), jobs.RetryParams{Error: "e"}); err != nil {
			t.Fatal(err)
		}
		again := claimOne(t, h)
		if again.ID != ids[0] {
			t.Fatalf("after a retry the sequence ran %d, want its head %d", again.ID, ids[0])
		}
		start(t, h, again.Ref())
		if err := h.Store.DeadLetter(ctxOf(t), again.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "x"}); err != nil {
			t.Fatal(err)
		}
		// The default policy: a dead letter lets the sequence continue.
		next := claimOne(t, h)
		if next.ID != ids[1] {
			t.Fatalf("after the head was dead-lettered the sequence ran %d, want %d", next.ID, ids[1])
		}
		if got := claim(t, h, worker2, 10); len(got) != 0 {
			t.Fatalf("claimed %d beside the sequence's running job", len(got))
		}
	}},
	{"SequenceHeldByADeadLetterUnderHold", func(t *testing.T, h *Harness) {
		a, b := heldSequence(t, h)
		if st := stats(t, h); st.WaitingOnSequence != 1 {
			t.Errorf("waiting on a sequence: %d, want 1", st.WaitingOnSequence)
		}
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{a}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		r := claimOne(t, h)
		if r.ID != a {
			t.Fatalf("after the resurrect the sequence ran %d, want the resurrected head %d", r.ID, a)
		}
		start(t, h, r.Ref())
		if err := h.Store.Complete(ctxOf(t), r.Ref()); err != nil {
			t.Fatal(err)
		}
		if n := claimOne(t, h); n.ID != b {
			t.Fatalf("after the head succeeded the sequence ran %d, want %d", n.ID, b)
		}
	}},
	{"LoweredLimitStopsNoRunningJob", func(t *testing.T, h *Harness) {
		three, one := 3, 1
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &three})
		for range 5 {
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "k"})
		}
		running := claim(t, h, worker1, 10)
		if len(running) != 3 {
			t.Fatalf("claimed %d under a limit of 3", len(running))
		}
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &one})
		for i, j := range running {
			start(t, h, j.Ref()) // the lowered limit stops none that run
			if got := claim(t, h, worker2, 10); len(got) != 0 {
				t.Fatalf("with %d of the key running under a limit of 1: claimed %d", 3-i, len(got))
			}
			if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
				t.Fatal(err)
			}
		}
		if got := claim(t, h, worker2, 10); len(got) != 1 {
			t.Fatalf("once the key's jobs finished: claimed %d, want 1 (the lowered limit)", len(got))
		}
	}},
	{"CancelOfAWaitingJob", func(t *testing.T, h *Harness) {
		one := 1
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &one})
		flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "k"})
		waiting := flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: "k"})
		first := claimOne(t, h)
		if got := claim(t, h, worker2, 10); len(got) != 0 { // parks the second
			t.Fatalf("claimed %d beside the key's running job", len(got))
		}
		rs, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: []int64{waiting}, By: "ops"})
		if err != nil || len(rs) != 1 || rs[0].Outcome != jobs.CancelDone {
			t.Fatalf("Cancel of a job waiting on its key = %+v, %v; want it cancelled at once", rs, err)
		}
		if st := stats(t, h); st.WaitingOnKey != 0 || st.Pending != 0 {
			t.Errorf("after the cancel: %d waiting on a key, %d pending; want none", st.WaitingOnKey, st.Pending)
		}
		start(t, h, first.Ref())
		if err := h.Store.Complete(ctxOf(t), first.Ref()); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, h, worker2, 10); len(got) != 0 {
			t.Fatalf("the cancelled job came back: claimed %v", got)
		}
	}},
	{"SnoozedSequenceHeadKeepsItsPlace", func(t *testing.T, h *Harness) {
		a := flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
		flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
		j := claimOne(t, h)
		start(t, h, j.Ref())
		if err := h.Store.Snooze(ctxOf(t), j.Ref(), jobs.SnoozeParams{Delay: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, h, worker2, 10); len(got) != 0 {
			t.Fatalf("while the head sleeps: claimed %d of its sequence", len(got))
		}
		h.Advance(t, time.Minute+time.Second)
		if got := claimOne(t, h); got.ID != a {
			t.Fatalf("after the snooze the sequence ran %d, want its head %d", got.ID, a)
		}
	}},
	{"PurgedDeadLetterReleasesAHeldSequence", func(t *testing.T, h *Harness) {
		a, b := heldSequence(t, h)
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{a}}}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		if got := claimOne(t, h); got.ID != b {
			t.Fatalf("after the held dead letter was purged the sequence ran %d, want %d", got.ID, b)
		}
	}},
	{"CancelledHeadNeverHoldsItsSequence", func(t *testing.T, h *Harness) {
		hold := jobs.SequenceHold
		flowQueue(t, h, jobs.QueueUpdate{SequenceOnDeadLetter: &hold})
		a := flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
		b := flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
		if _, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: []int64{a}}); err != nil {
			t.Fatal(err)
		}
		if got := claimOne(t, h); got.ID != b {
			t.Fatalf("after its head was cancelled the sequence ran %d, want %d", got.ID, b)
		}
	}},
	{"I6K_KeyLimitUnderConcurrentClaimers", func(t *testing.T, h *Harness) {
		two := 2
		flowQueue(t, h, jobs.QueueUpdate{MaxWorkersPerKey: &two})
		keys := []string{"a", "b", "c", "d", "e"}
		for i := range 100 {
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: keys[i%len(keys)]})
		}
		var (
			mu     sync.Mutex
			active = map[string]int{}
			done   int
			errs   []string
		)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for idle := 0; idle < 50; {
					got, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{Queues: []string{jobs.DefaultQueue}, WorkerID: fmt.Sprintf("w%d", w), Limit: 15})
					if err != nil {
						mu.Lock()
						errs = append(errs, err.Error())
						mu.Unlock()
						return
					}
					if len(got) == 0 {
						mu.Lock()
						finished := done == 100
						mu.Unlock()
						if finished {
							return
						}
						idle++
						runtime.Gosched()
						continue
					}
					mu.Lock()
					for _, j := range got {
						if active[j.ConcurrencyKey]++; active[j.ConcurrencyKey] > two {
							errs = append(errs, fmt.Sprintf("key %s has %d jobs claimed at once, above its limit %d", j.ConcurrencyKey, active[j.ConcurrencyKey], two))
						}
					}
					mu.Unlock()
					for _, j := range got {
						// Counted out before the job leaves: the store may let the
						// next one in as soon as it has.
						mu.Lock()
						active[j.ConcurrencyKey]--
						mu.Unlock()
						_, err := h.Store.Start(ctxOf(t), j.Ref(), jobs.StartParams{DefaultTimeout: defaultTimeout})
						if err == nil {
							err = h.Store.Complete(ctxOf(t), j.Ref())
						}
						mu.Lock()
						if err != nil {
							errs = append(errs, fmt.Sprintf("job %d: %v", j.ID, err))
						}
						done++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d problems, first: %s", len(errs), errs[0])
		}
		if st := stats(t, h); st.Pending != 0 {
			t.Fatalf("%d jobs left pending after the claimers stopped (%d done)", st.Pending, done)
		}
	}},
}

// heldSequence enqueues jobs a and b of one sequence under SequenceHold,
// dead-letters a, and checks that b is held behind it.
func heldSequence(t *testing.T, h *Harness) (a, b int64) {
	t.Helper()
	hold := jobs.SequenceHold
	flowQueue(t, h, jobs.QueueUpdate{SequenceOnDeadLetter: &hold})
	a = flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
	b = flowEnqueue(t, h, jobs.EnqueueParams{SequenceKey: "s"})
	j := claimOne(t, h)
	start(t, h, j.Ref())
	if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, h, worker1, 10); len(got) != 0 {
		t.Fatalf("claimed %d behind a held dead letter", len(got))
	}
	return a, b
}

// stats is the default queue's stats.
func stats(t *testing.T, h *Harness) jobs.QueueStats {
	t.Helper()
	ss, err := h.Store.QueueStats(ctxOf(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if jobs.QueueKey(s.Queue) == jobs.QueueKey(jobs.DefaultQueue) {
			return s
		}
	}
	t.Fatalf("no stats of queue %s in %+v", jobs.DefaultQueue, ss)
	return jobs.QueueStats{}
}
