package browsertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chokaq/chokaq-go/dashboard"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/retention"
)

// seedHistory gives the charts what two busy weeks leave: dead letters of
// every kind over 14 days, archived jobs over the 7 days the archive
// keeps (older ones the retention loop has deleted), hour by hour over
// the last two days with a burst of timeouts, and the last 5 minutes 2 s
// by 2 s. The counts follow smooth curves, not chance, so the screenshots
// come out the same each run. The store's clock is set into the past and
// moved forward only, then put back on the wall clock.
func seedHistory(t *testing.T, f *fixture) {
	t.Helper()
	now := time.Now()
	worker := f.seed.Worker
	f.seed.Worker = "web-1-40211"
	defer func() { f.seed.Worker = worker }()
	types := map[string]string{"mail": "email.send", "billing": "payment.sync", "media": "video.encode"}
	serial := 0
	payload := func(queue string) string {
		serial++
		switch queue {
		case "mail":
			return fmt.Sprintf(`{"to":"user%d@example.com","template":"welcome"}`, serial)
		case "billing":
			return fmt.Sprintf(`{"invoice":%d}`, 1000+serial)
		}
		return fmt.Sprintf(`{"file":"clip-%d.mov"}`, serial)
	}
	archive := func(queue string, n int) {
		for range n {
			f.archive(queue, types[queue], payload(queue))
		}
	}
	details := map[jobs.FailureReason]string{
		jobs.ReasonMaxRetriesExceeded: "payment gateway timeout (HTTP 504 from api.pay.example)",
		jobs.ReasonZombie:             "zombie: no heartbeat for 30s",
		jobs.ReasonFatal:              "permanent: mailbox does not exist (550 5.1.1)",
		jobs.ReasonTimeout:            "execution deadline exceeded after 5m",
		jobs.ReasonCancelled:          "cancelled by 127.0.0.1: duplicate",
	}
	die := func(queue string, reason jobs.FailureReason, n int) {
		for range n {
			f.deadLetter(queue, types[queue], payload(queue), reason, details[reason])
		}
	}
	wave := func(x, period, lo, hi float64) int {
		return int(math.Round(lo + (hi-lo)*(1+math.Sin(2*math.Pi*x/period))/2))
	}
	reasons := []jobs.FailureReason{jobs.ReasonMaxRetriesExceeded, jobs.ReasonZombie, jobs.ReasonFatal, jobs.ReasonTimeout, jobs.ReasonCancelled}

	// 13 days to 2 days ago, every 3 hours.
	for h := 13 * 24; h >= 48; h -= 3 {
		f.clock.set(now.Add(-time.Duration(h) * time.Hour))
		if h < 7*24 {
			archive("mail", wave(float64(h), 24, 240, 700))
			archive("billing", wave(float64(h), 24, 80, 300))
			archive("media", wave(float64(h), 12, 0, 40))
		}
		if h%9 == 0 {
			die([]string{"mail", "billing", "media"}[(h/9)%3], reasons[(h/9)%len(reasons)], 1+h%2)
		}
	}
	// The last 48 hours, hour by hour; billing times out for a while.
	for h := 47; h >= 1; h-- {
		f.clock.set(now.Add(-time.Duration(h)*time.Hour - 10*time.Minute))
		archive("mail", wave(float64(h), 24, 80, 240))
		archive("billing", wave(float64(h)+6, 24, 25, 100))
		archive("media", wave(float64(h), 12, 0, 15))
		switch {
		case h >= 18 && h <= 21:
			die("billing", jobs.ReasonTimeout, 2+h%2)
		case h%7 == 0:
			die("mail", reasons[h%len(reasons)], 1)
		}
	}
	// The last 5 minutes, 2 s by 2 s.
	for s := 298; s >= 2; s -= 2 {
		f.clock.set(now.Add(-time.Duration(s) * time.Second))
		archive("mail", wave(float64(s), 120, 0, 3))
		archive("billing", wave(float64(s)+30, 90, 0, 2))
		if s%46 == 0 {
			die("billing", jobs.ReasonMaxRetriesExceeded, 1)
		}
	}
	f.clock.reset()
}

// waitSparkline waits until queue's lag sparkline, in the overview's table
// or on the queue's page, shows at least n polls.
func waitSparkline(t *testing.T, ctx context.Context, queue string, n int) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`document.querySelector('tr[data-queue=%[1]q] polyline[data-points], [data-counts-of=%[1]q] polyline[data-points]').getAttribute("points").split(" ").length >= %[2]d`, queue, n),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))))
}

// pageRow is one row of the history's table, and the bars drawn for it.
type pageRow struct {
	Start    string           `json:"start"`
	Archived string           `json:"archived"`
	Dead     string           `json:"dead"`
	Reasons  map[string]int64 `json:"reasons"`
	OkBar    int64            `json:"ok_bar"`   // data-n of its succeeded bar
	DeadBars int64            `json:"dead_bar"` // data-n of its dead-letter bars, summed
}

// historyOnPage reads the open page's history table and bars.
const historyOnPage = `Array.from(document.querySelectorAll("#history-table tbody tr")).map(function (tr) {
  var start = tr.dataset.start, reasons = {}, ok = 0, dead = 0;
  tr.querySelectorAll("td[data-reason]").forEach(function (td) { if (td.dataset.n !== "beyond") { reasons[td.dataset.reason] = Number(td.dataset.n); } });
  document.querySelectorAll('#history-chart rect[data-start="' + start + '"]').forEach(function (r) {
    if (r.closest("[data-panel]").dataset.panel === "0") { ok += Number(r.dataset.n); } else { dead += Number(r.dataset.n); }
  });
  return {start: start, archived: tr.dataset.archived, dead: tr.dataset.dead, reasons: reasons, ok_bar: ok, dead_bar: dead};
})`

// checkHistory compares the open page's history with the store, row by
// row: CountJobs over each bucket (another path than the chart's
// FinishedCounts), per reason too; a bucket that reads "beyond retention"
// must have ended before the table's retention cutoff.
func checkHistory(t *testing.T, ctx context.Context, f *fixture, queue string, bucket time.Duration, keep retention.Config) (rows, beyond int) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]pageRow](historyOnPage))
	must(t, err)
	asOfText, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("history-asof")))
	must(t, err)
	asOf, err := time.Parse("2006-01-02 15:04:05", asOfText)
	must(t, err)
	bg := context.Background()
	count := func(table jobs.Table, from, to time.Time, reason *jobs.FailureReason) int64 {
		n, err := f.store.CountJobs(bg, table, jobs.Filter{Queue: queue, From: from, To: to, Reason: reason})
		must(t, err)
		return n
	}
	for _, r := range got {
		start, err := time.Parse(time.RFC3339, r.Start)
		must(t, err)
		end := start.Add(bucket)
		for _, c := range []struct {
			table jobs.Table
			shown string
			bar   int64
			keep  time.Duration
		}{{jobs.TableArchive, r.Archived, r.OkBar, keep.Archive}, {jobs.TableDLQ, r.Dead, r.DeadBars, keep.DeadLetters}} {
			if c.shown == "beyond" {
				// The page reads its time to the second.
				if end.After(asOf.Add(time.Second).Add(-c.keep)) {
					t.Fatalf("%s %v: beyond retention, but it ended after %v", queue, start, asOf.Add(-c.keep))
				}
				if c.bar != 0 {
					t.Fatalf("%s %v: a bar beyond retention", queue, start)
				}
				beyond++
				continue
			}
			want := count(c.table, start, end, nil)
			if c.shown != fmt.Sprint(want) || c.bar != want {
				t.Fatalf("%s %v %v: the page shows %s (bars %d), the store has %d", queue, start, c.table, c.shown, c.bar, want)
			}
		}
		for name, n := range r.Reasons {
			reason, err := jobs.ParseFailureReason(name)
			must(t, err)
			if want := count(jobs.TableDLQ, start, end, &reason); n != want {
				t.Fatalf("%s %v: %d %s on the page, %d in the store", queue, start, n, name, want)
			}
		}
		rows++
	}
	return rows, beyond
}

// The charts follow the store: the history's bars and table hold the
// store's counts by hour and by day, for all queues and for one, with the
// days past the archive's retention marked; a workload on a queue with no
// finished jobs shows up on its live chart over the event stream; the lag
// sparklines fill in as polls pass.
func TestBrowserChartsFollowTheStore(t *testing.T) {
	ctx := browser(t)
	keep := retention.DefaultConfig()
	f := newFixture(t, dashboard.Options{PollInterval: 200 * time.Millisecond, Retention: &retention.Config{}})
	seedForScreenshots(t, f)
	base := f.srv.URL

	for _, c := range []struct {
		path, queue string
		bucket      time.Duration
		rows        int
		beyond      bool
	}{
		{"/", "", time.Hour, 48, false},
		{"/?history=days", "", 24 * time.Hour, 14, true},
		{"/?queue=billing&history=days", "billing", 24 * time.Hour, 14, true},
		{"/queue/mail", "mail", time.Hour, 48, false},
	} {
		must(t, chromedp.Do(ctx, chromedp.Navigate(base+c.path), chromedp.WaitReady(chromedp.ID("history-table"))))
		rows, beyond := checkHistory(t, ctx, f, c.queue, c.bucket, keep)
		if rows != c.rows || (beyond > 0) != c.beyond {
			t.Fatalf("%s: %d rows, %d beyond retention", c.path, rows, beyond)
		}
		t.Logf("%s: %d rows match the store (%d buckets beyond retention)", c.path, rows, beyond)
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(base+"/queue/billing?history=days"), chromedp.WaitVisible(chromedp.CSS("#live.on"))))
	waitSparkline(t, ctx, "billing", 15)
	screenshot(t, ctx, "dashboard-queue.png")

	// A queue that has finished nothing yet: its live chart says so.
	for i := range 24 {
		f.enqueue("web", "page.render", fmt.Sprintf(`{"page":%d}`, i))
	}
	for i := range 3 {
		f.enqueue("web", "page.broken", fmt.Sprintf(`{"page":%d}`, 100+i))
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(base+"/?queue=web"), chromedp.WaitVisible(chromedp.CSS("#live.on"))))
	empty, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#live-chart .chart-summary")))
	must(t, err)
	if !strings.HasPrefix(empty, "No jobs finished in this window") {
		t.Fatalf("the live chart of an idle queue reads %q", empty)
	}
	// Now a processor works the queue: the chart follows over the stream,
	// without a reload.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.chokaqMark = "before the workload"`)))
	reg := processor.NewRegistry()
	reg.MustHandle("page.render", func(ctx context.Context, j *processor.Job) error { return nil })
	reg.MustHandle("page.broken", func(ctx context.Context, j *processor.Job) error {
		return processor.Permanent(errors.New("template not found"))
	})
	p, err := processor.New(f.store, reg, processor.Config{WorkerID: "web-4-1180", Queues: []string{"web"},
		PollInterval: 50 * time.Millisecond, ReleaseAfter: 30 * time.Second})
	must(t, err)
	started := time.Now()
	must(t, p.Start(context.Background()))
	defer p.Stop(context.Background())
	poll := func(js string) {
		t.Helper()
		must(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))))
	}
	// A point above the baseline: some y of the succeeded line is less
	// than the panel's bottom.
	poll(`(function () {
  var line = document.querySelector('#live-chart [data-panel="0"] polyline');
  var bottom = Number(document.querySelector('#live-chart [data-panel="0"] .axis-line').getAttribute("y1"));
  return line.getAttribute("points").split(" ").some(function (p) { return Number(p.split(",")[1]) < bottom; });
})()`)
	firstPoint := time.Since(started)
	// And in the end every job of the workload, each one way, in the
	// chart's totals and its table.
	poll(`document.querySelector('#live-chart [data-panel="0"]').dataset.total === "24" && document.querySelector('#live-chart [data-panel="1"]').dataset.total === "3"`)
	allCounted := time.Since(started)
	table, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`[1, 2].map(function (c) {
  return Array.from(document.querySelectorAll("#live-rows tr")).reduce(function (s, tr) { return s + Number(tr.cells[c].textContent); }, 0);
})`))
	must(t, err)
	if len(table) != 2 || table[0] != 24 || table[1] != 3 {
		t.Fatalf("the live table sums to %v, want [24 3]", table)
	}
	if n := countWeb(t, f, jobs.TableArchive); n != 24 {
		t.Fatalf("the store has %d archived web jobs", n)
	}
	if n := countWeb(t, f, jobs.TableDLQ); n != 3 {
		t.Fatalf("the store has %d dead-lettered web jobs", n)
	}
	if classes, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#live-chart svg").getAttribute("class")`)); err != nil || strings.Contains(classes, "is-empty") {
		t.Fatalf("the chart still reads empty: %q %v", classes, err)
	}
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.chokaqMark || ""`))
	must(t, err)
	if mark != "before the workload" {
		t.Fatal("the page reloaded to show the chart")
	}
	t.Logf("live chart: first point %v after the processor started, all 27 jobs counted after %v", firstPoint.Round(time.Millisecond), allCounted.Round(time.Millisecond))

	// The lag sparklines fill in, and their titles say the numbers.
	waitSparkline(t, ctx, "mail", 5)
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-queue="mail"] svg.spark title').textContent`))
	must(t, err)
	if !strings.HasPrefix(title, "Oldest due lag of mail: now ") || !strings.Contains(title, "polls)") {
		t.Fatalf("sparkline title %q", title)
	}
}

func countWeb(t *testing.T, f *fixture, table jobs.Table) int64 {
	t.Helper()
	n, err := f.store.CountJobs(context.Background(), table, jobs.Filter{Queue: "web"})
	must(t, err)
	return n
}
