package processor

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"time"
)

// Delay returns the wait before the next execution after attempt failed
// (attempt counts from 1):
//
//	min(BaseDelay * BackoffMultiplier^(attempt-1), MaxDelay - JitterMaxDelay) + jitter
//
// where jitter is in [0, JitterMaxDelay] (none when JitterMaxDelay is
// negative, see NoJitter). The delay never exceeds MaxDelay,
// and retries that reach the cap still spread over the last
// JitterMaxDelay instead of all falling due at once. jitter01 is a uniform
// sample in [0, 1).
func (p RetryPolicy) Delay(attempt int, jitter01 float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	jitterMax := min(max(p.JitterMaxDelay, 0), p.MaxDelay)
	ceiling := float64(p.MaxDelay - jitterMax)
	base := float64(p.BaseDelay) * math.Pow(p.BackoffMultiplier, float64(attempt-1))
	if base > ceiling || math.IsInf(base, 0) || math.IsNaN(base) {
		base = ceiling
	}
	jitter01 = min(max(jitter01, 0), 1)
	return time.Duration(base) + time.Duration(jitter01*float64(jitterMax))
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
