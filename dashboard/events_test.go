package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/zombie"
)

type sseEvent struct{ name, id, data string }

// stream opens the event stream; the channel closes when it ends.
func (f *fixture) stream(ctx context.Context, query, lastEventID string) (<-chan sseEvent, int) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events"+query, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, res.StatusCode
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		f.t.Fatalf("content type %q", ct)
	}
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.name != "" {
					ch <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				e.name = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				e.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				e.data = line[len("data: "):]
			}
		}
	}()
	return ch, http.StatusOK
}

// next returns the next event called name, skipping others.
func next(t *testing.T, ch <-chan sseEvent, name string) sseEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended waiting for %s", name)
			}
			if e.name == name {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event in 5s", name)
		}
	}
}

func nextConsole(t *testing.T, ch <-chan sseEvent) Event {
	t.Helper()
	var e Event
	if err := json.Unmarshal([]byte(next(t, ch, "console").data), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEventsStreamCountsAndConsole(t *testing.T) {
	f := newFixture(t, Options{})
	f.archive("mail", "email.send", `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := f.stream(ctx, "", "")

	var c counts
	if err := json.Unmarshal([]byte(next(t, ch, "counts").data), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Queues) != 1 || c.Queues[0].Queue != "mail" || c.Queues[0].Archived != 1 || c.Total.Archived != 1 {
		t.Fatalf("counts %+v", c)
	}
	// Counts keep coming, and follow the store.
	f.enqueue("mail", "email.send", `{}`)
	for c.Total.Pending != 1 {
		if err := json.Unmarshal([]byte(next(t, ch, "counts").data), &c); err != nil {
			t.Fatal(err)
		}
	}

	f.dash.Publish(Event{Kind: KindInfo, Text: "hello"})
	if e := nextConsole(t, ch); e.Text != "hello" || e.Kind != KindInfo || e.Seq == 0 || e.Time.IsZero() {
		t.Fatalf("console %+v", e)
	}
	f.dash.OnSweep(zombie.Result{}, nil) // nothing moved: nothing to say
	f.dash.OnSweep(zombie.Result{Recovered: 2, Zombies: 1}, nil)
	if e := nextConsole(t, ch); e.Kind != KindRescue || e.Text != "zombie rescue: recovered 2 abandoned, dead-lettered 1 zombies and 0 past deadline" {
		t.Fatalf("sweep %+v", e)
	}
	f.dash.OnSweep(zombie.Result{}, errors.New("database gone"))
	// Every viewer sees the console: the error itself goes to the log only.
	if e := nextConsole(t, ch); e.Kind != KindError || !strings.Contains(e.Text, "sweep failed: the store failed (reference ") ||
		strings.Contains(e.Text, "database gone") {
		t.Fatalf("failed sweep %+v", e)
	}
	// An action shows up too.
	f.wantRedirect(f.post("/queues/mail/pause", nil), "/queues")
	if e := nextConsole(t, ch); e.Kind != KindAction || e.Text != "127.0.0.1: paused queue mail" {
		t.Fatalf("action %+v", e)
	}
}

// The zombie rescuer's own OnSweep hook feeds the console.
func TestRescueSweepsReachTheConsole(t *testing.T) {
	clock := memstore.NewManualClock(time.Now())
	f := newFixtureOn(t, memstore.New(memstore.WithClock(clock.Now)), Options{})
	id := f.enqueue("q", "t", `{}`)
	got, _ := f.store.Claim(context.Background(), jobs.ClaimParams{WorkerID: "gone", Queues: []string{"q"}, Limit: 1})
	if len(got) != 1 || got[0].ID != id {
		t.Fatal("claim")
	}
	r, err := zombie.New(f.store, zombie.Config{FetchedJobTimeout: time.Minute, OnSweep: f.dash.OnSweep})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := r.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, _ := f.dash.hub.recent(10)
	if len(events) != 1 || events[0].Text != "zombie rescue: recovered 1 abandoned, dead-lettered 0 zombies and 0 past deadline" {
		t.Fatalf("events %+v", events)
	}
}

func TestDeadLetterArrivalsAreStreamedOnce(t *testing.T) {
	f := newFixture(t, Options{})
	f.deadLetter("q", "old", `{}`, jobs.ReasonFatal, "before anyone watched")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := f.stream(ctx, "", "")
	next(t, ch, "counts") // the poller has taken note of what was there

	id := f.deadLetter("q", "payment.sync", `{}`, jobs.ReasonMaxRetriesExceeded, "gateway timeout\nat line 3")
	e := nextConsole(t, ch)
	if e.Kind != KindDeadLetter || e.Job == nil || e.Job.ID != id || e.Job.Reason != "MaxRetriesExceeded" || e.Job.Attempts != "1/3" ||
		e.Job.Error != "gateway timeout" || e.Job.Worker != "worker-1" || e.Job.ReasonClass != "r-failed" {
		t.Fatalf("arrival %+v %+v", e, e.Job)
	}
	if !strings.Contains(e.Text, "payment.sync on q, MaxRetriesExceeded: gateway timeout") {
		t.Fatalf("text %q", e.Text)
	}
	// Several polls later there is no second report of the same job.
	for range 4 {
		next(t, ch, "counts")
	}
	f.dash.Publish(Event{Text: "marker"})
	if e := nextConsole(t, ch); e.Text != "marker" {
		t.Fatalf("reported twice: %+v", e)
	}
	// The same job dying again is news again.
	if _, err := f.store.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{id}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // a new FinishedAt
	ref := f.start(id, "q")
	if err := f.store.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonZombie, Details: "again"}); err != nil {
		t.Fatal(err)
	}
	if e := nextConsole(t, ch); e.Job == nil || e.Job.ID != id || e.Job.Reason != "Zombie" {
		t.Fatalf("second death %+v", e)
	}
}

func TestEventsReplayMissedConsoleLines(t *testing.T) {
	f := newFixture(t, Options{})
	for _, s := range []string{"one", "two", "three"} {
		f.dash.Publish(Event{Text: s})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := f.stream(ctx, "?after=1", "")
	if e := next(t, ch, "console"); e.id != "2" || !strings.Contains(e.data, `"two"`) {
		t.Fatalf("after=1: %+v", e)
	}
	if e := next(t, ch, "console"); e.id != "3" {
		t.Fatalf("after=1: %+v", e)
	}
	// A reconnecting browser's Last-Event-ID wins over the page's ?after=.
	ch2, _ := f.stream(ctx, "?after=0", "2")
	if e := next(t, ch2, "console"); e.id != "3" {
		t.Fatalf("Last-Event-ID 2: %+v", e)
	}
	// History is bounded.
	small := newFixture(t, Options{ConsoleHistory: 2})
	for _, s := range []string{"a", "b", "c"} {
		small.dash.Publish(Event{Text: s})
	}
	if events, seq := small.dash.hub.recent(10); len(events) != 2 || events[0].Text != "b" || seq != 3 {
		t.Fatalf("history %+v %d", events, seq)
	}
}

func TestPollingRunsOnlyWhileSomeoneWatches(t *testing.T) {
	f := newFixture(t, Options{})
	if f.dash.hub.polling() {
		t.Fatal("polling with nobody watching")
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ch1, _ := f.stream(ctx1, "", "")
	ch2, _ := f.stream(ctx2, "", "")
	next(t, ch1, "counts")
	next(t, ch2, "counts")
	cancel1()
	for range ch1 {
	}
	next(t, ch2, "counts") // the other stream carries on
	cancel2()
	for range ch2 {
	}
	waitFor(t, "polling to stop", func() bool { return !f.dash.hub.polling() })

	// Close ends open streams and refuses new ones.
	ch3, _ := f.stream(context.Background(), "", "")
	next(t, ch3, "counts")
	f.dash.Close()
	for range ch3 {
	}
	if _, status := f.stream(context.Background(), "", ""); status != http.StatusServiceUnavailable {
		t.Fatalf("stream after Close: %d", status)
	}
	if f.dash.hub.polling() {
		t.Fatal("polling after Close")
	}
}

// Streams that end, by the client or by Close, leave no goroutine behind.
func TestNoGoroutineOutlivesItsStream(t *testing.T) {
	f := newFixture(t, Options{})
	f.get("/") // warm up the server's own goroutines
	f.client.CloseIdleConnections()
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	var streams []<-chan sseEvent
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		ch, _ := f.stream(ctx, "", "")
		next(t, ch, "counts")
		cancels = append(cancels, cancel)
		streams = append(streams, ch)
	}
	for i, cancel := range cancels {
		cancel()
		for range streams[i] {
		}
	}
	f.client.CloseIdleConnections()
	f.srv.CloseClientConnections()
	// The server notices each disconnect on its own goroutine, so both
	// conditions are waited for, not checked once.
	waitFor(t, "the poller to stop with its last stream", func() bool { return !f.dash.hub.polling() })
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestASlowStreamIsDroppedNotWaitedFor(t *testing.T) {
	h := newHub(10, 10, func(ctx context.Context) { <-ctx.Done() })
	s, _, _ := h.subscribe(0, false)
	for range 200 {
		h.publish(Event{Text: "x"}) // never blocks
	}
	n := 0
	for range s.ch {
		n++
	}
	if n != cap(s.ch) {
		t.Fatalf("got %d buffered events, want %d", n, cap(s.ch))
	}
	h.unsubscribe(s) // already dropped: a no-op
	h.close()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
