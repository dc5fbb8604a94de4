package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Rate limits (ADR 0033): at most Count claims per window, fleet-wide, the
// window opened by the first claim after the last closed.

// rateQueue sets the default queue's rate limit, skipping the case on a
// store that refuses it.
func rateQueue(t *testing.T, h *Harness, r jobs.RateLimit, more ...func(*jobs.QueueUpdate)) {
	t.Helper()
	u := jobs.QueueUpdate{RateLimit: &r}
	for _, f := range more {
		f(&u)
	}
	_, err := h.Store.UpdateQueue(ctxOf(t), jobs.DefaultQueue, u)
	if errors.Is(err, jobs.ErrRateLimitUnsupported) || errors.Is(err, jobs.ErrFlowControlUnsupported) {
		t.Skipf("%T: %v", h.Store, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// claimHeld claims through jobs.RateClaimer, skipping the case on a store
// without it, and returns the jobs and the default queue's hold (0: none).
func claimHeld(t *testing.T, h *Harness, worker string, limit int) ([]*jobs.Job, time.Duration) {
	t.Helper()
	rc, ok := h.Store.(jobs.RateClaimer)
	if !ok {
		t.Skipf("%T has no jobs.RateClaimer", h.Store)
	}
	r, err := rc.ClaimHeld(ctxOf(t), jobs.ClaimParams{WorkerID: worker, Queues: []string{jobs.DefaultQueue}, Limit: limit})
	if err != nil {
		t.Fatalf("ClaimHeld(%s, %d): %v", worker, limit, err)
	}
	var held time.Duration
	for _, q := range r.Held {
		if jobs.QueueKey(q.Queue) == jobs.QueueKey(jobs.DefaultQueue) {
			held = q.For
			if held <= 0 {
				t.Fatalf("held for %v: a hold is a wait still to come", held)
			}
		}
	}
	return r.Jobs, held
}

var rateCases = []testCase{
	// A window opens at its first claim and closes Window later: its
	// Count claims, then nothing until it closes, and a fresh Count then.
	{"WindowEdges", func(t *testing.T, h *Harness) {
		rateQueue(t, h, jobs.RateLimit{Count: 3, Window: time.Minute})
		enqueueN(t, h, 10, jobs.EnqueueParams{})
		got, held := claimHeld(t, h, worker1, 10)
		if len(got) != 3 || held <= 50*time.Second || held > time.Minute {
			t.Fatalf("first claim: %d jobs, held %v; want 3, held about a minute", len(got), held)
		}
		if again, held := claimHeld(t, h, worker2, 10); len(again) != 0 || held <= 0 {
			t.Fatalf("in the full window: %d jobs, held %v; want none, held", len(again), held)
		}
		if st := stats(t, h); st.WindowUsed != 3 || st.WindowEndsAt.IsZero() || st.WaitingOnRate != 7 {
			t.Errorf("stats in the full window: used %d, ends %v, waiting %d; want 3, a time, 7", st.WindowUsed, st.WindowEndsAt, st.WaitingOnRate)
		}
		h.Advance(t, 50*time.Second)
		if again, held := claimHeld(t, h, worker2, 10); len(again) != 0 || held <= 0 || held > 10*time.Second {
			t.Fatalf("50s in: %d jobs, held %v; want none, held at most 10s more", len(again), held)
		}
		h.Advance(t, 10*time.Second)
		if p, ok := h.Store.(jobs.Prober); ok {
			if due, err := p.Probe(ctxOf(t), []string{jobs.DefaultQueue}); err != nil || !due {
				t.Errorf("probe once the window closed, 7 due jobs: %v, %v; want true", due, err)
			}
		}
		if next, _ := claimHeld(t, h, worker2, 10); len(next) != 3 {
			t.Fatalf("once the window closed: %d jobs, want a fresh 3", len(next))
		}
		// The probe of an idle processor does not call a held queue's
		// jobs work: a claim would find nothing.
		if p, ok := h.Store.(jobs.Prober); ok {
			if due, err := p.Probe(ctxOf(t), []string{jobs.DefaultQueue}); err != nil || due {
				t.Errorf("probe of a held queue with 4 due jobs: %v, %v; want false", due, err)
			}
		}
	}},
	// Many claimers against one window: never more than Count between
	// them, all of Count when they ask for more.
	{"ConcurrentClaimersShareOneWindow", func(t *testing.T, h *Harness) {
		rateQueue(t, h, jobs.RateLimit{Count: 7, Window: time.Hour})
		enqueueN(t, h, 60, jobs.EnqueueParams{})
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for range 5 {
					got, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{WorkerID: worker1 + string(rune('a'+w)), Queues: []string{jobs.DefaultQueue}, Limit: 2})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					mu.Lock()
					total += len(got)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if total != 7 {
			t.Fatalf("8 claimers took %d jobs in one window of 7", total)
		}
	}},
	// A change applies to the open window: lowered below what it used, it
	// lets nothing in; raised, the rest of the new count; removed, all.
	{"LimitChangedMidWindow", func(t *testing.T, h *Harness) {
		rateQueue(t, h, jobs.RateLimit{Count: 5, Window: time.Hour})
		enqueueN(t, h, 20, jobs.EnqueueParams{})
		if got := claim(t, h, worker1, 3); len(got) != 3 {
			t.Fatalf("claimed %d of 3", len(got))
		}
		rateQueue(t, h, jobs.RateLimit{Count: 2, Window: time.Hour})
		if got, held := claimHeld(t, h, worker1, 10); len(got) != 0 || held <= 0 {
			t.Fatalf("lowered to 2 after 3 claimed: %d jobs, held %v; want none, held", len(got), held)
		}
		rateQueue(t, h, jobs.RateLimit{Count: 10, Window: time.Hour})
		if got := claim(t, h, worker1, 20); len(got) != 7 {
			t.Fatalf("raised to 10 after 3 claimed: %d jobs, want 7", len(got))
		}
		rateQueue(t, h, jobs.RateLimit{})
		if got := claim(t, h, worker1, 20); len(got) != 10 {
			t.Fatalf("limit removed: %d jobs, want the other 10", len(got))
		}
	}},
	// Rate and key limits together: only claimed jobs count against the
	// window, never one a key limit held back.
	{"RateAndKeyLimitsTogether", func(t *testing.T, h *Harness) {
		one := 1
		rateQueue(t, h, jobs.RateLimit{Count: 4, Window: time.Hour}, func(u *jobs.QueueUpdate) { u.MaxWorkersPerKey = &one })
		for _, k := range []string{"a", "a", "a", "b", "b", "b"} {
			flowEnqueue(t, h, jobs.EnqueueParams{ConcurrencyKey: k})
		}
		first, held := claimHeld(t, h, worker1, 10)
		if n := claimedKeys(first); len(first) != 2 || n["a"] != 1 || n["b"] != 1 || held != 0 {
			t.Fatalf("first claim %v, held %v; want a and b, not held (2 of 4 used)", n, held)
		}
		for _, j := range first {
			start(t, h, j.Ref())
			if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
				t.Fatal(err)
			}
		}
		second, held := claimHeld(t, h, worker1, 10)
		if len(second) != 2 || held <= 0 {
			t.Fatalf("second claim: %d jobs, held %v; want 2 (the window's last), held", len(second), held)
		}
		for _, j := range second {
			start(t, h, j.Ref())
			if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
				t.Fatal(err)
			}
		}
		if third := claim(t, h, worker1, 10); len(third) != 0 {
			t.Fatalf("the window's 4 used: claimed %d more", len(third))
		}
	}},
}
