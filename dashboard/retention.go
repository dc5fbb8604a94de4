package dashboard

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
)

// keep is one retention of a queue as the Queues page shows and edits it.
type keep struct {
	// Own is the queue's own retention as the settings form writes it
	// ("7d", "36h", "forever"); "" when it has none.
	Own string
	// Default is what the queue keeps without its own: the retention
	// loop's value when the dashboard knows it (Options.Retention), else
	// "global".
	Default string
}

// keeps returns a queue's archive and dead-letter retentions for the page.
func (d *Dashboard) keeps(q jobs.QueueSettings) (archive, deadLetters keep) {
	one := func(t jobs.Table, own time.Duration) keep {
		k := keep{Default: "global"}
		if own != 0 {
			k.Own = retentionText(own)
		}
		if d.global != nil {
			// KeepFor of a queue without its own is the global value.
			k.Default = retentionText(retention.KeepFor(jobs.QueueSettings{}, t, *d.global))
		}
		return k
	}
	return one(jobs.TableArchive, q.ArchiveRetention), one(jobs.TableDLQ, q.DeadLetterRetention)
}

// retentionText shows a retention the way the settings form reads it
// back: "forever", whole days as days ("7d"), else the shortest Go
// duration ("36h", "1h30m").
func retentionText(d time.Duration) string {
	switch {
	case d == jobs.KeepForever:
		return "forever"
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fmtRetention shows a queue's own retention in the action log: 0 is
// "default".
func fmtRetention(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return retentionText(d)
}

// maxRetentionDays bounds the days of a typed retention before they are
// multiplied out: time.Duration holds about 106,751 days.
const maxRetentionDays = 106750

// parseRetention reads a retention field of the queue settings form, the
// way appsettings.yaml writes a queue's retention: "" or "default" clears
// it (0: the global retention applies); "forever", "0" or any zero
// duration keeps forever (jobs.KeepForever); else whole days with an
// optional rest ("7d", "1d12h") or a Go duration ("36h"). Only the form is
// checked here: the range is QueueUpdate.Validate's, as for every setting.
func parseRetention(label, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "default":
		return 0, nil
	case "forever":
		return jobs.KeepForever, nil
	}
	d, ok := parseDays(s)
	if !ok || d < 0 {
		return 0, badInput("%s %q: want a duration such as 7d or 36h, forever (or 0) to keep forever, or empty for the default", label, s)
	}
	if d == 0 {
		return jobs.KeepForever, nil
	}
	return d, nil
}

// parseDays is time.ParseDuration that also takes a leading whole number
// of days: Go's units stop at the hour, and retentions are days.
func parseDays(s string) (time.Duration, bool) {
	n, rest, ok := strings.Cut(s, "d")
	if !ok || n == "" || strings.ContainsAny(n, ".+-") {
		d, err := time.ParseDuration(s)
		return d, err == nil
	}
	days, err := strconv.ParseInt(n, 10, 64)
	if err != nil || days > maxRetentionDays {
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

// retentionFields are the queue settings form's retention fields.
var retentionFields = map[string]string{"archive_retention": "archive retention", "dead_letter_retention": "dead-letter retention"}

// explainRetention adds the form's words to QueueUpdate.Validate's error
// for a retention, whose rule speaks of the API's values (0, KeepForever)
// while the form's 0 keeps forever.
func explainRetention(err error, form map[string][]string) error {
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	label, ok := retentionFields[ve.Field]
	if !ok {
		return err
	}
	typed := ""
	if v := form[ve.Field]; len(v) > 0 {
		typed = strings.TrimSpace(v[0])
	}
	return badInput("%s %q: %v (in this form: whole seconds from 1s to %s, such as 7d or 36h; forever or 0 keeps forever; empty or default uses the global retention)",
		label, typed, err, retentionText(jobs.MaxRetention))
}
