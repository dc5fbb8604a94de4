package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lagSamples is how many polls of the oldest due job's lag each queue's
// sparkline shows (2 minutes at the default 2 s).
const lagSamples = 60

// Sparkline frame: lagSamples slots across, the newest at the right.
const (
	sparkWidth  = lagSamples - 1
	sparkHeight = 16
)

// lagSample is one poll's lag of one queue.
type lagSample struct {
	at  time.Time // the store's clock
	lag float64   // seconds
}

// lagHistory keeps the last lagSamples polls' lag of each queue, and of
// all queues under the key "" (their highest). The poller records it;
// it starts afresh with each poller, so a gap while nobody watched is
// never drawn as if it were one poll.
type lagHistory struct {
	mu      sync.Mutex
	samples map[string][]lagSample
}

// reset forgets every sample.
func (h *lagHistory) reset() {
	h.mu.Lock()
	h.samples = nil
	h.mu.Unlock()
}

// record adds one poll's counts; a queue that is gone is forgotten.
func (h *lagHistory) record(c counts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.samples
	h.samples = make(map[string][]lagSample, len(c.Queues)+1)
	add := func(key string, lag float64) {
		s := append(old[key], lagSample{at: c.At, lag: lag})
		if len(s) > lagSamples {
			s = append([]lagSample(nil), s[len(s)-lagSamples:]...)
		}
		h.samples[key] = s
	}
	for _, q := range c.Queues {
		add(q.Queue, q.LagSeconds)
	}
	add("", c.Total.LagSeconds)
}

// sparkline is one queue's lag sparkline: the polyline's points and the
// accessible title that says the numbers.
type sparkline struct {
	LagPoints string `json:"lag_points"`
	LagTitle  string `json:"lag_title"`
}

// sparklines fills each row of c with its sparkline, from the recorded
// polls; a queue without any (no poller yet) shows c's own sample alone.
func (h *lagHistory) sparklines(c *counts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range c.Queues {
		q := &c.Queues[i]
		q.sparkline = drawSparkline(q.Queue, h.samples[q.Queue], lagSample{at: c.At, lag: q.LagSeconds})
	}
	c.Total.sparkline = drawSparkline("all queues", h.samples[""], lagSample{at: c.At, lag: c.Total.LagSeconds})
}

func drawSparkline(name string, samples []lagSample, current lagSample) sparkline {
	if len(samples) == 0 {
		samples = []lagSample{current}
	}
	var peak float64
	for _, s := range samples {
		peak = max(peak, s.lag)
	}
	xs, ys := make([]float64, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = float64(sparkWidth - (len(samples) - 1 - i))
		ys[i] = sparkHeight - 1
		if peak > 0 {
			ys[i] = round1(sparkHeight - 1 - s.lag/peak*(sparkHeight-2))
		}
	}
	if len(xs) == 1 {
		// One point draws nothing as a line: a zero-length one with round
		// caps (style.css) draws a dot.
		xs, ys = append(xs, xs[0]), append(ys, ys[0])
	}
	last := samples[len(samples)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "Oldest due lag of %s: now %s, highest %s", name, lagWords(last.lag), lagWords(peak))
	if n := len(samples); n == 1 {
		b.WriteString(" (one poll so far)")
	} else {
		fmt.Fprintf(&b, " over the last %s (%s polls)", lagText(last.at.Sub(samples[0].at)), strconv.Itoa(n))
	}
	return sparkline{LagPoints: points(xs, ys), LagTitle: b.String()}
}

// lagWords is a lag in seconds as the sparkline's title says it.
func lagWords(secs float64) string {
	if secs <= 0 {
		return "0s"
	}
	return lagText(time.Duration(secs * float64(time.Second)))
}
