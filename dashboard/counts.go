package dashboard

import (
	"context"
	"fmt"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// queueCounts is one queue's row of the overview, as rendered and as sent
// in `counts` events. The string fields are what the page shows, so the
// script only copies text.
type queueCounts struct {
	Queue        string `json:"queue"`
	Paused       bool   `json:"paused"`
	State        string `json:"state"`
	MaxWorkers   int    `json:"max_workers"`
	Pending      int64  `json:"pending"`
	Scheduled    int64  `json:"scheduled"`
	Fetched      int64  `json:"fetched"`
	Processing   int64  `json:"processing"`
	Archived     int64  `json:"archived"`
	DeadLettered int64  `json:"dead"`
	// WaitingOnKey and WaitingOnSequence are Pending jobs held back by
	// flow control (ADR 0031), counted in Pending too.
	WaitingOnKey      int64 `json:"waiting_key"`
	WaitingOnSequence int64 `json:"waiting_sequence"`
	// WaitingOnRate are the Pending jobs a full rate-limit window holds
	// (ADR 0033), also in Pending; WindowUsed and WindowEndsAt are the
	// open window's claims and end (zero: none open), Window their text.
	WaitingOnRate int64 `json:"waiting_rate"`
	// WaitingOnParents are workflow tasks waiting for a parent (ADR 0034),
	// not in Pending: no claim can take them yet.
	WaitingOnParents int64     `json:"waiting_parents"`
	WindowUsed       int       `json:"window_used"`
	WindowEndsAt     time.Time `json:"window_ends_at"`
	Window           string    `json:"window"`
	// BusiestKeys are the keys holding the most workers (the queue page's
	// table, not copied by the script).
	BusiestKeys []jobs.KeyCount `json:"busiest_keys,omitempty"`
	LagSeconds  float64         `json:"lag_seconds"`
	Lag         string          `json:"lag"`
	PerSecond1m float64         `json:"per_second_1m"`
	PerSecond5m float64         `json:"per_second_5m"`
	Rate1m      string          `json:"rate_1m"`
	Rate5m      string          `json:"rate_5m"`
	// sparkline is the lag over the recent polls (lagHistory), filled
	// in by the poller and the overview, not by counts.
	sparkline
}

// counts is the overview: every queue and their total.
type counts struct {
	At     time.Time     `json:"at"`
	Queues []queueCounts `json:"queues"`
	Total  queueCounts   `json:"total"`
}

// counts reads the per-queue stats and the archive rates. Jobs per second
// over a window are the archive rows finished within it, by the store's
// clock, divided by its length.
func (d *Dashboard) counts(ctx context.Context) (counts, error) {
	stats, err := d.store.QueueStats(ctx)
	if err != nil {
		return counts{}, fmt.Errorf("queue stats: %w", err)
	}
	now, err := d.store.Now(ctx)
	if err != nil {
		return counts{}, fmt.Errorf("store clock: %w", err)
	}
	c := counts{At: now, Queues: make([]queueCounts, 0, len(stats)), Total: queueCounts{Queue: "all queues"}}
	for _, s := range stats {
		q := queueCounts{Queue: s.Queue, Paused: s.Paused, MaxWorkers: s.MaxWorkers, Pending: s.Pending, Scheduled: s.Scheduled,
			Fetched: s.Fetched, Processing: s.Processing, Archived: s.Archived, DeadLettered: s.DeadLettered, LagSeconds: s.Lag.Seconds(),
			WaitingOnKey: s.WaitingOnKey, WaitingOnSequence: s.WaitingOnSequence, BusiestKeys: s.BusiestKeys,
			WaitingOnRate: s.WaitingOnRate, WindowUsed: s.WindowUsed, WindowEndsAt: s.WindowEndsAt, WaitingOnParents: s.WaitingOnParents}
		for _, w := range []struct {
			span time.Duration
			into *float64
		}{{time.Minute, &q.PerSecond1m}, {5 * time.Minute, &q.PerSecond5m}} {
			n, err := d.store.CountJobs(ctx, jobs.TableArchive, jobs.Filter{Queue: s.Queue, From: now.Add(-w.span)})
			if err != nil {
				return counts{}, fmt.Errorf("archive rate of %s: %w", s.Queue, err)
			}
			*w.into = float64(n) / w.span.Seconds()
		}
		t := &c.Total
		t.Pending += q.Pending
		t.Scheduled += q.Scheduled
		t.Fetched += q.Fetched
		t.Processing += q.Processing
		t.Archived += q.Archived
		t.DeadLettered += q.DeadLettered
		t.WaitingOnKey += q.WaitingOnKey
		t.WaitingOnSequence += q.WaitingOnSequence
		t.WaitingOnRate += q.WaitingOnRate
		t.WaitingOnParents += q.WaitingOnParents
		t.LagSeconds = max(t.LagSeconds, q.LagSeconds)
		t.PerSecond1m += q.PerSecond1m
		t.PerSecond5m += q.PerSecond5m
		c.Queues = append(c.Queues, q.withText())
	}
	c.Total = c.Total.withText()
	c.Total.State, c.Total.Window = "", "" // each queue has its own
	return c, nil
}

func (q queueCounts) withText() queueCounts {
	q.State = "active"
	if q.Paused {
		q.State = "paused"
	}
	q.Lag = lagText(time.Duration(q.LagSeconds * float64(time.Second)))
	q.Rate1m, q.Rate5m = rateText(q.PerSecond1m), rateText(q.PerSecond5m)
	q.Window = windowText(q.WindowUsed, q.WindowEndsAt)
	return q
}

// windowText is a rate-limited queue's open window: how many claims it
// has taken and when it closes, by the store's clock in UTC.
func windowText(used int, ends time.Time) string {
	if ends.IsZero() {
		return "none open"
	}
	return fmt.Sprintf("%d claimed, closes %s UTC", used, clockText(ends))
}

func lagText(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func rateText(r float64) string {
	if r == 0 {
		return "0"
	}
	if r < 10 {
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.0f", r)
}
