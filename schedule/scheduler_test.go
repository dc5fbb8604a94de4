package schedule

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// start is a Monday, 10:00 UTC: every test clock starts here.
var start = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func newStore(t *testing.T) (*memstore.Store, *memstore.ManualClock) {
	t.Helper()
	clock := memstore.NewManualClock(start)
	return memstore.New(memstore.WithClock(clock.Now)), clock
}

func newScheduler(t *testing.T, store Store, cfg Config, schedules ...Schedule) *Scheduler {
	t.Helper()
	cfg.Schedules = schedules
	s, err := New(store, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return s
}

func every(name, cron string, policy MissedFire) Schedule {
	return Schedule{Name: name, Cron: cron, MissedFire: policy, Job: Job{Type: "report", Queue: "cron", Payload: json.RawMessage(`{"n":1}`)}}
}

func round(t *testing.T, s *Scheduler) RoundResult {
	t.Helper()
	r, err := s.Round(t.Context())
	if err != nil {
		t.Fatalf("Round: %v", err)
	}
	return r
}

// firedTicks lists the due times of every job a schedule enqueued, in ID
// order: the tick each stands for.
func firedTicks(t *testing.T, store jobs.Admin, name string) []time.Time {
	t.Helper()
	var all []*jobs.Job
	for _, table := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		for before := int64(0); ; {
			page, err := store.ListJobs(t.Context(), jobs.ListParams{Table: table, Limit: jobs.MaxPageSize, BeforeID: before})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page.Jobs...)
			if before = page.NextBeforeID; before == 0 {
				break
			}
		}
	}
	slices.SortFunc(all, func(a, b *jobs.Job) int { return cmp.Compare(a.ID, b.ID) })
	var out []time.Time
	for _, j := range all {
		if j.CreatedBy == CreatedBy(name) && !slices.Contains(j.Tags, TriggerTag) {
			out = append(out, j.ScheduledAt)
		}
	}
	return out
}

func wantFired(t *testing.T, got []time.Time, want ...time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("fired %d ticks %v, want %v", len(got), got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("tick %d fired for %s, want %s (all: %v)", i, got[i], want[i], got)
		}
	}
}

// flipLeader is a jobs.Leader a test turns on and off.
type flipLeader struct{ lead atomic.Bool }

func (l *flipLeader) TryLead(context.Context) (bool, error) { return l.lead.Load(), nil }
func (l *flipLeader) Resign(context.Context) error          { l.lead.Store(false); return nil }

// keyless strips the idempotency key from every fire, so that only the
// store's compare-and-set stands between a tick and a second job.
type keyless struct{ Store }

func (k keyless) FireSchedule(ctx context.Context, p jobs.FireParams) (jobs.FireResult, error) {
	p.Job.IdempotencyKey = ""
	return k.Store.FireSchedule(ctx, p)
}

// Two schedulers on one store, leadership flipping at random between one,
// the other, both at once and neither, the clock stepping one minute (and
// sometimes several) at a time, and now and then a restart: over 1,000
// ticks no tick fires twice, and with catch-up every tick fires. The key
// guard is stripped in one run, so the compare-and-set alone is shown to
// hold.
func TestExactlyOnceAcrossTwoSchedulersWithLeaderFlips(t *testing.T) {
	for _, guard := range []string{"compare-and-set and key", "compare-and-set alone"} {
		t.Run(guard, func(t *testing.T) {
			mem, clock := newStore(t)
			var store Store = mem
			if guard == "compare-and-set alone" {
				store = keyless{mem}
			}
			defs := []Schedule{every("minutely", "* * * * *", CatchUp), every("coalesced", "@every 1m", Coalesce)}
			defs[0].CatchUpLimit = 5
			leaders := [2]*flipLeader{{}, {}}
			scheds := [2]*Scheduler{}
			for i := range scheds {
				scheds[i] = newScheduler(t, store, Config{Leader: leaders[i]}, defs...)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ticks := 0
			for ticks < 1000 {
				step := 1
				if rng.IntN(10) == 0 {
					step = 1 + rng.IntN(4) // a few ticks at once: a slow round or a pause in leadership
				}
				clock.Advance(time.Duration(step)*time.Minute + time.Duration(rng.IntN(50))*time.Second/10)
				ticks += step
				state := rng.IntN(10)
				leaders[0].lead.Store(state < 4 || state >= 8) // 0-3 first, 4-7 second, 8 both, 9 neither...
				leaders[1].lead.Store(state >= 4 && state < 9)
				if rng.IntN(50) == 0 { // a restart of one of them
					i := rng.IntN(2)
					scheds[i] = newScheduler(t, store, Config{Leader: leaders[i]}, defs...)
				}
				var wg sync.WaitGroup
				for _, s := range scheds {
					wg.Go(func() {
						if _, err := s.Round(t.Context()); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			leaders[0].lead.Store(true)
			round(t, scheds[0]) // the ticks that state "neither" left over

			for _, name := range []string{"minutely", "coalesced"} {
				got := firedTicks(t, mem, name)
				seen := map[time.Time]bool{}
				for i, tick := range got {
					if seen[tick] {
						t.Fatalf("%s: tick %s fired twice", name, tick)
					}
					seen[tick] = true
					if i > 0 && !tick.After(got[i-1]) {
						t.Fatalf("%s: tick %s fired after the later %s", name, tick, got[i-1])
					}
				}
				t.Logf("%s: %d ticks fired over %d minutes", name, len(got), ticks)
			}
			// Catch-up fired every minute: none was missed by more than its
			// limit, since the clock never jumped five.
			if got := firedTicks(t, mem, "minutely"); len(got) < ticks {
				t.Fatalf("catch-up fired %d of %d ticks", len(got), ticks)
			}
		})
	}
}

func TestMissedFirePolicies(t *testing.T) {
	// The process was down from 10:00 to 10:10:30: ten ticks of a
	// minutely schedule passed.
	for _, c := range []struct {
		policy MissedFire
		limit  int
		want   []string
	}{
		{Coalesce, 0, []string{"10:10"}},
		{CatchUp, 0, []string{"10:01", "10:02", "10:03", "10:04", "10:05", "10:06", "10:07", "10:08", "10:09", "10:10"}},
		{CatchUp, 3, []string{"10:08", "10:09", "10:10"}},
		{Skip, 0, nil},
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			store, clock := newStore(t)
			def := every("m", "* * * * *", c.policy)
			def.CatchUpLimit = c.limit
			s := newScheduler(t, store, Config{Grace: 20 * time.Second}, def)
			clock.Advance(10*time.Minute + 30*time.Second)
			r := round(t, s)
			var want []time.Time
			for _, hm := range c.want {
				at, _ := time.Parse("15:04", hm)
				want = append(want, time.Date(2026, 12, 7, at.Hour(), at.Minute(), 0, 0, time.UTC))
			}
			wantFired(t, firedTicks(t, store, "m"), want...)
			if dropped := c.limit == 3 || c.policy == Skip; (r.Dropped > 0) != dropped {
				t.Fatalf("Dropped = %d", r.Dropped)
			}
			if again := round(t, s); len(again.Fired) != 0 || again.Dropped != 0 {
				t.Fatalf("a second round at the same instant fired %v, dropped %d", again.Fired, again.Dropped)
			}
			// The next tick on time fires under every policy.
			clock.Advance(40 * time.Second)
			round(t, s)
			got := firedTicks(t, store, "m")
			if len(got) != len(want)+1 || !got[len(got)-1].Equal(time.Date(2026, 12, 7, 10, 11, 0, 0, time.UTC)) {
				t.Fatalf("the on-time tick after the gap: %v", got)
			}
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	for _, c := range []struct {
		policy   MissedFire
		onResume int // ticks fired when resumed after five were missed
	}{{Coalesce, 1}, {CatchUp, 5}, {Skip, 0}} {
		t.Run(string(c.policy), func(t *testing.T) {
			store, clock := newStore(t)
			s := newScheduler(t, store, Config{Grace: 10 * time.Second}, every("m", "* * * * *", c.policy))
			clock.Advance(time.Minute)
			if r := round(t, s); len(r.Fired) != 1 {
				t.Fatalf("before the pause: fired %v", r.Fired)
			}
			if _, err := store.PauseSchedule(t.Context(), "m", true); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				clock.Advance(time.Minute)
				if r := round(t, s); len(r.Fired) != 0 {
					t.Fatalf("a paused schedule fired %v", r.Fired)
				}
			}
			// A restart with the same definition keeps the operator's pause.
			s = newScheduler(t, store, Config{Grace: 10 * time.Second}, every("m", "* * * * *", c.policy))
			clock.Advance(30 * time.Second)
			if r := round(t, s); len(r.Fired) != 0 {
				t.Fatalf("a restart resumed a paused schedule: %v", r.Fired)
			}
			if _, err := store.PauseSchedule(t.Context(), "m", false); err != nil {
				t.Fatal(err)
			}
			if r := round(t, s); len(r.Fired) != c.onResume {
				t.Fatalf("on resume fired %d ticks, want %d", len(r.Fired), c.onResume)
			}
			clock.Advance(30 * time.Second)
			if r := round(t, s); len(r.Fired) != 1 {
				t.Fatalf("the first tick after the resume fired %v", r.Fired)
			}
		})
	}
}

// A schedule defined paused starts paused; changing Paused in the
// definition starts it over in the new state.
func TestPausedInTheDefinition(t *testing.T) {
	store, clock := newStore(t)
	def := every("m", "* * * * *", Coalesce)
	def.Paused = true
	s := newScheduler(t, store, Config{}, def)
	clock.Advance(3 * time.Minute)
	if r := round(t, s); len(r.Fired) != 0 {
		t.Fatalf("a schedule defined paused fired %v", r.Fired)
	}
	def.Paused = false
	s = newScheduler(t, store, Config{}, def)
	if r := round(t, s); len(r.Fired) != 0 {
		t.Fatalf("unpausing in the definition owes the ticks before it: %v", r.Fired)
	}
	clock.Advance(time.Minute)
	if r := round(t, s); len(r.Fired) != 1 {
		t.Fatalf("after unpausing in the definition: %v", r.Fired)
	}
}

// A changed definition takes effect when a process that defines it
// starts: it starts over from that instant with the new cadence and job,
// and a process still running the old definition stops firing it.
func TestADefinitionChangeTakesEffectOnTheNextStart(t *testing.T) {
	store, clock := newStore(t)
	core, logs := observer.New(zap.InfoLevel)
	old := newScheduler(t, store, Config{Logger: zap.New(core)}, every("report", "*/5 * * * *", Coalesce))
	clock.Advance(5 * time.Minute)
	round(t, old)

	changed := every("report", "@every 2m", Coalesce)
	changed.Job.Payload = json.RawMessage(`{"n": 2}`)
	clock.Advance(time.Minute) // 10:06
	updated := newScheduler(t, store, Config{}, changed)
	st, _ := Find(t.Context(), store, "report")
	if st.Hash != changed.Def().Hash || !st.LastFiredTick.Equal(clock.Now()) {
		t.Fatalf("the new definition did not start over: %+v", st)
	}
	for range 4 {
		clock.Advance(time.Minute) // to 10:10
		if r := round(t, old); len(r.Fired) != 0 {
			t.Fatalf("the old definition fired %v", r.Fired)
		}
		round(t, updated)
	}
	wantFired(t, firedTicks(t, store, "report"), start.Add(5*time.Minute), start.Add(8*time.Minute), start.Add(10*time.Minute))
	page, _ := store.ListJobs(t.Context(), jobs.ListParams{Table: jobs.TableHot, Limit: 1})
	if string(page.Jobs[0].Payload) != `{"n":2}` {
		t.Fatalf("the new definition's job carries %s", page.Jobs[0].Payload)
	}
	if n := logs.FilterMessageSnippet("another definition").Len(); n != 1 {
		t.Fatalf("the old process logged the foreign definition %d times, want once", n)
	}
}

// The daylight-saving rules hold where it matters, in the fires: stepping
// through the change in quarter hours, a daily 02:30 in New York fires once
// on the day 02:30 does not exist (at 03:00 EDT) and a daily 01:30 once on
// the day it happens twice (at the first); Berlin's 02:30 likewise.
func TestFiresAcrossDaylightSavingTime(t *testing.T) {
	for _, c := range []struct {
		name, cron, zone string
		from             time.Time
		want             []time.Time
	}{
		{"New York spring forward", "30 2 * * *", "America/New_York", time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC)}},
		{"New York fall back", "30 1 * * *", "America/New_York", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)}},
		{"Berlin spring forward", "30 2 * * *", "Europe/Berlin", time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)}},
		{"Berlin fall back", "30 2 * * *", "Europe/Berlin", time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := memstore.NewManualClock(c.from)
			store := memstore.New(memstore.WithClock(clock.Now))
			def := every("daily", c.cron, Coalesce)
			def.TimeZone = c.zone
			s := newScheduler(t, store, Config{}, def)
			for range 2 * 24 * 4 { // two days in quarter hours
				clock.Advance(15 * time.Minute)
				round(t, s)
			}
			wantFired(t, firedTicks(t, store, "daily"), c.want...)
		})
	}
}

// The loop, on a fake clock: it fires an @every 2s schedule on time, keeps
// firing through a paused stretch only once resumed, and a follower fires
// nothing.
func TestLoopFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New() // time.Now is the bubble's fake clock
		var fires []Fire
		var mu sync.Mutex
		s, err := New(store, Config{Schedules: []Schedule{every("often", "@every 2s", Coalesce)}, OnFire: func(f Fire) {
			mu.Lock()
			fires = append(fires, f)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		follower, _ := New(store, Config{Schedules: []Schedule{every("often", "@every 2s", Coalesce)}, Leader: &flipLeader{}})
		ctx := context.Background()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := follower.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		n := len(fires)
		for _, f := range fires {
			if f.Late != 0 {
				t.Errorf("a fire was %v late on a fake clock", f.Late)
			}
		}
		mu.Unlock()
		if n != 5 {
			t.Fatalf("%d fires in 10s of an @every 2s schedule, want 5", n)
		}
		if err := errors.Join(s.Stop(ctx), follower.Stop(ctx)); err != nil {
			t.Fatal(err)
		}
		if got := firedTicks(t, store, "often"); len(got) != 5 {
			t.Fatalf("%d jobs enqueued", len(got))
		}
	})
}

func TestTriggerAndNext(t *testing.T) {
	store, clock := newStore(t)
	def := every("nightly", "0 2 * * *", Coalesce)
	def.TimeZone = "Europe/Berlin"
	def.Job.Priority, def.Job.MaxAttempts = 5, 2
	newScheduler(t, store, Config{}, def)
	st, err := Find(t.Context(), store, "NIGHTLY")
	if err != nil {
		t.Fatal(err)
	}
	next, err := Next(st)
	if want := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC); err != nil || !next.Equal(want) {
		t.Fatalf("Next = %v, %v; want %v", next, err, want)
	}
	r, err := Trigger(t.Context(), store, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := store.GetJob(t.Context(), r.ID)
	if j.Type != "report" || j.Queue != "cron" || string(j.Payload) != `{"n":1}` || j.Priority != 5 || j.MaxAttempts != 2 ||
		!j.ScheduledAt.Equal(clock.Now()) || j.CreatedBy != "schedule:nightly" || len(j.Tags) != 1 || j.Tags[0] != TriggerTag {
		t.Fatalf("triggered job %+v", j)
	}
	if after, _ := Find(t.Context(), store, "nightly"); !after.LastFiredTick.Equal(st.LastFiredTick) {
		t.Fatal("a trigger moved the schedule's ticks")
	}
	if _, err := Trigger(t.Context(), store, "nope"); !errors.Is(err, jobs.ErrScheduleNotFound) {
		t.Fatalf("Trigger of an unknown schedule: %v", err)
	}
	paused, _ := store.PauseSchedule(t.Context(), "nightly", true)
	if n, err := Next(paused); err != nil || !n.IsZero() {
		t.Fatalf("Next of a paused schedule = %v, %v", n, err)
	}
}

// Every field's rule is checked up front, and the error names the
// schedule, the field and the value, and says what is wrong.
func TestValidateNamesTheFieldAndTheValue(t *testing.T) {
	ok := every("ok", "@hourly", Coalesce)
	for _, c := range []struct {
		field string
		edit  func(*Schedule)
		want  string
	}{
		{"Name", func(s *Schedule) { s.Name = "has space" }, `"has space"`},
		{"Cron", func(s *Schedule) { s.Cron = "61 * * * *" }, "61"},
		{"Cron", func(s *Schedule) { s.Cron = "0 0 30 2 *" }, "matches no date"},
		{"TimeZone", func(s *Schedule) { s.TimeZone = "Mars/Olympus" }, "Mars/Olympus"},
		{"MissedFire", func(s *Schedule) { s.MissedFire = "later" }, "coalesce, catch-up or skip"},
		{"CatchUpLimit", func(s *Schedule) { s.CatchUpLimit = MaxCatchUpLimit + 1 }, "1001"},
		{"Payload", func(s *Schedule) { s.Job.Payload = json.RawMessage(`{bad`) }, "must be JSON"},
		{"Type", func(s *Schedule) { s.Job.Type = "" }, "must not be empty"},
		{"Queue", func(s *Schedule) { s.Job.Queue = "bad queue" }, "bad queue"},
		{"Priority", func(s *Schedule) { s.Job.Priority = 5000 }, "5000"},
		{"MaxAttempts", func(s *Schedule) { s.Job.MaxAttempts = -1 }, "-1"},
	} {
		s := ok
		c.edit(&s)
		err := Check([]Schedule{s}, jobs.Limits{})
		var de *DefinitionError
		if !errors.As(err, &de) || de.Field != c.field || !strings.Contains(err.Error(), c.want) || !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Errorf("%s: %v (field %v), want a DefinitionError of %s naming %q", c.field, err, de, c.field, c.want)
		}
	}
	// A payload over the limit is named by its size, not echoed.
	big := ok
	big.Job.Payload = json.RawMessage(`"` + strings.Repeat("x", 2<<20) + `"`)
	if err := Check([]Schedule{big}, jobs.Limits{}); err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "(2097154 bytes)") {
		t.Errorf("an oversized payload: %d bytes of error, %.300s", len(fmt.Sprint(err)), err)
	}
	if err := Check([]Schedule{ok, every("OK", "@daily", Coalesce)}, jobs.Limits{}); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Fatalf("two names that differ in case: %v", err)
	}
	if err := Check([]Schedule{ok}, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// The definition encodes the same whatever the spelling of its defaults,
// so writing them out changes nothing; what changes the schedule changes
// its hash.
func TestDefinitionHash(t *testing.T) {
	a := every("r", "@hourly", "")
	b := every("r", " @hourly ", Coalesce)
	b.Job.Queue, b.Job.Payload, b.CatchUpLimit = "cron", json.RawMessage(`{ "n" : 1 }`), 7
	if a.Def().Hash != b.Def().Hash {
		t.Fatalf("equivalent definitions hash apart:\n%s\n%s", a.Def().Definition, b.Def().Definition)
	}
	for _, edit := range []func(*Schedule){
		func(s *Schedule) { s.Cron = "@daily" },
		func(s *Schedule) { s.TimeZone = "Europe/Berlin" },
		func(s *Schedule) { s.Job.Payload = json.RawMessage(`{"n":2}`) },
		func(s *Schedule) { s.MissedFire = Skip },
		func(s *Schedule) { s.Paused = true },
		func(s *Schedule) { s.Job.Priority = 1 },
	} {
		c := a
		edit(&c)
		if c.Def().Hash == a.Def().Hash {
			t.Fatalf("a change kept the hash: %s", c.Def().Definition)
		}
	}
	back, err := Decode("r", b.Def().Definition)
	if err != nil || back.Def().Hash != a.Def().Hash {
		t.Fatalf("Decode round trip: %+v, %v", back, err)
	}
}

// lastTicks finds the latest ticks of a long gap without walking it.
func TestLastTicksOfALongGap(t *testing.T) {
	c, _ := Parse("* * * * *", "")
	after := start.AddDate(-1, 0, 0)
	got, dropped := lastTicks(c, after, start, 3)
	wantFired(t, got, start.Add(-2*time.Minute), start.Add(-time.Minute), start)
	if !dropped {
		t.Fatal("a year of minutes left out was not reported")
	}
	got, dropped = lastTicks(c, start.Add(-3*time.Minute), start, 3)
	if len(got) != 3 || dropped {
		t.Fatalf("exactly three due: %v, dropped %v", got, dropped)
	}
	yearly, _ := Parse("@yearly", "")
	got, _ = lastTicks(yearly, start.AddDate(-30, 0, 0), start, 1)
	wantFired(t, got, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// panickyFires panics in every fire, as a store bug would.
type panickyFires struct{ Store }

func (panickyFires) FireSchedule(context.Context, jobs.FireParams) (jobs.FireResult, error) {
	panic("store bug")
}

// A panic in a store call or OnFire fails the round with an error, as a
// rescue or retention sweep does, and the next round fires again.
func TestAPanicInARoundIsItsError(t *testing.T) {
	store, clock := newStore(t)
	s := newScheduler(t, panickyFires{store}, Config{}, every("hourly", "0 * * * *", Coalesce))
	clock.Advance(time.Hour)
	if _, err := s.Round(t.Context()); err == nil || err.Error() != "schedule: round panicked: store bug" {
		t.Fatalf("Round = %v, want the panic as its error", err)
	}
	s.store = store
	if r := round(t, s); len(r.Fired) != 1 {
		t.Fatalf("the next round fired %+v, want the hour's tick", r.Fired)
	}
}
