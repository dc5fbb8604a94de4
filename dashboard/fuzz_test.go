package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chokaq/chokaq-go/jobs"
)

// filterFields are the fields readFilterForm reads for each table.
var filterFields = map[jobs.Table][]string{
	jobs.TableHot:     {"queue", "type", "text", "status"},
	jobs.TableArchive: {"queue", "type", "text", "from", "to"},
	jobs.TableDLQ:     {"queue", "type", "text", "reason", "from", "to"},
}

// FuzzFilterForm feeds form bodies to the filter and selection parsing of
// the list pages and bulk actions. Whatever the body, they must not panic;
// a filter they accept is one the store accepts; a form whose filter
// fields are all blank is an empty filter, so the bulk actions' guard
// against acting on every job holds; and what they refuse, they refuse
// with a message a user can read.
func FuzzFilterForm(f *testing.F) {
	for _, seed := range []string{
		"",
		"text=%20",
		"scope=matching&text=%20",
		"text=%09%0A%0D%0B%0C",
		"text=%C2%A0%E3%80%80%E2%80%83", // NBSP, ideographic and em spaces
		"text=%20&queue=%20&type=%09&status=%20&reason=%20&from=%20&to=%20",
		"text=&text=x", // the first value counts
		"queue=mail&text=%20timeout%20",
		"text=" + strings.Repeat("x", jobs.MaxFilterTextLen+1),
		"type=" + strings.Repeat("t", jobs.MaxTypeLen+1),
		"queue=" + strings.Repeat("q", jobs.MaxQueueLen+1),
		"queue=a%2Fb", "queue=%00", "type=%00", "text=%00", "text=%1B%5B31m",
		"queue=%C3%A9t%C3%A9", "text=%F0%9F%92%A5", "text=%FF%FE", "queue=%ED%A0%80", // unicode, invalid UTF-8, a surrogate
		"status=pending", "status=PROCESSING", "status=2", "status=3", "status=-1", "status=%E2%80%8B",
		"reason=Fatal", "reason=fatal", "reason=99", "reason=0", "reason=%20Timeout%20",
		"from=2026-11-30T08:00", "from=2026-11-30T08:00:00%2B02:00", "from=2026-11-30", "from=0001-01-01",
		"from=yesterday", "from=2026-13-01", "from=2026-02-30", "to=9999-12-31T23:59:59.999999999Z",
		"from=2026-01-02&to=2026-01-01", "from=2026-01-01&to=2026-01-01",
		"ids=1", "ids=1&ids=1&ids=2", "ids=0", "ids=-1", "ids=%201%20", "ids=1e3", "ids=0x10", "ids=",
		"ids=9223372036854775807", "ids=9223372036854775808", "ids=%EF%BC%91", // a fullwidth digit
		strings.Repeat("ids=7&", MaxSelected),
		strings.Repeat("ids=7&", MaxSelected+1),
		"%zz", "a;b", "text=%", "text=%2", "&&&", "=x", "text",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, _ := url.ParseQuery(body) // a form with errors still yields the fields before them
		for table, fields := range filterFields {
			ff := readFilterForm(v, table)
			blank := true
			for _, k := range fields {
				if strings.TrimSpace(v.Get(k)) != "" {
					blank = false
				}
			}
			if blank && !ff.IsEmpty() {
				t.Fatalf("%v: blank fields, but the form is not empty: %+v", table, ff)
			}
			flt, err := ff.build()
			if err != nil {
				wantReadable(t, err)
				if blank {
					t.Fatalf("%v: blank fields refused: %v", table, err)
				}
				continue
			}
			if err := flt.Validate(table); err != nil {
				t.Fatalf("%v: built %+v, which the store refuses: %v", table, flt, err)
			}
			if blank && !flt.IsEmpty() {
				t.Fatalf("%v: blank fields built a filter that is not empty: %+v", table, flt)
			}
			if !ff.IsEmpty() && ff.Describe() == "no filter" {
				t.Fatalf("%v: %+v describes itself as no filter", table, ff)
			}
		}
		ids, err := parseIDs(v["ids"])
		if err != nil {
			wantReadable(t, err)
			return
		}
		if len(ids) > MaxSelected || len(ids) > len(v["ids"]) {
			t.Fatalf("%d ids from %d fields", len(ids), len(v["ids"]))
		}
		seen := map[int64]bool{}
		for _, id := range ids {
			if id <= 0 || seen[id] {
				t.Fatalf("ids %v", ids)
			}
			seen[id] = true
		}
	})
}

// wantReadable wants err to be a user's mistake (400) told in words: not
// empty, valid UTF-8, and, once the quoted values it names are taken out,
// free of what a dump of a Go value looks like.
func wantReadable(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if statusOf(err) != http.StatusBadRequest {
		t.Fatalf("%q: status %d, want 400", msg, statusOf(err))
	}
	var ie *inputError
	var ve *jobs.ValidationError
	if !errors.As(err, &ie) && !errors.As(err, &ve) {
		t.Fatalf("%q: an error of type %T", msg, err)
	}
	if strings.TrimSpace(msg) == "" || !utf8.ValidString(msg) {
		t.Fatalf("message %q", msg)
	}
	rest := unquoted(msg)
	for _, dump := range []string{"{", "}", "%!", "map[", "0x", "<nil>", "(MISSING)", "jobs.", "*"} {
		if strings.Contains(rest, dump) {
			t.Fatalf("message %q has %q outside its quoted values", msg, dump)
		}
	}
}

// unquoted is s without its Go-quoted strings, which hold the user's own
// input.
func unquoted(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i])
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			return b.String() + s[i:]
		}
		s = s[i+len(q):]
	}
}
