package nap

import (
	"testing"
	"time"
)

// Until never returns before its instant: the property callers rely on.
// How close after it returns is measured, not asserted (BenchmarkUntil).
func TestUntilNeverReturnsEarly(t *testing.T) {
	for _, d := range []time.Duration{0, 10 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond} {
		at := time.Now().Add(d)
		for !Until(at, 0) {
		}
		if now := time.Now(); now.Before(at) {
			t.Fatalf("Until(%v) returned %v early", d, at.Sub(now))
		}
	}
	// In chunks: false until the instant, then true.
	at := time.Now().Add(time.Millisecond)
	for !Until(at, 50*time.Microsecond) {
	}
	if time.Now().Before(at) {
		t.Fatal("chunked Until returned true early")
	}
}

// BenchmarkUntil reports how late a 500 us nap returns.
func BenchmarkUntil(b *testing.B) {
	var late time.Duration
	for b.Loop() {
		at := time.Now().Add(500 * time.Microsecond)
		Until(at, 0)
		late += time.Since(at)
	}
	b.ReportMetric(float64(late.Nanoseconds())/float64(b.N)/1000, "us-late/op")
}
