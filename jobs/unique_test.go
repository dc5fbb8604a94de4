package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func uniqueHash(t *testing.T, p EnqueueParams) [UniqueHashLen]byte {
	t.Helper()
	p, err := p.Normalize(Limits{})
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	h, ok, err := p.UniqueHash()
	if err != nil || !ok {
		t.Fatalf("UniqueHash: ok %v, %v", ok, err)
	}
	return h
}

func TestUniqueHashComparesArgumentsAsCanonicalJSON(t *testing.T) {
	by := &UniqueOpts{ByArgs: true}
	a := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"a":1,"b":[true,null,"x"]}`), Unique: by})
	same := []string{
		`{ "b" : [ true, null, "x" ], "a" : 1.0 }`,
		`{"a":1e0,"b":[true,null,"\u0078"]}`,
		`{"a":0,"a":1,"b":[true,null,"x"]}`, // the last of a repeated key, as decoding keeps
	}
	for _, s := range same {
		if h := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(s), Unique: by}); h != a {
			t.Errorf("%s: a different key from the same arguments", s)
		}
	}
	differ := []EnqueueParams{
		{Type: "t", Payload: []byte(`{"a":2,"b":[true,null,"x"]}`), Unique: by},
		{Type: "t", Payload: []byte(`{"a":1,"b":[null,true,"x"]}`), Unique: by},
		{Type: "t", Payload: []byte(`{"a":"1","b":[true,null,"x"]}`), Unique: by},
		{Type: "u", Payload: []byte(`{"a":1,"b":[true,null,"x"]}`), Unique: by},
		{Type: "t", Payload: []byte(`{"a":1,"b":[true,null,"x"]}`), Unique: &UniqueOpts{ByArgs: true, Period: time.Hour}},
		{Type: "t", Payload: []byte(`{"a":1,"b":[true,null,"x"]}`), Unique: &UniqueOpts{ByArgs: true, ByQueue: true}},
		{Type: "t", Payload: []byte(`{"a":1,"b":[true,null,"x"]}`), Unique: &UniqueOpts{}},
	}
	for i, p := range differ {
		if h := uniqueHash(t, p); h == a {
			t.Errorf("differ[%d] %+v: the same key", i, p)
		}
	}
}

func TestUniqueHashByFields(t *testing.T) {
	by := &UniqueOpts{Fields: []string{"customer", "report"}}
	a := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"customer":7,"report":"r","at":1}`), Unique: by})
	if h := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"at":2,"report":"r","customer":7.0}`),
		Unique: &UniqueOpts{Fields: []string{"report", "customer", "report"}}}); h != a {
		t.Error("another value of an unnamed field, or the fields in another order, gave another key")
	}
	if h := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"customer":8,"report":"r"}`), Unique: by}); h == a {
		t.Error("another customer gave the same key")
	}
	absent := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"customer":7}`), Unique: by})
	null := uniqueHash(t, EnqueueParams{Type: "t", Payload: []byte(`{"customer":7,"report":null}`), Unique: by})
	if absent == null || absent == a {
		t.Error("an absent field is neither null nor a value")
	}
}

func TestUniqueHashQueueIgnoresCase(t *testing.T) {
	by := &UniqueOpts{ByQueue: true}
	if uniqueHash(t, EnqueueParams{Type: "t", Queue: "Mail", Unique: by}) != uniqueHash(t, EnqueueParams{Type: "t", Queue: "mail", Unique: by}) {
		t.Error("queue names compare ignoring case; their keys must too")
	}
	if uniqueHash(t, EnqueueParams{Type: "t", Queue: "a", Unique: by}) == uniqueHash(t, EnqueueParams{Type: "t", Queue: "b", Unique: by}) {
		t.Error("two queues, one key")
	}
	if uniqueHash(t, EnqueueParams{Type: "t", Queue: "a", Unique: &UniqueOpts{}}) != uniqueHash(t, EnqueueParams{Type: "t", Queue: "b", Unique: &UniqueOpts{}}) {
		t.Error("without ByQueue the queue is not in the key")
	}
}

func TestUniqueBucket(t *testing.T) {
	h := time.Hour
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if a, b := UniqueBucket(at("2030-01-01T10:59:59.999Z"), h), UniqueBucket(at("2030-01-01T11:00:00Z"), h); a+1 != b {
		t.Errorf("buckets across the hour %d, %d: want consecutive", a, b)
	}
	if a, b := UniqueBucket(at("2030-01-01T11:00:00Z"), h), UniqueBucket(at("2030-01-01T11:59:59.999Z"), h); a != b {
		t.Errorf("one hour, two buckets %d, %d", a, b)
	}
	if b := UniqueBucket(at("1969-12-31T23:59:59Z"), h); b != -1 {
		t.Errorf("the hour before 1970 is bucket %d, want -1 (floor)", b)
	}
	if b := UniqueBucket(at("2030-01-01T11:00:00Z"), 0); b != 0 {
		t.Errorf("no period, bucket %d", b)
	}
	k, ok, err := EnqueueParams{Type: "t", Queue: "default", Unique: &UniqueOpts{Period: h}}.UniqueKeyAt(at("2030-01-01T11:30:00Z"))
	if err != nil || !ok || k.Bucket != UniqueBucket(at("2030-01-01T11:00:00Z"), h) {
		t.Errorf("UniqueKeyAt = %v %v %v", k, ok, err)
	}
}

func TestUniqueOptsRefused(t *testing.T) {
	for _, c := range []struct {
		u       UniqueOpts
		payload string
		field   string
	}{
		{UniqueOpts{Period: time.Millisecond}, "", "unique.period"},
		{UniqueOpts{Period: time.Second + time.Microsecond}, "", "unique.period"},
		{UniqueOpts{Period: -time.Hour}, "", "unique.period"},
		{UniqueOpts{States: UniqueArchived}, "", "unique.states"},
		{UniqueOpts{States: UniqueActive | 1<<6}, "", "unique.states"},
		{UniqueOpts{Fields: []string{""}}, `{}`, "unique.fields"},
		{UniqueOpts{Fields: make([]string, MaxUniqueFields+1)}, `{}`, "unique.fields"},
		{UniqueOpts{ByArgs: true}, `{"a":`, "payload"},
		{UniqueOpts{ByArgs: true}, `{} {}`, "payload"},
		{UniqueOpts{Fields: []string{"a"}}, `[1]`, "payload"},
		{UniqueOpts{Fields: []string{"a"}}, `null`, "payload"},
	} {
		_, err := EnqueueParams{Type: "t", Payload: []byte(c.payload), Unique: &c.u}.Normalize(Limits{})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%+v %q: %v, want a ValidationError on %s", c.u, c.payload, err, c.field)
		}
	}
	if _, err := (EnqueueParams{Type: "t", Unique: &UniqueOpts{ByArgs: true, Period: time.Hour, States: UniqueActive | UniqueArchived}}).Normalize(Limits{}); err != nil {
		t.Errorf("an empty payload, unique by args: %v", err)
	}
}

func TestUniqueStatesHolds(t *testing.T) {
	for _, c := range []struct {
		s              UniqueStates
		hot, arch, dlq bool
		name           string
	}{
		{0, true, false, false, "Pending|Fetched|Processing"},
		{UniqueActive | UniqueArchived, true, true, false, "Pending|Fetched|Processing|Archived"},
		{UniqueActive | UniqueDeadLettered, true, false, true, "Pending|Fetched|Processing|DeadLettered"},
	} {
		if c.s.Holds(TableHot) != c.hot || c.s.Holds(TableArchive) != c.arch || c.s.Holds(TableDLQ) != c.dlq {
			t.Errorf("%v: Holds wrong", c.s)
		}
		if got := c.s.Effective().String(); got != c.name {
			t.Errorf("String = %q, want %q", got, c.name)
		}
	}
}

// FuzzCanonicalJSON checks that the canonical form is JSON, is its own
// canonical form, and that two spellings of one value get one key.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,2e3,-0]}`, `"<&>"`, `[{"x":{"y":null}}]`, `1e400`, `123456789012345678901234567890`, `0.1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := CanonicalJSON(b)
		if err != nil {
			if json.Valid(b) {
				t.Fatalf("valid JSON %q refused: %v", b, err)
			}
			return
		}
		if len(c) == 0 {
			if len(bytes.TrimSpace(b)) != 0 {
				t.Fatalf("%q: empty canonical form", b)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("%q: canonical form %q is not JSON", b, c)
		}
		again, err := CanonicalJSON(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("%q: canonical %q is not its own canonical form (%q, %v)", b, c, again, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: canonical form given, but it does not decode: %v", b, err)
		}
		re, err := json.MarshalIndent(v, "", "  ") // the same value, spelled otherwise
		if err != nil {
			t.Fatal(err)
		}
		if rc, err := CanonicalJSON(re); err != nil || !bytes.Equal(rc, c) {
			t.Fatalf("%q and %q: one value, canonical forms %q and %q (%v)", b, re, c, rc, err)
		}
	})
}

// TestUniqueHashAfterNormalizeIsTheHashOfWhatItHolds: Normalize keeps the
// hash it computed, and UniqueHash answers from it only while the job's
// parts are those it was computed from: a payload, queue or option changed
// after Normalize gets its own hash.
func TestUniqueHashAfterNormalizeIsTheHashOfWhatItHolds(t *testing.T) {
	p, err := EnqueueParams{Type: "t", Payload: []byte(`{"a":1}`), Unique: &UniqueOpts{ByArgs: true, ByQueue: true}}.Normalize(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.unique == nil {
		t.Fatal("Normalize kept no hash")
	}
	fresh := func(p EnqueueParams) [UniqueHashLen]byte {
		p.unique = nil
		h, _, err := p.UniqueHash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h, _, _ := p.UniqueHash(); h != fresh(p) {
		t.Fatal("the kept hash differs from the hash of the job")
	}
	changed := []func(*EnqueueParams){
		func(p *EnqueueParams) { p.Payload = []byte(`{"a":2}`) },
		func(p *EnqueueParams) { p.Payload[5] = '3' }, // in place
		func(p *EnqueueParams) { p.Queue = "other" },
		func(p *EnqueueParams) { p.Type = "u" },
		func(p *EnqueueParams) { p.Unique = &UniqueOpts{ByArgs: true} },
		func(p *EnqueueParams) { p.Unique.Period = time.Hour },
	}
	for i, change := range changed {
		q := p
		q.Payload = bytes.Clone(p.Payload)
		u := *p.Unique
		q.Unique = &u
		change(&q)
		if h, _, _ := q.UniqueHash(); h != fresh(q) || h == fresh(p) {
			t.Errorf("change %d: the hash is not the changed job's", i)
		}
	}
}

func BenchmarkUniqueHash(b *testing.B) {
	payload := bytes.Repeat([]byte(`{"customer":7,"lines":[1,2,3,4,5,6,7,8],"note":"x"},`), 200)
	payload = append(append([]byte("["), payload[:len(payload)-1]...), ']')
	p := EnqueueParams{Type: "t", Queue: "q", Payload: payload, Unique: &UniqueOpts{ByArgs: true}}
	n, err := p.Normalize(Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Computed", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = p.UniqueHash()
		}
	})
	b.Run("AfterNormalize", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = n.UniqueHash()
		}
	})
}
