package dashboard

import (
	"errors"
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
			k.Own = retention.Text(own)
		}
		if d.global != nil {
			// KeepFor of a queue without its own is the global value.
			k.Default = retention.Text(retention.KeepFor(jobs.QueueSettings{}, t, *d.global))
		}
		return k
	}
	return one(jobs.TableArchive, q.ArchiveRetention), one(jobs.TableDLQ, q.DeadLetterRetention)
}

// parseRetention reads a retention field of the queue settings form as
// appsettings.yaml writes a queue's retention (retention.ParseQueueSetting):
// "" or "default" clears it, "forever" or a zero keeps forever, else "7d",
// "1d12h", "36h". Only the form is checked here: the range is
// QueueUpdate.Validate's, as for every setting.
func parseRetention(label, s string) (time.Duration, error) {
	d, err := retention.ParseQueueSetting(s)
	if err != nil {
		return 0, badInput("%s %q: want a duration such as 7d or 36h, forever (or 0) to keep forever, or empty for the default", label, strings.TrimSpace(s))
	}
	return d, nil
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
		label, typed, err, retention.Text(jobs.MaxRetention))
}
