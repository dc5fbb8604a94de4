package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, expr, zone string) Cadence {
	t.Helper()
	c, err := Parse(expr, zone)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", expr, zone, err)
	}
	return c
}

// ticks lists the fires of c after from, up to n.
func ticks(c Cadence, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = c.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func wantTicks(t *testing.T, got []time.Time, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d ticks %v, want %v", len(got), got, want)
	}
	for i := range want {
		if !got[i].Equal(utc(want[i])) {
			t.Errorf("tick %d = %s, want %s", i, got[i].Format(time.RFC3339), want[i])
		}
	}
}

// Spring forward: the wall time the clock skips fires once, at the end of
// the gap; fall back: the wall time the clock shows twice fires once, at
// its first occurrence. New York skips 02:00-03:00 on 2026-03-08 and
// repeats 01:00-02:00 on 2026-11-01; Berlin skips 02:00-03:00 on 2026-03-29
// and repeats 02:00-03:00 on 2026-10-25.
func TestDaylightSavingTime(t *testing.T) {
	cases := []struct {
		name, expr, zone, from string
		want                   []string
	}{
		{"New York 02:30 is skipped: it fires at 03:00 EDT", "30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York 01:30 repeats: it fires at the first", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"New York every half hour across the gap", "*/30 * * * *", "America/New_York", "2026-03-08T06:15:00Z",
			[]string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{"New York every half hour across the repeat", "*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
		{"Berlin 02:30 is skipped: it fires at 03:00 CEST", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin 02:30 repeats: it fires at the first", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantTicks(t, ticks(mustParse(t, c.expr, c.zone), utc(c.from), len(c.want)), c.want...)
		})
	}
}

func TestDescriptorsAndFields(t *testing.T) {
	from := utc("2026-12-01T10:17:00Z") // a Tuesday
	for _, c := range []struct {
		expr string
		want []string
	}{
		{"@hourly", []string{"2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"}},
		{"@daily", []string{"2026-12-02T00:00:00Z"}},
		{"@weekly", []string{"2026-12-06T00:00:00Z"}},
		{"@monthly", []string{"2027-01-01T00:00:00Z"}},
		{"@every 10m", []string{"2026-12-01T10:20:00Z", "2026-12-01T10:30:00Z"}},
		{"15 10 * * 1-5", []string{"2026-12-02T10:15:00Z", "2026-12-03T10:15:00Z"}},
		// Both day fields restricted: the 1st of the month or a Monday.
		{"0 0 1 * 1", []string{"2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z", "2026-12-21T00:00:00Z", "2026-12-28T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"0 0 29 2 *", []string{"2028-02-29T00:00:00Z"}},
	} {
		t.Run(c.expr, func(t *testing.T) {
			wantTicks(t, ticks(mustParse(t, c.expr, ""), from, len(c.want)), c.want...)
		})
	}
}

// @every d fires at whole multiples of d since the Unix epoch, whoever
// computes it and whenever: every leader agrees on the ticks.
func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	c := mustParse(t, "@every 7m", "Asia/Kolkata")
	for _, from := range []time.Time{utc("2026-12-01T10:17:03Z"), utc("2026-12-01T10:17:59Z")} {
		n := c.Next(from)
		if n.Unix()%(7*60) != 0 || !n.After(from) || n.Sub(from) > 7*time.Minute {
			t.Fatalf("Next(%s) = %s", from, n)
		}
	}
	if n := c.Next(time.Unix(7*60, 0)); n.Unix() != 14*60 {
		t.Fatalf("Next of a tick is the following tick: %s", n)
	}
}

// An @every of whole seconds, 1s or more, is kept exactly.
func TestEveryKeepsWholeSeconds(t *testing.T) {
	for expr, d := range map[string]time.Duration{"@every 1s": time.Second, "@every 90s": 90 * time.Second, "@every 1.5m": 90 * time.Second, "@every 1h30m": 90 * time.Minute} {
		c := mustParse(t, expr, "")
		if n := c.Next(time.Unix(0, 0)); n.Sub(time.Unix(0, 0)) != d {
			t.Errorf("%s: first tick after the epoch at +%v, want +%v", expr, n.Sub(time.Unix(0, 0)), d)
		}
	}
}

func TestParseRefusesWhatItCannotRun(t *testing.T) {
	for _, c := range []struct{ expr, zone, want string }{
		{"", "", "empty"},
		{"61 * * * *", "", "61"},
		{"* * * *", "", "expected exactly 5 fields"},
		{"0 0 30 2 *", "", "matches no date"},
		{"TZ=Europe/Berlin 0 3 * * *", "", "TimeZone"},
		{"0 3 * * *", "Mars/Olympus", "Mars/Olympus"},
		{"0 3 * * *", "Local", "IANA"},
		{"@sometimes", "", "@sometimes"},
		// robfig/cron runs each of these every second, silently.
		{"@every 0s", "", "at least 1s"},
		{"@every -1m", "", "at least 1s"},
		{"@every 1ns", "", "at least 1s"},
		{"@every 999ms", "", "at least 1s"},
		{"@every 1500ms", "", "whole seconds"},
		{"@every 2.5s", "", "whole seconds"},
		{"@every soon", "", "not a duration"},
		{"@every", "", "not a duration"},
	} {
		_, err := Parse(c.expr, c.zone)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error naming %q", c.expr, c.zone, err, c.want)
		}
		if c.zone == "" && !errors.Is(err, ErrBadCron) {
			t.Errorf("Parse(%q): %v does not wrap ErrBadCron", c.expr, err)
		}
	}
}
