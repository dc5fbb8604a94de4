package memstore_test

import (
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// The probe sees a due Pending job of a queue not paused, whatever the
// spelling of its name, and nothing else: not a job due later, not one of
// a paused queue, not one already claimed.
func TestProbe(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New(memstore.WithClock(func() time.Time { return now }))
	probe := func(want bool, what string, queues ...string) {
		t.Helper()
		got, err := s.Probe(ctx, queues)
		if err != nil || got != want {
			t.Fatalf("%s: probe of %v = %v, %v; want %v", what, queues, got, err, want)
		}
	}
	probe(false, "an empty store", "mail")
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "t", Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	probe(false, "a job due in a minute", "mail")
	now = now.Add(time.Minute)
	probe(true, "the job now due", "sms", "MAIL")
	paused := true
	if _, err := s.UpdateQueue(ctx, "mail", jobs.QueueUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	probe(false, "its queue paused", "mail")
	paused = false
	if _, err := s.UpdateQueue(ctx, "mail", jobs.QueueUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1}); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %v", got, err)
	}
	probe(false, "the job claimed", "mail")
	if _, err := s.Probe(ctx, []string{"bad name!"}); err == nil {
		t.Fatal("a probe of a bad queue name was accepted")
	}
}
