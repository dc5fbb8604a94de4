package storetest

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

func sched(name, hash string, paused bool) jobs.ScheduleDef {
	return jobs.ScheduleDef{Name: name, Definition: []byte(`{"cron":"@hourly"}`), Hash: hash, Paused: paused}
}

func syncSchedules(t *testing.T, h *Harness, defs ...jobs.ScheduleDef) {
	t.Helper()
	if err := h.Store.SyncSchedules(ctxOf(t), defs); err != nil {
		t.Fatalf("SyncSchedules: %v", err)
	}
}

func scheduleState(t *testing.T, h *Harness, name string) jobs.ScheduleState {
	t.Helper()
	all, err := h.Store.Schedules(ctxOf(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schedule %q in %+v", name, all)
	return jobs.ScheduleState{}
}

func fire(t *testing.T, h *Harness, name, hash string, tick time.Time) jobs.FireResult {
	t.Helper()
	r, err := h.Store.FireSchedule(ctxOf(t), jobs.FireParams{Name: name, Hash: hash, Tick: tick, Next: tick.Add(time.Hour),
		Job: jobs.EnqueueParams{Queue: "cron", Type: "report", IdempotencyKey: "schedule:" + name + ":" + tick.Format(time.RFC3339Nano)}})
	if err != nil {
		t.Fatalf("FireSchedule(%s, %v): %v", name, tick, err)
	}
	return r
}

var scheduleCases = []testCase{
	{"ANewScheduleOwesNoPastTick", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h1", false), sched("paused", "h1", true))
		s := scheduleState(t, h, "nightly")
		if !closeTo(s.LastFiredTick, now, 2*time.Second) || s.Paused || string(s.Definition) != `{"cron":"@hourly"}` || s.Hash != "h1" {
			t.Fatalf("new schedule %+v", s)
		}
		if !scheduleState(t, h, "paused").Paused {
			t.Fatal("a schedule defined paused starts running")
		}
		if r := fire(t, h, "nightly", "h1", now.Add(-time.Hour)); r.Fired {
			t.Fatal("a tick from before the schedule existed fired")
		}
	}},
	{"OneTickFiresOnceWhoeverTriesIt", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h1", false))
		tick := now.Add(time.Minute)
		r := fire(t, h, "nightly", "h1", tick)
		if !r.Fired || r.Job.ID == 0 {
			t.Fatalf("first fire: %+v", r)
		}
		if again := fire(t, h, "nightly", "h1", tick); again.Fired {
			t.Fatal("the same tick fired twice")
		}
		if older := fire(t, h, "nightly", "h1", tick.Add(-time.Second)); older.Fired {
			t.Fatal("an older tick fired after a newer one")
		}
		s := scheduleState(t, h, "nightly")
		if !s.LastFiredTick.Equal(tick.UTC()) || !closeTo(s.NextFire, tick.Add(time.Hour), time.Millisecond) || s.LastFiredAt.IsZero() {
			t.Fatalf("after a fire: %+v", s)
		}
		// Twenty firers at once: one wins, one job.
		next := tick.Add(time.Hour)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := h.Store.FireSchedule(ctxOf(t), jobs.FireParams{Name: "nightly", Hash: "h1", Tick: next, Next: next.Add(time.Hour),
					Job: jobs.EnqueueParams{Queue: "cron", Type: "report"}})
				if err != nil {
					t.Error(err)
				}
				if r.Fired {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 20 concurrent fires of one tick won, want 1", wins.Load())
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{Queue: "cron"}); n != 2 {
			t.Fatalf("%d jobs enqueued for two ticks", n)
		}
	}},
	{"APausedOrChangedScheduleDoesNotFire", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h1", false))
		if r := fire(t, h, "nightly", "old-hash", now.Add(time.Minute)); r.Fired {
			t.Fatal("a fire with another definition's hash won")
		}
		if r := fire(t, h, "unknown", "h1", now.Add(time.Minute)); r.Fired {
			t.Fatal("an unknown schedule fired")
		}
		if s, err := h.Store.PauseSchedule(ctxOf(t), "nightly", true); err != nil || !s.Paused {
			t.Fatalf("PauseSchedule = %+v, %v", s, err)
		}
		if r := fire(t, h, "nightly", "h1", now.Add(time.Minute)); r.Fired {
			t.Fatal("a paused schedule fired")
		}
		if _, err := h.Store.PauseSchedule(ctxOf(t), "nightly", false); err != nil {
			t.Fatal(err)
		}
		if r := fire(t, h, "nightly", "h1", now.Add(time.Minute)); !r.Fired {
			t.Fatal("a resumed schedule did not fire")
		}
		if _, err := h.Store.PauseSchedule(ctxOf(t), "nope", true); !errors.Is(err, jobs.ErrScheduleNotFound) {
			t.Fatalf("PauseSchedule of an unknown schedule: %v", err)
		}
	}},
	{"SyncKeepsAnUnchangedScheduleAndRestartsAChangedOne", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h1", false))
		tick := now.Add(time.Minute)
		fire(t, h, "nightly", "h1", tick)
		if _, err := h.Store.PauseSchedule(ctxOf(t), "nightly", true); err != nil {
			t.Fatal(err)
		}
		h.Advance(t, time.Minute)
		syncSchedules(t, h, sched("nightly", "h1", false)) // a restart with the same definition
		s := scheduleState(t, h, "nightly")
		if !s.LastFiredTick.Equal(tick.UTC()) || !s.Paused {
			t.Fatalf("a restart changed an unchanged schedule: %+v", s)
		}
		if !s.SyncedAt.After(s.UpdatedAt) {
			t.Fatalf("a restart did not record that it defines the schedule: synced %v, updated %v", s.SyncedAt, s.UpdatedAt)
		}
		h.Advance(t, time.Hour)
		later, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h2", false)) // its definition changed
		s = scheduleState(t, h, "nightly")
		if s.Hash != "h2" || s.Paused || !closeTo(s.LastFiredTick, later, 2*time.Second) {
			t.Fatalf("a changed schedule did not start over: %+v", s)
		}
		if s.LastFiredAt.IsZero() {
			t.Fatalf("a changed schedule forgot when it last fired: %+v", s)
		}
	}},
	{"AFireThatCannotEnqueueFiresNothing", func(t *testing.T, h *Harness) {
		now, _ := h.Store.Now(ctxOf(t))
		syncSchedules(t, h, sched("nightly", "h1", false))
		_, err := h.Store.FireSchedule(ctxOf(t), jobs.FireParams{Name: "nightly", Hash: "h1", Tick: now.Add(time.Minute),
			Job: jobs.EnqueueParams{Queue: "bad queue!", Type: "report"}})
		if !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Fatalf("fire of an invalid job: %v", err)
		}
		if s := scheduleState(t, h, "nightly"); !closeTo(s.LastFiredTick, now, 2*time.Second) {
			t.Fatalf("the tick was taken though nothing was enqueued: %+v", s)
		}
	}},
	{"DeleteForgetsASchedule", func(t *testing.T, h *Harness) {
		syncSchedules(t, h, sched("old", "h1", false), sched("kept", "h1", false))
		if err := h.Store.DeleteSchedule(ctxOf(t), "old"); err != nil {
			t.Fatal(err)
		}
		all, err := h.Store.Schedules(ctxOf(t))
		if err != nil || len(all) != 1 || all[0].Name != "kept" {
			t.Fatalf("after deleting old: %+v, %v", all, err)
		}
		if err := h.Store.DeleteSchedule(ctxOf(t), "old"); !errors.Is(err, jobs.ErrScheduleNotFound) {
			t.Fatalf("deleting it again: %v", err)
		}
		now, _ := h.Store.Now(ctxOf(t))
		if r := fire(t, h, "old", "h1", now.Add(time.Minute)); r.Fired {
			t.Fatal("a deleted schedule fired")
		}
	}},
	{"BadDefinitionsAreRefusedWhole", func(t *testing.T, h *Harness) {
		for _, bad := range []jobs.ScheduleDef{
			sched("", "h1", false),
			sched("has space", "h1", false),
			sched(strings.Repeat("n", jobs.MaxScheduleNameLen+1), "h1", false),
			sched("nohash", "", false),
		} {
			err := h.Store.SyncSchedules(ctxOf(t), []jobs.ScheduleDef{sched("good", "h1", false), bad})
			if !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("SyncSchedules with %+v: %v, want ErrInvalidArgument", bad, err)
			}
		}
		twice := []jobs.ScheduleDef{sched("good", "h1", false), sched("good", "h2", false)}
		if err := h.Store.SyncSchedules(ctxOf(t), twice); !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Fatalf("SyncSchedules with a name twice: %v, want ErrInvalidArgument", err)
		}
		if all, _ := h.Store.Schedules(ctxOf(t)); len(all) != 0 {
			t.Fatalf("a refused sync recorded %+v", all)
		}
	}},
}
