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

// runningWith enqueues one job on queue, claims it and starts it with
// heartbeatMax recorded.
func runningWith(t *testing.T, h *Harness, queue string, heartbeatMax time.Duration) *jobs.Job {
	t.Helper()
	enqueue(t, h, jobs.EnqueueParams{Queue: queue})
	j := claimOne(t, h, queue)
	if _, err := h.Store.Start(ctxOf(t), j.Ref(), jobs.StartParams{DefaultTimeout: defaultTimeout, HeartbeatMax: heartbeatMax}); err != nil {
		t.Fatalf("Start(%+v): %v", j.Ref(), err)
	}
	return j
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
	{"Phase2WaitsThreeOfTheJobsHeartbeatMaximaWhateverItsQueueSays", func(t *testing.T, h *Harness) {
		setQueue(t, h, "quick", jobs.QueueUpdate{ZombieTimeout: secs(40)})
		slow := runningWith(t, h, "quick", 20*time.Second) // beats up to 20s apart: a zombie after 60s, not 40s
		plain := runningWith(t, h, "quick", 0)             // nothing recorded: the queue's 40s
		h.Advance(t, 45*time.Second)
		if got := rescuedIDs(rescueZombies(t, h)); !slices.Equal(got, []int64{plain.ID}) {
			t.Fatalf("after 45s of silence phase 2 rescued %v, want only job %d (a job beating every 20s is alive for 60s)", got, plain.ID)
		}
		h.Advance(t, 16*time.Second)
		rs := rescueZombies(t, h)
		if !slices.Equal(rescuedIDs(rs), []int64{slow.ID}) || rs[0].Reason != jobs.ReasonZombie {
			t.Fatalf("after 61s phase 2 rescued %+v, want job %d as a zombie", rs, slow.ID)
		}
		if d := wantTable(t, h, slow.ID, jobs.TableDLQ); !strings.Contains(d.ErrorDetails, "timeout 60s") {
			t.Fatalf("details %q, want the timeout applied: 60s", d.ErrorDetails)
		}
	}},
	{"Phase2GlobalTimeoutYieldsToTheJobsHeartbeatMaximumToo", func(t *testing.T, h *Harness) {
		j := runningWith(t, h, jobs.DefaultQueue, 20*time.Second)
		p := jobs.RescueParams{Timeout: 30 * time.Second}
		h.Advance(t, 45*time.Second)
		if rs, err := h.Store.RescueZombies(ctxOf(t), p); err != nil || len(rs) != 0 {
			t.Fatalf("after 45s of silence phase 2 (timeout 30s) rescued %v, %v; the job beats every 20s", rescuedIDs(rs), err)
		}
		h.Advance(t, 16*time.Second)
		if rs, err := h.Store.RescueZombies(ctxOf(t), p); err != nil || !slices.Equal(rescuedIDs(rs), []int64{j.ID}) {
			t.Fatalf("after 61s phase 2 rescued %v, %v; want job %d", rescuedIDs(rs), err, j.ID)
		}
	}},
	{"StartRecordsTheHeartbeatMaximumWhileTheJobRuns", func(t *testing.T, h *Harness) {
		j := runningWith(t, h, jobs.DefaultQueue, 12500*time.Millisecond)
		if got := wantHot(t, h, j.ID, jobs.StatusProcessing).HeartbeatMax; got != 12500*time.Millisecond {
			t.Fatalf("a running job's HeartbeatMax is %v, want the 12.5s it was started with", got)
		}
		if err := h.Store.Retry(ctxOf(t), j.Ref(), jobs.RetryParams{}); err != nil {
			t.Fatal(err)
		}
		if got := wantHot(t, h, j.ID, jobs.StatusPending).HeartbeatMax; got != 0 {
			t.Fatalf("a pending job's HeartbeatMax is %v, want none: the next start records its own", got)
		}
		again := claimOne(t, h)
		start(t, h, again.Ref())
		if got := wantHot(t, h, j.ID, jobs.StatusProcessing).HeartbeatMax; got != 0 {
			t.Fatalf("started without one, HeartbeatMax is %v, want 0", got)
		}
		if err := h.Store.Complete(ctxOf(t), again.Ref()); err != nil {
			t.Fatal(err)
		}
		if got := wantTable(t, h, j.ID, jobs.TableArchive).HeartbeatMax; got != 0 {
			t.Fatalf("an archived job's HeartbeatMax is %v, want 0 (hot jobs only)", got)
		}
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
