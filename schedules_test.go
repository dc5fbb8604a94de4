package chokaq_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schedule"
)

type SummaryArgs struct {
	Period string `json:"period"`
}

func (SummaryArgs) Kind() string { return "reports.summary" }

func (SummaryArgs) EnqueueOpts() chokaq.EnqueueOpts {
	return chokaq.EnqueueOpts{Queue: "reports", Priority: 3}
}

// A typed schedule runs its handler at every tick, with its Args decoded,
// through the Client's own processor; pause, resume and trigger act on it
// through the Client. On a fake clock.
func TestClientRunsATypedSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var mu sync.Mutex
		var ran []string
		reg := chokaq.NewRegistry()
		chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, a SummaryArgs) error {
			mu.Lock()
			ran = append(ran, a.Period)
			mu.Unlock()
			return nil
		})
		store := memstore.New()
		c, err := chokaq.New(ctx, chokaq.Config{Store: store, DefaultMaxAttempts: 7,
			Processor: processorConfigFor("reports"),
			Schedules: []chokaq.Schedule{{Name: "every-2s", Cron: "@every 2s", Args: SummaryArgs{Period: "hour"}}}}, reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(ctx)
		time.Sleep(5 * time.Second) // ticks at 2s and 4s
		synctest.Wait()
		if err := c.PauseSchedule(ctx, "every-2s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // to 10s: 6s and 8s missed
		if err := c.ResumeSchedule(ctx, "every-2s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // 6s, 8s and 10s coalesce into one fire
		r, err := c.TriggerSchedule(ctx, "every-2s")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // to 11.8s, before the tick at 12s
		synctest.Wait()
		mu.Lock()
		got := len(ran)
		mu.Unlock()
		if got != 4 { // 2s, 4s, the coalesced 10s, and the trigger
			t.Fatalf("the handler ran %d times, want 4", got)
		}
		j, err := c.GetJob(ctx, r.ID)
		if err != nil || j.Queue != "reports" || j.Priority != 3 || j.MaxAttempts != 7 || j.Table != jobs.TableArchive {
			t.Fatalf("triggered job %+v, %v", j, err)
		}
		states, _ := c.Schedules(ctx)
		if len(states) != 1 || states[0].Paused {
			t.Fatalf("schedules %+v", states)
		}
	})
}

// A typed schedule is checked at New: a bad expression, options a tick's
// job cannot have, or a name defined twice fail there with the schedule's
// name.
func TestClientRefusesABadSchedule(t *testing.T) {
	for _, c := range []struct {
		name  string
		sched []chokaq.Schedule
		raw   []schedule.Schedule
		want  string
	}{
		{"cron", []chokaq.Schedule{{Name: "r", Cron: "0 25 * * *", Args: SummaryArgs{}}}, nil, "above maximum"},
		{"no args", []chokaq.Schedule{{Name: "r", Cron: "@daily"}}, nil, "args"},
		{"opts", []chokaq.Schedule{{Name: "r", Cron: "@daily", Args: SummaryArgs{}, Opts: &chokaq.EnqueueOpts{Delay: time.Second}}}, nil, "only Queue, Priority and MaxAttempts"},
		{"@every 0s", []chokaq.Schedule{{Name: "r", Cron: "@every 0s", Args: SummaryArgs{}}}, nil, `schedule "r": Cron "@every 0s": the interval must be at least 1s`},
		{"@every -1m", nil, []schedule.Schedule{{Name: "r", Cron: "@every -1m", Job: schedule.Job{Type: "x"}}}, `schedule "r": Cron "@every -1m": the interval must be at least 1s`},
		{"@every 1ns", nil, []schedule.Schedule{{Name: "r", Cron: "@every 1ns", Job: schedule.Job{Type: "x"}}}, `schedule "r": Cron "@every 1ns": the interval must be at least 1s`},
		{"@every 1500ms", nil, []schedule.Schedule{{Name: "r", Cron: "@every 1500ms", Job: schedule.Job{Type: "x"}}}, `schedule "r": Cron "@every 1500ms": the interval must be whole seconds`},
		{"Local", []chokaq.Schedule{{Name: "r", Cron: "@daily", TimeZone: "Local", Args: SummaryArgs{}}}, nil, `schedule "r": TimeZone "Local": is the zone of whichever host reads it`},
		{"twice", []chokaq.Schedule{{Name: "r", Cron: "@daily", Args: SummaryArgs{}}},
			[]schedule.Schedule{{Name: "R", Cron: "@hourly", Job: schedule.Job{Type: "x"}}}, "defined twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := chokaq.New(context.Background(), chokaq.Config{Store: memstore.New(), DisableProcessor: true,
				Schedules: c.sched, RawSchedules: c.raw}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("New: %v; want an invalid-argument error naming %q", err, c.want)
			}
		})
	}
}

// The Client runs retention unless told not to, and an enqueue-only Client
// does not.
func TestClientRunsRetention(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	for _, c := range []struct {
		cfg  chokaq.Config
		want bool
	}{
		{chokaq.Config{Store: store, DisableProcessor: true}, true},
		{chokaq.Config{Store: store, DisableProcessor: true, DisableRetention: true}, false},
		{chokaq.Config{Store: store, DisableProcessor: true, DisableRescue: true}, false},
	} {
		client, err := chokaq.New(ctx, c.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := client.Retainer() != nil; got != c.want {
			t.Fatalf("%+v: retention %v, want %v", c.cfg, got, c.want)
		}
	}
	client, _ := chokaq.New(ctx, chokaq.Config{Store: store, DisableProcessor: true,
		Queues: map[string]jobs.QueueUpdate{"q": {}}}, nil)
	r := client.Retainer()
	if r.Config().Archive != 7*24*time.Hour || r.Config().DeadLetters != 30*24*time.Hour {
		t.Fatalf("retention defaults %+v", r.Config())
	}
}

func processorConfigFor(queues ...string) (pc processor.Config) {
	pc.Queues = queues
	pc.PollInterval = 100 * time.Millisecond
	return pc
}
