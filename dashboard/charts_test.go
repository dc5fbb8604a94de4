package dashboard

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/retention"
)

// countingStore records every FinishedCounts call, so a test can tell what
// the charts read and how often.
type countingStore struct {
	*memstore.Store
	mu    sync.Mutex
	calls []jobs.FinishedCountsParams
}

func (s *countingStore) FinishedCounts(ctx context.Context, p jobs.FinishedCountsParams) ([]jobs.FinishedCount, error) {
	s.mu.Lock()
	s.calls = append(s.calls, p)
	s.mu.Unlock()
	return s.Store.FinishedCounts(ctx, p)
}

// reads returns the calls of bucket b made so far.
func (s *countingStore) reads(b time.Duration) []jobs.FinishedCountsParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jobs.FinishedCountsParams
	for _, p := range s.calls {
		if p.Bucket == b {
			out = append(out, p)
		}
	}
	return out
}

// adminOnly is a store without the optional capabilities: jobs.Admin and
// nothing else.
type adminOnly struct{ jobs.Admin }

func TestNiceScales(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0.5, 0.5}, {0.6, 1}, {1, 1}, {1.5, 2}, {3, 5}, {7, 10}, {10, 10}, {11, 20}, {450, 500}, {1234, 2000},
	} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	s := newScale(22, 1.5, 0.5)
	if s.Max != 2 || s.MaxText != "2" || s.MidText != "1" || s.y(1.5) != 42 || s.y(0) != 102 {
		t.Fatalf("scale %+v, y(1.5) = %v", s, s.y(1.5))
	}
	if s := newScale(22, 0, 2); s.Max != 0 || s.MaxText != "" || s.y(3) != 102 {
		t.Fatalf("empty scale %+v", s)
	}
}

// TestLiveChartCountsEachTwoSecondBucket: jobs that finished in known
// 2 s intervals are counted in those points, per queue and for all
// queues, succeeded and dead-lettered apart; the interval now is in is not
// drawn until it is over.
func TestLiveChartCountsEachTwoSecondBucket(t *testing.T) {
	f, clock := clockedFixture(t, time.Date(2026, 3, 4, 10, 0, 0, 500e6, time.UTC))
	for range 3 {
		f.archive("mail", "email.send", `{}`) // 10:00:00.5
	}
	clock.Advance(2 * time.Second)
	f.archive("sms", "sms.send", `{}`) // 10:00:02.5
	f.deadLetter("mail", "email.send", `{}`, jobs.ReasonFatal, "x")
	clock.Advance(time.Second)
	f.archive("sms", "sms.send", `{}`) // 10:00:03.5, in the bucket now is in
	ctx := context.Background()
	now, _ := f.store.Now(ctx)
	snap, err := f.dash.live.refresh(ctx, f.store, now, false)
	must(t, err)

	all := snap.view("")
	if !all.Start.Equal(time.Date(2026, 3, 4, 9, 55, 2, 0, time.UTC)) || !all.End.Equal(time.Date(2026, 3, 4, 10, 0, 2, 0, time.UTC)) {
		t.Fatalf("window %v to %v", all.Start, all.End)
	}
	// Only 10:00:00 is whole: 10:00:02 is the bucket now is in.
	last := liveBuckets - 1
	if all.Archived[last] != 3 || all.Dead[last] != 0 || sum(all.Archived) != 3 || sum(all.Dead) != 0 {
		t.Fatalf("all queues: archived %v dead %v", all.Archived[last-2:], all.Dead[last-2:])
	}
	if all.Times[last] != "10:00:00" || all.XLabels[2] != "10:00:02 UTC" || all.Empty {
		t.Fatalf("labels %q %q, empty %v", all.Times[last], all.XLabels, all.Empty)
	}
	// 3 jobs in 2 s: 1.5/s, on a scale to 2/s, 60 of the panel's 80 up.
	if p := all.Panels[0]; p.MaxText != "2" || p.Total != 3 || !strings.HasSuffix(p.Points, " 705.9,42") || p.Empty {
		t.Fatalf("succeeded panel %+v", p)
	}
	if p := all.Panels[1]; !p.Empty || p.Points != "" || p.Total != 0 {
		t.Fatalf("dead-lettered panel %+v", p)
	}

	clock.Advance(time.Second) // 10:00:04.5: 10:00:02 is whole now
	now, _ = f.store.Now(ctx)
	snap, err = f.dash.live.refresh(ctx, f.store, now, false)
	must(t, err)
	all, mail, sms := snap.view(""), snap.view("mail"), snap.view("sms")
	if all.Archived[last] != 2 || all.Dead[last] != 1 || all.Archived[last-1] != 3 {
		t.Fatalf("all queues: archived %v dead %v", all.Archived[last-2:], all.Dead[last-2:])
	}
	if mail.Archived[last-1] != 3 || mail.Archived[last] != 0 || mail.Dead[last] != 1 || sms.Archived[last] != 2 || sum(sms.Dead) != 0 {
		t.Fatalf("mail %v/%v, sms %v/%v", mail.Archived[last-1:], mail.Dead[last-1:], sms.Archived[last-1:], sms.Dead[last-1:])
	}
	if want := "From 09:55:04 to 10:00:04 UTC: 5 succeeded (peak 1.5/s, last 2 s 1/s); 1 dead-lettered (peak 0.5/s, last 2 s 0.5/s)."; all.Summary != want {
		t.Fatalf("summary %q, want %q", all.Summary, want)
	}

	// The page draws the same, with the numbers in its table.
	r := f.get("/?queue=mail")
	wantStatus(t, r, http.StatusOK, `id="live-chart" data-queue="mail"`, `data-panel="0" data-total="3"`, `data-panel="1" data-total="1"`,
		`<tr><td>10:00:00</td><td class="num">3</td><td class="num">0</td></tr><tr><td>10:00:02</td><td class="num">0</td><td class="num">1</td></tr></tbody>`,
		"time (UTC, store clock), one point per 2 s", "Retries are not shown")
	wantStatus(t, f.get("/"), http.StatusOK, `id="live-chart" data-queue=""`, `data-panel="0" data-total="5"`)
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// TestLiveWindowRereadsOnlyItsLastBuckets: the first read covers the whole
// 5 minutes; each later one starts liveOverlap before the last one's end
// and replaces those buckets, so a job whose move committed after the
// read of its interval is still counted; a page between two polls reads
// nothing; a clock jump past the window reads it all again.
func TestLiveWindowRereadsOnlyItsLastBuckets(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	store := &countingStore{Store: mem}
	f := newFixtureOver(t, mem, store, Options{})
	ctx := context.Background()
	var w liveWindow
	refresh := func(force bool) *liveSnap {
		t.Helper()
		now, _ := mem.Now(ctx)
		snap, err := w.refresh(ctx, store, now, force)
		must(t, err)
		return snap
	}
	lastRead := func() jobs.FinishedCountsParams {
		t.Helper()
		reads := store.reads(liveBucket)
		if len(reads) == 0 {
			t.Fatal("no read")
		}
		return reads[len(reads)-1]
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("15:04:05", s)
		must(t, err)
		return time.Date(2026, 3, 4, v.Hour(), v.Minute(), v.Second(), 0, time.UTC)
	}

	f.archive("q", "t", `{}`) // 10:00:00
	clock.Advance(3 * time.Second)
	refresh(true)
	if p := lastRead(); !p.From.Equal(at("09:55:02")) || !p.To.Equal(at("10:00:02")) {
		t.Fatalf("first read %v to %v, want the whole window", p.From, p.To)
	}
	refresh(false) // a page in the same interval: nothing to read
	if n := len(store.reads(liveBucket)); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}
	clock.Advance(2 * time.Second) // 10:00:05
	refresh(false)
	if p := lastRead(); !p.From.Equal(at("09:59:56")) || !p.To.Equal(at("10:00:04")) {
		t.Fatalf("second read %v to %v, want 6 s before the last end to the new end", p.From, p.To)
	}
	// A move that took its FinishedAt at 10:00:01 but commits only now:
	// its interval was read already, twice, and is read again.
	clock.Advance(-4 * time.Second)
	f.archive("q", "t", `{}`)
	clock.Advance(4 * time.Second)
	clock.Advance(2 * time.Second) // 10:00:07
	snap := refresh(true)
	if p := lastRead(); !p.From.Equal(at("09:59:58")) || !p.To.Equal(at("10:00:06")) {
		t.Fatalf("third read %v to %v", p.From, p.To)
	}
	v := snap.view("")
	if got := v.Archived[liveBuckets-3]; got != 2 || sum(v.Archived) != 2 {
		t.Fatalf("the late job is not counted: %v", v.Archived[liveBuckets-4:])
	}
	// Buckets the overlap does not reach are kept from earlier reads.
	clock.Advance(10 * time.Second) // 10:00:17
	v = refresh(true).view("")
	if p := lastRead(); !p.From.Equal(at("10:00:00")) || sum(v.Archived) != 2 || v.Archived[liveBuckets-8] != 2 {
		t.Fatalf("read from %v; archived %v", p.From, v.Archived[liveBuckets-10:])
	}
	// Away for longer than the window: it is read whole again, and the
	// old jobs have left it.
	clock.Advance(10 * time.Minute)
	v = refresh(false).view("")
	if p := lastRead(); p.To.Sub(p.From) != liveSpan || !v.Empty || sum(v.Archived) != 0 {
		t.Fatalf("after 10 minutes: read %v to %v, archived %d", p.From, p.To, sum(v.Archived))
	}
	if !strings.HasPrefix(v.Summary, "No jobs finished in this window") {
		t.Fatalf("summary %q", v.Summary)
	}
}

// liveEvent is a `live` event's data.
func liveEvent(t *testing.T, e sseEvent) liveChart {
	t.Helper()
	var v liveChart
	if err := json.Unmarshal([]byte(e.data), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLiveEventsCarryTheChartOfThePage: a stream of a page with a live
// chart gets `live` events with the view of its queue, which follow the
// store; a stream without one gets none, and then the poller reads no
// window at all.
func TestLiveEventsCarryTheChartOfThePage(t *testing.T) {
	clock := memstore.NewManualClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	store := &countingStore{Store: mem}
	f := newFixtureOver(t, mem, store, Options{})
	f.archive("mail", "email.send", `{}`)
	f.archive("sms", "sms.send", `{}`)
	clock.Advance(2 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Without ?live=1: counts, and no window read.
	plain, _ := f.stream(ctx, "", "")
	for range 3 {
		next(t, plain, "counts")
	}
	if n := len(store.reads(liveBucket)); n != 0 {
		t.Fatalf("the poller read the live window %d times with no chart open", n)
	}

	ch, _ := f.stream(ctx, "?live=1&queue=mail", "")
	v := liveEvent(t, next(t, ch, "live"))
	if v.Queue != "mail" || sum(v.Archived) != 1 || v.Panels[0].Total != 1 || v.Panels[0].Points == "" || !v.Panels[1].Empty {
		t.Fatalf("live view %+v", v)
	}
	f.deadLetter("mail", "email.send", `{}`, jobs.ReasonTimeout, "slow")
	f.archive("sms", "sms.send", `{}`)
	clock.Advance(2 * time.Second)
	for sum(v.Dead) == 0 {
		v = liveEvent(t, next(t, ch, "live"))
	}
	if sum(v.Archived) != 1 || sum(v.Dead) != 1 || v.Panels[1].Total != 1 {
		t.Fatalf("mail's view has another queue's jobs, or lacks its own: %+v", v)
	}
	all, _ := f.stream(ctx, "?live=1", "")
	if v := liveEvent(t, next(t, all, "live")); v.Queue != "" || sum(v.Archived) != 3 || sum(v.Dead) != 1 {
		t.Fatalf("all queues' view %+v", v)
	}
	// The plain stream still has none.
	f.dash.Publish(Event{Text: "marker"})
	for {
		e, ok := <-plain
		if !ok || e.name == "live" {
			t.Fatalf("a stream without a chart got %+v (open %v)", e, ok)
		}
		if e.name == "console" && strings.Contains(e.data, "marker") {
			break
		}
	}
	if _, status := f.stream(ctx, "?live=1&queue=no%20spaces", ""); status != http.StatusBadRequest {
		t.Fatalf("a bad queue name: %d", status)
	}
}

// TestHistoryByHourAndDayWithReasons: the history's table and bars hold
// the store's counts per hour and per day, dead letters by reason (in the
// legend's order), for all queues and for one.
func TestHistoryByHourAndDayWithReasons(t *testing.T) {
	f, clock := clockedFixture(t, time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC))
	f.archive("mail", "email.send", `{}`)
	f.archive("mail", "email.send", `{}`)
	f.deadLetter("mail", "email.send", `{}`, jobs.ReasonFatal, "x")
	clock.Advance(2*24*time.Hour + 55*time.Minute) // 03-04 09:10
	f.archive("sms", "sms.send", `{}`)
	f.deadLetter("sms", "sms.send", `{}`, jobs.ReasonTimeout, "slow")
	f.deadLetter("sms", "sms.send", `{}`, jobs.ReasonFatal, "bad")
	clock.Advance(80 * time.Minute) // 03-04 10:30

	days := f.get("/?history=days")
	wantStatus(t, days, http.StatusOK, `id="history-chart" data-range="days"`, "Day (UTC)",
		`<th class="num">Timeout</th><th class="num">Fatal</th>`, // the legend's order, not the store's
		`<li><span class="sw rs-timeout"></span>Timeout</li><li><span class="sw rs-fatal"></span>Fatal</li>`,
		"resurrecting or purging a dead letter removes it from this history", "day (UTC, store clock)")
	rows := historyRows(t, days.body)
	if len(rows) != 14 || rows[0].start != "2026-02-19T00:00:00Z" || rows[13].start != "2026-03-04T00:00:00Z" {
		t.Fatalf("day rows %+v", rows)
	}
	want := map[string]historyRowData{
		"2026-03-02T00:00:00Z": {archived: "2", dead: "1", reasons: "Timeout=0 Fatal=1"},
		"2026-03-04T00:00:00Z": {archived: "1", dead: "2", reasons: "Timeout=1 Fatal=1"},
	}
	for _, r := range rows {
		w, ok := want[r.start]
		if !ok {
			w = historyRowData{archived: "0", dead: "0", reasons: "Timeout=0 Fatal=0"}
		}
		w.start = r.start
		if r != w {
			t.Fatalf("day %s: %+v, want %+v", r.start, r, w)
		}
	}
	if strings.Contains(days.body, "sw-beyond") || strings.Contains(days.body, "sw-partly") {
		t.Fatal("the legend explains a marking the chart does not have")
	}
	// The bars carry the same numbers.
	for _, b := range []string{`class="bar-ok" x="`, `data-start="2026-03-02T00:00:00Z" data-n="2"`, `class="rs-fatal"`, `class="rs-timeout"`} {
		if !strings.Contains(days.body, b) {
			t.Fatalf("no bar %s", b)
		}
	}

	hours := f.get("/")
	wantStatus(t, hours, http.StatusOK, `data-range="hours"`, "Hour from (UTC)", "2026-03-04 10:00 (so far)")
	rows = historyRows(t, hours.body)
	if len(rows) != 48 || rows[0].start != "2026-03-02T11:00:00Z" || rows[47].start != "2026-03-04T10:00:00Z" {
		t.Fatalf("hour rows: %d, %+v ... %+v", len(rows), rows[0], rows[len(rows)-1])
	}
	if r := rows[46]; r.archived != "1" || r.dead != "2" {
		t.Fatalf("09:00: %+v", r)
	}

	// One queue's history, on the overview and on its page.
	for _, path := range []string{"/?queue=mail&history=days", "/queue/mail?history=days"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK, `id="history-chart" data-range="days" data-queue="mail"`, `<th class="num">Fatal</th></tr>`)
		if strings.Contains(r.body, `<th class="num">Timeout</th>`) {
			t.Fatalf("%s: sms's reason on mail's chart", path)
		}
		for _, row := range historyRows(t, r.body) {
			if row.start == "2026-03-04T00:00:00Z" && (row.archived != "0" || row.dead != "0") ||
				row.start == "2026-03-02T00:00:00Z" && (row.archived != "2" || row.dead != "1") {
				t.Fatalf("%s: %+v", path, row)
			}
		}
	}
	// The range links keep the queue.
	wantStatus(t, f.get("/?queue=mail"), http.StatusOK, `href="/?history=days&amp;queue=mail" data-history="days"`)
	wantStatus(t, f.get("/queue/mail"), http.StatusOK, `href="/queue/mail?history=days" data-history="days"`)
	wantStatus(t, f.get("/?history=weeks"), http.StatusBadRequest, "history &#34;weeks&#34;: want hours or days")
}

// historyRowData is one row of the history's table, from its data
// attributes.
type historyRowData struct{ start, archived, dead, reasons string }

var (
	historyRowRe = regexp.MustCompile(`(?s)<tr data-start="([^"]+)" data-archived="([^"]+)" data-dead="([^"]+)">(.*?)</tr>`)
	reasonCellRe = regexp.MustCompile(`data-reason="([^"]+)" data-n="([^"]+)"`)
)

func historyRows(t *testing.T, body string) []historyRowData {
	t.Helper()
	var out []historyRowData
	for _, m := range historyRowRe.FindAllStringSubmatch(body, -1) {
		var reasons []string
		for _, c := range reasonCellRe.FindAllStringSubmatch(m[4], -1) {
			reasons = append(reasons, c[1]+"="+c[2])
		}
		out = append(out, historyRowData{start: m[1], archived: m[2], dead: m[3], reasons: strings.Join(reasons, " ")})
	}
	return out
}

// TestHistoryIsReadOncePerMinute: however many pages are rendered, each
// range is read from the store once a minute, for all viewers and every
// queue.
func TestHistoryIsReadOncePerMinute(t *testing.T) {
	mem := memstore.New()
	store := &countingStore{Store: mem}
	wall := newFakeClock()
	f := newFixtureOver(t, mem, store, Options{}, func(d *Dashboard) { d.now = wall.now })
	f.archive("mail", "t", `{}`)
	for _, path := range []string{"/", "/?queue=mail", "/queue/mail", "/"} {
		wantStatus(t, f.get(path), http.StatusOK)
	}
	if n := len(store.reads(time.Hour)); n != 1 {
		t.Fatalf("%d reads of the hours, want 1", n)
	}
	if n := len(store.reads(24 * time.Hour)); n != 0 {
		t.Fatalf("%d reads of the days, want none yet", n)
	}
	wantStatus(t, f.get("/?history=days"), http.StatusOK)
	wantStatus(t, f.get("/queue/mail?history=days"), http.StatusOK)
	if n := len(store.reads(24 * time.Hour)); n != 1 {
		t.Fatalf("%d reads of the days, want 1", n)
	}
	for _, p := range store.reads(time.Hour) {
		if p.Queue != "" || p.To.Sub(p.From) != 48*time.Hour {
			t.Fatalf("an hours read %+v: want one grouped read of 48 hours for all queues", p)
		}
	}
	wall.advance(59 * time.Second)
	wantStatus(t, f.get("/"), http.StatusOK)
	if n := len(store.reads(time.Hour)); n != 1 {
		t.Fatalf("read again after 59 s (%d reads)", n)
	}
	wall.advance(time.Second)
	wantStatus(t, f.get("/"), http.StatusOK)
	if n := len(store.reads(time.Hour)); n != 2 {
		t.Fatalf("%d reads of the hours after a minute, want 2", n)
	}
}

// TestHistoryBeyondRetention: a day older than its table's retention (of
// the queue shown; for all queues, the longest) reads "beyond retention",
// not its count, even when the retention loop has not deleted its jobs
// yet; a day that straddles the cutoff (or, for all queues, the shortest
// retention's) reads "partly beyond retention"; with the retention unknown
// nothing is marked and the chart says so.
func TestHistoryBeyondRetention(t *testing.T) {
	start := time.Date(2026, 3, 5, 6, 0, 0, 0, time.UTC)
	clock := memstore.NewManualClock(start)
	mem := memstore.New(memstore.WithClock(clock.Now))
	f := newFixtureOn(t, mem, Options{Retention: &retention.Config{Archive: 3 * 24 * time.Hour, DeadLetters: 10 * 24 * time.Hour}})
	ctx := context.Background()
	_, err := mem.UpdateQueue(ctx, "short", jobs.QueueUpdate{ArchiveRetention: durp(24 * time.Hour)})
	must(t, err)
	f.archive("mail", "t", `{}`) // 03-05: beyond mail's 3 days by 03-14
	f.archive("short", "t", `{}`)
	f.deadLetter("mail", "t", `{}`, jobs.ReasonZombie, "x")
	clock.Advance(9*24*time.Hour + 6*time.Hour) // 03-14 12:00
	f.archive("mail", "t", `{}`)

	rowsOf := func(path string) map[string]historyRowData {
		t.Helper()
		r := f.get(path)
		wantStatus(t, r, http.StatusOK)
		out := map[string]historyRowData{}
		for _, row := range historyRows(t, r.body) {
			out[row.start[5:10]] = row
		}
		return out
	}
	day := func(m map[string]historyRowData, d string) string {
		return m[d].archived + "/" + m[d].dead
	}
	// mail: the archive keeps 3 days (cutoff 03-11 12:00), dead letters 10
	// (cutoff 03-04 12:00).
	mail := rowsOf("/queue/mail?history=days")
	for d, want := range map[string]string{"03-01": "beyond/beyond", "03-03": "beyond/beyond", "03-04": "beyond/0", "03-05": "beyond/1", "03-10": "beyond/0",
		"03-11": "0/0", "03-12": "0/0", "03-14": "1/0"} {
		if got := day(mail, d); got != want {
			t.Errorf("mail %s: %s, want %s", d, got, want)
		}
	}
	r := f.get("/queue/mail?history=days")
	wantStatus(t, r, http.StatusOK, `<td class="num kept-off">beyond retention</td>`, `<td class="num kept-off">0 (partly beyond retention)</td>`,
		`<rect class="beyond" fill="url(#beyond-hatch)"`, "succeeded: beyond retention (kept 3d)",
		"Succeeded (archive): kept 3d. Dead letters: kept 10d.", `<span class="sw sw-beyond"></span>beyond retention`,
		`<span class="sw sw-partly"></span>partly beyond retention`)
	if strings.Contains(r.body, `data-start="2026-03-05T00:00:00Z" data-n="1"><title>2026-03-05 UTC: 1 succeeded`) {
		t.Fatal("a bar for a day beyond retention")
	}
	// All queues: short keeps its archive 1 day, mail 3: beyond is mail's,
	// and the days after the shortest cutoff are partly gone.
	all := rowsOf("/?history=days")
	if day(all, "03-10") != "beyond/0" || day(all, "03-11") != "0/0" || day(all, "03-14") != "1/0" {
		t.Fatalf("all queues: %v %v %v", all["03-10"], all["03-11"], all["03-14"])
	}
	wantStatus(t, f.get("/?history=days"), http.StatusOK, "kept 1d to 3d by queue", "0 (partly beyond retention)",
		"once the longest has passed")

	// A queue that keeps forever: nothing is beyond for all queues.
	_, err = mem.UpdateQueue(ctx, "forever", jobs.QueueUpdate{ArchiveRetention: durp(jobs.KeepForever)})
	must(t, err)
	f.dash.history = historyCache{} // forget the cached read
	if all := rowsOf("/?history=days"); day(all, "03-05") != "2/1" {
		t.Fatalf("with a queue kept forever, 03-05 reads %s", day(all, "03-05"))
	}

	// Without Options.Retention the global retention is unknown.
	g := newFixtureOn(t, mem, Options{})
	r = g.get("/queue/mail?history=days")
	wantStatus(t, r, http.StatusOK, "retention not known to this dashboard")
	if strings.Contains(r.body, "beyond retention</td>") {
		t.Fatal("a day marked beyond an unknown retention")
	}
}

func durp(d time.Duration) *time.Duration { return &d }

// TestChartsSayWhenNothingFinished: an empty window reads "no jobs
// finished in this window", not a flat line.
func TestChartsSayWhenNothingFinished(t *testing.T) {
	f := newFixture(t, Options{})
	f.enqueue("mail", "t", `{}`)
	r := f.get("/")
	wantStatus(t, r, http.StatusOK, `<svg class="chart-svg is-empty"`, "no jobs finished in this window",
		"No jobs finished in this window (", `points=""`)
	if n := strings.Count(r.body, `<svg class="chart-svg is-empty"`); n != 2 {
		t.Fatalf("%d empty charts, want the live one and the history", n)
	}
}

// TestChartsNeedAFinishedCounter: over a store that cannot count finished
// jobs by time, the pages say so instead of drawing, and the poller goes
// on without them.
func TestChartsNeedAFinishedCounter(t *testing.T) {
	mem := memstore.New()
	f := newFixtureOver(t, mem, adminOnly{mem}, Options{})
	f.archive("mail", "t", `{}`)
	for _, path := range []string{"/", "/queue/mail"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK, `id="charts-off"`, "does not implement <code>jobs.FinishedCounter</code>")
		if strings.Contains(r.body, `id="live-chart"`) || strings.Contains(r.body, `id="history-chart"`) {
			t.Fatalf("%s draws charts", path)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := f.stream(ctx, "?live=1", "")
	for range 3 {
		next(t, ch, "counts")
	}
	if events, _ := f.dash.hub.recent(10); len(events) != 0 {
		t.Fatalf("console %+v", events)
	}
}

// TestLagSparklines: each queue's sparkline draws its recorded polls,
// newest at the right, on a scale to its highest, and its title says the
// numbers; it starts afresh with each poller.
func TestLagSparklines(t *testing.T) {
	f, clock := clockedFixture(t, time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	f.enqueue("mail", "t", `{}`)
	ctx := context.Background()
	var h lagHistory
	for range 3 {
		clock.Advance(2 * time.Second)
		c, err := f.dash.counts(ctx)
		must(t, err)
		h.record(c)
	}
	c, err := f.dash.counts(ctx)
	must(t, err)
	h.sparklines(&c)
	q := c.Queues[0]
	if q.LagPoints != "57,10.3 58,5.7 59,1" || q.LagTitle != "Oldest due lag of mail: now 6s, highest 6s over the last 4s (3 polls)" {
		t.Fatalf("sparkline %q, %q", q.LagPoints, q.LagTitle)
	}
	if c.Total.LagPoints != q.LagPoints || !strings.HasPrefix(c.Total.LagTitle, "Oldest due lag of all queues: now 6s") {
		t.Fatalf("total %+v", c.Total.sparkline)
	}
	for range 70 {
		h.record(c)
	}
	if n := len(h.samples["mail"]); n != lagSamples {
		t.Fatalf("%d samples kept", n)
	}
	h.reset()
	h.sparklines(&c)
	if c.Queues[0].LagPoints != "59,1 59,1" || !strings.HasSuffix(c.Queues[0].LagTitle, "(one poll so far)") {
		t.Fatalf("a fresh history %+v", c.Queues[0].sparkline)
	}
	wantStatus(t, f.get("/"), http.StatusOK, `<polyline class="line-lag" fill="none" data-points="lag_points" points="59,1 59,1"/>`,
		`<title data-k="lag_title">Oldest due lag of mail: now 6s, highest 6s (one poll so far)</title>`)

	// Over the event stream, the counts carry the sparklines.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, _ := f.stream(sctx, "", "")
	var got struct {
		Queues []struct {
			Points string `json:"lag_points"`
			Title  string `json:"lag_title"`
		} `json:"queues"`
	}
	must(t, json.Unmarshal([]byte(next(t, ch, "counts").data), &got))
	if len(got.Queues) != 1 || got.Queues[0].Points == "" || !strings.HasPrefix(got.Queues[0].Title, "Oldest due lag of mail: now 6s") {
		t.Fatalf("counts event %+v", got)
	}
}

// TestQueuePage: a queue's page shows its counts, settings and charts; a
// queue of dots only is reached by ?name=; an unknown queue is a 404, a
// bad name a 400.
func TestQueuePage(t *testing.T) {
	f := newFixture(t, Options{Retention: &retention.Config{}})
	ctx := context.Background()
	_, err := f.store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{MaxWorkers: intp(4), DeadLetterRetention: durp(jobs.KeepForever)})
	must(t, err)
	f.archive("mail", "t", `{}`)
	f.deadLetter("mail", "t", `{}`, jobs.ReasonFatal, "x")
	f.enqueue("..", "t", `{}`)
	wantStatus(t, f.get("/queue/mail"), http.StatusOK, "<h1>Queue <span class=\"qname\">mail</span></h1>", `data-counts-of="mail"`,
		`<span class="n" data-k="dead">1</span>`, "Max workers 4", "archive kept default <span class=\"sub\">(7d)</span>",
		"dead letters kept forever", `id="live-chart" data-queue="mail"`, `href="/active?queue=mail"`)
	wantStatus(t, f.get("/queue?name=.."), http.StatusOK, `<span class="qname">..</span>`, `href="/queue?history=days&amp;name=..`)
	wantStatus(t, f.get("/"), http.StatusOK, `<a href="/queue/mail" class="queue-link">mail</a>`, `<a href="/queue?name=..`)
	wantStatus(t, f.get("/queue/nothing"), http.StatusNotFound, "no queue named nothing")
	wantStatus(t, f.get("/queue/bad%20name"), http.StatusBadRequest, "queue")
	wantStatus(t, f.get("/?queue=bad%20name"), http.StatusBadRequest, "queue")
	wantStatus(t, f.get("/queue?name="), http.StatusBadRequest, "must not be empty")
}

// TestChartsKeepTheContentSecurityPolicy: the chart pages have no style
// attribute and no inline script (the CSP would block them), and the
// script never writes markup.
func TestChartsKeepTheContentSecurityPolicy(t *testing.T) {
	f := newFixture(t, Options{})
	f.archive("mail", "t", `{}`)
	f.deadLetter("mail", "t", `{}`, jobs.ReasonZombie, "x")
	for _, path := range []string{"/", "/?history=days", "/?queue=mail", "/queue/mail", "/queue/mail?history=days"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK, "<svg")
		for _, bad := range []string{" style=", "<style", "<script>", "javascript:", " on"} {
			if bad == " on" {
				if m := regexp.MustCompile(` on[a-z]+=`).FindString(r.body); m != "" {
					t.Fatalf("%s has an event handler attribute %q", path, m)
				}
				continue
			}
			if strings.Contains(r.body, bad) {
				t.Fatalf("%s contains %q", path, bad)
			}
		}
	}
	js, err := fs.ReadFile(staticFS, "static/app.js")
	must(t, err)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", ".style"} {
		if strings.Contains(string(js), bad) {
			t.Fatalf("app.js uses %s", bad)
		}
	}
}
