package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNormalizeFillsDefaults(t *testing.T) {
	p, err := EnqueueParams{Type: "t"}.Normalize(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Queue != DefaultQueue || p.MaxAttempts != DefaultMaxAttempts {
		t.Fatalf("defaults not applied: %+v", p)
	}
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	p, err = EnqueueParams{Type: "t", RunAt: at}.Normalize(Limits{})
	if err != nil || p.RunAt.Location() != time.UTC || !p.RunAt.Equal(at) {
		t.Fatalf("RunAt not normalized to UTC: %v, %v", p.RunAt, err)
	}
}

func TestValidationErrorsNameFieldValueAndRule(t *testing.T) {
	_, err := EnqueueParams{Type: "t", Priority: 5000}.Normalize(Limits{})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"priority", "5000", "between -1000 and 1000"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	_, err = EnqueueParams{Type: "t", Payload: make([]byte, 11)}.Normalize(Limits{MaxPayloadBytes: 10})
	if err == nil || !strings.Contains(err.Error(), "at most 10 bytes") {
		t.Fatalf("custom payload limit: %v", err)
	}
	long := strings.Repeat("é", MaxTypeLen) // 200 characters, 400 bytes: within the limit
	if _, err := (EnqueueParams{Type: long}).Normalize(Limits{}); err != nil {
		t.Fatalf("200-character type refused: %v", err)
	}
	emoji := strings.Repeat("😀", MaxTypeLen/2+1) // 101 runes = 202 UTF-16 units
	if _, err := (EnqueueParams{Type: emoji}).Normalize(Limits{}); err == nil {
		t.Fatal("type over 200 UTF-16 units accepted")
	}
	if _, err := (EnqueueParams{Type: "\xff"}).Normalize(Limits{}); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

func TestBatchErrorNamesItem(t *testing.T) {
	_, err := NormalizeBatch([]EnqueueParams{{Type: "a"}, {Type: "b", Delay: -1}}, Limits{})
	var be *BatchItemError
	if !errors.As(err, &be) || be.Index != 1 || !strings.Contains(err.Error(), "batch item 1") || !strings.Contains(err.Error(), "delay") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseFailureReason(t *testing.T) {
	for in, want := range map[string]FailureReason{"zombie": ReasonZombie, "7": ReasonTimeout, "Fatal": ReasonFatal, "0": ReasonMaxRetriesExceeded} {
		if got, err := ParseFailureReason(in); err != nil || got != want {
			t.Errorf("ParseFailureReason(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseFailureReason("3"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("reason 3 accepted: %v", err)
	}
}

func TestFilterValidateAndEmpty(t *testing.T) {
	if !(Filter{}).IsEmpty() {
		t.Fatal("zero filter not empty")
	}
	st := StatusPending
	for _, f := range []Filter{{Queue: "q"}, {Status: &st}, {OlderThan: time.Hour}, {Text: "x"}, {IDs: []int64{1}}} {
		if f.IsEmpty() {
			t.Errorf("%+v reported empty", f)
		}
	}
	now := time.Now()
	bad := []struct {
		f     Filter
		table Table
		field string
	}{
		{Filter{Status: &st}, TableDLQ, "status"},
		{Filter{From: now, To: now.Add(-time.Hour)}, TableDLQ, "from"},
		{Filter{OlderThan: -time.Second}, TableArchive, "older_than"},
		{Filter{Text: strings.Repeat("x", MaxFilterTextLen+1)}, TableHot, "text"},
	}
	for _, c := range bad {
		var ve *ValidationError
		if err := c.f.Validate(c.table); !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("Validate(%+v, %s) = %v, want field %s", c.f, c.table, err, c.field)
		}
	}
	if err := CheckBulk(TableDLQ, Filter{}, false); !errors.Is(err, ErrEmptyFilter) {
		t.Errorf("CheckBulk empty = %v", err)
	}
	if err := CheckBulk(TableDLQ, Filter{}, true); err != nil {
		t.Errorf("CheckBulk all = %v", err)
	}
}

func TestQueueUpdateApply(t *testing.T) {
	zero, four, paused := 0, 4, true
	s := QueueUpdate{MaxWorkers: &four, Paused: &paused}.Apply(QueueSettings{Name: "q", ZombieTimeoutSeconds: 30})
	if s != (QueueSettings{Name: "q", Paused: true, MaxWorkers: 4, ZombieTimeoutSeconds: 30}) {
		t.Fatalf("Apply = %+v", s)
	}
	s = QueueUpdate{ZombieTimeoutSeconds: &zero}.Apply(s)
	if s.ZombieTimeoutSeconds != 0 || s.MaxWorkers != 4 {
		t.Fatalf("clear = %+v", s)
	}
}

func TestClipAndHeadline(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ééééé", 6, "é…"}, // never a broken character: é is 2 bytes, … is 3
		{"abcdef", 2, "ab"},
	}
	for _, c := range cases {
		if got := Clip(c.in, c.n); got != c.want || len(got) > max(c.n, len(c.in)) {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := Headline("boom\ngoroutine 1 [running]:", 100); got != "boom" {
		t.Errorf("Headline = %q", got)
	}
}
