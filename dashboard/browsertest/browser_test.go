// Package browsertest drives the dashboard in headless Chromium. It is a
// module of its own, so that the browser driver (chromedp) is no dependency
// of chokaq-go's: `make test` runs it, and without Chromium it skips.
package browsertest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chokaq/chokaq-go/dashboard"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/jobs/storetest"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/zombie"
)

// clock is the store's clock: the wall clock, which the live pages follow,
// moved forward by what the test skipped (a rescue timeout, say).
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// set puts the clock at t, for seeding the past; the seeding must move it
// forward only (the store's finish log is in finish order), and end with
// reset.
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.offset = time.Until(t)
	c.mu.Unlock()
}

// reset puts the clock back on the wall clock.
func (c *clock) reset() {
	c.mu.Lock()
	c.offset = 0
	c.mu.Unlock()
}

// fixture is a dashboard over a fresh in-memory store, served by httptest.
type fixture struct {
	t     *testing.T
	clock *clock
	store *memstore.Store
	dash  *dashboard.Dashboard
	srv   *httptest.Server
	logs  *observer.ObservedLogs
	seed  storetest.Seeder
}

func newFixture(t *testing.T, opts dashboard.Options) *fixture {
	t.Helper()
	c := &clock{}
	store := memstore.New(memstore.WithClock(c.now))
	core, logs := observer.New(zapcore.InfoLevel)
	opts.Logger = zap.New(core)
	d, err := dashboard.New(store, opts)
	must(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(func() {
		d.Close()
		srv.Close()
	})
	return &fixture{t: t, clock: c, store: store, dash: d, srv: srv, logs: logs, seed: storetest.Seeder{T: t, Store: store}}
}

func (f *fixture) enqueue(queue, typ, payload string) int64 {
	f.t.Helper()
	return f.seed.Enqueue(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)})
}

func (f *fixture) start(id int64, queue string) jobs.LeaseRef {
	f.t.Helper()
	return f.seed.Start(id, queue)
}

func (f *fixture) archive(queue, typ, payload string) int64 {
	f.t.Helper()
	return f.seed.Archived(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)})
}

func (f *fixture) deadLetter(queue, typ, payload string, reason jobs.FailureReason, details string) int64 {
	f.t.Helper()
	return f.seed.DeadLettered(jobs.EnqueueParams{Queue: queue, Type: typ, Payload: []byte(payload)}, reason, details)
}

func (f *fixture) table(id int64) jobs.Table {
	f.t.Helper()
	j, err := f.store.GetJob(context.Background(), id)
	must(f.t, err)
	return j.Table
}

// wantLogged finds the action's log line, with the actor.
func (f *fixture) wantLogged(action, text string) {
	f.t.Helper()
	for _, e := range f.logs.FilterMessage("dashboard: action").All() {
		fields := e.ContextMap()
		if fields["action"] == action && strings.Contains(fmt.Sprint(fields["target"]), text) && fields["actor"] == "127.0.0.1" {
			return
		}
	}
	f.t.Fatalf("no %s action log with %q and the actor; logs: %v", action, text, f.logs.All())
}

func intp(n int) *int { return &n }

func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
func boolp(b bool) *bool        { return &b }

// chromium finds a Chromium or Chrome binary: $CHOKAQ_CHROMIUM, else the
// first on PATH.
func chromium() string {
	if p := os.Getenv("CHOKAQ_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless Chromium for the test. The flags keep it from
// reaching for the network (the CI machine has none) and from stalling on
// first-run work.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("browser test skipped: no Chromium installed (apt-get install chromium, or set CHOKAQ_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// The scenario: with the dead-letter page open, a job dies and its
// row appears live; the inspector shows it; it is resurrected from the UI
// and the page follows it until it has succeeded.
func TestBrowserDeadLetterAppearsLiveIsInspectedAndResurrected(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, dashboard.Options{PollInterval: 200 * time.Millisecond, Retention: &retention.Config{}})
	seedForScreenshots(t, f)
	base := f.srv.URL

	// The overview, live.
	must(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1360, 900),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#live.on")),
	))
	rate, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-queue="mail"] [data-k="rate_1m"]`)))
	must(t, err)
	if rate == "0" || rate == "" {
		t.Fatalf("jobs per second of mail: %q", rate)
	}
	if writingScreenshots() {
		// Let the lag sparklines fill in for the picture.
		waitSparkline(t, ctx, "mail", 30)
	}
	screenshot(t, ctx, "dashboard-overview.png")

	// A count follows the store without a reload: the page is marked, a job
	// arrives, and the cells change under the mark.
	cell := `tr[data-queue="reports"] [data-k="pending"]`
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(cell)))
	must(t, err)
	n, err := strconv.Atoi(before)
	must(t, err)
	total, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-total="pending"]`)))
	must(t, err)
	m, err := strconv.Atoi(total)
	must(t, err)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.chokaqMark = "before the job"`)))
	f.enqueue("reports", "report.build", `{"report":"weekly"}`)
	// Polling ends with an error on a navigation, so a reload fails here too.
	must(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`document.querySelector(%q).textContent === "%d" && document.querySelector('[data-total="pending"]').textContent === "%d"`, cell, n+1, m+1),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))))
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.chokaqMark || ""`))
	must(t, err)
	if mark != "before the job" {
		t.Fatal("the overview reloaded to show the new count")
	}

	// The dead-letter page: a job dies while it is open.
	must(t, chromedp.Do(ctx, chromedp.Navigate(base+"/dead"), chromedp.WaitVisible(chromedp.CSS("#live.on"))))
	f.seed.Worker = "web-2-51873"
	id := failForGood(t, f, "billing", "payment.sync", `{"invoice":1042,"amount":"129.00","currency":"EUR","customer":"cus_8Hq2"}`)
	row := fmt.Sprintf(`#rows tr[data-id="%d"]`, id)
	must(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(row))))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row)))
	must(t, err)
	for _, want := range []string{"payment.sync", "billing", "MaxRetriesExceeded", "3/3", "payment gateway timeout"} {
		if !strings.Contains(text, want) {
			t.Fatalf("live row %q lacks %q", text, want)
		}
	}
	console, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#console")))
	must(t, err)
	if !strings.Contains(console, fmt.Sprintf("dead letter: job %d payment.sync on billing", id)) {
		t.Fatalf("console lacks the arrival:\n%s", console)
	}

	// The inspector.
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(row+" a.inspect"))); err != nil {
		t.Fatal(err)
	}
	must(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("resurrect"))))
	for sel, want := range map[string]string{
		"#payload":       `"invoice": 1042`,
		"#error-details": "payment gateway timeout (HTTP 504 from api.pay.example)",
		"#job-state":     "MaxRetriesExceeded",
		".facts":         "web-2-51873",
	} {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(t, err)
		if !strings.Contains(got, want) {
			t.Fatalf("inspector %s = %q, want %q", sel, got, want)
		}
	}
	facts, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".facts")))
	must(t, err)
	if !regexp.MustCompile(`Attempts\s*3 of 3`).MatchString(facts) {
		t.Fatalf("inspector attempts: %q", facts)
	}
	screenshot(t, ctx, "dashboard-inspector.png")

	// Resurrect through the form (it carries the page's CSRF token). The
	// browser follows the redirect back to the inspector, which shows a note
	// and the job Pending again.
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("resurrect")), chromedp.WaitVisible(chromedp.CSS(".flash"))))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".flash")))
	must(t, err)
	if !strings.Contains(flash, fmt.Sprintf("Resurrected job %d", id)) {
		t.Fatalf("flash %q", flash)
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#job-state")))
	must(t, err)
	if !strings.Contains(state, "Pending") {
		t.Fatalf("state after resurrect %q", state)
	}
	// Now a worker that succeeds picks it up; the open page follows the job
	// until it has succeeded, without a reload.
	reg := processor.NewRegistry()
	reg.MustHandle("payment.sync", func(ctx context.Context, j *processor.Job) error { return nil })
	p, err := processor.New(f.store, reg, processor.Config{WorkerID: "web-1-40211", Queues: []string{"billing"},
		PollInterval: 50 * time.Millisecond, ReleaseAfter: 30 * time.Second})
	must(t, err)
	must(t, p.Start(context.Background()))
	defer p.Stop(context.Background())
	must(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#job-state .st-succeeded"))))
	state, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#job-state")))
	must(t, err)
	if !strings.Contains(state, "Succeeded after 1 attempt") {
		t.Fatalf("state %q", state)
	}
	if flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".flash"))); err != nil || !strings.Contains(flash, "Resurrected") {
		t.Fatalf("the page reloaded instead of following the job: %q %v", flash, err)
	}
	if f.table(id) != jobs.TableArchive {
		t.Fatal("the store does not have the job archived")
	}
	f.wantLogged("resurrect", fmt.Sprintf("resurrected job %d", id))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// screenshot writes docs/<name> when CHOKAQ_SCREENSHOTS=1, so ordinary test
// runs leave the checked-in images alone.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !writingScreenshots() {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(t, err)
	path := filepath.Join("..", "..", "docs", name)
	must(t, os.WriteFile(path, png, 0o644))
	t.Logf("wrote %s", path)
}

// writingScreenshots reports whether this run rewrites docs/*.png.
func writingScreenshots() bool { return os.Getenv("CHOKAQ_SCREENSHOTS") == "1" }

// failForGood runs a job through all three attempts, failing each, and
// dead-letters it the way a processor does.
func failForGood(t *testing.T, f *fixture, queue, typ, payload string) int64 {
	t.Helper()
	ctx := context.Background()
	id := f.enqueue(queue, typ, payload)
	for attempt := 1; ; attempt++ {
		ref := f.start(id, queue)
		if attempt == 3 {
			must(t, f.store.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonMaxRetriesExceeded,
				Details: "payment gateway timeout (HTTP 504 from api.pay.example)\nattempt 3 of 3; no retries left"}))
			return id
		}
		must(t, f.store.Retry(ctx, ref, jobs.RetryParams{Error: "payment gateway timeout (HTTP 504 from api.pay.example)"}))
	}
}

// seedForScreenshots gives the store what a busy system has: two weeks of
// archived work and dead letters of several kinds on several queues
// (seedHistory), a backlog with lag, a paused queue, running jobs, and one
// rescue sweep for the console.
func seedForScreenshots(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	seedHistory(t, f)
	for q, u := range map[string]jobs.QueueUpdate{
		"mail":    {MaxWorkers: intp(8)},
		"billing": {MaxWorkers: intp(2), ZombieTimeout: secs(30)},
		"media":   {ZombieTimeout: secs(600), ExecutionTimeout: secs(300)},
		"reports": {Paused: boolp(true)},
	} {
		_, err := f.store.UpdateQueue(ctx, q, u)
		must(t, err)
	}
	f.seed.Worker = "web-1-40211"
	f.deadLetter("mail", "email.send", `{"to":"nobody@example.invalid","template":"welcome"}`, jobs.ReasonFatal,
		"permanent: mailbox does not exist (550 5.1.1 from mx.example.invalid)")
	failForGood(t, f, "billing", "payment.sync", `{"invoice":998,"amount":"15.00","currency":"EUR"}`)

	// A worker that died mid-job and one that died with a job in its buffer,
	// found by a real rescue sweep.
	f.seed.Worker = "web-3-77120"
	zombieID := f.enqueue("mail", "email.send", `{"to":"ops@example.com","template":"digest"}`)
	f.start(zombieID, "mail")
	f.enqueue("mail", "email.send", `{"to":"sales@example.com","template":"digest"}`)
	_, err := f.store.Claim(ctx, jobs.ClaimParams{WorkerID: "web-3-77120", Queues: []string{"mail"}, Limit: 1})
	must(t, err)
	r, err := zombie.New(f.store, zombie.Config{FetchedJobTimeout: time.Second, ProcessingZombieTimeout: time.Second, OnSweep: f.dash.OnSweep})
	must(t, err)
	f.clock.advance(2 * time.Second)
	res, err := r.Sweep(ctx)
	must(t, err)
	if res.Recovered != 1 || res.Zombies != 1 {
		t.Fatalf("rescue %+v", res)
	}

	// A backlog: mail has jobs due for a while; reports is paused.
	for i := range 7 {
		_, err := f.store.Enqueue(ctx, jobs.EnqueueParams{Queue: "mail", Type: "email.send", Payload: []byte(`{"to":"x@example.com"}`),
			RunAt: time.Now().Add(-time.Duration(40+i) * time.Second)})
		must(t, err)
	}
	for range 9 {
		f.enqueue("reports", "report.build", `{"report":"monthly"}`)
	}
	for range 2 {
		_, err := f.store.Enqueue(ctx, jobs.EnqueueParams{Queue: "billing", Type: "invoice.remind", Payload: []byte(`{}`), Delay: 10 * time.Minute})
		must(t, err)
	}
	// Two encodes running on a worker that heartbeats.
	f.seed.Worker = "gpu-1-9034"
	for i := range 2 {
		f.start(f.enqueue("media", "video.encode", fmt.Sprintf(`{"file":"talk-%d.mov"}`, i)), "media")
	}
	f.dash.Publish(dashboard.Event{Kind: dashboard.KindAction, Text: "127.0.0.1: set queue billing: max workers 2, zombie timeout 30s, execution timeout default"})
}

// The cancel button of the inspector, on a running job: the browser posts
// the form with its CSRF token and a reason, follows the redirect, and the
// flash says the cancel was requested; the worker running the job stops its
// handler at its next heartbeat, and the inspector then shows a Cancelled
// dead letter.
func TestBrowserCancelsARunningJob(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, dashboard.Options{})
	id := f.enqueue("reports", "report.monthly", `{"month":"2026-11"}`)
	started := make(chan struct{})
	reg := processor.NewRegistry()
	reg.MustHandle("report.monthly", func(ctx context.Context, _ *processor.Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	p, err := processor.New(f.store, reg, processor.Config{WorkerID: "web-1", Queues: []string{"reports"},
		PollInterval: 50 * time.Millisecond, HeartbeatIntervalMin: 200 * time.Millisecond, HeartbeatIntervalMax: 300 * time.Millisecond,
		ReleaseAfter: 30 * time.Second})
	must(t, err)
	must(t, p.Start(context.Background()))
	defer p.Stop(context.Background())
	<-started

	base := f.srv.URL
	must(t, chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/job/%d", base, id)), chromedp.WaitVisible(chromedp.ID("cancel"))))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("window.confirm = function () { return true; }; true"))
	must(t, err)
	// The inspector swaps the running job's view in on each counts event
	// until a field of it is edited (app.js refreshJob): a swap between
	// finding the field and setting it loses the node, so set it again.
	for try := 1; ; try++ {
		_, err := chromedp.Run(ctx, chromedp.SetValue(chromedp.CSS(`#cancel-form input[name="reason"]`), "report no longer needed"))
		if err == nil || try == 3 {
			must(t, err)
			break
		}
	}
	must(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("cancel")),
		chromedp.WaitVisible(chromedp.CSS(".flash"))))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".flash")))
	must(t, err)
	if !strings.Contains(flash, "1 cancel requested") {
		t.Fatalf("flash %q", flash)
	}
	// The worker hears of it at its next beat and stops the handler.
	deadline := time.Now().Add(20 * time.Second)
	for f.table(id) != jobs.TableDLQ {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled job never reached the dead-letter queue")
		}
		time.Sleep(50 * time.Millisecond)
	}
	j, err := f.store.GetJob(context.Background(), id)
	must(t, err)
	if j.FailureReason != jobs.ReasonCancelled || !strings.Contains(j.ErrorDetails, "cancelled by 127.0.0.1: report no longer needed") {
		t.Fatalf("dead letter %s %q", j.FailureReason, j.ErrorDetails)
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/job/%d", base, id)), chromedp.WaitVisible(chromedp.ID("job-state"))))
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("job-state")))
	must(t, err)
	if !strings.Contains(state, "Cancelled") {
		t.Fatalf("state %q", state)
	}
	f.wantLogged("cancel", fmt.Sprintf("cancel of job %d: 1 cancel requested", id))
}
