package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

func rescueFetched(t *testing.T, h *Harness) []jobs.Rescued {
	t.Helper()
	rs, err := h.Store.RescueFetched(ctxOf(t), jobs.RescueParams{Timeout: fetchedTimeout})
	if err != nil {
		t.Fatalf("RescueFetched: %v", err)
	}
	return rs
}

func rescueZombies(t *testing.T, h *Harness) []jobs.Rescued {
	t.Helper()
	rs, err := h.Store.RescueZombies(ctxOf(t), jobs.RescueParams{Timeout: globalZombie})
	if err != nil {
		t.Fatalf("RescueZombies: %v", err)
	}
	return rs
}

func rescueExpired(t *testing.T, h *Harness) []jobs.Rescued {
	t.Helper()
	rs, err := h.Store.RescueExpired(ctxOf(t), jobs.RescueParams{})
	if err != nil {
		t.Fatalf("RescueExpired: %v", err)
	}
	return rs
}

var rescueCases = []testCase{
	{"Phase1ReturnsExpiredFetchedToPending", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 2, jobs.EnqueueParams{})
		abandoned := claimOne(t, h)
		h.Advance(t, fetchedTimeout-time.Minute)
		fresh := claimOne(t, h)
		if rs := rescueFetched(t, h); len(rs) != 0 {
			t.Fatalf("phase 1 rescued %v before the timeout", rescuedIDs(rs))
		}
		h.Advance(t, 2*time.Minute)
		rs := rescueFetched(t, h)
		if !slices.Equal(rescuedIDs(rs), []int64{abandoned.ID}) || rs[0].WorkerID != worker1 || rs[0].Lease != abandoned.Lease {
			t.Fatalf("phase 1 rescued %+v, want only job %d with its worker and lease", rs, abandoned.ID)
		}
		p := wantHot(t, h, abandoned.ID, jobs.StatusPending)
		if p.AttemptCount != 0 || p.WorkerID != "" {
			t.Fatalf("rescued job attempt %d worker %q, want 0 and none", p.AttemptCount, p.WorkerID)
		}
		wantHot(t, h, fresh.ID, jobs.StatusFetched)
		if _, err := h.Store.Start(ctxOf(t), abandoned.Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err == nil {
			t.Fatal("the abandoned worker could still start its rescued job")
		}
	}},
	{"Phase1IgnoresProcessing", func(t *testing.T, h *Harness) {
		running(t, h, jobs.EnqueueParams{})
		h.Advance(t, fetchedTimeout+time.Minute)
		if rs := rescueFetched(t, h); len(rs) != 0 {
			t.Fatalf("phase 1 touched a Processing job: %v", rescuedIDs(rs))
		}
	}},
	{"Phase2DeadLettersSilentProcessingAsZombie", func(t *testing.T, h *Harness) {
		j := running(t, h, jobs.EnqueueParams{})
		h.Advance(t, globalZombie-time.Minute)
		if rs := rescueZombies(t, h); len(rs) != 0 {
			t.Fatalf("phase 2 rescued %v before the timeout", rescuedIDs(rs))
		}
		h.Advance(t, 2*time.Minute)
		rs := rescueZombies(t, h)
		if !slices.Equal(rescuedIDs(rs), []int64{j.ID}) || rs[0].Reason != jobs.ReasonZombie || rs[0].WorkerID != worker1 {
			t.Fatalf("phase 2 rescued %+v, want job %d as zombie", rs, j.ID)
		}
		d := wantTable(t, h, j.ID, jobs.TableDLQ)
		if d.FailureReason != jobs.ReasonZombie || !strings.Contains(d.ErrorDetails, "heartbeat expired") || d.AttemptCount != 1 {
			t.Fatalf("dead letter %+v, want reason Zombie, details about the heartbeat, attempt 1", d)
		}
	}},
	{"Phase2IgnoresPendingAndFetched", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 2, jobs.EnqueueParams{})
		claimOne(t, h)
		h.Advance(t, globalZombie+time.Hour)
		if rs := rescueZombies(t, h); len(rs) != 0 {
			t.Fatalf("phase 2 touched jobs that never started: %v", rescuedIDs(rs))
		}
	}},
	{"Phase2UsesPerQueueTimeoutBesideGlobal", func(t *testing.T, h *Harness) {
		setQueue(t, h, "fast", jobs.QueueUpdate{ZombieTimeout: secs(60)})
		setQueue(t, h, "slow", jobs.QueueUpdate{ZombieTimeout: secs(3600)})
		fast := running(t, h, jobs.EnqueueParams{Queue: "fast"})
		slow := running(t, h, jobs.EnqueueParams{Queue: "slow"})
		plain := running(t, h, jobs.EnqueueParams{})
		h.Advance(t, 2*time.Minute)
		if got := rescuedIDs(rescueZombies(t, h)); !slices.Equal(got, []int64{fast.ID}) {
			t.Fatalf("after 2m rescued %v, want only the fast queue's job %d", got, fast.ID)
		}
		h.Advance(t, globalZombie)
		if got := rescuedIDs(rescueZombies(t, h)); !slices.Equal(got, []int64{plain.ID}) {
			t.Fatalf("after 12m rescued %v, want only the global-timeout job %d", got, plain.ID)
		}
		h.Advance(t, time.Hour)
		if got := rescuedIDs(rescueZombies(t, h)); !slices.Equal(got, []int64{slow.ID}) {
			t.Fatalf("after 72m rescued %v, want the slow queue's job %d", got, slow.ID)
		}
	}},
	{"Phase3DeadLettersPastDeadlineEvenWhileHeartbeating", func(t *testing.T, h *Harness) {
		setQueue(t, h, "hang", jobs.QueueUpdate{ExecutionTimeout: secs(120)})
		j := running(t, h, jobs.EnqueueParams{Queue: "hang"})
		other := running(t, h, jobs.EnqueueParams{})
		for range 2 {
			h.Advance(t, 50*time.Second)
			beat(t, h, j.Ref(), other.Ref())
			if rs := rescueExpired(t, h); len(rs) != 0 {
				t.Fatalf("phase 3 rescued %v before the deadline", rescuedIDs(rs))
			}
		}
		h.Advance(t, 50*time.Second)
		beat(t, h, j.Ref(), other.Ref())
		rs := rescueExpired(t, h)
		if !slices.Equal(rescuedIDs(rs), []int64{j.ID}) || rs[0].Reason != jobs.ReasonTimeout {
			t.Fatalf("phase 3 rescued %+v, want job %d with reason Timeout", rs, j.ID)
		}
		d := wantTable(t, h, j.ID, jobs.TableDLQ)
		if d.FailureReason != jobs.ReasonTimeout || !strings.Contains(d.ErrorDetails, "deadline") {
			t.Fatalf("dead letter %+v, want reason Timeout with the deadline in its details", d)
		}
		wantLeaseLost(t, "Complete after the deadline", h.Store.Complete(ctxOf(t), j.Ref()))
		wantTable(t, h, j.ID, jobs.TableDLQ)
		wantHot(t, h, other.ID, jobs.StatusProcessing)
	}},
	{"RescueIsBoundedByLimit", func(t *testing.T, h *Harness) {
		for range 5 {
			running(t, h, jobs.EnqueueParams{})
		}
		h.Advance(t, globalZombie+time.Minute)
		var sizes []int
		for {
			rs, err := h.Store.RescueZombies(ctxOf(t), jobs.RescueParams{Timeout: globalZombie, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(rs))
			if len(rs) < 2 {
				break
			}
		}
		if !slices.Equal(sizes, []int{2, 2, 1}) {
			t.Fatalf("batch sizes %v, want [2 2 1]", sizes)
		}
	}},
	{"RescueRejectsZeroTimeout", func(t *testing.T, h *Harness) {
		_, err := h.Store.RescueZombies(ctxOf(t), jobs.RescueParams{})
		wantInvalid(t, err, "timeout")
		_, err = h.Store.RescueFetched(ctxOf(t), jobs.RescueParams{})
		wantInvalid(t, err, "timeout")
	}},
}

func beat(t *testing.T, h *Harness, refs ...jobs.LeaseRef) {
	t.Helper()
	hb, err := h.Store.Heartbeat(ctxOf(t), refs)
	lost := hb.Lost
	if err != nil || len(lost) != 0 {
		t.Fatalf("Heartbeat(%v): lost %v, err %v", refs, lost, err)
	}
}
