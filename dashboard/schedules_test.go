package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schedule"
)

// The schedules of the page tests, as a process defines them.
var testSchedules = []schedule.Schedule{
	{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", MissedFire: schedule.CatchUp, CatchUpLimit: 5,
		Job: schedule.Job{Type: "report.build", Queue: "reports", Payload: []byte(`{"kind":"daily"}`)}},
	{Name: "team:every-10m", Cron: "@every 10m", Job: schedule.Job{Type: "cache.warm"}},
	{Name: "held", Cron: "@hourly", Paused: true, MissedFire: schedule.Skip, Job: schedule.Job{Type: "audit.sweep", Queue: "audit"}},
}

// scheduleFixture is a dashboard over a store on a manual clock, at
// 2026-03-04 10:00 UTC, where a process has defined testSchedules.
func scheduleFixture(t *testing.T, opts Options) (*fixture, *memstore.ManualClock, *schedule.Scheduler) {
	t.Helper()
	clock := memstore.NewManualClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	f := newFixtureOn(t, memstore.New(memstore.WithClock(clock.Now)), opts)
	sc, err := schedule.New(f.store, schedule.Config{Schedules: testSchedules})
	must(t, err)
	must(t, sc.Sync(context.Background()))
	return f, clock, sc
}

func (f *fixture) schedule(name string) jobs.ScheduleState {
	f.t.Helper()
	st, err := schedule.Find(context.Background(), f.store, name)
	must(f.t, err)
	return st
}

// jobsOfType lists the active jobs of a type.
func (f *fixture) jobsOfType(typ string) []*jobs.Job {
	f.t.Helper()
	page, err := f.store.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Type: typ}, Limit: 100})
	must(f.t, err)
	return page.Jobs
}

// TestSchedulesPageListsSchedules: each schedule's row shows its cron and
// zone, its job, its policy, its next fire (overdue by the store's clock,
// or paused), its last fire and its state.
func TestSchedulesPageListsSchedules(t *testing.T) {
	f, clock, sc := scheduleFixture(t, Options{})
	ctx := context.Background()

	clock.Advance(25 * time.Minute) // 10:25: ticks 10:10 and 10:20 are due
	res, err := sc.Round(ctx)
	must(t, err)
	if len(res.Fired) != 1 {
		t.Fatalf("round fired %+v, want the 10:20 tick of team:every-10m (coalesced)", res.Fired)
	}
	clock.Advance(15 * time.Minute) // 10:40: the 10:30 tick is ten minutes overdue

	r := f.get("/schedules")
	wantStatus(t, r, http.StatusOK, "<h1>Schedules</h1>", `href="/schedules" class="on">Schedules</a>`,
		`Store clock: <time id="store-now">2026-03-04 10:40:00</time> UTC`, "Next fire (UTC)", "Last fire (UTC)")
	// 02:00 in Berlin (CET, UTC+1) is 01:00 UTC.
	wantIn(t, "nightly", rowOf(t, r.body, "data-schedule", "nightly"),
		`<code>0 2 * * *</code> <span class="sub">Europe/Berlin</span>`,
		`report.build <span class="sub">on</span> <a href="/active?queue=reports">reports</a>`,
		"<td>catch-up (at most 5)</td>",
		`<td data-col="next">2026-03-05 01:00:00</td>`,
		`<td data-col="last">never</td>`,
		`<span class="badge st-active">active</span>`,
		`action="/schedules/nightly/pause"`, `action="/schedules/nightly/trigger"`)
	every := rowOf(t, r.body, "data-schedule", "team:every-10m")
	wantIn(t, "team:every-10m", every,
		`<code>@every 10m</code> <span class="sub">UTC</span>`,
		`cache.warm <span class="sub">on</span> <a href="/active?queue=default">default</a>`,
		"<td>coalesce</td>",
		`<td data-col="next">2026-03-04 10:30:00 <span class="badge overdue"`, "overdue 10m0s</span>",
		`<td data-col="last">2026-03-04 10:25:00</td>`,
		`action="/schedules/team:every-10m/pause"`)
	held := rowOf(t, r.body, "data-schedule", "held")
	wantIn(t, "held", held,
		"<td>skip</td>",
		`<td data-col="next"><span class="badge st-paused">paused</span></td>`,
		`<td data-col="last">never</td>`,
		`action="/schedules/held/resume"`, `action="/schedules/held/trigger"`)
	if strings.Contains(held, "/held/pause") || strings.Contains(every, "/resume") || strings.Contains(rowOf(t, r.body, "data-schedule", "nightly"), "overdue") {
		t.Fatalf("wrong action or marker:\n%s\n%s", held, every)
	}

	// Where nothing is defined, the page says where to define them.
	wantStatus(t, newFixture(t, Options{}).get("/schedules"), http.StatusOK,
		"No schedules. Define them in code (<code>chokaq.Config.Schedules</code>) or in appsettings.yaml (<code>ChokaQ.Schedules</code>)")
}

// TestScheduleActions: pause, resume and trigger change the store, are
// logged with the actor, and say what they did.
func TestScheduleActions(t *testing.T) {
	f, _, _ := scheduleFixture(t, Options{})

	flash := f.wantRedirect(f.post("/schedules/team:every-10m/pause", nil), "/schedules")
	if !f.schedule("team:every-10m").Paused || flash != "Paused schedule team:every-10m." {
		t.Fatalf("pause: %+v %q", f.schedule("team:every-10m"), flash)
	}
	f.wantLogged("pause", "paused schedule team:every-10m")
	wantIn(t, "paused row", rowOf(t, f.get("/schedules").body, "data-schedule", "team:every-10m"),
		`<span class="badge st-paused">paused</span>`, `action="/schedules/team:every-10m/resume"`)

	flash = f.wantRedirect(f.post("/schedules/held/resume", nil), "/schedules")
	if f.schedule("held").Paused || flash != "Resumed schedule held: the ticks it missed fire by its missed-fire policy, skip." {
		t.Fatalf("resume: %+v %q", f.schedule("held"), flash)
	}
	f.wantLogged("resume", "resumed schedule held")

	// Trigger enqueues exactly one job, the schedule's, and leaves its
	// ticks alone.
	before := f.schedule("nightly")
	flash = f.wantRedirect(f.post("/schedules/nightly/trigger", nil), "/schedules")
	got := f.jobsOfType("report.build")
	if len(got) != 1 {
		t.Fatalf("trigger enqueued %d report.build jobs, want 1", len(got))
	}
	j := got[0]
	if j.Queue != "reports" || string(j.Payload) != `{"kind":"daily"}` || j.CreatedBy != "schedule:nightly" || !slices.Contains(j.Tags, schedule.TriggerTag) {
		t.Fatalf("triggered job %+v", j)
	}
	if n := f.count(jobs.TableHot, jobs.Filter{}); n != 1 {
		t.Fatalf("%d active jobs after one trigger", n)
	}
	want := fmt.Sprintf("Triggered schedule nightly: job %d (report.build on reports).", j.ID)
	if !strings.HasPrefix(flash, want) || !strings.Contains(flash, fmt.Sprintf(`<a href="/job/%d" id="flash-job">Inspect job %d</a>`, j.ID, j.ID)) {
		t.Fatalf("flash %q, want %q and a link to the job", flash, want)
	}
	f.wantLogged("trigger", fmt.Sprintf("triggered schedule nightly: job %d (report.build on reports)", j.ID))
	if after := f.schedule("nightly"); !after.LastFiredTick.Equal(before.LastFiredTick) || !after.LastFiredAt.IsZero() {
		t.Fatalf("trigger moved the schedule's ticks: %+v", after)
	}

	// A paused schedule can be triggered too.
	f.wantRedirect(f.post("/schedules/team:every-10m/trigger", nil), "/schedules")
	if n := len(f.jobsOfType("cache.warm")); n != 1 || !f.schedule("team:every-10m").Paused {
		t.Fatalf("trigger of a paused schedule: %d jobs, paused %v", n, f.schedule("team:every-10m").Paused)
	}
}

// TestScheduleActionsRefuseUnknownAndBadNames: an unknown name is a 404
// that says so, a malformed one a 400, and neither changes anything.
func TestScheduleActionsRefuseUnknownAndBadNames(t *testing.T) {
	f, _, _ := scheduleFixture(t, Options{})
	for _, action := range []string{"pause", "resume", "trigger"} {
		t.Run(action, func(t *testing.T) {
			wantStatus(t, f.post("/schedules/nope/"+action, nil), http.StatusNotFound, "no schedule is named &#34;nope&#34;")
			wantStatus(t, f.post("/schedules/"+action, urlValues("schedule", "nope")), http.StatusNotFound, "no schedule is named")
			wantStatus(t, f.post("/schedules/bad%20name/"+action, nil), http.StatusBadRequest, "schedule", "may contain only")
			wantStatus(t, f.post("/schedules/"+strings.Repeat("s", jobs.MaxScheduleNameLen+1)+"/"+action, nil), http.StatusBadRequest, "schedule")
			wantStatus(t, f.post("/schedules/"+action, nil), http.StatusBadRequest, "schedule")
		})
	}
	if n := f.count(jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("refused triggers enqueued %d jobs", n)
	}
	if f.schedule("nightly").Paused || !f.schedule("held").Paused {
		t.Fatal("a refused action changed a schedule")
	}
	if e := f.logs.FilterMessage("dashboard: action").All(); len(e) != 0 {
		t.Fatalf("refused actions were logged as done: %v", e)
	}
}

// TestBrokenScheduleDefinitions: a stored definition that does not
// decode, or whose cron or zone does not parse here, shows its error in
// its row; the page and the other rows render, and Trigger refuses it.
func TestBrokenScheduleDefinitions(t *testing.T) {
	f, _, _ := scheduleFixture(t, Options{})
	must(t, f.store.SyncSchedules(context.Background(), []jobs.ScheduleDef{
		{Name: "garbage", Definition: []byte("\x00not json{"), Hash: "h1"},
		{Name: "badcron", Definition: []byte(`{"cron":"61 * * * *","type":"t","missedFire":"coalesce"}`), Hash: "h2"},
		{Name: "mars", Definition: []byte(`{"cron":"@daily","timeZone":"Mars/Olympus_Mons","type":"t","missedFire":"coalesce"}`), Hash: "h3"},
		{Name: "badpaused", Definition: []byte(`{"cron":"every day","type":"t","missedFire":"coalesce"}`), Hash: "h4", Paused: true},
	}))
	r := f.get("/schedules")
	wantStatus(t, r, http.StatusOK)
	wantIn(t, "garbage", rowOf(t, r.body, "data-schedule", "garbage"),
		`<td colspan="4" class="err" data-col="next">schedule &#34;garbage&#34;: the stored definition does not decode`, `action="/schedules/garbage/pause"`)
	if strings.Contains(rowOf(t, r.body, "data-schedule", "garbage"), "/trigger") {
		t.Fatal("Trigger offered for a definition that does not decode")
	}
	wantIn(t, "badcron", rowOf(t, r.body, "data-schedule", "badcron"), "<code>61 * * * *</code>", `class="err" data-col="next">schedule: invalid cron expression &#34;61 * * * *&#34;`)
	wantIn(t, "mars", rowOf(t, r.body, "data-schedule", "mars"), `class="err" data-col="next">schedule: time zone &#34;Mars/Olympus_Mons&#34;`)
	wantIn(t, "badpaused", rowOf(t, r.body, "data-schedule", "badpaused"), `class="err" data-col="next">schedule: invalid cron expression`)
	wantIn(t, "nightly", rowOf(t, r.body, "data-schedule", "nightly"), `<td data-col="next">2026-03-05 01:00:00</td>`)

	wantStatus(t, f.post("/schedules/garbage/trigger", nil), http.StatusConflict, "does not decode", "until a process defines it again")
	if n := f.count(jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("a broken definition enqueued %d jobs", n)
	}
	// Its pause is the store's, and works.
	f.wantRedirect(f.post("/schedules/garbage/pause", nil), "/schedules")
	if !f.schedule("garbage").Paused {
		t.Fatal("not paused")
	}
}

// TestScheduleDefinitionsAreEscaped: markup in a stored cron expression,
// type or queue is shown as text, in a row that decodes and in one whose
// cron does not parse (the parse error quotes it).
func TestScheduleDefinitionsAreEscaped(t *testing.T) {
	f := newFixture(t, Options{})
	must(t, f.store.SyncSchedules(context.Background(), []jobs.ScheduleDef{
		{Name: "xss-cron", Definition: []byte(`{"cron":"<script>alert(1)</script>","type":"<script>alert(2)</script>","missedFire":"coalesce"}`), Hash: "h1"},
		{Name: "xss-type", Definition: []byte(`{"cron":"@hourly","type":"<img src=x onerror=alert(3)>","queue":"<b>q</b>","missedFire":"<i>x</i>"}`), Hash: "h2"},
	}))
	r := f.get("/schedules")
	wantStatus(t, r, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;",
		"&lt;img src=x onerror=alert(3)&gt;", "&lt;b&gt;q&lt;/b&gt;", "&lt;i&gt;x&lt;/i&gt;")
	for _, raw := range []string{"<script>alert", "<img src=x", "<b>q</b>", "<i>x</i>"} {
		if strings.Contains(r.body, raw) {
			t.Fatalf("the page renders %q from a stored definition:\n%s", raw, r.body)
		}
	}
}

// TestScheduleTriggerNeedsAStoreThatEnqueues: over an Admin that cannot
// enqueue, Trigger is not offered and its POST is refused; pause still
// works.
func TestScheduleTriggerNeedsAStoreThatEnqueues(t *testing.T) {
	f, _, _ := scheduleFixture(t, Options{})
	adminOnly := struct{ jobs.Admin }{f.store}
	d, err := New(adminOnly, Options{Logger: f.dash.log})
	must(t, err)
	defer d.Close()
	f.srv.Config.Handler = d

	r := f.get("/schedules")
	wantStatus(t, r, http.StatusOK, `action="/schedules/nightly/pause"`, "cannot enqueue jobs, so Trigger is not offered")
	if strings.Contains(r.body, "/trigger") {
		t.Fatal("Trigger offered over a store that cannot enqueue")
	}
	wantStatus(t, f.post("/schedules/nightly/trigger", nil), http.StatusNotImplemented, "cannot enqueue")
	if n := f.count(jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Fatalf("%d jobs enqueued", n)
	}
	f.wantRedirect(f.post("/schedules/nightly/pause", nil), "/schedules")
}

// TestDotSchedulesCanBeManaged: a schedule named "." or "..", which path
// normalisation would eat, is posted in the "schedule" field.
func TestDotSchedulesCanBeManaged(t *testing.T) {
	f := newFixture(t, Options{})
	var defs []jobs.ScheduleDef
	for _, name := range []string{".", ".."} {
		defs = append(defs, schedule.Schedule{Name: name, Cron: "@hourly", Job: schedule.Job{Type: "dots"}}.Def())
	}
	must(t, f.store.SyncSchedules(context.Background(), defs))
	page := f.get("/schedules")
	wantStatus(t, page, http.StatusOK, `action="/schedules/pause"`, `action="/schedules/trigger"`, `name="schedule" value=".."`)
	if strings.Contains(page.body, `/schedules/../`) || strings.Contains(page.body, `/schedules/./`) {
		t.Fatalf("a dot schedule in a path:\n%s", page.body)
	}
	for _, name := range []string{".", ".."} {
		f.wantRedirect(f.post("/schedules/pause", urlValues("schedule", name)), "/schedules")
		if !f.schedule(name).Paused {
			t.Fatalf("%q not paused", name)
		}
	}
	f.wantRedirect(f.post("/schedules/trigger", urlValues("schedule", "..")), "/schedules")
	if n := len(f.jobsOfType("dots")); n != 1 {
		t.Fatalf("%d jobs after one trigger", n)
	}
}

// A flash cookie whose job part is not a job ID links nowhere.
func TestFlashJobLinkIsOnlyAnID(t *testing.T) {
	f := newFixture(t, Options{})
	for value, want := range map[string]string{
		"SGk.42":                    `Hi <a href="/job/42" id="flash-job">Inspect job 42</a></p>`,
		"SGk.javascript:alert(1)":   "Hi</p>",
		"SGk.-3":                    "Hi</p>",
		"SGk":                       "Hi</p>",
		"SGk." + strconv.Itoa(0):    "Hi</p>",
		"SGk.//evil.example/job/42": "Hi</p>",
	} {
		f.setCookie(flashCookie, value)
		r := f.get("/schedules")
		wantStatus(t, r, http.StatusOK, `<p class="flash" role="status">`+want)
		if regexp.MustCompile(`evil|javascript`).MatchString(r.body) {
			t.Fatalf("cookie %q: %s", value, r.body)
		}
	}
}
