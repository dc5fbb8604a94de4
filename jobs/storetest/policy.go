package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// startWith claims the one job of queue and starts it with p.
func startWith(t *testing.T, h *Harness, queue string, p jobs.StartParams) (*jobs.Job, jobs.Started) {
	t.Helper()
	j := claimOne(t, h, queue)
	if p.DefaultTimeout == 0 {
		p.DefaultTimeout = defaultTimeout
	}
	st, err := h.Store.Start(ctxOf(t), j.Ref(), p)
	if err != nil {
		t.Fatalf("Start(%+v, %+v): %v", j.Ref(), p, err)
	}
	return j, st
}

// retryKind is the start of a job whose kind opted into zombie retries.
func retryKind(limit int) jobs.StartParams {
	return jobs.StartParams{DefaultTimeout: defaultTimeout, ZombieRetryCap: limit}
}

// policyCases are the store's share of the precedence of docs/design.md
// (Policy per kind): the timeout it resolves and records at start.
var policyCases = []testCase{
	{"TimeoutPrecedence", func(t *testing.T, h *Harness) {
		setQueue(t, h, "q", jobs.QueueUpdate{ExecutionTimeout: secs(120)})
		for _, c := range []struct {
			queue string
			p     jobs.StartParams
			want  time.Duration
			from  jobs.PolicySource
		}{
			{"q", jobs.StartParams{Timeout: 30 * time.Second, TimeoutFrom: jobs.SourceJob}, 30 * time.Second, jobs.SourceJob},
			{"q", jobs.StartParams{Timeout: 45 * time.Second}, 45 * time.Second, jobs.SourceKind},
			{"q", jobs.StartParams{}, 120 * time.Second, jobs.SourceQueue},
			{"plain", jobs.StartParams{}, defaultTimeout, jobs.SourceDefault},
			{"plain", jobs.StartParams{Timeout: 45 * time.Second, TimeoutFrom: jobs.SourceKind}, 45 * time.Second, jobs.SourceKind},
		} {
			enqueue(t, h, jobs.EnqueueParams{Queue: c.queue})
			j, st := startWith(t, h, c.queue, c.p)
			if st.Timeout != c.want || st.TimeoutFrom != c.from || !st.DeadlineAt.Equal(st.StartedAt.Add(c.want)) {
				t.Errorf("queue %s, %+v: started with %v from %s (deadline %v after start), want %v from %s",
					c.queue, c.p, st.Timeout, st.TimeoutFrom, st.DeadlineAt.Sub(st.StartedAt), c.want, c.from)
			}
			if g := get(t, h, j.ID); g.TimeoutFrom != c.from || g.DeadlineAt.Sub(g.StartedAt) != c.want {
				t.Errorf("job %d recorded %v from %s, want %v from %s", j.ID, g.DeadlineAt.Sub(g.StartedAt), g.TimeoutFrom, c.want, c.from)
			}
			// A start repeated under the same lease reports the first.
			again, err := h.Store.Start(ctxOf(t), j.Ref(), jobs.StartParams{DefaultTimeout: time.Hour})
			if err != nil || again.TimeoutFrom != c.from || again.Timeout != c.want {
				t.Errorf("the repeated start reported %+v, %v; want the first's %v from %s", again, err, c.want, c.from)
			}
		}
	}},
	{"QueueChangeAtRunTime", func(t *testing.T, h *Harness) {
		// An operator's change applies to every later start of a job whose
		// kind sets no timeout, and never to a kind's own.
		enqueueN(t, h, 3, jobs.EnqueueParams{Queue: "q"})
		_, before := startWith(t, h, "q", jobs.StartParams{})
		setQueue(t, h, "q", jobs.QueueUpdate{ExecutionTimeout: secs(90)})
		_, after := startWith(t, h, "q", jobs.StartParams{})
		_, kind := startWith(t, h, "q", jobs.StartParams{Timeout: 20 * time.Second})
		if before.Timeout != defaultTimeout || before.TimeoutFrom != jobs.SourceDefault {
			t.Errorf("before the change: %v from %s, want the default", before.Timeout, before.TimeoutFrom)
		}
		if after.Timeout != 90*time.Second || after.TimeoutFrom != jobs.SourceQueue {
			t.Errorf("after the change: %v from %s, want 1m30s from the queue", after.Timeout, after.TimeoutFrom)
		}
		if kind.Timeout != 20*time.Second || kind.TimeoutFrom != jobs.SourceKind {
			t.Errorf("a kind's own timeout: %v from %s, want 20s from the kind", kind.Timeout, kind.TimeoutFrom)
		}
	}},
	{"DeadlineRecordedAtStartIsPhase3s", func(t *testing.T, h *Harness) {
		// The kind's timeout is what any rescuer enforces, not the queue's.
		setQueue(t, h, "q", jobs.QueueUpdate{ExecutionTimeout: secs(3600)})
		enqueue(t, h, jobs.EnqueueParams{Queue: "q"})
		j, _ := startWith(t, h, "q", jobs.StartParams{Timeout: time.Minute})
		h.Advance(t, 2*time.Minute)
		if got := rescuedIDs(rescueExpired(t, h)); !slices.Equal(got, []int64{j.ID}) {
			t.Fatalf("phase 3 moved %v, want job %d past its kind's 1m deadline", got, j.ID)
		}
	}},
	{"StartRefusesABadPolicy", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j := claimOne(t, h)
		for _, p := range []jobs.StartParams{
			{DefaultTimeout: time.Minute, Timeout: -time.Second},
			{DefaultTimeout: time.Minute, ZombieRetryCap: -1},
			{DefaultTimeout: time.Minute, ZombieRetryCap: jobs.MaxZombieRetries + 1},
			{DefaultTimeout: time.Minute, Timeout: time.Second, TimeoutFrom: jobs.SourceQueue},
		} {
			if _, err := h.Store.Start(ctxOf(t), j.Ref(), p); !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Errorf("Start(%+v) = %v, want ErrInvalidArgument", p, err)
			}
		}
		wantHot(t, h, j.ID, jobs.StatusFetched)
	}},
}

// zombieRetryCases are rescue phase 2 under a kind's zombie policy
// (ADR 0029), on the manual clock.
var zombieRetryCases = []testCase{
	{"ZombieRetryRecoversUnderANewLease", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{MaxAttempts: 5})
		old, _ := startWith(t, h, jobs.DefaultQueue, retryKind(2))
		h.Advance(t, globalZombie-time.Minute)
		if rs := rescueZombies(t, h); len(rs) != 0 {
			t.Fatalf("phase 2 moved %v before the timeout", rescuedIDs(rs))
		}
		h.Advance(t, 2*time.Minute)
		rs := rescueZombies(t, h)
		if len(rs) != 1 || rs[0].ID != old.ID || !rs[0].Recovered || rs[0].Reason != jobs.ReasonZombie || rs[0].Lease != old.Lease {
			t.Fatalf("phase 2 reported %+v, want job %d recovered under its old lease %d", rs, old.ID, old.Lease)
		}
		p := wantHot(t, h, old.ID, jobs.StatusPending)
		if p.AttemptCount != 1 || p.ZombieRetries != 1 || p.ZombieRetryCap != 2 || p.WorkerID != "" ||
			!strings.HasPrefix(p.LastError, "recovered: heartbeat expired") || !strings.Contains(p.LastError, "zombie retry 1 of 2") {
			t.Fatalf("recovered job %+v: want Pending, attempt 1 spent, zombie retry 1 of 2 in its last error", p)
		}
		// The frozen old holder wakes up: nothing it sends changes the job.
		wantLeaseLost(t, "complete", h.Store.Complete(ctxOf(t), old.Ref()))
		wantLeaseLost(t, "dead-letter", h.Store.DeadLetter(ctxOf(t), old.Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal}))
		wantLeaseLost(t, "retry", h.Store.Retry(ctxOf(t), old.Ref(), jobs.RetryParams{}))
		if hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{old.Ref()}); err != nil || len(hb.Lost) != 1 {
			t.Fatalf("the old holder's heartbeat: %+v, %v; want it lost", hb, err)
		}
		if _, err := h.Store.Start(ctxOf(t), old.Ref(), retryKind(2)); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("the old holder's start: %v, want ErrLeaseLost", err)
		}
		wantHot(t, h, old.ID, jobs.StatusPending)
		// It runs again only under lease+1.
		again, _ := startWith(t, h, jobs.DefaultQueue, retryKind(2))
		if again.ID != old.ID || again.Lease != old.Lease+1 {
			t.Fatalf("re-claimed %+v, want job %d under lease %d", again.Ref(), old.ID, old.Lease+1)
		}
		wantLeaseLost(t, "complete", h.Store.Complete(ctxOf(t), old.Ref()))
		if err := h.Store.Complete(ctxOf(t), again.Ref()); err != nil {
			t.Fatalf("the new holder's complete: %v", err)
		}
		if a := wantTable(t, h, old.ID, jobs.TableArchive); a.AttemptCount != 2 {
			t.Fatalf("archived after %d attempts, want 2 (the recovered one counted)", a.AttemptCount)
		}
	}},
	{"ZombieRetryNeverWhileTheHolderHeartbeats", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j, _ := startWith(t, h, jobs.DefaultQueue, retryKind(3))
		for range 6 {
			h.Advance(t, globalZombie/2)
			if hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{j.Ref()}); err != nil || len(hb.Lost) != 0 {
				t.Fatalf("heartbeat: %+v, %v", hb, err)
			}
			if rs := rescueZombies(t, h); len(rs) != 0 {
				t.Fatalf("phase 2 moved %+v while its holder heartbeats", rs)
			}
		}
		wantHot(t, h, j.ID, jobs.StatusProcessing)
	}},
	{"ZombieRetryPastTheCapDeadLetters", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{MaxAttempts: 5})
		j, _ := startWith(t, h, jobs.DefaultQueue, retryKind(1))
		h.Advance(t, globalZombie+time.Minute)
		if rs := rescueZombies(t, h); len(rs) != 1 || !rs[0].Recovered {
			t.Fatalf("first silence: %+v, want it recovered", rs)
		}
		startWith(t, h, jobs.DefaultQueue, retryKind(1))
		h.Advance(t, globalZombie+time.Minute)
		rs := rescueZombies(t, h)
		if len(rs) != 1 || rs[0].Recovered || rs[0].Reason != jobs.ReasonZombie {
			t.Fatalf("second silence: %+v, want it dead-lettered as Zombie (cap 1 reached)", rs)
		}
		d := wantTable(t, h, j.ID, jobs.TableDLQ)
		if d.FailureReason != jobs.ReasonZombie || d.AttemptCount != 2 || !strings.HasPrefix(d.ErrorDetails, "zombie: heartbeat expired") {
			t.Fatalf("dead letter %+v, want Zombie after 2 attempts", d)
		}
	}},
	{"ZombieRetryDefaultKindDeadLetters", func(t *testing.T, h *Harness) {
		// Mixed in one batch: only the opted-in job comes back.
		enqueueN(t, h, 2, jobs.EnqueueParams{})
		plain, _ := startWith(t, h, jobs.DefaultQueue, jobs.StartParams{})
		opted, _ := startWith(t, h, jobs.DefaultQueue, retryKind(1))
		h.Advance(t, globalZombie+time.Minute)
		rs := rescueZombies(t, h)
		if len(rs) != 2 {
			t.Fatalf("phase 2 moved %+v, want both jobs", rs)
		}
		for _, r := range rs {
			if r.Recovered != (r.ID == opted.ID) {
				t.Errorf("job %d recovered %v; want only job %d (the opted-in kind) recovered", r.ID, r.Recovered, opted.ID)
			}
		}
		wantTable(t, h, plain.ID, jobs.TableDLQ)
		wantHot(t, h, opted.ID, jobs.StatusPending)
	}},
	{"ZombieRetryLimitCountsBoth", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 4, jobs.EnqueueParams{})
		for i := range 4 {
			startWith(t, h, jobs.DefaultQueue, retryKind(i%2))
		}
		h.Advance(t, globalZombie+time.Minute)
		rs, err := h.Store.RescueZombies(ctxOf(t), jobs.RescueParams{Timeout: globalZombie, Limit: 3})
		if err != nil || len(rs) != 3 {
			t.Fatalf("RescueZombies(limit 3) = %d jobs, %v; want 3", len(rs), err)
		}
		if rs := rescueZombies(t, h); len(rs) != 1 {
			t.Fatalf("the next batch moved %d, want the one left", len(rs))
		}
	}},
	{"ZombieRetryCancelRequestedDeadLetters", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		j, _ := startWith(t, h, jobs.DefaultQueue, retryKind(3))
		if _, err := h.Store.Cancel(ctxOf(t), jobs.CancelParams{IDs: []int64{j.ID}}); err != nil {
			t.Fatal(err)
		}
		h.Advance(t, globalZombie+time.Minute)
		if rs := rescueZombies(t, h); len(rs) != 1 || rs[0].Recovered {
			t.Fatalf("phase 2: %+v, want the job nobody wants any more dead-lettered", rs)
		}
		wantTable(t, h, j.ID, jobs.TableDLQ)
	}},
	{"Phase3UnchangedForRetryKinds", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		p := retryKind(5)
		p.Timeout = time.Minute
		j, _ := startWith(t, h, jobs.DefaultQueue, p)
		h.Advance(t, 2*time.Minute)
		if hb, err := h.Store.Heartbeat(ctxOf(t), []jobs.LeaseRef{j.Ref()}); err != nil || len(hb.Lost) != 0 {
			t.Fatalf("heartbeat: %+v, %v", hb, err)
		}
		rs := rescueExpired(t, h)
		if len(rs) != 1 || rs[0].Recovered || rs[0].Reason != jobs.ReasonTimeout {
			t.Fatalf("phase 3: %+v, want the job dead-lettered as Timeout", rs)
		}
		wantTable(t, h, j.ID, jobs.TableDLQ)
	}},
	{"ResurrectOfARecoveredThenDeadLetteredJob", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{MaxAttempts: 5})
		j, _ := startWith(t, h, jobs.DefaultQueue, retryKind(1))
		h.Advance(t, globalZombie+time.Minute)
		rescueZombies(t, h)
		startWith(t, h, jobs.DefaultQueue, retryKind(1))
		h.Advance(t, globalZombie+time.Minute)
		rescueZombies(t, h)
		wantTable(t, h, j.ID, jobs.TableDLQ)
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{j.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		p := wantHot(t, h, j.ID, jobs.StatusPending)
		if p.AttemptCount != 0 || p.ZombieRetries != 0 || p.ZombieRetryCap != 0 {
			t.Fatalf("resurrected %+v: want attempts and zombie retries reset", p)
		}
		// Its zombie retries start again from its next start's policy.
		again, _ := startWith(t, h, jobs.DefaultQueue, retryKind(1))
		if again.Lease <= j.Lease+1 {
			t.Fatalf("resurrected job claimed under lease %d, want above %d", again.Lease, j.Lease+1)
		}
		h.Advance(t, globalZombie+time.Minute)
		if rs := rescueZombies(t, h); len(rs) != 1 || !rs[0].Recovered {
			t.Fatalf("after resurrect: %+v, want it recovered again (its count reset)", rs)
		}
	}},
}
