package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/telemetry"
)

// runMaintenance drives a real retention sweep and a real scheduler round
// through m's hooks: one queue's two archived jobs and one dead letter
// expire, and a minutely schedule fires once.
func runMaintenance(t *testing.T, m *telemetry.Metrics) {
	t.Helper()
	ctx := context.Background()
	clock := memstore.NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	for i, ok := range []bool{true, true, false} {
		if _, err := store.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "t"}); err != nil {
			t.Fatal(err)
		}
		got, _ := store.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1})
		if _, err := store.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		var err error
		if ok {
			err = store.Complete(ctx, got[0].Ref())
		} else {
			err = store.DeadLetter(ctx, got[0].Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal})
		}
		if err != nil {
			t.Fatal(i, err)
		}
	}
	sched, err := schedule.New(store, m.InstrumentSchedules(schedule.Config{Schedules: []schedule.Schedule{
		{Name: "nightly", Cron: "* * * * *", Job: schedule.Job{Type: "report"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31 * 24 * time.Hour)
	r, err := retention.New(store, m.InstrumentRetention(retention.Config{Pause: time.Nanosecond}))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Sweep(ctx); err != nil || res.Archived != 2 || res.DeadLetters != 1 {
		t.Fatalf("sweep: %+v, %v", res, err)
	}
	if res, err := sched.Round(ctx); err != nil || len(res.Fired) != 1 {
		t.Fatalf("round: %+v, %v", res, err)
	}
}

func TestRetentionAndScheduleCounters(t *testing.T) {
	m, reader := newTestMetrics(t, telemetry.Options{})
	runMaintenance(t, m)
	rd := collect(t, reader)
	if got := rd.counter(t, "chokaq.retention.deleted"); got["queue=mail,table=archive"] != 2 || got["queue=mail,table=dlq"] != 1 || len(got) != 2 {
		t.Fatalf("chokaq.retention.deleted = %v", got)
	}
	if got := rd.counter(t, "chokaq.schedule.fired"); got["schedule=nightly"] != 1 || len(got) != 1 {
		t.Fatalf("chokaq.schedule.fired = %v", got)
	}
}
