package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// inputError is a request the user got wrong: 400 with its message.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) error { return &inputError{fmt.Sprintf(format, args...)} }

// statusOf maps an error to the HTTP status a page or action answers with.
func statusOf(err error) int {
	var ie *inputError
	switch {
	case errors.As(err, &ie), errors.Is(err, jobs.ErrInvalidArgument), errors.Is(err, jobs.ErrEmptyFilter):
		return http.StatusBadRequest
	case errors.Is(err, jobs.ErrJobNotFound), errors.Is(err, jobs.ErrScheduleNotFound), errors.Is(err, jobs.ErrWorkflowNotFound):
		return http.StatusNotFound
	case errors.Is(err, jobs.ErrWorkflowsUnsupported):
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// filterForm is a filter as the pages' forms carry it: the raw text, so it
// round-trips into links and hidden fields unchanged.
type filterForm struct {
	Table                                       jobs.Table
	Queue, Type, Status, Reason, From, To, Text string
}

// readFilterForm takes the fields that apply to table t, trimmed: a field
// of spaces is no filter, and must count as none when a bulk action asks
// whether the filter is empty, or it would act on every job. That holds
// for the text too, though it would match only rows with a space in them:
// which rows those are, the operator cannot see.
func readFilterForm(v url.Values, t jobs.Table) filterForm {
	get := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	ff := filterForm{Table: t, Queue: get("queue"), Type: get("type"), Text: get("text")}
	switch t {
	case jobs.TableHot:
		ff.Status = get("status")
	case jobs.TableDLQ:
		ff.Reason = get("reason")
		ff.From, ff.To = get("from"), get("to")
	case jobs.TableArchive:
		ff.From, ff.To = get("from"), get("to")
	}
	return ff
}

// IsEmpty reports whether the form selects everything.
func (ff filterForm) IsEmpty() bool {
	return ff.Queue == "" && ff.Type == "" && ff.Status == "" && ff.Reason == "" && ff.From == "" && ff.To == "" && ff.Text == ""
}

// build validates the form into a jobs.Filter; errors name the field.
func (ff filterForm) build() (jobs.Filter, error) {
	f := jobs.Filter{Queue: ff.Queue, Type: ff.Type, Text: ff.Text}
	if ff.Status != "" {
		s, err := parseStatus(ff.Status)
		if err != nil {
			return f, err
		}
		f.Status = &s
	}
	if ff.Reason != "" {
		r, err := jobs.ParseFailureReason(ff.Reason)
		if err != nil {
			return f, badInput("reason %q: must be one of MaxRetriesExceeded, Cancelled, Zombie, Fatal, Timeout, HeartbeatFailure, RetryLifetimeExpired (or its number)", ff.Reason)
		}
		f.Reason = &r
	}
	var err error
	if f.From, err = parseTime("from", ff.From); err != nil {
		return f, err
	}
	if f.To, err = parseTime("to", ff.To); err != nil {
		return f, err
	}
	if len(ff.Type) > jobs.MaxTypeLen {
		return f, badInput("type: at most %d characters", jobs.MaxTypeLen)
	}
	if err := f.Validate(ff.Table); err != nil {
		return f, err
	}
	return f, nil
}

// values are the non-empty fields, for links and redirects.
func (ff filterForm) values() url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"queue", ff.Queue}, {"type", ff.Type}, {"status", ff.Status}, {"reason", ff.Reason},
		{"from", ff.From}, {"to", ff.To}, {"text", ff.Text}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v
}

// Describe says what the filter selects, for confirmations and the log.
func (ff filterForm) Describe() string {
	var parts []string
	for _, kv := range [][2]string{{"queue", ff.Queue}, {"type", ff.Type}, {"status", ff.Status}, {"reason", ff.Reason},
		{"from", ff.From}, {"to", ff.To}, {"text", ff.Text}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+strconv.Quote(kv[1]))
		}
	}
	if len(parts) == 0 {
		return "no filter"
	}
	return strings.Join(parts, ", ")
}

func parseStatus(s string) (jobs.Status, error) {
	for _, st := range []jobs.Status{jobs.StatusPending, jobs.StatusFetched, jobs.StatusProcessing} {
		if strings.EqualFold(s, st.String()) || s == strconv.Itoa(int(st)) {
			return st, nil
		}
	}
	return 0, badInput("status %q: must be Pending, Fetched or Processing", s)
}

// timeLayouts are accepted for from and to; all but RFC 3339 are UTC. The
// second one is what an <input type="datetime-local"> sends.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02"}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, badInput("%s %q: want a time such as 2026-11-30T08:00 (UTC) or RFC 3339", field, s)
}

// parseID reads one positive job ID.
func parseID(field, s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id <= 0 {
		return 0, badInput("%s %q: want a positive integer job id", field, s)
	}
	return id, nil
}

// MaxSelected caps the jobs a bulk form selects by ID. jobs.MaxFilterIDs
// would allow 10000, but net/url refuses a form of more than 10000 fields
// (GODEBUG urlmaxqueryparams), and a bulk form carries a dozen more: the
// scope, the filter, "all", the payload fields, the CSRF token, and on the
// confirmation step the count and its time. Half the limit leaves room for
// those and for fields a later version adds.
const MaxSelected = 5000

// tooManySelected is the message for a selection over MaxSelected, and for
// a form that has too many fields for net/url at all: a selection is what
// makes a form that big.
func tooManySelected() string {
	return fmt.Sprintf("at most %d jobs can be selected at once", MaxSelected)
}

// parseIDs reads the selected job IDs of a bulk form, each once, so a
// count of them is a count of jobs.
func parseIDs(ss []string) ([]int64, error) {
	if len(ss) > MaxSelected {
		return nil, badInput("%d jobs selected: %s", len(ss), tooManySelected())
	}
	ids := make([]int64, 0, len(ss))
	seen := make(map[int64]bool, len(ss))
	for _, s := range ss {
		id, err := parseID("selected id", s)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}
