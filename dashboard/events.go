package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/zombie"
)

// Kinds of console events.
const (
	KindRescue     = "rescue"      // a rescue sweep moved jobs
	KindDeadLetter = "dead-letter" // a job reached the dead-letter queue
	KindAction     = "action"      // an operator acted in the dashboard
	KindInfo       = "info"
	KindError      = "error"
)

// Event is one line of the console panel.
type Event struct {
	// Seq numbers events in publication order; Publish sets it.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"` // Publish sets it when zero
	Kind string    `json:"kind"`
	Text string    `json:"text"`
	// Job describes the dead letter of a KindDeadLetter event.
	Job *JobSummary `json:"job,omitempty"`
}

// JobSummary is a dead letter as the live dead-letter list shows it.
type JobSummary struct {
	ID         int64  `json:"id"`
	Queue      string `json:"queue"`
	Type       string `json:"type"`
	Reason     string `json:"reason"`
	ReasonCode int    `json:"reason_code"`
	// ReasonClass is the badge's CSS class.
	ReasonClass string `json:"reason_class"`
	Attempts    string `json:"attempts"`
	Worker      string `json:"worker"`
	Finished    string `json:"finished"`
	Error       string `json:"error"`
}

// Publish adds e to the console of every open page and to the history
// shown to pages opened later. Safe for concurrent use.
func (d *Dashboard) Publish(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Kind == "" {
		e.Kind = KindInfo
	}
	d.hub.publish(e)
}

// OnSweep publishes a rescue sweep that moved jobs, or failed, to the
// console. Its signature fits zombie.Config.OnSweep.
func (d *Dashboard) OnSweep(res zombie.Result, err error) {
	switch {
	case err != nil:
		// A failed sweep is a store error: every viewer sees the
		// console, so the error itself goes to the log only.
		d.Publish(Event{Kind: KindError, Text: "zombie rescue: sweep failed: " + d.storeFailure("dashboard: zombie rescue sweep failed", err)})
	case res.Moved() > 0:
		d.Publish(Event{Kind: KindRescue, Text: "zombie rescue: " + res.String()})
	}
}

// message is one server-sent event.
type message struct {
	event string
	id    uint64 // 0: no id line
	data  []byte
	// live is the live chart's window of a `live` event: each stream
	// sends the view of the queue its page shows (liveSnap.json).
	live *liveSnap
}

// subscriber is one open event stream. Its channel is closed when the hub
// drops it (too slow, or the dashboard closed); the browser then reconnects
// and catches up from the history by Last-Event-ID.
type subscriber struct {
	ch chan message
	// live: the page shows a live chart and wants `live` events.
	live bool
}

// hub fans events out to subscribers and keeps the console history. It runs
// the poller only while someone listens, so an idle dashboard costs the
// store nothing and needs no goroutine.
type hub struct {
	mu      sync.Mutex
	seq     uint64
	history []Event // ring, oldest first
	size    int
	subs    map[*subscriber]struct{}
	maxSubs int
	counts  []byte    // latest counts JSON of the running poller
	live    *liveSnap // latest live chart window of the running poller
	closed  bool

	run        func(ctx context.Context)
	stopPoller context.CancelFunc
	pollers    sync.WaitGroup
}

func newHub(size, maxSubs int, run func(ctx context.Context)) *hub {
	return &hub{size: size, maxSubs: maxSubs, subs: map[*subscriber]struct{}{}, run: run}
}

// Why subscribe refused a stream.
var (
	errHubClosed = errors.New("the dashboard is shutting down")
	errHubFull   = errors.New("too many open event streams: try again later")
)

func (h *hub) publish(e Event) { h.publishFrom(context.Background(), e) }

// publishFrom publishes unless ctx, a poller's context, has ended: the
// check happens under the lock that stopping a poller takes, so a stopped
// poller never publishes twice what its successor finds again.
func (h *hub) publishFrom(ctx context.Context, e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	h.seq++
	e.Seq = h.seq
	if len(h.history) == h.size {
		copy(h.history, h.history[1:])
		h.history = h.history[:h.size-1]
	}
	h.history = append(h.history, e)
	data, _ := json.Marshal(e) // an Event always marshals
	h.sendLocked(message{event: "console", id: e.Seq, data: data})
}

// sendLocked delivers m without blocking; a subscriber that cannot keep up
// is dropped.
func (h *hub) sendLocked(m message) {
	for s := range h.subs {
		if m.live != nil && !s.live {
			continue
		}
		select {
		case s.ch <- m:
		default:
			delete(h.subs, s)
			close(s.ch)
		}
	}
	if len(h.subs) == 0 {
		h.stopPollerLocked()
	}
}

func (h *hub) setCounts(ctx context.Context, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Err() != nil {
		return // a stopped poller
	}
	h.counts = data
	h.sendLocked(message{event: "counts", data: data})
}

// setLive sends the live chart's window to the streams that show one.
func (h *hub) setLive(ctx context.Context, snap *liveSnap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Err() != nil {
		return // a stopped poller
	}
	h.live = snap
	h.sendLocked(message{event: "live", live: snap})
}

// liveWanted reports whether any open stream shows a live chart: the
// poller reads the window only then.
func (h *hub) liveWanted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.live {
			return true
		}
	}
	return false
}

// recent returns the last n events and the newest sequence number.
func (h *hub) recent(n int) ([]Event, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	from := max(0, len(h.history)-n)
	return append([]Event(nil), h.history[from:]...), h.seq
}

// subscription is what a new stream starts with.
type subscription struct {
	backlog []Event   // the console events after the seq asked for
	counts  []byte    // the latest counts message, if any
	live    *liveSnap // the latest live chart window, if any and asked for
}

// subscribe opens a stream; live asks for `live` events too. It fails once
// closed, and when maxSubs streams are open: each holds a goroutine and a
// connection.
func (h *hub) subscribe(after uint64, live bool) (s *subscriber, first subscription, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, first, errHubClosed
	}
	if len(h.subs) >= h.maxSubs {
		return nil, first, errHubFull
	}
	for _, e := range h.history {
		if e.Seq > after {
			first.backlog = append(first.backlog, e)
		}
	}
	s = &subscriber{ch: make(chan message, 64), live: live}
	h.subs[s] = struct{}{}
	if h.stopPoller == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stopPoller = cancel
		h.pollers.Add(1)
		go func() {
			defer h.pollers.Done()
			h.run(ctx)
		}()
	}
	first.counts = h.counts
	if live {
		first.live = h.live
	}
	return s, first, nil
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	close(s.ch)
	if len(h.subs) == 0 {
		h.stopPollerLocked()
	}
}

func (h *hub) stopPollerLocked() {
	if h.stopPoller != nil {
		h.stopPoller()
		h.stopPoller = nil
		h.counts, h.live = nil, nil
	}
}

// polling reports whether a poller runs (for tests).
func (h *hub) polling() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopPoller != nil
}

// close drops every subscriber and waits for the poller to end.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
	h.stopPollerLocked()
	h.mu.Unlock()
	h.pollers.Wait()
}
