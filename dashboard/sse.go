package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// keepAlive is how often an idle stream sends a comment, so proxies and the
// browser keep it open and a vanished client is noticed.
const keepAlive = 15 * time.Second

// events streams Server-Sent Events: `counts` (the overview JSON, every
// PollInterval), `console` (an Event, with its Seq as the event id) and,
// for a page with a live chart (?live=1, and &queue= for one queue's),
// `live` (the chart's window, every PollInterval). A reconnecting browser
// sends Last-Event-ID and gets the console events it missed from the
// history; a fresh page passes ?after= with the last event it rendered.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, _ := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64)
	if after == 0 {
		after, _ = strconv.ParseUint(q.Get("after"), 10, 64)
	}
	live := q.Get("live") == "1" && d.finished != nil
	queue := q.Get("queue")
	if queue != "" {
		if err := jobs.ValidateQueueName(queue); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	sub, first, err := d.hub.subscribe(after, live)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer d.hub.unsubscribe(sub)

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	send := func(m message) bool {
		// A client that stops reading must not hold the handler forever.
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		var err error
		if m.live != nil {
			m.data = m.live.json(queue)
		}
		if m.event == "" {
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		} else if m.id != 0 {
			_, err = fmt.Fprintf(w, "event: %s\nid: %d\ndata: %s\n\n", m.event, m.id, m.data)
		} else {
			_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.event, m.data)
		}
		return err == nil && rc.Flush() == nil
	}

	if _, err := fmt.Fprintf(w, "retry: %d\n\n", max(1000, d.opts.PollInterval.Milliseconds())); err != nil {
		return
	}
	for _, e := range first.backlog {
		data, _ := json.Marshal(e)
		if !send(message{event: "console", id: e.Seq, data: data}) {
			return
		}
	}
	if first.counts != nil && !send(message{event: "counts", data: first.counts}) {
		return
	}
	if first.live != nil && !send(message{event: "live", live: first.live}) {
		return
	}
	if first.counts == nil && first.live == nil && rc.Flush() != nil {
		return
	}

	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case m, ok := <-sub.ch:
			if !ok {
				return
			}
			if !send(m) {
				return
			}
		case <-ping.C:
			if !send(message{}) {
				return
			}
		}
	}
}
