package schedule

import "time"

// lastTicks returns the latest n ticks of c in (after, upTo], oldest first,
// and whether older ticks in that span were left out. It never walks the
// whole span: a schedule that missed a year of minutes looks back over a
// window that doubles from a minute until it holds n ticks or reaches
// after, so the work grows with n, not with the span.
func lastTicks(c Cadence, after, upTo time.Time, n int) (ticks []time.Time, dropped bool) {
	if n < 1 || !upTo.After(after) {
		return nil, false
	}
	for window := time.Minute; ; window *= 2 {
		from := upTo.Add(-window)
		reachedAfter := !from.After(after) || window > 200*365*24*time.Hour
		if reachedAfter {
			from = after
		}
		ticks = ticks[:0]
		for t := c.Next(from); !t.IsZero() && !t.After(upTo); t = c.Next(t) {
			ticks = append(ticks, t)
			if len(ticks) > n {
				ticks, dropped = ticks[1:], true
			}
		}
		if len(ticks) >= n || reachedAfter {
			if !reachedAfter && len(ticks) > 0 {
				// The window began after `after`: a tick between them is
				// older than the ones kept, so it is dropped if one exists.
				first := c.Next(after)
				dropped = dropped || (!first.IsZero() && first.Before(ticks[0]))
			}
			return ticks, dropped
		}
	}
}
