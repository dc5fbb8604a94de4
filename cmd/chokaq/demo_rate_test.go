package main

import (
	"reflect"
	"testing"
	"time"
)

// The demo counts claims by the store's rule: a window opens at the first
// claim at or after the last one's end, so a claim just before an end
// and one just after fall in different windows, and a gap opens the next
// window late.
func TestPerWindowOpensAWindowAtTheFirstClaimAfterTheLastClosed(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = t0.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	for _, tt := range []struct {
		claims []time.Time
		want   []int
	}{
		{nil, nil},
		{at(0, 0, 0, 999, 1000, 1000, 2500), []int{4, 2, 1}},
		{at(1500, 0, 3400, 2499, 2500), []int{1, 2, 2}}, // out of order; 1500 opens [1500, 2500), 2500 the next
	} {
		if got := perWindow(tt.claims, time.Second); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("perWindow(%v) = %v, want %v", tt.claims, got, tt.want)
		}
	}
}
