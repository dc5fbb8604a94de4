package jobs

import (
	"errors"
	"fmt"
	"strconv"
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
	_, err := ParseFailureReason("3")
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("reason 3 accepted: %v", err)
	}
	// The error offers every reason, the newest too.
	for r, n := range reasonNames {
		if want := fmt.Sprintf("%s(%d)", n, int(r)); !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not offer %s", err, want)
		}
	}
}

// The numbers are a wire format: they are stored in SQL Server columns,
// hard-coded in the rescue statements and shared with the .NET
// implementation (the table in docs/design.md, Tables and identity), so
// renumbering a constant must fail here.
func TestReasonAndStatusNumbers(t *testing.T) {
	reasons := []struct {
		r    FailureReason
		n    int
		name string
	}{
		{ReasonMaxRetriesExceeded, 0, "MaxRetriesExceeded"},
		{ReasonCancelled, 1, "Cancelled"},
		{ReasonZombie, 2, "Zombie"},
		{ReasonFatal, 6, "Fatal"},
		{ReasonTimeout, 7, "Timeout"},
		{ReasonHeartbeatFailure, 9, "HeartbeatFailure"},
		{ReasonRetryLifetimeExpired, 10, "RetryLifetimeExpired"},
		{ReasonSnoozeLimitExceeded, 11, "SnoozeLimitExceeded"},
		{ReasonDependencyFailed, 12, "DependencyFailed"},
	}
	known := map[int]bool{}
	for _, c := range reasons {
		known[c.n] = true
		if int(c.r) != c.n || c.r.String() != c.name {
			t.Errorf("%s = %d, want %s = %d", c.r, int(c.r), c.name, c.n)
		}
		if got, err := ParseFailureReason(strconv.Itoa(c.n)); err != nil || got != c.r {
			t.Errorf("ParseFailureReason(%d) = %v, %v; want %s", c.n, got, err, c.name)
		}
	}
	// A code the table above does not list would reach operators undocumented.
	for n := -1; n <= 20; n++ {
		if FailureReason(n).Valid() != known[n] {
			t.Errorf("FailureReason(%d).Valid() = %v, want %v", n, FailureReason(n).Valid(), known[n])
		}
	}
	statuses := []struct {
		s    Status
		n    int
		name string
	}{{StatusPending, 0, "Pending"}, {StatusFetched, 1, "Fetched"}, {StatusProcessing, 2, "Processing"}}
	for _, c := range statuses {
		if int(c.s) != c.n || c.s.String() != c.name || !c.s.Valid() {
			t.Errorf("%s = %d (valid %v), want %s = %d", c.s, int(c.s), c.s.Valid(), c.name, c.n)
		}
	}
	if Status(-1).Valid() || Status(3).Valid() {
		t.Error("a status outside 0..2 is valid")
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
	four, paused := 4, true
	var zero time.Duration
	s := QueueUpdate{MaxWorkers: &four, Paused: &paused}.Apply(QueueSettings{Name: "q", ZombieTimeout: 30 * time.Second})
	if !s.Equal(QueueSettings{Name: "q", Paused: true, MaxWorkers: 4, ZombieTimeout: 30 * time.Second}) {
		t.Fatalf("Apply = %+v", s)
	}
	s = QueueUpdate{ZombieTimeout: &zero}.Apply(s)
	if s.ZombieTimeout != 0 || s.MaxWorkers != 4 {
		t.Fatalf("clear = %+v", s)
	}
}

// Queue timeouts are durations in Go and whole seconds in the stores: a
// fraction of a second is refused, not rounded away.
func TestQueueUpdateTimeouts(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	for _, c := range []struct {
		u    QueueUpdate
		want string
	}{
		{QueueUpdate{ZombieTimeout: d(1500 * time.Millisecond)}, "zombie_timeout 1.5s: must be whole seconds"},
		{QueueUpdate{ExecutionTimeout: d(-time.Second)}, "execution_timeout -1s: must be between 0"},
		{QueueUpdate{ZombieTimeout: d(31 * 24 * time.Hour)}, "zombie_timeout 744h0m0s: must be between 0"},
	} {
		if err := c.u.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.u, err, c.want)
		}
	}
	if err := (QueueUpdate{ZombieTimeout: d(90 * time.Second), ExecutionTimeout: d(MaxQueueTimeout)}).Validate(); err != nil {
		t.Errorf("whole seconds at the cap: %v", err)
	}
}

// A queue's zombie timeout set at run time (the dashboard, Client.UpdateQueue,
// chokaq queues set) must exceed 3 x the default heartbeat maximum, as
// chokaq.New requires of a configured one: a 1s timeout would dead-letter a
// healthy job of a processor with default heartbeats if rescue applied it.
func TestQueueZombieTimeoutBelowThreeDefaultHeartbeatsIsRefused(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	for _, bad := range []time.Duration{time.Second, 30 * time.Second, MinQueueZombieTimeout} {
		if err := (QueueUpdate{ZombieTimeout: d(bad)}).Validate(); err != nil {
			t.Errorf("Validate refuses zombie timeout %v: %v; a store takes it (a configured process checks its own heartbeats)", bad, err)
		}
		err := QueueUpdate{ZombieTimeout: d(bad)}.ValidateAtRunTime()
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "zombie_timeout "+bad.String()+": must be more than 36s") {
			t.Errorf("zombie timeout %v: %v, want a refusal naming the 36s floor", bad, err)
		}
	}
	for _, good := range []time.Duration{0, MinQueueZombieTimeout + time.Second, time.Hour} {
		if err := (QueueUpdate{ZombieTimeout: d(good)}).ValidateAtRunTime(); err != nil {
			t.Errorf("zombie timeout %v refused: %v", good, err)
		}
	}
}

// Rescue waits at least MissedBeats x a job's recorded heartbeat maximum,
// whatever the timeout it would otherwise use.
func TestZombieTimeoutNeverCutsAJobsOwnHeartbeatsShort(t *testing.T) {
	for _, c := range []struct{ timeout, heartbeatMax, want time.Duration }{
		{10 * time.Minute, 12 * time.Second, 10 * time.Minute},
		{40 * time.Second, 20 * time.Second, time.Minute},
		{time.Second, 0, time.Second},
		{time.Minute, time.Hour, 3 * time.Hour},
	} {
		if got := ZombieTimeout(c.timeout, c.heartbeatMax); got != c.want {
			t.Errorf("ZombieTimeout(%v, %v) = %v, want %v", c.timeout, c.heartbeatMax, got, c.want)
		}
	}
	for _, bad := range []time.Duration{-time.Second, MaxHeartbeatInterval + time.Millisecond} {
		if err := (StartParams{DefaultTimeout: time.Minute, HeartbeatMax: bad}).Validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("StartParams.HeartbeatMax %v: %v, want ErrInvalidArgument", bad, err)
		}
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
