package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// batchWorker returns the store's batch forms, or skips a store that has
// none: they are an optional capability (jobs.BatchWorker).
var batchWorker = capability[jobs.BatchWorker]

// wantResults checks each item's result: nil, or an error wrapping want.
func wantResults(t *testing.T, op string, got []error, want ...error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results for %d items", op, len(got), len(want))
	}
	for i := range want {
		if (want[i] == nil) != (got[i] == nil) || (want[i] != nil && !errors.Is(got[i], want[i])) {
			t.Errorf("%s: item %d = %v, want %v", op, i, got[i], want[i])
		}
	}
}

// claimN claims n jobs of the default queue.
func claimN(t *testing.T, h *Harness, n int) []*jobs.Job {
	t.Helper()
	enqueueN(t, h, n, jobs.EnqueueParams{})
	got := claim(t, h, worker1, n)
	if len(got) != n {
		t.Fatalf("claimed %d jobs, want %d", len(got), n)
	}
	return got
}

func stale(j *jobs.Job) jobs.LeaseRef { return jobs.LeaseRef{ID: j.ID, Lease: j.Lease + 1} }

var batchCases = []testCase{
	{"StartManyFencesEachJob", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		js := claimN(t, h, 3)
		a, b, c := js[0], js[1], js[2]
		before := start(t, h, c.Ref()) // c started already: StartMany reports that start
		h.Advance(t, time.Second)
		unknown := jobs.LeaseRef{ID: 1 << 40, Lease: 1}
		rs, err := bw.StartMany(ctxOf(t), []jobs.LeaseRef{a.Ref(), stale(b), c.Ref(), a.Ref(), unknown}, jobs.StartParams{DefaultTimeout: defaultTimeout})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 5 {
			t.Fatalf("%d results for 5 refs", len(rs))
		}
		if rs[0].Err != nil || rs[0].Started.AttemptCount != 1 || rs[0].Started.Timeout != defaultTimeout {
			t.Fatalf("a: %+v", rs[0])
		}
		if !errors.Is(rs[1].Err, jobs.ErrLeaseLost) || !errors.Is(rs[4].Err, jobs.ErrLeaseLost) {
			t.Fatalf("stale and unknown refs: %v, %v; want ErrLeaseLost", rs[1].Err, rs[4].Err)
		}
		if rs[2].Err != nil || rs[2].Started.AttemptCount != 1 || !closeTo(rs[2].Started.StartedAt, before.StartedAt, time.Millisecond) {
			t.Fatalf("c, started before: %+v, want its first start %+v", rs[2], before)
		}
		if rs[3].Err != nil || rs[3].Started.AttemptCount != 1 {
			t.Fatalf("a repeated in the batch: %+v, want the result of its first occurrence", rs[3])
		}
		if j := wantHot(t, h, a.ID, jobs.StatusProcessing); j.AttemptCount != 1 {
			t.Fatalf("a started twice: attempt %d", j.AttemptCount)
		}
		wantHot(t, h, b.ID, jobs.StatusFetched)
	}},
	{"StartManyUsesEachQueueExecutionTimeout", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		setQueue(t, h, "slow", jobs.QueueUpdate{ExecutionTimeout: secs(90)})
		enqueue(t, h, jobs.EnqueueParams{Queue: "slow"})
		enqueue(t, h, jobs.EnqueueParams{})
		js := claim(t, h, worker1, 2, "slow", jobs.DefaultQueue)
		rs, err := bw.StartMany(ctxOf(t), []jobs.LeaseRef{js[0].Ref(), js[1].Ref()}, jobs.StartParams{DefaultTimeout: defaultTimeout})
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range js {
			want := defaultTimeout
			if j.Queue == "slow" {
				want = 90 * time.Second
			}
			if rs[i].Err != nil || rs[i].Started.Timeout != want {
				t.Errorf("job of %s: %+v, want timeout %v", j.Queue, rs[i], want)
			}
		}
	}},
	{"CompleteManyFencesEachJob", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		c := claimN(t, h, 1)[0] // Fetched: not startable by Complete
		rs, err := bw.CompleteMany(ctxOf(t), []jobs.LeaseRef{a.Ref(), stale(b), c.Ref(), a.Ref()})
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "CompleteMany", rs, nil, jobs.ErrLeaseLost, jobs.ErrLeaseLost, nil)
		if j := wantTable(t, h, a.ID, jobs.TableArchive); j.Lease != a.Lease {
			t.Fatalf("archived %+v", j)
		}
		if n := count(t, h, jobs.TableArchive, jobs.Filter{}); n != 1 {
			t.Fatalf("%d archived jobs, want 1: a repeated ref must not archive twice", n)
		}
		wantHot(t, h, b.ID, jobs.StatusProcessing)
		wantHot(t, h, c.ID, jobs.StatusFetched)
		// The lost one can still be completed under its own lease.
		if rs, err := bw.CompleteMany(ctxOf(t), []jobs.LeaseRef{b.Ref()}); err != nil || rs[0] != nil {
			t.Fatalf("completing b: %v, %v", rs, err)
		}
	}},
	{"RetryManyTakesEachItemsParams", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		c := running(t, h, jobs.EnqueueParams{})
		now, _ := h.Store.Now(ctxOf(t))
		rs, err := bw.RetryMany(ctxOf(t), []jobs.RetryItem{
			{Ref: a.Ref(), Params: jobs.RetryParams{Delay: time.Minute, Error: "first"}},
			{Ref: b.Ref(), Params: jobs.RetryParams{Delay: -time.Second}},
			{Ref: stale(c), Params: jobs.RetryParams{}},
			{Ref: c.Ref(), Params: jobs.RetryParams{Delay: time.Hour, Error: "third"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "RetryMany", rs, nil, jobs.ErrInvalidArgument, jobs.ErrLeaseLost, nil)
		ja := wantHot(t, h, a.ID, jobs.StatusPending)
		if ja.LastError != "first" || !closeTo(ja.ScheduledAt, now.Add(time.Minute), 2*time.Second) || ja.AttemptCount != 1 {
			t.Fatalf("a: %+v", ja)
		}
		if jc := wantHot(t, h, c.ID, jobs.StatusPending); jc.LastError != "third" || !closeTo(jc.ScheduledAt, now.Add(time.Hour), 2*time.Second) {
			t.Fatalf("c: %+v", jc)
		}
		wantHot(t, h, b.ID, jobs.StatusProcessing) // its invalid item changed nothing
	}},
	{"DeadLetterManyTakesEachItemsParams", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		a := running(t, h, jobs.EnqueueParams{})
		b := running(t, h, jobs.EnqueueParams{})
		c := running(t, h, jobs.EnqueueParams{})
		rs, err := bw.DeadLetterMany(ctxOf(t), []jobs.DeadLetterItem{
			{Ref: a.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "bad input"}},
			{Ref: b.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.FailureReason(42)}},
			{Ref: c.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonTimeout, Details: "too slow"}},
			{Ref: a.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonZombie}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "DeadLetterMany", rs, nil, jobs.ErrInvalidArgument, nil, nil)
		if j := wantTable(t, h, a.ID, jobs.TableDLQ); j.FailureReason != jobs.ReasonFatal || j.ErrorDetails != "bad input" {
			t.Fatalf("a: reason %s details %q: the first occurrence decides", j.FailureReason, j.ErrorDetails)
		}
		if j := wantTable(t, h, c.ID, jobs.TableDLQ); j.FailureReason != jobs.ReasonTimeout || j.ErrorDetails != "too slow" {
			t.Fatalf("c: %+v", j)
		}
		wantHot(t, h, b.ID, jobs.StatusProcessing)
		if n := count(t, h, jobs.TableDLQ, jobs.Filter{}); n != 2 {
			t.Fatalf("%d dead letters, want 2", n)
		}
	}},
	{"TransitionAppliesEveryListInOneCall", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		fetched := claimN(t, h, 2)
		done := running(t, h, jobs.EnqueueParams{})
		again := running(t, h, jobs.EnqueueParams{})
		dead := running(t, h, jobs.EnqueueParams{})
		r, err := bw.Transition(ctxOf(t), jobs.Transitions{
			Starts:      []jobs.LeaseRef{fetched[0].Ref(), stale(fetched[1])},
			StartParams: jobs.StartParams{DefaultTimeout: defaultTimeout},
			Completes:   []jobs.LeaseRef{done.Ref(), stale(again)},
			Retries:     []jobs.RetryItem{{Ref: again.Ref(), Params: jobs.RetryParams{Delay: time.Minute, Error: "later"}}},
			DeadLetters: []jobs.DeadLetterItem{{Ref: dead.Ref(), Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "no"}}, {Ref: stale(dead)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Starts) != 2 || r.Starts[0].Err != nil || r.Starts[0].Started.AttemptCount != 1 || !errors.Is(r.Starts[1].Err, jobs.ErrLeaseLost) {
			t.Fatalf("starts: %+v", r.Starts)
		}
		wantResults(t, "completes", r.Completes, nil, jobs.ErrLeaseLost)
		wantResults(t, "retries", r.Retries, nil)
		wantResults(t, "dead letters", r.DeadLetters, nil, jobs.ErrLeaseLost)
		wantHot(t, h, fetched[0].ID, jobs.StatusProcessing)
		wantHot(t, h, fetched[1].ID, jobs.StatusFetched)
		wantTable(t, h, done.ID, jobs.TableArchive)
		if j := wantHot(t, h, again.ID, jobs.StatusPending); j.LastError != "later" {
			t.Fatalf("retried job: %+v", j)
		}
		wantTable(t, h, dead.ID, jobs.TableDLQ)
		if _, err := bw.Transition(ctxOf(t), jobs.Transitions{}); err != nil {
			t.Fatalf("empty Transition: %v", err)
		}
	}},
	{"EmptyBatchesDoNothing", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		ctx := ctxOf(t)
		if rs, err := bw.StartMany(ctx, nil, jobs.StartParams{DefaultTimeout: defaultTimeout}); err != nil || len(rs) != 0 {
			t.Fatalf("StartMany(nil) = %v, %v", rs, err)
		}
		if rs, err := bw.CompleteMany(ctx, nil); err != nil || len(rs) != 0 {
			t.Fatalf("CompleteMany(nil) = %v, %v", rs, err)
		}
		if rs, err := bw.RetryMany(ctx, nil); err != nil || len(rs) != 0 {
			t.Fatalf("RetryMany(nil) = %v, %v", rs, err)
		}
		if rs, err := bw.DeadLetterMany(ctx, nil); err != nil || len(rs) != 0 {
			t.Fatalf("DeadLetterMany(nil) = %v, %v", rs, err)
		}
	}},
	{"OversizedBatchesAreRefusedWhole", func(t *testing.T, h *Harness) {
		bw := batchWorker(t, h)
		a := running(t, h, jobs.EnqueueParams{})
		refs := make([]jobs.LeaseRef, jobs.MaxWorkerBatch+1)
		for i := range refs {
			refs[i] = a.Ref()
		}
		if _, err := bw.CompleteMany(ctxOf(t), refs); !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Fatalf("CompleteMany of %d refs: %v, want ErrInvalidArgument", len(refs), err)
		}
		if _, err := bw.StartMany(ctxOf(t), refs, jobs.StartParams{DefaultTimeout: defaultTimeout}); !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Fatalf("StartMany of %d refs: %v", len(refs), err)
		}
		wantHot(t, h, a.ID, jobs.StatusProcessing)
	}},
	{"AFullBatchMovesEveryJobOnce", func(t *testing.T, h *Harness) {
		// MaxWorkerBatch jobs through StartMany and CompleteMany: each one
		// archived exactly once, none left behind (I2 for the batch forms).
		bw := batchWorker(t, h)
		enqueueN(t, h, jobs.MaxWorkerBatch, jobs.EnqueueParams{})
		var refs []jobs.LeaseRef
		for _, j := range claim(t, h, worker1, jobs.MaxWorkerBatch) {
			refs = append(refs, j.Ref())
		}
		if len(refs) != jobs.MaxWorkerBatch {
			t.Fatalf("claimed %d jobs, want %d", len(refs), jobs.MaxWorkerBatch)
		}
		rs, err := bw.StartMany(ctxOf(t), refs, jobs.StartParams{DefaultTimeout: defaultTimeout})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if r.Err != nil {
				t.Fatalf("start %d: %v", i, r.Err)
			}
		}
		done, err := bw.CompleteMany(ctxOf(t), refs)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range done {
			if e != nil {
				t.Fatalf("complete %d: %v", i, e)
			}
		}
		if hot, arch := count(t, h, jobs.TableHot, jobs.Filter{}), count(t, h, jobs.TableArchive, jobs.Filter{}); hot != 0 || arch != jobs.MaxWorkerBatch {
			t.Fatalf("hot %d, archive %d; want 0 and %d", hot, arch, jobs.MaxWorkerBatch)
		}
	}},
}
