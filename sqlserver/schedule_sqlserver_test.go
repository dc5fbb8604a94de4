package sqlserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// keyless strips the idempotency key of every fire, so only the schedule
// row's compare-and-set stands between a tick and a second job.
type keyless struct{ *Store }

func (k keyless) FireSchedule(ctx context.Context, p jobs.FireParams) (jobs.FireResult, error) {
	p.Job.IdempotencyKey = ""
	return k.Store.FireSchedule(ctx, p)
}

// TestSQLServerSchedulesFireOncePerTick: two processes (two pools on one
// schema) fire an @every 1s schedule for 20 seconds, first both leading at
// once with no election, then through sp_getapplock leaders that resign
// every few seconds; with the idempotency key stripped, every tick has at
// most one job, and no tick in the run is missed.
func TestSQLServerSchedulesFireOncePerTick(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	for _, mode := range []string{"two leaders at once", "elected leaders that resign"} {
		t.Run(mode, func(t *testing.T) {
			stores := [2]*Store{openOn(t, dsn, name), openOn(t, dsn, name)}
			if _, err := stores[0].db.ExecContext(t.Context(), stores[0].q.resetForTest); err != nil {
				t.Fatal(err)
			}
			def := schedule.Schedule{Name: "every-second", Cron: "@every 1s", MissedFire: schedule.CatchUp, CatchUpLimit: 100,
				Job: schedule.Job{Type: "tick", Queue: "ticks"}}
			var leaders [2]*Leader
			var scheds [2]*schedule.Scheduler
			for i, s := range stores {
				cfg := schedule.Config{Schedules: []schedule.Schedule{def}}
				if mode != "two leaders at once" {
					leaders[i] = NewLeader(s, "schedules:"+schedule.SetID(cfg.Schedules))
					cfg.Leader = leaders[i]
				}
				sc, err := schedule.New(keyless{s}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := sc.Sync(t.Context()); err != nil {
					t.Fatal(err)
				}
				scheds[i] = sc
			}
			began, _ := stores[0].Now(t.Context())
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for i, sc := range scheds {
				wg.Go(func() {
					resign := time.NewTicker(3 * time.Second)
					defer resign.Stop()
					for ctx.Err() == nil {
						if _, err := sc.Round(ctx); err != nil && ctx.Err() == nil {
							t.Error(err)
						}
						select {
						case <-resign.C:
							if leaders[i] != nil {
								_ = leaders[i].Resign(context.Background())
							}
						case <-time.After(50 * time.Millisecond):
						case <-ctx.Done():
						}
					}
				})
			}
			wg.Wait()
			for _, l := range leaders {
				if l != nil {
					_ = l.Resign(context.Background())
				}
			}
			ended, _ := stores[0].Now(t.Context())
			page, err := stores[0].ListJobs(t.Context(), jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Queue: "ticks"}, Limit: jobs.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[time.Time]bool{}
			for _, j := range page.Jobs {
				if seen[j.ScheduledAt] {
					t.Fatalf("tick %s fired twice", j.ScheduledAt)
				}
				seen[j.ScheduledAt] = true
			}
			// Every whole second after the sync and a second before the end
			// fired (catch-up covers a round that came late).
			for tick := began.Truncate(time.Second).Add(time.Second); tick.Before(ended.Add(-time.Second)); tick = tick.Add(time.Second) {
				if !seen[tick] {
					t.Fatalf("tick %s never fired (%d ticks fired)", tick, len(seen))
				}
			}
			t.Logf("%s: %d ticks fired once each over %v", mode, len(seen), ended.Sub(began).Round(time.Second))
		})
	}
}
