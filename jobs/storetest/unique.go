package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// uniq enqueues p and returns the result, failing on an error.
func uniq(t *testing.T, h *Harness, p jobs.EnqueueParams) jobs.EnqueueResult {
	t.Helper()
	if p.Type == "" {
		p.Type = "test.job"
	}
	r, err := h.Store.Enqueue(ctxOf(t), p)
	if errors.Is(err, jobs.ErrUniqueUnsupported) {
		t.Skipf("%T: %v", h.Store, err)
	}
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", p, err)
	}
	return r
}

// wantDuplicateOf fails unless r is a duplicate of job id.
func wantDuplicateOf(t *testing.T, what string, r jobs.EnqueueResult, id int64) {
	t.Helper()
	if !r.Duplicate || r.ID != id {
		t.Fatalf("%s: %+v, want a duplicate of job %d", what, r, id)
	}
}

// wantNew fails unless r is a new job, not any of ids.
func wantNew(t *testing.T, what string, r jobs.EnqueueResult, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if r.ID == id {
			t.Fatalf("%s: %+v, want a new job, not %d", what, r, id)
		}
	}
	if r.Duplicate {
		t.Fatalf("%s: %+v, want a new job", what, r)
	}
}

var (
	byArgs   = &jobs.UniqueOpts{ByArgs: true}
	withArch = &jobs.UniqueOpts{ByArgs: true, States: jobs.UniqueActive | jobs.UniqueArchived}
	withDLQ  = &jobs.UniqueOpts{ByArgs: true, States: jobs.UniqueActive | jobs.UniqueDeadLettered}
)

var uniqueCases = []testCase{
	{"ByArgsComparesCanonicalJSON", func(t *testing.T, h *Harness) {
		first := uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":7,"report":"sales"}`), Unique: byArgs})
		wantNew(t, "first", first)
		wantDuplicateOf(t, "same arguments spelled otherwise",
			uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{ "report": "sales", "customer": 7.0 }`), Unique: byArgs}), first.ID)
		wantNew(t, "other arguments", uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":8,"report":"sales"}`), Unique: byArgs}), first.ID)
		wantNew(t, "other type", uniq(t, h, jobs.EnqueueParams{Type: "other", Payload: []byte(`{"customer":7,"report":"sales"}`), Unique: byArgs}), first.ID)
		wantNew(t, "not unique", uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":7,"report":"sales"}`)}), first.ID)
		j := get(t, h, first.ID)
		if j.UniqueKey == nil || j.UniqueStates != jobs.UniqueActive {
			t.Fatalf("job %d: unique key %v states %v, want its key and the hot states", j.ID, j.UniqueKey, j.UniqueStates)
		}
		want, _, _ := jobs.EnqueueParams{Type: "test.job", Queue: jobs.DefaultQueue, Payload: j.Payload, Unique: byArgs}.UniqueHash()
		if j.UniqueKey.Hash != want {
			t.Fatalf("stored hash %x, want %x", j.UniqueKey.Hash, want)
		}
	}},
	{"ByFieldsIgnoresTheOthers", func(t *testing.T, h *Harness) {
		by := &jobs.UniqueOpts{Fields: []string{"customer"}}
		first := uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":7,"at":1}`), Unique: by})
		wantDuplicateOf(t, "another value of an unnamed field",
			uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":7,"at":2}`), Unique: by}), first.ID)
		wantNew(t, "another customer", uniq(t, h, jobs.EnqueueParams{Payload: []byte(`{"customer":8,"at":1}`), Unique: by}), first.ID)
		if _, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", Payload: []byte(`[7]`), Unique: by}); err == nil {
			t.Fatal("a payload that is not an object, unique by fields: no error")
		} else {
			wantInvalid(t, err, "payload")
		}
	}},
	{"ByQueue", func(t *testing.T, h *Harness) {
		by := &jobs.UniqueOpts{ByQueue: true}
		a := uniq(t, h, jobs.EnqueueParams{Queue: "a", Unique: by})
		wantDuplicateOf(t, "the same queue in other case", uniq(t, h, jobs.EnqueueParams{Queue: "A", Unique: by}), a.ID)
		wantNew(t, "another queue", uniq(t, h, jobs.EnqueueParams{Queue: "b", Unique: by}), a.ID)
		kind := uniq(t, h, jobs.EnqueueParams{Queue: "a", Unique: &jobs.UniqueOpts{}})
		wantDuplicateOf(t, "unique by type alone, in another queue", uniq(t, h, jobs.EnqueueParams{Queue: "b", Unique: &jobs.UniqueOpts{}}), kind.ID)
	}},
	{"PeriodAtItsBoundary", func(t *testing.T, h *Harness) {
		now, err := h.Store.Now(ctxOf(t))
		if err != nil {
			t.Fatal(err)
		}
		h.Advance(t, time.Millisecond)
		if later, err := h.Store.Now(ctxOf(t)); err != nil || !later.After(now) {
			t.Skip("Advance does not move the store's now, on which periods are bucketed")
		}
		now, _ = h.Store.Now(ctxOf(t))
		by := &jobs.UniqueOpts{Period: time.Hour}
		end := now.Truncate(time.Hour).Add(time.Hour) // the next bucket starts here
		h.Advance(t, end.Sub(now)-time.Millisecond)
		last := uniq(t, h, jobs.EnqueueParams{Unique: by})
		wantNew(t, "the last millisecond of an hour", last)
		wantDuplicateOf(t, "again in that millisecond", uniq(t, h, jobs.EnqueueParams{Unique: by}), last.ID)
		h.Advance(t, time.Millisecond)
		next := uniq(t, h, jobs.EnqueueParams{Unique: by})
		wantNew(t, "the first millisecond of the next hour", next, last.ID)
		h.Advance(t, time.Hour-2*time.Millisecond)
		wantDuplicateOf(t, "the end of the next hour", uniq(t, h, jobs.EnqueueParams{Unique: by}), next.ID)
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 2 {
			t.Fatalf("%d hot jobs, want 2", n)
		}
	}},
	{"ArchivedBlocksOnlyWhenArchivedCounts", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{Queue: "q1", Payload: []byte(`{"r":1}`), Unique: byArgs}
		a := archived(t, h, p)
		wantNew(t, "after the holder was archived, archived not counted", uniq(t, h, p), a.ID)

		q := jobs.EnqueueParams{Queue: "q2", Payload: []byte(`{"r":2}`), Unique: withArch}
		b := archived(t, h, q)
		wantDuplicateOf(t, "archived, archived counted", uniq(t, h, q), b.ID)
		if j := get(t, h, b.ID); j.Table != jobs.TableArchive || j.UniqueKey == nil {
			t.Fatalf("archived holder %+v: want its key shown", j)
		}
		// A dead letter does not hold a key that counts only archived jobs.
		c := deadLetter(t, h, jobs.EnqueueParams{Queue: "q3", Payload: []byte(`{"r":3}`), Unique: withArch}, jobs.ReasonFatal, "x")
		wantNew(t, "dead-lettered, only archived counted", uniq(t, h, jobs.EnqueueParams{Queue: "q3", Payload: []byte(`{"r":3}`), Unique: withArch}), c.ID)
	}},
	{"ArchivedHoldsOnlyForItsPeriod", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		h.Advance(t, time.Millisecond)
		if later, err := h.Store.Now(ctxOf(t)); err != nil || !later.After(now) {
			t.Skip("Advance does not move the store's now, on which periods are bucketed")
		}
		p := jobs.EnqueueParams{Unique: &jobs.UniqueOpts{Period: time.Hour, States: jobs.UniqueActive | jobs.UniqueArchived}}
		a := archived(t, h, p)
		wantDuplicateOf(t, "archived within its hour", uniq(t, h, p), a.ID)
		h.Advance(t, time.Hour)
		wantNew(t, "the next hour", uniq(t, h, p), a.ID)
	}},
	{"DeadLetteredBlocksOnlyWhenCounted", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{Queue: "q1", Payload: []byte(`{"r":1}`), Unique: byArgs}
		a := deadLetter(t, h, p, jobs.ReasonFatal, "x")
		wantNew(t, "dead-lettered, not counted", uniq(t, h, p), a.ID)

		q := jobs.EnqueueParams{Queue: "q2", Payload: []byte(`{"r":2}`), Unique: withDLQ}
		b := deadLetter(t, h, q, jobs.ReasonFatal, "x")
		wantDuplicateOf(t, "dead-lettered, counted", uniq(t, h, q), b.ID)
		// Cancelled Pending jobs are dead letters too.
		c := uniq(t, h, jobs.EnqueueParams{Queue: "q3", Payload: []byte(`{"r":3}`), Unique: byArgs})
		cancel(t, h, c.ID)
		wantNew(t, "cancelled, dead letters not counted", uniq(t, h, jobs.EnqueueParams{Queue: "q3", Payload: []byte(`{"r":3}`), Unique: byArgs}), c.ID)
	}},
	{"KeptThroughRetrySnoozeReleaseAndRescue", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{Unique: byArgs}
		j := running(t, h, p)
		if err := h.Store.Retry(ctxOf(t), j.Ref(), jobs.RetryParams{Error: "e"}); err != nil {
			t.Fatal(err)
		}
		wantDuplicateOf(t, "retrying", uniq(t, h, p), j.ID)
		c := claimOne(t, h)
		start(t, h, c.Ref())
		if err := h.Store.Snooze(ctxOf(t), c.Ref(), jobs.SnoozeParams{Delay: time.Minute}); err != nil {
			t.Fatal(err)
		}
		wantDuplicateOf(t, "snoozed", uniq(t, h, p), j.ID)
		h.Advance(t, 2*time.Minute)
		c = claimOne(t, h)
		if _, err := h.Store.Release(ctxOf(t), []jobs.LeaseRef{c.Ref()}); err != nil {
			t.Fatal(err)
		}
		wantDuplicateOf(t, "released", uniq(t, h, p), j.ID)
		claimOne(t, h)
		wantDuplicateOf(t, "fetched", uniq(t, h, p), j.ID)
		h.Advance(t, fetchedTimeout+time.Minute)
		if rs := rescueFetched(t, h); len(rs) != 1 {
			t.Fatalf("rescued %v, want the one job", rs)
		}
		wantDuplicateOf(t, "rescued", uniq(t, h, p), j.ID)
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 1 {
			t.Fatalf("%d hot jobs, want 1", n)
		}
	}},
	{"ResurrectRetakesAFreeKeyAndDropsATakenOne", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{Queue: "q1", Payload: []byte(`{"r":1}`), Unique: byArgs}
		a := deadLetter(t, h, p, jobs.ReasonFatal, "x")
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{a.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		wantDuplicateOf(t, "resurrected, key free", uniq(t, h, p), a.ID)

		q := jobs.EnqueueParams{Queue: "q2", Payload: []byte(`{"r":2}`), Unique: byArgs}
		b := deadLetter(t, h, q, jobs.ReasonFatal, "x")
		live := uniq(t, h, q)
		wantNew(t, "after the dead letter", live, b.ID)
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{b.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		if j := get(t, h, b.ID); j.UniqueKey != nil {
			t.Fatalf("resurrected job kept key %v that job %d holds", j.UniqueKey, live.ID)
		}
		wantDuplicateOf(t, "the live holder keeps it", uniq(t, h, q), live.ID)
	}},
	{"RetentionAndPurgeReleaseTheKey", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{Queue: "q", Payload: []byte(`{"r":1}`), Unique: withArch}
		a := archived(t, h, p)
		wantDuplicateOf(t, "archived, counted", uniq(t, h, p), a.ID)
		h.Advance(t, time.Hour)
		if r, err := h.Store.Trim(ctxOf(t), jobs.TrimParams{Table: jobs.TableArchive, Queue: "q", OlderThan: time.Minute, Limit: 10}); err != nil || r.Deleted != 1 {
			t.Fatalf("Trim = %+v, %v", r, err)
		}
		b := uniq(t, h, p)
		wantNew(t, "after retention removed the holder", b, a.ID)

		q := jobs.EnqueueParams{Queue: "q2", Payload: []byte(`{"r":2}`), Unique: withDLQ}
		d := deadLetter(t, h, q, jobs.ReasonFatal, "x")
		if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: []int64{d.ID}}}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		wantNew(t, "after a purge removed the holder", uniq(t, h, q), d.ID)
	}},
	{"ManyResolvesDuplicatesInTheBatch", func(t *testing.T, h *Harness) {
		existing := uniq(t, h, jobs.EnqueueParams{Type: "t", Payload: []byte(`{"n":0}`), Unique: byArgs})
		rs, err := h.Store.EnqueueMany(ctxOf(t), []jobs.EnqueueParams{
			{Type: "t", Payload: []byte(`{"n":1}`), Unique: byArgs},
			{Type: "t", Payload: []byte(`{"n":0}`), Unique: byArgs},
			{Type: "t", Payload: []byte(`{ "n" : 1 }`), Unique: byArgs},
			{Type: "t", Payload: []byte(`{"n":1}`)},
			{Type: "t", Payload: []byte(`{"n":2}`), Unique: byArgs, IdempotencyKey: "k"},
			{Type: "t", Payload: []byte(`{"n":3}`), Unique: byArgs, IdempotencyKey: "k"},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantNew(t, "item 0", rs[0], existing.ID)
		wantDuplicateOf(t, "item 1, the existing job's key", rs[1], existing.ID)
		wantDuplicateOf(t, "item 2, item 0's key", rs[2], rs[0].ID)
		wantNew(t, "item 3, not unique", rs[3], rs[0].ID)
		wantNew(t, "item 4", rs[4], rs[0].ID)
		wantDuplicateOf(t, "item 5, item 4's idempotency key", rs[5], rs[4].ID)
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 4 {
			t.Fatalf("%d hot jobs, want 4", n)
		}
	}},
	{"Concurrent16x1000KeysOneJobEach", func(t *testing.T, h *Harness) {
		const goroutines, keys, batch = 16, 1000, 25
		got := make([][]jobs.EnqueueResult, goroutines) // by goroutine, then key
		errs := make([]error, goroutines)
		var wg sync.WaitGroup
		startLine := make(chan struct{})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startLine
				got[g] = make([]jobs.EnqueueResult, keys)
				order := rand.New(rand.NewPCG(uint64(g), 28)).Perm(keys) // each its own order
				for i := 0; i < keys; i += batch {
					ps := make([]jobs.EnqueueParams, 0, batch)
					for _, k := range order[i : i+batch] {
						ps = append(ps, jobs.EnqueueParams{Type: "t", Payload: fmt.Appendf(nil, `{"key":%d}`, k), Unique: byArgs})
					}
					var rs []jobs.EnqueueResult
					if g%2 == 0 { // half in batches, half one by one
						rs, errs[g] = h.Store.EnqueueMany(ctxOf(t), ps)
					} else {
						for _, p := range ps {
							var r jobs.EnqueueResult
							if r, errs[g] = h.Store.Enqueue(ctxOf(t), p); errs[g] != nil {
								break
							}
							rs = append(rs, r)
						}
					}
					if errs[g] != nil {
						return
					}
					for j, k := range order[i : i+batch] {
						got[g][k] = rs[j]
					}
				}
			}()
		}
		began := time.Now()
		close(startLine)
		wg.Wait()
		t.Logf("%d goroutines x %d keys: %v", goroutines, keys, time.Since(began))
		for g, err := range errs {
			if err != nil {
				t.Fatalf("goroutine %d: %v", g, err)
			}
		}
		for k := range keys {
			fresh := 0
			for g := range goroutines {
				if got[g][k].ID != got[0][k].ID {
					t.Fatalf("key %d: goroutine %d got job %d, goroutine 0 job %d", k, g, got[g][k].ID, got[0][k].ID)
				}
				if !got[g][k].Duplicate {
					fresh++
				}
			}
			if fresh != 1 {
				t.Fatalf("key %d: %d enqueues reported a new job, want 1", k, fresh)
			}
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != keys {
			t.Fatalf("%d hot jobs for %d keys", n, keys)
		}
	}},
}
