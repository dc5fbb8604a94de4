package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Cadence is a parsed cron expression in a time zone: the ticks a
// schedule fires at.
type Cadence struct {
	expr  string
	every time.Duration      // @every d: multiples of d since the Unix epoch
	spec  *cron.SpecSchedule // the five fields, as bit sets
	loc   *time.Location
}

// ErrBadCron is wrapped by Parse's error for an expression it refuses.
var ErrBadCron = errors.New("schedule: invalid cron expression")

// parser reads the standard five fields (minute, hour, day of month,
// month, day of week) and the descriptors (@hourly, @daily, @every 10m,
// ...). robfig/cron's parser is used for the fields only: its scheduler
// skips a wall time in a spring-forward gap and runs a repeated one twice,
// so Next computes fire times itself.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxLookahead bounds Next's search: an expression such as "0 0 30 2 *"
// (February 30th) never fires, and must say so rather than loop.
const maxLookahead = 8 * 366 // days

// Parse reads expr in the IANA time zone zone ("" is UTC; "Local" is
// refused, since it differs from host to host). An @every takes whole
// seconds, at least 1s.
func Parse(expr, zone string) (Cadence, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return Cadence{}, fmt.Errorf("%w: empty", ErrBadCron)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Cadence{}, fmt.Errorf("%w %q: give the time zone as TimeZone, not in the expression", ErrBadCron, expr)
	}
	loc, rule, err := loadZone(zone)
	if rule != "" {
		return Cadence{}, fmt.Errorf("schedule: time zone %q: %s", zone, rule)
	}
	if err != nil {
		return Cadence{}, fmt.Errorf("schedule: time zone %q: %w (want an IANA name such as Europe/Berlin)", zone, err)
	}
	if err := checkEvery(expr); err != nil {
		return Cadence{}, err
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return Cadence{}, fmt.Errorf("%w %q: %v", ErrBadCron, expr, err)
	}
	c := Cadence{expr: expr, loc: loc}
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		c.every = s.Delay
	case *cron.SpecSchedule:
		c.spec = s
		if c.Next(time.Unix(0, 0)).IsZero() {
			return Cadence{}, fmt.Errorf("%w %q: it matches no date", ErrBadCron, expr)
		}
	default:
		return Cadence{}, fmt.Errorf("%w %q: unsupported form", ErrBadCron, expr)
	}
	return c, nil
}

// ruleLocal is why the zone "Local" is refused.
const ruleLocal = "is the zone of whichever host reads it, so the same schedule would fire at different " +
	"instants depending on which process leads; want an IANA name such as Europe/Berlin, or UTC"

// loadZone reads an IANA zone name ("" is UTC). It refuses "Local", which
// time.LoadLocation reads as this host's zone, with a rule; any other
// failure is LoadLocation's error.
func loadZone(zone string) (loc *time.Location, rule string, err error) {
	switch zone {
	case "":
		return time.UTC, "", nil
	case "Local":
		return nil, ruleLocal, nil
	}
	loc, err = time.LoadLocation(zone)
	return loc, "", err
}

// checkEvery refuses an @every whose duration robfig/cron would silently
// change: it runs anything under a second (0s, -1m, 1ns) every second and
// drops a fraction (1500ms runs every 1s). Ticks are whole multiples of
// the duration since the epoch, so it must be a whole, positive number of
// seconds.
func checkEvery(expr string) error {
	const every = "@every"
	if len(expr) < len(every) || !strings.EqualFold(expr[:len(every)], every) {
		return nil
	}
	text := strings.TrimSpace(expr[len(every):])
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return fmt.Errorf("%w %q: %q is not a duration; write one such as @every 10m or @every 1h30m", ErrBadCron, expr, text)
	case d < time.Second:
		return fmt.Errorf("%w %q: the interval must be at least 1s (a shorter one would silently fire every second)", ErrBadCron, expr)
	case d%time.Second != 0:
		return fmt.Errorf("%w %q: the interval must be whole seconds (%v would silently fire every %v)", ErrBadCron, expr, d, d.Truncate(time.Second))
	}
	return nil
}

// String is the expression as written.
func (c Cadence) String() string { return c.expr }

// starBit marks a day field written "*" in robfig/cron's bit sets.
const starBit = 1 << 63

// Next is the first tick strictly after t, or the zero time if there is
// none within eight years. Wall times are read in the cadence's zone with
// these rules on days the clock changes: a wall time the clock skips
// (spring forward) fires once, at the end of the gap, the first instant
// after it; a wall time the clock shows twice (fall back) fires once, at
// its first occurrence.
func (c Cadence) Next(t time.Time) time.Time {
	if c.every > 0 {
		n := t.UnixNano()/int64(c.every) + 1
		if t.UnixNano() < 0 && t.UnixNano()%int64(c.every) != 0 {
			n-- // floor, not truncation, before the epoch
		}
		return time.Unix(0, n*int64(c.every)).UTC()
	}
	local := t.In(c.loc)
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	// On t's own day the search starts at t's wall time: wallInstant keeps
	// the order of wall times (a repeated one maps to its first, earlier
	// instant; a skipped one to the end of the gap), so no earlier wall
	// time of the day can map after t.
	fromHour, fromMinute := local.Hour(), local.Minute()
	for range maxLookahead {
		y, m, d := day.Date()
		if c.dayMatches(day) {
			for h := fromHour; h < 24; h++ {
				if c.spec.Hour&(1<<uint(h)) == 0 {
					continue
				}
				startMinute := 0
				if h == fromHour {
					startMinute = fromMinute
				}
				for mi := startMinute; mi < 60; mi++ {
					if c.spec.Minute&(1<<uint(mi)) == 0 {
						continue
					}
					if at := wallInstant(c.loc, y, m, d, h, mi); at.After(t) {
						return at
					}
				}
			}
		}
		day, fromHour, fromMinute = day.AddDate(0, 0, 1), 0, 0
	}
	return time.Time{}
}

// dayMatches is cron's day rule: with either day field "*", both must
// match; with both restricted, either may (the traditional OR).
func (c Cadence) dayMatches(day time.Time) bool {
	if c.spec.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom := c.spec.Dom&(1<<uint(day.Day())) != 0
	dow := c.spec.Dow&(1<<uint(day.Weekday())) != 0
	if c.spec.Dom&starBit != 0 || c.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// wallInstant is the instant loc's clocks show y-m-d h:mi: the first such
// instant when the wall time occurs twice, the end of the gap when the
// clock skips it.
func wallInstant(loc *time.Location, y int, m time.Month, d, h, mi int) time.Time {
	wall := time.Date(y, m, d, h, mi, 0, 0, time.UTC) // the wall time, read as UTC
	var first time.Time
	var before int // the offset in force before the wall time, for a gap
	for i, probe := range []time.Duration{-36 * time.Hour, -24 * time.Hour, -12 * time.Hour, 0, 12 * time.Hour, 24 * time.Hour, 36 * time.Hour} {
		_, off := wall.Add(probe).In(loc).Zone()
		if i == 0 {
			before = off
		}
		at := wall.Add(-time.Duration(off) * time.Second)
		if shown := at.In(loc); shown.Year() == y && shown.Month() == m && shown.Day() == d && shown.Hour() == h && shown.Minute() == mi {
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	if !first.IsZero() {
		return first.UTC()
	}
	// The clock skipped this wall time. Read with the offset in force before
	// the gap it is an instant after the change; the zone in force then
	// began at the change, the end of the gap.
	after := wall.Add(-time.Duration(before) * time.Second).In(loc)
	start, _ := after.ZoneBounds()
	return start.UTC()
}
