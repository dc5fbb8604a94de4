package jobs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestQueueSettingsEqualComparesEveryField: a field added to QueueSettings
// and left out of Equal fails here.
func TestQueueSettingsEqualComparesEveryField(t *testing.T) {
	base := QueueSettings{Name: "q"}
	typ := reflect.TypeFor[QueueSettings]()
	for i := range typ.NumField() {
		other := base
		f := reflect.ValueOf(&other).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Uint8:
			f.SetUint(1)
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]int{"k": 1}))
		case reflect.Struct:
			f.Set(reflect.ValueOf(RateLimit{Count: 1, Window: time.Second}))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if base.Equal(other) || other.Equal(base) {
			t.Errorf("Equal does not compare %s", typ.Field(i).Name)
		}
		if !other.Equal(other) {
			t.Errorf("Equal: %s not equal to itself", typ.Field(i).Name)
		}
	}
}

func TestKeyLimitsApplyAndValidate(t *testing.T) {
	two, hold := 2, SequenceHold
	s := QueueUpdate{MaxWorkersPerKey: &two, KeyLimits: map[string]int{"big": 5, "small": 1}, SequenceOnDeadLetter: &hold}.
		Apply(QueueSettings{Name: "q"})
	if s.KeyLimit("big") != 5 || s.KeyLimit("small") != 1 || s.KeyLimit("other") != 2 || s.SequenceOnDeadLetter != SequenceHold {
		t.Fatalf("Apply = %+v", s)
	}
	s = QueueUpdate{KeyLimits: map[string]int{"big": 0}}.Apply(s)
	if s.KeyLimit("big") != 2 || len(s.KeyLimits) != 1 {
		t.Fatalf("a key's limit of 0 should remove it: %+v", s)
	}
	s = QueueUpdate{KeyLimits: map[string]int{"small": 0}}.Apply(s)
	if s.KeyLimits != nil {
		t.Fatalf("the last key's limit removed: %+v", s.KeyLimits)
	}
	if !(QueueUpdate{}).IsZero() || (QueueUpdate{KeyLimits: map[string]int{}}).IsZero() {
		t.Fatal("IsZero")
	}
	neg, huge := -1, MaxQueueWorkers+1
	bad := SequencePolicy(9)
	many := map[string]int{}
	for i := range MaxKeyLimits + 1 {
		many[strings.Repeat("k", 1+i%50)+time.Duration(i).String()] = 1
	}
	for _, c := range []struct {
		u     QueueUpdate
		field string
	}{
		{QueueUpdate{MaxWorkersPerKey: &neg}, "max_workers_per_key"},
		{QueueUpdate{MaxWorkersPerKey: &huge}, "max_workers_per_key"},
		{QueueUpdate{KeyLimits: map[string]int{"": 1}}, "key_limits"},
		{QueueUpdate{KeyLimits: map[string]int{"a": -1}}, "key_limits.a"},
		{QueueUpdate{KeyLimits: map[string]int{strings.Repeat("x", MaxFlowKeyLen+1): 1}}, "key_limits"},
		{QueueUpdate{KeyLimits: many}, "key_limits"},
		{QueueUpdate{SequenceOnDeadLetter: &bad}, "sequence_on_dead_letter"},
	} {
		var ve *ValidationError
		if err := c.u.Validate(); !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.u, err, c.field)
		}
	}
	for _, p := range []EnqueueParams{
		{Type: "t", ConcurrencyKey: strings.Repeat("x", MaxFlowKeyLen+1)},
		{Type: "t", SequenceKey: "a\x00b"},
	} {
		if _, err := p.Normalize(Limits{}); err == nil {
			t.Errorf("Normalize(%+v): no error", p)
		}
	}
	if p, err := ParseSequencePolicy("HOLD"); err != nil || p != SequenceHold || p.String() != "hold" {
		t.Fatalf("ParseSequencePolicy(HOLD) = %v, %v", p, err)
	}
	if _, err := ParseSequencePolicy("skip"); err == nil {
		t.Fatal("ParseSequencePolicy(skip): no error")
	}
}
