package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schedule"
)

// wantRedirect checks a 303 to path and returns the flash shown there.
func (f *fixture) wantRedirect(r response, path string) string {
	f.t.Helper()
	if r.status != http.StatusSeeOther || r.header.Get("Location") != path {
		f.t.Fatalf("want 303 to %s, got %d %s\n%s", path, r.status, r.header.Get("Location"), r.body)
	}
	page := f.get(path)
	m := strings.SplitN(page.body, `<p class="flash" role="status">`, 2)
	if len(m) != 2 {
		f.t.Fatalf("no flash on %s:\n%s", path, page.body)
	}
	flash, _, _ := strings.Cut(m[1], "</p>")
	return flash
}

// wantLogged checks that an action was logged with its actor and shown on
// the console.
func (f *fixture) wantLogged(action, text string) {
	f.t.Helper()
	found := false
	for _, e := range f.logs.FilterMessage("dashboard: action").All() {
		fields := e.ContextMap()
		if fields["action"] == action && strings.Contains(fmt.Sprint(fields["target"]), text) && fields["actor"] == "127.0.0.1" {
			found = true
		}
	}
	if !found {
		f.t.Fatalf("no %s action log with %q and the actor; logs: %v", action, text, f.logs.All())
	}
	events, _ := f.dash.hub.recent(100)
	for _, e := range events {
		if e.Kind == KindAction && strings.Contains(e.Text, text) && strings.HasPrefix(e.Text, "127.0.0.1: ") {
			return
		}
	}
	f.t.Fatalf("no console event with %q: %+v", text, events)
}

func TestResurrectOne(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{"a":1}`, jobs.ReasonZombie, "zombie")
	r := f.post("/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(id)))
	flash := f.wantRedirect(r, fmt.Sprintf("/job/%d", id))
	if !strings.Contains(flash, fmt.Sprintf("Resurrected job %d", id)) || !strings.Contains(flash, "Pending again") {
		t.Fatalf("flash %q", flash)
	}
	j, _ := f.store.GetJob(context.Background(), id)
	if j.Table != jobs.TableHot || j.Status != jobs.StatusPending || j.AttemptCount != 0 || string(j.Payload) != `{"a":1}` {
		t.Fatalf("job %+v", j)
	}
	f.wantLogged("resurrect", fmt.Sprintf("resurrected job %d (t on q)", id))
}

func TestResurrectOneWithAnEditedPayload(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{"a":1}`, jobs.ReasonFatal, "bad input")
	// Browsers send textarea line breaks as CRLF.
	r := f.post("/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(id), "edit_payload", "1", "payload", "{\r\n  \"a\": 2\r\n}"))
	f.wantRedirect(r, fmt.Sprintf("/job/%d", id))
	j, _ := f.store.GetJob(context.Background(), id)
	if string(j.Payload) != "{\n  \"a\": 2\n}" {
		t.Fatalf("payload %q", j.Payload)
	}
	f.wantLogged("resurrect", "with an edited payload")
	// A payload is only replaced when the box is ticked.
	id2 := f.deadLetter("q", "t", `{"a":1}`, jobs.ReasonFatal, "bad input")
	f.wantRedirect(f.post("/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(id2), "payload", `{"ignored":1}`)), fmt.Sprintf("/job/%d", id2))
	if j, _ := f.store.GetJob(context.Background(), id2); string(j.Payload) != `{"a":1}` {
		t.Fatalf("payload changed without edit_payload: %q", j.Payload)
	}
}

func TestResurrectSelectedNeedsTheCountTyped(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	b := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	c := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	form := urlValues("scope", "selected", "ids", fmt.Sprint(a), "ids", fmt.Sprint(b), "queue", "q")

	r := f.post("/dead/resurrect", form)
	wantStatus(t, r, http.StatusOK, "Confirm: resurrect 2 dead letters", "Type <strong>2</strong> to confirm", "the 2 selected",
		fmt.Sprintf(`name="ids" value="%d"`, a), fmt.Sprintf(`name="ids" value="%d"`, b))
	if f.count(jobs.TableDLQ, jobs.Filter{}) != 3 {
		t.Fatal("the confirmation step moved jobs")
	}
	form.Set("confirm", "3")
	wantStatus(t, f.post("/dead/resurrect", form), http.StatusConflict, "You typed &#34;3&#34;, but 2 dead letters match now")
	if f.count(jobs.TableDLQ, jobs.Filter{}) != 3 {
		t.Fatal("a wrong confirmation moved jobs")
	}
	form.Set("confirm", "2")
	flash := f.wantRedirect(f.post("/dead/resurrect", form), "/dead?queue=q")
	if !strings.Contains(flash, "Resurrected 2 dead letters (the 2 selected)") {
		t.Fatalf("flash %q", flash)
	}
	if f.table(a) != jobs.TableHot || f.table(b) != jobs.TableHot || f.table(c) != jobs.TableDLQ {
		t.Fatal("wrong jobs moved")
	}
	f.wantLogged("resurrect", "resurrected 2 dead letters (the 2 selected)")
}

// TestResurrectSelectedWithAnEditedPayload: the edited payload rides
// through the confirmation step and replaces the payload of exactly the
// selected jobs.
func TestResurrectSelectedWithAnEditedPayload(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.deadLetter("q", "t", `{"v":1}`, jobs.ReasonFatal, "bad input")
	b := f.deadLetter("q", "t", `{"v":1}`, jobs.ReasonFatal, "bad input")
	c := f.deadLetter("q", "t", `{"v":1}`, jobs.ReasonFatal, "bad input")
	// Browsers send textarea line breaks as CRLF.
	r := f.post("/dead/resurrect", urlValues("scope", "selected", "ids", fmt.Sprint(a), "ids", fmt.Sprint(c),
		"edit_payload", "1", "payload", "{\r\n  \"v\": 2\r\n}"))
	wantStatus(t, r, http.StatusOK, "Confirm: resurrect 2 dead letters", "with an edited payload", "New payload", `&#34;v&#34;: 2`)
	form := confirmForm(t, r)
	form.Set("confirm", "2")
	flash := f.wantRedirect(f.postRaw("/dead/resurrect", form), "/dead")
	if !strings.Contains(flash, "Resurrected 2 dead letters (the 2 selected) with an edited payload") {
		t.Fatalf("flash %q", flash)
	}
	for id, want := range map[int64]struct {
		table   jobs.Table
		payload string
	}{a: {jobs.TableHot, "{\n  \"v\": 2\n}"}, c: {jobs.TableHot, "{\n  \"v\": 2\n}"}, b: {jobs.TableDLQ, `{"v":1}`}} {
		j, err := f.store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Table != want.table || string(j.Payload) != want.payload {
			t.Errorf("job %d: %s %q, want %s %q", id, j.Table, j.Payload, want.table, want.payload)
		}
	}
	f.wantLogged("resurrect", "resurrected 2 dead letters (the 2 selected) with an edited payload")
}

func TestResurrectAllMatchingAFilterWithAPayload(t *testing.T) {
	f := newFixture(t, Options{})
	var zombies []int64
	for range 3 {
		zombies = append(zombies, f.deadLetter("q", "t", `{"v":1}`, jobs.ReasonZombie, "zombie: heartbeat expired"))
	}
	other := f.deadLetter("q", "t", `{"v":1}`, jobs.ReasonFatal, "fatal")
	form := urlValues("scope", "matching", "queue", "q", "reason", "Zombie", "edit_payload", "1", "payload", `{"v":2}`)
	wantStatus(t, f.post("/dead/resurrect", form), http.StatusOK, "resurrect 3 dead letters", `matching queue=&#34;q&#34;, reason=&#34;Zombie&#34;`,
		"with an edited payload", "New payload")
	form.Set("confirm", "3")
	f.wantRedirect(f.post("/dead/resurrect", form), "/dead?queue=q&reason=Zombie")
	for _, id := range zombies {
		j, _ := f.store.GetJob(context.Background(), id)
		if j.Table != jobs.TableHot || string(j.Payload) != `{"v":2}` {
			t.Fatalf("job %+v", j)
		}
	}
	if f.table(other) != jobs.TableDLQ {
		t.Fatal("a job outside the filter moved")
	}
	f.wantLogged("resurrect", `resurrected 3 dead letters (matching queue="q", reason="Zombie") with an edited payload`)
}

func TestBulkWithAnEmptyFilterNeedsAll(t *testing.T) {
	for _, path := range []string{"/dead/resurrect", "/dead/purge", "/archive/purge"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
			f.deadLetter("r", "t", `{}`, jobs.ReasonFatal, "x")
			f.archive("q", "t", `{}`)
			f.archive("r", "t", `{}`)
			table := jobs.TableDLQ
			if strings.HasPrefix(path, "/archive") {
				table = jobs.TableArchive
			}
			wantStatus(t, f.post(path, urlValues("scope", "matching")), http.StatusBadRequest, "the filter is empty", "every")
			if f.count(table, jobs.Filter{}) != 2 {
				t.Fatal("refused request moved jobs")
			}
			wantStatus(t, f.post(path, urlValues("scope", "matching", "all", "1")), http.StatusOK, "Type <strong>2</strong>", "no filter")
			r := f.post(path, urlValues("scope", "matching", "all", "1", "confirm", "2"))
			if r.status != http.StatusSeeOther {
				t.Fatalf("status %d\n%s", r.status, r.body)
			}
			if f.count(table, jobs.Filter{}) != 0 {
				t.Fatal("not every job moved")
			}
		})
	}
}

func TestPurgeOneSelectedAndMatching(t *testing.T) {
	f := newFixture(t, Options{})
	one := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	f.wantRedirect(f.post("/dead/purge", urlValues("scope", "one", "id", fmt.Sprint(one))), "/dead")
	if _, err := f.store.GetJob(context.Background(), one); err == nil {
		t.Fatal("purged job still exists")
	}
	f.wantLogged("purge", fmt.Sprintf("purged job %d", one))

	a, b := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x"), f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	// The list's form also carries the payload fields; a purge ignores them.
	form := urlValues("scope", "selected", "ids", fmt.Sprint(a), "ids", fmt.Sprint(b), "edit_payload", "1", "payload", `{"x":1}`)
	r := f.post("/dead/purge", form)
	wantStatus(t, r, http.StatusOK, "Confirm: purge 2 dead letters", "deleted for good")
	if strings.Contains(r.body, "New payload") {
		t.Fatal("a purge confirmation shows a payload")
	}
	form.Set("confirm", "2")
	f.wantRedirect(f.post("/dead/purge", form), "/dead")
	if f.count(jobs.TableDLQ, jobs.Filter{}) != 0 {
		t.Fatal("selected not purged")
	}

	f.deadLetter("keep", "t", `{}`, jobs.ReasonFatal, "x")
	for range 2 {
		f.deadLetter("drop", "t", `{"secret":"s3"}`, jobs.ReasonFatal, "x")
	}
	form = urlValues("scope", "matching", "text", "s3", "confirm", "2")
	flash := f.wantRedirect(f.post("/dead/purge", form), "/dead?text=s3")
	if !strings.Contains(flash, "Purged 2 dead letters") || f.count(jobs.TableDLQ, jobs.Filter{}) != 1 {
		t.Fatalf("flash %q", flash)
	}
}

func TestPurgeArchive(t *testing.T) {
	f := newFixture(t, Options{})
	one := f.archive("q", "t", `{}`)
	f.wantRedirect(f.post("/archive/purge", urlValues("scope", "one", "id", fmt.Sprint(one))), "/archive")
	for range 3 {
		f.archive("q", "t", `{}`)
	}
	keep := f.archive("other", "t", `{}`)
	form := urlValues("scope", "matching", "queue", "q", "from", "2000-01-01T00:00")
	wantStatus(t, f.post("/archive/purge", form), http.StatusOK, "purge 3 archived jobs")
	form.Set("confirm", "3")
	f.wantRedirect(f.post("/archive/purge", form), "/archive?from=2000-01-01T00%3A00&queue=q")
	if f.count(jobs.TableArchive, jobs.Filter{}) != 1 || f.table(keep) != jobs.TableArchive {
		t.Fatal("wrong archive rows purged")
	}
	f.wantLogged("purge", "purged 3 archived jobs")
	a, b := f.archive("q", "t", `{}`), f.archive("q", "t", `{}`)
	form = urlValues("scope", "selected", "ids", fmt.Sprint(a), "ids", fmt.Sprint(b))
	wantStatus(t, f.post("/archive/purge", form), http.StatusOK, "purge 2 archived jobs", "the 2 selected")
	form.Set("confirm", "2")
	f.wantRedirect(f.post("/archive/purge", form), "/archive")
	if f.count(jobs.TableArchive, jobs.Filter{}) != 1 {
		t.Fatal("selected archive rows not purged")
	}
}

func TestNothingMatchingIsSaidPlainly(t *testing.T) {
	f := newFixture(t, Options{})
	flash := f.wantRedirect(f.post("/dead/resurrect", urlValues("scope", "matching", "queue", "empty")), "/dead?queue=empty")
	if !strings.Contains(flash, "Nothing to resurrect") {
		t.Fatalf("flash %q", flash)
	}
}

func TestActionsRefuseBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	dead := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	archived := f.archive("q", "t", `{}`)
	pending := f.enqueue("q", "t", `{}`)
	cases := []struct {
		name, path string
		form       url.Values
		status     int
		want       string
	}{
		{"UnknownID", "/dead/resurrect", urlValues("scope", "one", "id", "999999"), http.StatusNotFound, "not found"},
		{"MalformedID", "/dead/resurrect", urlValues("scope", "one", "id", "abc"), http.StatusBadRequest, "positive integer"},
		{"MissingID", "/dead/purge", urlValues("scope", "one"), http.StatusBadRequest, "positive integer"},
		{"NotADeadLetter", "/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(pending)), http.StatusConflict, "is not dead letter: it is active"},
		{"ArchivedIsNotDead", "/dead/purge", urlValues("scope", "one", "id", fmt.Sprint(archived)), http.StatusConflict, "not dead letter"},
		{"DeadIsNotArchived", "/archive/purge", urlValues("scope", "one", "id", fmt.Sprint(dead)), http.StatusConflict, "not archived"},
		{"BadScope", "/dead/resurrect", urlValues("scope", "everything"), http.StatusBadRequest, "want one, selected or matching"},
		{"NoScope", "/dead/purge", nil, http.StatusBadRequest, "want one, selected or matching"},
		{"NothingSelected", "/dead/resurrect", urlValues("scope", "selected"), http.StatusBadRequest, "nothing selected"},
		{"MalformedSelection", "/dead/purge", urlValues("scope", "selected", "ids", "1", "ids", "x"), http.StatusBadRequest, "positive integer"},
		{"MalformedReason", "/dead/resurrect", urlValues("scope", "matching", "reason", "sleepy"), http.StatusBadRequest, "reason"},
		{"MalformedTime", "/dead/purge", urlValues("scope", "matching", "from", "noon"), http.StatusBadRequest, "from"},
		{"MalformedQueue", "/archive/purge", urlValues("scope", "matching", "queue", "a b"), http.StatusBadRequest, "queue"},
		{"InvertedRange", "/archive/purge", urlValues("scope", "matching", "from", "2026-02-01", "to", "2026-01-01"), http.StatusBadRequest, "before"},
		{"PayloadNotJSON", "/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(dead), "edit_payload", "1", "payload", "{oops"), http.StatusBadRequest, "not valid JSON"},
		{"PayloadTooBig", "/dead/resurrect", urlValues("scope", "one", "id", fmt.Sprint(dead), "edit_payload", "1", "payload", `"`+strings.Repeat("x", jobs.DefaultMaxPayloadBytes)+`"`), http.StatusBadRequest, "payload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantStatus(t, f.post(c.path, c.form), c.status, c.want)
		})
	}
	if f.table(dead) != jobs.TableDLQ || f.table(archived) != jobs.TableArchive || f.table(pending) != jobs.TableHot {
		t.Fatal("a refused action moved a job")
	}
}

// actionRoutes are every POST route that changes something.
var actionRoutes = []string{"/active/cancel", "/workflows/1/cancel", "/dead/resurrect", "/dead/purge", "/archive/purge", "/queues/q/pause", "/queues/q/resume", "/queues/q/settings", "/queues/q/limits",
	"/queues/pause", "/queues/resume", "/queues/settings", "/queues/limits",
	"/schedules/s/pause", "/schedules/s/resume", "/schedules/s/trigger", "/schedules/pause", "/schedules/resume", "/schedules/trigger"}

func TestActionsNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	must(t, f.store.SyncSchedules(context.Background(), []jobs.ScheduleDef{schedule.Schedule{Name: "s", Cron: "@hourly", Job: schedule.Job{Type: "t"}}.Def()}))
	synced, _ := f.store.Schedules(context.Background())
	good := f.csrf()
	other := newFixture(t, Options{CSRFSecret: []byte("another secret")})
	foreign := other.csrf() // a valid token for another session and key
	for _, path := range actionRoutes {
		form := func(token string) url.Values {
			v := urlValues("scope", "one", "id", fmt.Sprint(id), "max_workers", "1")
			if token != "-" {
				v.Set("csrf", token)
			}
			return v
		}
		t.Run(path, func(t *testing.T) {
			wantStatus(t, f.postRaw(path, form("-")), http.StatusForbidden, "CSRF")
			wantStatus(t, f.postRaw(path, form("")), http.StatusForbidden, "CSRF")
			wantStatus(t, f.postRaw(path, form(good+"x")), http.StatusForbidden, "CSRF")
			wantStatus(t, f.postRaw(path, form(foreign)), http.StatusForbidden, "CSRF")
			// The right token without its cookie (another browser) fails too.
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form(good).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("token without cookie: %d", res.StatusCode)
			}
			// A browser says when a form comes from another site.
			req, _ = http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form(good).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://evil.example")
			wantStatus(t, f.do(req), http.StatusForbidden, "cross-origin")
		})
	}
	if f.table(id) != jobs.TableDLQ {
		t.Fatal("a forged request moved the job")
	}
	if qs, _ := f.store.Queues(context.Background()); len(qs) != 0 {
		t.Fatalf("a forged request changed queues: %+v", qs)
	}
	// A pause then a resume would leave it unpaused, but not unchanged.
	if st, _ := f.store.Schedules(context.Background()); !st[0].UpdatedAt.Equal(synced[0].UpdatedAt) || st[0].Paused || f.count(jobs.TableHot, jobs.Filter{}) != 0 {
		t.Fatalf("a forged request paused or triggered a schedule: %+v", st)
	}
	// The header form of the token works for scripts that keep the cookie.
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/queues/q/pause", nil)
	req.Header.Set(csrfHeader, good)
	if r := f.do(req); r.status != http.StatusSeeOther {
		t.Fatalf("X-CSRF-Token: %d\n%s", r.status, r.body)
	}
}

func TestNoActionIsReachableByGET(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	for _, path := range append(actionRoutes, "/logout") {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(method, f.srv.URL+path+"?scope=one&id="+fmt.Sprint(id)+"&csrf="+f.csrf(), nil)
			r := f.do(req)
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
				t.Fatalf("%s %s: %d, Allow %q", method, path, r.status, r.header.Get("Allow"))
			}
		}
	}
	if f.table(id) != jobs.TableDLQ {
		t.Fatal("a GET moved the job")
	}
}

func TestReadOnlyHidesAndRefusesEveryAction(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true})
	dead := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	archived := f.archive("q", "t", `{}`)
	must(t, f.store.SyncSchedules(context.Background(), []jobs.ScheduleDef{
		schedule.Schedule{Name: "s", Cron: "@hourly", Job: schedule.Job{Type: "t"}}.Def(),
		schedule.Schedule{Name: "p", Cron: "@hourly", Job: schedule.Job{Type: "t"}, Paused: true}.Def(),
	}))
	for _, path := range []string{"/", "/queues", "/schedules", "/workflows", "/active", "/dead", "/archive", fmt.Sprintf("/job/%d", dead), fmt.Sprintf("/job/%d", archived)} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK, "read-only")
		for _, s := range []string{`method="post"`, "Resurrect", "Purge", "Pause", "Resume", "Trigger", `name="ids"`} {
			if strings.Contains(r.body, s) {
				t.Fatalf("%s shows %q in read-only mode", path, s)
			}
		}
	}
	for _, path := range actionRoutes {
		wantStatus(t, f.postRaw(path, urlValues("csrf", "whatever", "scope", "one", "id", fmt.Sprint(dead))), http.StatusForbidden, "read-only")
	}
	if f.table(dead) != jobs.TableDLQ || f.table(archived) != jobs.TableArchive {
		t.Fatal("read-only dashboard moved a job")
	}
	for _, name := range []string{"s", "p"} {
		for _, action := range []string{"pause", "resume", "trigger"} {
			wantStatus(t, f.postRaw("/schedules/"+name+"/"+action, urlValues("csrf", "whatever")), http.StatusForbidden, "read-only")
		}
	}
	states, err := f.store.Schedules(context.Background())
	must(t, err)
	if !states[0].Paused || states[1].Paused || f.count(jobs.TableHot, jobs.Filter{}) != 0 {
		t.Fatalf("read-only dashboard changed schedules or enqueued: %+v", states)
	}
}

func TestQueueActions(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	settings := func() jobs.QueueSettings {
		qs, err := f.store.Queues(ctx)
		if err != nil || len(qs) != 1 {
			t.Fatalf("queues %+v %v", qs, err)
		}
		return qs[0]
	}
	flash := f.wantRedirect(f.post("/queues/mail/pause", nil), "/queues")
	if !settings().Paused || flash != "Paused queue mail." {
		t.Fatalf("pause: %+v %q", settings(), flash)
	}
	f.wantLogged("pause", "paused queue mail")
	wantStatus(t, f.get("/queues"), http.StatusOK, `action="/queues/mail/resume"`, "st-paused")
	f.wantRedirect(f.post("/queues/mail/resume", nil), "/queues")
	if settings().Paused {
		t.Fatal("resume did not resume")
	}
	f.wantLogged("resume", "resumed queue mail")

	f.wantRedirect(f.post("/queues/mail/settings", urlValues("max_workers", "4", "zombie_timeout", "90s", "execution_timeout", "600")), "/queues")
	if s := settings(); s.MaxWorkers != 4 || s.ZombieTimeout != 90*time.Second || s.ExecutionTimeout != 600*time.Second {
		t.Fatalf("settings %+v", s)
	}
	f.wantLogged("set", "set queue mail: max workers 4, zombie timeout 1m30s, execution timeout 10m0s")
	f.wantRedirect(f.post("/queues/mail/settings", urlValues("max_workers", "", "zombie_timeout", "2m", "execution_timeout", "0")), "/queues")
	if s := settings(); s.MaxWorkers != 0 || s.ZombieTimeout != 120*time.Second || s.ExecutionTimeout != 0*time.Second {
		t.Fatalf("cleared settings %+v", s)
	}

	for _, c := range []struct {
		path string
		form url.Values
		want string
	}{
		{"/queues/mail/settings", urlValues("max_workers", "-1"), "max workers"},
		{"/queues/mail/settings", urlValues("max_workers", "many"), "max workers"},
		{"/queues/mail/settings", urlValues("max_workers", "100001"), "max_workers"},
		{"/queues/mail/settings", urlValues("zombie_timeout", "1.5s"), "zombie timeout"},
		// Shorter than 3 default heartbeats: rescue would not honour it.
		{"/queues/mail/settings", urlValues("zombie_timeout", "1s"), "must be more than 36s"},
		{"/queues/mail/settings", urlValues("execution_timeout", "forever"), "execution timeout"},
		{"/queues/mail/settings", urlValues("execution_timeout", "9999h"), "execution timeout"},
		{"/queues/bad%20name/pause", nil, "queue"},
		{"/queues/" + strings.Repeat("q", jobs.MaxQueueLen+1) + "/settings", nil, "queue"},
	} {
		wantStatus(t, f.post(c.path, c.form), http.StatusBadRequest, c.want)
	}
	if s := settings(); s.MaxWorkers != 0 || s.ZombieTimeout != 120*time.Second {
		t.Fatalf("refused updates changed settings: %+v", s)
	}
}

// A store that fails turns into a 500 page that says so, with a reference
// to the logged error but not its text, which can carry server details.
func TestStoreFailuresAreReported(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.deadLetter("q", "t", `{}`, jobs.ReasonFatal, "x")
	fs := &failingStore{Admin: f.store}
	d, err := New(fs, Options{Logger: f.dash.log})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f.srv.Config.Handler = d
	fs.fail.Store(true)
	var pages []response
	pages = append(pages, f.get("/"), f.get("/dead"))
	fs.fail.Store(false)
	token := f.csrf()
	fs.fail.Store(true)
	pages = append(pages, f.post("/dead/resurrect", urlValues("csrf", token, "scope", "one", "id", fmt.Sprint(id))))
	logged := f.logs.FilterMessage("dashboard: store error").All()
	if len(logged) != len(pages) {
		t.Fatalf("store errors logged: %v", logged)
	}
	for i, r := range pages {
		ref := logged[i].ContextMap()["ref"]
		wantStatus(t, r, http.StatusInternalServerError, "the store failed", fmt.Sprintf("reference %s", ref))
		if strings.Contains(r.body, "disk on fire") {
			t.Fatalf("the page shows the store's error:\n%s", r.body)
		}
		if e := fmt.Sprint(logged[i].ContextMap()["error"]); !strings.HasSuffix(e, "disk on fire") {
			t.Fatalf("logged error %v", e)
		}
	}
}

type failingStore struct {
	jobs.Admin
	fail atomic.Bool
}

func (s *failingStore) err() error {
	if s.fail.Load() {
		return fmt.Errorf("disk on fire")
	}
	return nil
}

func (s *failingStore) QueueStats(ctx context.Context) ([]jobs.QueueStats, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.Admin.QueueStats(ctx)
}

func (s *failingStore) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	if err := s.err(); err != nil {
		return jobs.JobPage{}, err
	}
	return s.Admin.ListJobs(ctx, p)
}

func (s *failingStore) GetJob(ctx context.Context, id int64) (*jobs.Job, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.Admin.GetJob(ctx, id)
}

// Cancel from the inspector: a pending job goes to the DLQ at once, a
// running one is marked and shows "cancel requested" on both pages.
func TestCancelFromTheInspectorAndTheActivePage(t *testing.T) {
	f := newFixture(t, Options{})
	pending := f.enqueue("q", "t", `{}`)
	runningID := f.enqueue("r", "t", `{}`)
	f.start(runningID, "r")

	page := f.get(fmt.Sprintf("/job/%d", pending))
	wantStatus(t, page, http.StatusOK, `id="cancel-form"`, "Cancel job")
	r := f.post("/active/cancel", urlValues("id", fmt.Sprint(pending), "reason", "refunded"))
	flash := f.wantRedirect(r, fmt.Sprintf("/job/%d", pending))
	if !strings.Contains(flash, "1 cancelled") {
		t.Fatalf("flash %q", flash)
	}
	j, _ := f.store.GetJob(context.Background(), pending)
	if j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonCancelled || j.ErrorDetails != "cancelled by 127.0.0.1: refunded" {
		t.Fatalf("job %+v", j)
	}
	f.wantLogged("cancel", fmt.Sprintf("cancel of job %d: 1 cancelled", pending))

	// The running one, selected on the active page.
	wantStatus(t, f.get("/active"), http.StatusOK, `id="cancel-selected"`, `name="ids" value="`+fmt.Sprint(runningID))
	r = f.post("/active/cancel", urlValues("ids", fmt.Sprint(runningID)))
	flash = f.wantRedirect(r, fmt.Sprintf("/job/%d", runningID))
	if !strings.Contains(flash, "1 cancel requested") {
		t.Fatalf("flash %q", flash)
	}
	page = f.get(fmt.Sprintf("/job/%d", runningID))
	wantStatus(t, page, http.StatusOK, `id="cancel-requested"`, "cancelled by 127.0.0.1")
	if strings.Contains(page.body, `id="cancel-form"`) {
		t.Fatal("the inspector offers to cancel a job already asked to stop")
	}
	wantStatus(t, f.get("/active"), http.StatusOK, "cancel requested")

	// Bad input names what is wrong and changes nothing.
	wantStatus(t, f.post("/active/cancel", urlValues()), http.StatusBadRequest, "select at least one job")
	wantStatus(t, f.post("/active/cancel", urlValues("id", "x")), http.StatusBadRequest)
}

// The queue page's limits form sets the weight, the rate limit, the
// per-key limit and the sequence policy, each only when sent, and refuses
// bad values naming them, changing nothing.
func TestQueueLimitsForm(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	settings := func() jobs.QueueSettings {
		qs, err := f.store.Queues(ctx)
		must(t, err)
		for _, q := range qs {
			if q.Name == "mail" {
				return q
			}
		}
		return jobs.QueueSettings{}
	}
	two := 2
	_, err := f.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: &two})
	must(t, err)
	wantStatus(t, f.get("/queue/mail"), http.StatusOK, `action="/queues/mail/limits"`, `name="rate_limit"`)
	f.wantRedirect(f.post("/queues/mail/limits", urlValues("weight", "9", "rate_limit", "100/1m", "max_workers_per_key", "3",
		"sequence_on_dead_letter", "hold")), "/queue/mail")
	s := settings()
	if s.Weight != 9 || s.RateLimit != (jobs.RateLimit{Count: 100, Window: time.Minute}) || s.MaxWorkersPerKey != 3 ||
		s.SequenceOnDeadLetter != jobs.SequenceHold || s.MaxWorkers != 2 {
		t.Fatalf("settings %+v", s)
	}
	f.wantLogged("set", "set queue mail: weight 9, rate limit 100/1m, per-key limit 3, a dead letter in a sequence: hold")
	// Only what is sent changes; an empty rate limit removes it.
	f.wantRedirect(f.post("/queues/mail/limits", urlValues("rate_limit", "")), "/queue/mail")
	if s := settings(); !s.RateLimit.IsZero() || s.Weight != 9 || s.MaxWorkersPerKey != 3 {
		t.Fatalf("after clearing the rate limit: %+v", s)
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{urlValues("weight", "0"), "weight"},
		{urlValues("weight", "many"), "weight"},
		{urlValues("rate_limit", "100/48h"), "rate_limit"},
		{urlValues("rate_limit", "fast"), "rate_limit"},
		{urlValues("max_workers_per_key", "-1"), "per-key limit"},
		{urlValues("sequence_on_dead_letter", "later"), "sequence_on_dead_letter"},
	} {
		wantStatus(t, f.post("/queues/mail/limits", c.form), http.StatusBadRequest, c.want)
	}
	if s := settings(); s.Weight != 9 || s.MaxWorkersPerKey != 3 || s.SequenceOnDeadLetter != jobs.SequenceHold {
		t.Fatalf("refused updates changed settings: %+v", s)
	}
	ro := newFixture(t, Options{ReadOnly: true})
	_, err = ro.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: &two})
	must(t, err)
	if r := ro.get("/queue/mail"); r.status != http.StatusOK || strings.Contains(r.body, "limits-form") {
		t.Logf("status %d", r.status)
		t.Error("the read-only dashboard shows the limits form")
	}
}
