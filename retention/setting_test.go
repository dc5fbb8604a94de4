package retention

import (
	"errors"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

func TestParseQueueSetting(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * day, "1d12h": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute,
		"0": jobs.KeepForever, "0d": jobs.KeepForever, "0s": jobs.KeepForever, "forever": jobs.KeepForever, " Forever ": jobs.KeepForever,
		"default": 0, "": 0,
	} {
		got, err := ParseQueueSetting(in)
		if err != nil || got != want {
			t.Errorf("ParseQueueSetting(%q) = %v, %v; want %v", in, got, err, want)
		}
		if want != 0 && want%day == 0 {
			if back, _ := ParseQueueSetting(Text(want)); back != want {
				t.Errorf("Text(%v) = %q does not read back", want, Text(want))
			}
		}
	}
	for _, in := range []string{"soon", "-1d", "1.5d", "d", "-5m", "1d-1h", "7 d"} {
		if got, err := ParseQueueSetting(in); !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Errorf("ParseQueueSetting(%q) = %v, %v; want an invalid argument", in, got, err)
		}
	}
	if Text(jobs.KeepForever) != "forever" || Text(0) != "default" || Text(7*day) != "7d" || Text(90*time.Minute) != "1h30m" || Text(36*time.Hour) != "36h" {
		t.Fatal("Text")
	}
}
