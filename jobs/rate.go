package jobs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Rate limits (ADR 0033): a queue's RateLimit lets at most Count of its
// jobs be claimed per window of Window, across every process, counted
// where jobs are claimed on the store's clock. A window opens at the
// first claim after the last one closed and lasts Window; a claim takes
// at most what the open window has left. Jobs held back stay Pending and
// in no processor's buffer, and the claim says how long until the window
// closes (ClaimResult.Held), so a processor waits instead of claiming
// again for nothing.

// Bounds of a RateLimit.
const (
	MaxRateCount  = 1_000_000
	MinRateWindow = 100 * time.Millisecond
	MaxRateWindow = 24 * time.Hour
)

// RateLimit is at most Count claims per Window. The zero value is no limit.
type RateLimit struct {
	Count  int
	Window time.Duration
}

// IsZero reports whether r sets no limit.
func (r RateLimit) IsZero() bool { return r.Count == 0 && r.Window == 0 }

// String returns the limit as the appsettings key spells it ("100/1m"),
// or "none".
func (r RateLimit) String() string {
	if r.IsZero() {
		return "none"
	}
	w := r.Window.String()
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if r.Window%u.d == 0 {
			w = strconv.FormatInt(int64(r.Window/u.d), 10) + u.unit
			break
		}
	}
	return strconv.Itoa(r.Count) + "/" + w
}

// Validate checks the bounds: Count 1 to MaxRateCount per a Window of
// whole milliseconds from MinRateWindow to MaxRateWindow, or both zero.
func (r RateLimit) Validate() error {
	switch {
	case r.IsZero():
		return nil
	case r.Count < 1 || r.Count > MaxRateCount:
		return &ValidationError{Field: "rate_limit", Value: r.String(), Rule: "the count must be between 1 and " + itoa(MaxRateCount)}
	case r.Window < MinRateWindow || r.Window > MaxRateWindow:
		return &ValidationError{Field: "rate_limit", Value: r.String(), Rule: "the window must be between 100ms and 24h"}
	case r.Window%time.Millisecond != 0:
		return &ValidationError{Field: "rate_limit", Value: r.String(), Rule: "the window must be whole milliseconds"}
	}
	return nil
}

// ParseRateLimit reads "N/window", the window a Go duration ("1m",
// "500ms") or a bare unit ("s", "m", "h" for one of it): "100/1m", "20/s".
// "" and "none" (any case) are no limit.
func ParseRateLimit(s string) (RateLimit, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "none") {
		return RateLimit{}, nil
	}
	count, window, ok := strings.Cut(t, "/")
	bad := &ValidationError{Field: "rate_limit", Value: s, Rule: `must be "N/window", as "100/1m" or "20/s", or "none"`}
	if !ok {
		return RateLimit{}, bad
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil {
		return RateLimit{}, bad
	}
	window = strings.TrimSpace(window)
	if window == "s" || window == "m" || window == "h" {
		window = "1" + window
	}
	d, err := time.ParseDuration(window)
	if err != nil {
		return RateLimit{}, bad
	}
	r := RateLimit{Count: n, Window: d}
	if r.IsZero() {
		return RateLimit{}, &ValidationError{Field: "rate_limit", Value: s, Rule: `a count of 0 limits nothing: write "none"`}
	}
	return r, r.Validate()
}

// ErrRateLimitUnsupported refuses a queue's rate limit on a store that
// does not enforce it: setting it would let the queue run unlimited.
var ErrRateLimitUnsupported = errors.New("jobs: this store does not enforce rate limits (ADR 0033)")

// ClaimResult is what a claim took, and which queues' rate limits have
// nothing left in their open window.
type ClaimResult struct {
	Jobs []*Job
	// Held names each claimed queue whose rate limit stopped the claim or
	// has no claim left in its window, with how long until the window
	// closes (by the store's clock, as a wait from the claim).
	Held []QueueHold
}

// QueueHold is one queue a rate limit holds, and for how long.
type QueueHold struct {
	Queue string
	For   time.Duration
}

// RateClaimer is an optional capability of a Worker whose store enforces
// rate limits: a Claim that also reports the queues their limits hold, so
// the caller can leave them out of its claims until their window closes.
// Callers detect it with a type assertion; Claim alone still enforces the
// limits (a caller that cannot tell claims a held queue for nothing).
type RateClaimer interface {
	// ClaimHeld claims as Claim does and lists the claimed queues whose
	// rate limit has nothing left in its open window.
	ClaimHeld(ctx context.Context, p ClaimParams) (ClaimResult, error)
}
