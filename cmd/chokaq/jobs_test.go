package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// jobs list shows every active state and filters by one; jobs show finds
// any table; jobs cancel reports each job's fate and exits 3 only when
// none exists.
func TestJobsCommands(t *testing.T) {
	ctx := context.Background()
	clock := memstore.NewManualClock(time.Now())
	s := memstore.New(memstore.WithClock(clock.Now))
	enq := func(p jobs.EnqueueParams) int64 {
		r, err := s.Enqueue(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	due := enq(jobs.EnqueueParams{Type: "mail", Queue: "q"})
	later := enq(jobs.EnqueueParams{Type: "mail", Queue: "q", Delay: time.Hour})
	runningID := enq(jobs.EnqueueParams{Type: "report", Queue: "r"})
	got, _ := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w1", Queues: []string{"r"}, Limit: 1})
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute, ZombieRetryCap: 3}); err != nil {
		t.Fatal(err)
	}

	list := func(flags ...string) []int64 {
		t.Helper()
		r := runIn(t, s, "", append([]string{"jobs", "list", "-o", "json"}, flags...)...)
		wantExit(t, r, exitOK)
		var page jobs.JobPage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("jobs list %v: %v\n%s", flags, err, r.stdout)
		}
		var ids []int64
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	for flags, want := range map[string][]int64{
		"":                    {runningID, later, due},
		"--status=pending":    {due},
		"--status=scheduled":  {later},
		"--status=processing": {runningID},
		"--queue=q":           {later, due},
		"--type=report":       {runningID},
	} {
		var args []string
		if flags != "" {
			args = []string{flags}
		}
		if got := list(args...); !equalIDs(got, want) {
			t.Errorf("jobs list %s = %v, want %v", flags, got, want)
		}
	}
	wantExit(t, runIn(t, s, "", "jobs", "list", "--status", "done"), exitUsage)

	r := runIn(t, s, "", "jobs", "cancel", itoa(due), itoa(runningID), "999", "--reason", "refunded", "--by", "ada")
	wantExit(t, r, exitOK)
	for _, want := range []string{itoa(due) + " cancelled", itoa(runningID) + " cancel requested", "999 not found"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
			t.Errorf("jobs cancel output lacks %q:\n%s", want, r.stdout)
		}
	}
	show := runIn(t, s, "", "jobs", "show", itoa(due))
	wantExit(t, show, exitOK)
	if !strings.Contains(show.stdout, "Cancelled") || !strings.Contains(show.stdout, "cancelled by ada: refunded") {
		t.Errorf("jobs show of a cancelled job:\n%s", show.stdout)
	}
	show = runIn(t, s, "", "jobs", "show", itoa(runningID))
	if !strings.Contains(show.stdout, "cancel requested") {
		t.Errorf("jobs show of a running job whose cancel was requested:\n%s", show.stdout)
	}
	// Its effective timeout and where it came from, and its kind's zombie
	// policy (docs/design.md, Policy per kind).
	for _, want := range []string{"timeout           1m0s (default)", "zombie policy     retry 0 of 3 used"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("jobs show of a running job lacks %q:\n%s", want, show.stdout)
		}
	}
	if got := list("--status=processing"); !equalIDs(got, []int64{runningID}) {
		t.Errorf("a marked job is still Processing until its worker stops: %v", got)
	}
	wantExit(t, runIn(t, s, "", "jobs", "cancel", "998", "999"), exitNotFound)
	wantExit(t, runIn(t, s, "", "jobs", "cancel", "x"), exitUsage)
	wantExit(t, runIn(t, s, "", "jobs", "show", "999"), exitNotFound)
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// jobs show prints a job's metadata, key by key in key order.
func TestJobsShowPrintsMetadata(t *testing.T) {
	s := memstore.New()
	r, err := s.Enqueue(t.Context(), jobs.EnqueueParams{Type: "t", Metadata: map[string]string{"tenant": "acme", "request_id": "r-42"}})
	if err != nil {
		t.Fatal(err)
	}
	show := runIn(t, s, "", "jobs", "show", itoa(r.ID))
	wantExit(t, show, exitOK)
	if !strings.Contains(show.stdout, "request_id=r-42 tenant=acme") {
		t.Errorf("jobs show lacks the metadata:\n%s", show.stdout)
	}
}

// jobs show prints a unique job's key (hash, bucket) and where it is held.
func TestJobsShowPrintsUniqueKey(t *testing.T) {
	s := memstore.New()
	p := jobs.EnqueueParams{Type: "t", Queue: jobs.DefaultQueue, Payload: []byte(`{"a":1}`),
		Unique: &jobs.UniqueOpts{ByArgs: true, Period: time.Hour, States: jobs.UniqueActive | jobs.UniqueArchived}}
	r, err := s.Enqueue(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.GetJob(t.Context(), r.ID)
	if err != nil || j.UniqueKey == nil {
		t.Fatalf("GetJob: %+v, %v", j, err)
	}
	show := runIn(t, s, "", "jobs", "show", itoa(r.ID))
	wantExit(t, show, exitOK)
	if want := j.UniqueKey.String() + " (held while Pending|Fetched|Processing|Archived)"; !strings.Contains(show.stdout, want) {
		t.Errorf("jobs show lacks the unique key %s:\n%s", want, show.stdout)
	}
	plain := runIn(t, s, "", "jobs", "show", itoa(enqueueOf(t, s)))
	if strings.Contains(plain.stdout, "unique key") {
		t.Errorf("a job that is not unique shows a unique key:\n%s", plain.stdout)
	}
}

func enqueueOf(t *testing.T, s jobs.Store) int64 {
	t.Helper()
	r, err := s.Enqueue(t.Context(), jobs.EnqueueParams{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// jobs show prints a running job's progress and a finished job's output.
func TestJobsShowPrintsProgressAndOutput(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	r, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 1})
	ref := got[0].Ref()
	if _, err := s.Start(ctx, ref, jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HeartbeatProgress(ctx, []jobs.LeaseRef{ref}, []jobs.ProgressItem{{Ref: ref, Fraction: 0.75, Message: "almost"}}); err != nil {
		t.Fatal(err)
	}
	if show := runIn(t, s, "", "jobs", "show", itoa(r.ID)); !strings.Contains(show.stdout, "75% almost (as of the heartbeat at") {
		t.Errorf("jobs show lacks the progress:\n%s", show.stdout)
	}
	if _, err := s.Transition(ctx, jobs.Transitions{Completes: []jobs.LeaseRef{ref}, Outputs: []jobs.OutputItem{{Ref: ref, Output: []byte(`{"rows":3}`)}}}); err != nil {
		t.Fatal(err)
	}
	if show := runIn(t, s, "", "jobs", "show", itoa(r.ID)); !strings.Contains(show.stdout, `{"rows":3}`) {
		t.Errorf("jobs show lacks the output:\n%s", show.stdout)
	}
}
