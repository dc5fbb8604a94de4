package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UniqueStates is a set of the places a job holds its unique key in. The
// hot states (Pending, including jobs scheduled for later, Fetched and
// Processing) are always in it: a job moves among them by retry, snooze and
// rescue without a new enqueue, so a key it gave up there could not be
// taken back without refusing a claim. Archived and DeadLettered are the
// options: a finished job in a counted table goes on holding its key (for
// its period, or until retention removes it).
type UniqueStates uint8

// The states of UniqueStates.
const (
	UniquePending UniqueStates = 1 << iota
	UniqueFetched
	UniqueProcessing
	UniqueArchived
	UniqueDeadLettered

	// UniqueActive is the hot states, the default (zero means it).
	UniqueActive = UniquePending | UniqueFetched | UniqueProcessing
	uniqueAll    = UniqueActive | UniqueArchived | UniqueDeadLettered
)

// Effective returns s with its default applied: zero is UniqueActive.
func (s UniqueStates) Effective() UniqueStates {
	if s == 0 {
		return UniqueActive
	}
	return s
}

// Holds reports whether a job in table t keeps its key under s.
func (s UniqueStates) Holds(t Table) bool {
	switch t {
	case TableHot:
		return true
	case TableArchive:
		return s.Effective()&UniqueArchived != 0
	case TableDLQ:
		return s.Effective()&UniqueDeadLettered != 0
	}
	return false
}

// String lists the states, as "Pending|Fetched|Processing|Archived".
func (s UniqueStates) String() string {
	var names []string
	for i, n := range []string{"Pending", "Fetched", "Processing", "Archived", "DeadLettered"} {
		if s&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if rest := s &^ uniqueAll; rest != 0 {
		names = append(names, "UniqueStates("+strconv.Itoa(int(rest))+")")
	}
	return strings.Join(names, "|")
}

// Limits of a unique key.
const (
	MaxUniqueFields = 16
	// MinUniquePeriod is the shortest period: buckets shorter than the
	// gap between two servers' clocks would be noise.
	MinUniquePeriod = time.Second
	// UniqueHashLen is the length of a key's hash (SHA-256), as stored.
	UniqueHashLen = sha256.Size
)

// UniqueOpts makes a job unique: while a job with the same key holds it, an
// enqueue of another returns the holder's ID with Duplicate set instead of
// adding a job. The key is always the job's Type, plus what the options
// name; &UniqueOpts{} is unique by type alone.
type UniqueOpts struct {
	// ByArgs adds the whole payload, compared as canonical JSON (see
	// CanonicalJSON): key order, white space and number spelling do not
	// matter.
	ByArgs bool
	// Fields adds only these top-level fields of the payload (a JSON
	// object), each compared as canonical JSON; a field that is absent
	// differs from one that is null. Implies nothing about the others.
	Fields []string
	// ByQueue adds the queue (ignoring case, as queue names compare).
	ByQueue bool
	// Period adds a time bucket on the store's clock: the key is taken for
	// the bucket the enqueue falls in, floor(unix ms / period), so "one per
	// hour" is Period: time.Hour. Whole milliseconds, at least
	// MinUniquePeriod; zero is no bucket.
	Period time.Duration
	// States are where a job holds its key (zero is UniqueActive).
	States UniqueStates
}

// UniqueKey is a job's unique key as stored: the hash of everything the
// options name but the period, and the period's bucket (0 without one).
// The hash is compared as bytes, never by a collation.
type UniqueKey struct {
	Hash   [UniqueHashLen]byte
	Bucket int64
}

// String returns the key as operators see it: the hash in hex, then "/"
// and the bucket when there is one.
func (k UniqueKey) String() string {
	s := hex.EncodeToString(k.Hash[:])
	if k.Bucket != 0 {
		s += "/" + strconv.FormatInt(k.Bucket, 10)
	}
	return s
}

// UniqueBucket returns the bucket of instant now for period: floor of its
// Unix milliseconds over the period's; 0 when period is 0. SQL Server
// computes the same from SYSUTCDATETIME() (DATEDIFF_BIG in milliseconds).
func UniqueBucket(now time.Time, period time.Duration) int64 {
	p := period.Milliseconds()
	if p <= 0 {
		return 0
	}
	ms := now.UnixMilli()
	b := ms / p
	if ms%p < 0 {
		b--
	}
	return b
}

// Validate checks the options, naming the one refused, apart from any
// payload (a kind's policy is checked before it has jobs).
func (u *UniqueOpts) Validate() error {
	if len(u.Fields) > MaxUniqueFields {
		return &ValidationError{Field: "unique.fields", Value: len(u.Fields), Rule: "at most " + itoa(MaxUniqueFields) + " fields"}
	}
	for _, f := range u.Fields {
		if f == "" {
			return &ValidationError{Field: "unique.fields", Value: f, Rule: "must not be empty"}
		}
		if err := checkText("unique.fields", f, MaxTypeLen); err != nil {
			return err
		}
	}
	if u.Period != 0 {
		if u.Period < MinUniquePeriod || u.Period > MaxDelay {
			return &ValidationError{Field: "unique.period", Value: u.Period, Rule: "must be between " + MinUniquePeriod.String() + " and " + MaxDelay.String()}
		}
		if u.Period%time.Millisecond != 0 {
			return &ValidationError{Field: "unique.period", Value: u.Period, Rule: "must be whole milliseconds"}
		}
	}
	s := u.States.Effective()
	if s&^uniqueAll != 0 {
		return &ValidationError{Field: "unique.states", Value: u.States, Rule: "must hold only Pending, Fetched, Processing, Archived and DeadLettered"}
	}
	if s&UniqueActive != UniqueActive {
		return &ValidationError{Field: "unique.states", Value: u.States,
			Rule: "must include Pending, Fetched and Processing: a job moves among them without a new enqueue"}
	}
	return nil
}

// uniqueVersion starts every hashed key, so a change of the encoding is a
// change of every key, never a silent collision with the old ones.
const uniqueVersion = "chokaq.unique.v1"

// UniqueHash returns the hash of p's unique key, or ok false when p is not
// unique. p must be normalized (its queue filled in). A payload that is
// not JSON, or not an object when Fields are named, is a
// *ValidationError.
func (p EnqueueParams) UniqueHash() (h [UniqueHashLen]byte, ok bool, err error) {
	u := p.Unique
	if u == nil {
		return h, false, nil
	}
	if p.unique.of(p) {
		return p.unique.hash, true, nil
	}
	if err := u.Validate(); err != nil {
		return h, false, err
	}
	d := sha256.New()
	var n [8]byte
	part := func(b []byte) { // length-prefixed, so no two keys' parts run together
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		d.Write(n[:])
		d.Write(b)
	}
	part([]byte(uniqueVersion))
	part([]byte(p.Type))
	if u.ByQueue {
		part([]byte("queue"))
		part([]byte(QueueKey(p.Queue)))
	}
	if u.Period != 0 {
		part([]byte("period"))
		binary.BigEndian.PutUint64(n[:], uint64(u.Period.Milliseconds()))
		d.Write(n[:])
	}
	if u.ByArgs {
		c, err := CanonicalJSON(p.Payload)
		if err != nil {
			return h, false, &ValidationError{Field: "payload", Value: p.Payload, Rule: "must be JSON to be unique by its arguments: " + err.Error()}
		}
		part([]byte("args"))
		part(c)
	}
	if len(u.Fields) > 0 {
		fields := slices.Clone(u.Fields)
		slices.Sort(fields)
		fields = slices.Compact(fields)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(p.Payload, &obj); err != nil || obj == nil {
			return h, false, &ValidationError{Field: "payload", Value: p.Payload, Rule: "must be a JSON object to be unique by fields " + strings.Join(fields, ", ")}
		}
		part([]byte("fields"))
		for _, f := range fields {
			part([]byte(f))
			v, present := obj[f]
			if !present {
				part(nil) // absent: an empty part, which no JSON value encodes to
				continue
			}
			c, err := CanonicalJSON(v)
			if err != nil {
				return h, false, &ValidationError{Field: "payload", Value: p.Payload, Rule: "field " + f + ": " + err.Error()}
			}
			part(c)
		}
	}
	d.Sum(h[:0])
	return h, true, nil
}

// uniqueMemo is a hash and the parts of the params it was computed from.
// A memo answers only for params whose parts are all still equal (the
// payload by its bytes, which costs a comparison, not a parse and a
// hash), so a caller that changes a Normalized job's payload, queue or
// options gets a new hash, never a stale one.
type uniqueMemo struct {
	typ, queue string
	payload    []byte
	opts       UniqueOpts
	hash       [UniqueHashLen]byte
}

func (p EnqueueParams) memo(h [UniqueHashLen]byte) *uniqueMemo {
	o := *p.Unique
	o.Fields = slices.Clone(o.Fields)
	return &uniqueMemo{typ: p.Type, queue: p.Queue, payload: bytes.Clone(p.Payload), opts: o, hash: h}
}

// of reports whether m was computed from p's parts.
func (m *uniqueMemo) of(p EnqueueParams) bool {
	if m == nil || p.Unique == nil {
		return false
	}
	u := p.Unique
	return m.typ == p.Type && m.queue == p.Queue && bytes.Equal(m.payload, p.Payload) &&
		m.opts.ByArgs == u.ByArgs && m.opts.ByQueue == u.ByQueue && m.opts.Period == u.Period &&
		m.opts.States == u.States && slices.Equal(m.opts.Fields, u.Fields)
}

// UniqueKeyAt returns p's key for an enqueue at instant now (the store's
// clock), or ok false when p is not unique.
func (p EnqueueParams) UniqueKeyAt(now time.Time) (UniqueKey, bool, error) {
	h, ok, err := p.UniqueHash()
	if !ok || err != nil {
		return UniqueKey{}, ok, err
	}
	return UniqueKey{Hash: h, Bucket: UniqueBucket(now, p.Unique.Period)}, true, nil
}

// CanonicalJSON returns the canonical form of a JSON value: no white space,
// object keys sorted by their bytes (a repeated key keeps its last value,
// as decoding does), strings in Go's escaping without HTML escapes, and
// numbers by value: an integer literal as its decimal digits, any other
// number as the shortest float64 form ('g', with an integral value below
// 2^53 as an integer), so 1, 1.0 and 1e0 are one number. An empty input is
// an empty output (a job without a payload).
func CanonicalJSON(b []byte) ([]byte, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, &json.SyntaxError{Offset: dec.InputOffset()}
	}
	var out bytes.Buffer
	if err := canonical(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func canonical(w *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, k)
			w.WriteByte(':')
			if err := canonical(w, v[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := canonical(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case string:
		writeString(w, v)
	case json.Number:
		w.WriteString(canonicalNumber(string(v)))
	case bool:
		w.WriteString(strconv.FormatBool(v))
	case nil:
		w.WriteString("null")
	}
	return nil
}

func writeString(w *bytes.Buffer, s string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.Truncate(w.Len() - 1)
}

// canonicalNumber spells a JSON number by its value (see CanonicalJSON).
func canonicalNumber(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		neg := strings.HasPrefix(s, "-")
		d := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
		if d == "" {
			return "0"
		}
		if neg {
			return "-" + d
		}
		return d
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of float64's range: keep the literal
		return s
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		if f == 0 {
			return "0"
		}
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
