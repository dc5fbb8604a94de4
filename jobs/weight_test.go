package jobs

import (
	"errors"
	"testing"
)

func TestAQueueWeighsOneUnlessItSetsAWeightFrom1To1000(t *testing.T) {
	if w := (QueueSettings{}).ClaimWeight(); w != DefaultQueueWeight {
		t.Fatalf("ClaimWeight() of a queue without a weight = %d, want %d", w, DefaultQueueWeight)
	}
	for _, n := range []int{1, 9, MaxQueueWeight} {
		u := QueueUpdate{Weight: &n}
		if err := u.Validate(); err != nil || u.IsZero() {
			t.Fatalf("weight %d: Validate() = %v, IsZero %v", n, err, u.IsZero())
		}
		if s := u.Apply(QueueSettings{Name: "q"}); s.Weight != n || s.ClaimWeight() != n || s.Equal(QueueSettings{Name: "q"}) {
			t.Fatalf("weight %d applied: %+v", n, s)
		}
	}
	for _, n := range []int{0, -1, MaxQueueWeight + 1} {
		var ve *ValidationError
		if err := (QueueUpdate{Weight: &n}).Validate(); !errors.As(err, &ve) || ve.Field != "weight" || ve.Value != n {
			t.Errorf("Validate(weight %d) = %v, want a ValidationError of weight naming %d", n, err, n)
		}
	}
}
