package retention

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// ParseQueueSetting reads a queue's retention as an operator types it, on
// the command line or in a form, the way appsettings.yaml writes it: a
// duration in Go's form with whole days allowed ("7d", "36h", "1d12h"),
// "forever" or any zero duration ("0", "0d") for jobs.KeepForever, or
// "default" or "" for 0 (the override cleared: the global retention
// applies). The value's bounds are jobs.QueueUpdate.Validate's.
func ParseQueueSetting(s string) (time.Duration, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "default":
		return 0, nil
	case "0", "forever":
		return jobs.KeepForever, nil
	default:
		d, ok := ParseDuration(v)
		switch {
		case !ok || d < 0:
			return 0, &jobs.ValidationError{Field: "retention", Value: s, Rule: "want a duration such as 7d, 36h or 1d12h, 0 or forever to keep, or default"}
		case d == 0:
			return jobs.KeepForever, nil
		}
		return d, nil
	}
}

// ParseDuration is time.ParseDuration with a leading whole number of days
// allowed, as retentions are written: "7d", "1d12h", "36h". A negative
// number of days is refused.
func ParseDuration(s string) (time.Duration, bool) {
	n, rest, ok := strings.Cut(s, "d")
	if !ok || n == "" || strings.ContainsAny(n, ".+-") {
		d, err := time.ParseDuration(s)
		return d, err == nil
	}
	days, err := strconv.ParseUint(n, 10, 32)
	if err != nil || days > 106750 {
		return 0, false
	}
	d := time.Duration(days) * 24 * time.Hour
	if rest == "" {
		return d, true
	}
	r, err := time.ParseDuration(rest)
	if err != nil || r < 0 || strings.HasPrefix(rest, "+") || d+r < d {
		return 0, false
	}
	return d + r, true
}

// Text shows a retention as ParseQueueSetting reads it: "forever", whole
// days as days ("7d"), else Go's form without trailing zero units ("36h",
// "1h30m"); "default" for 0.
func Text(d time.Duration) string {
	switch {
	case d == 0:
		return "default"
	case d == jobs.KeepForever:
		return "forever"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}
