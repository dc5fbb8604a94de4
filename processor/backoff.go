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
//	min(BaseDelay * BackoffMultiplier^(attempt-1), MaxDelay) + jitter
//
// where jitter is in [0, JitterMaxDelay], and the sum never exceeds
// MaxDelay. jitter01 is a uniform sample in [0, 1).
func (p RetryPolicy) Delay(attempt int, jitter01 float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base := float64(p.BaseDelay) * math.Pow(p.BackoffMultiplier, float64(attempt-1))
	if base > float64(p.MaxDelay) || math.IsInf(base, 0) || math.IsNaN(base) {
		base = float64(p.MaxDelay)
	}
	d := time.Duration(base) + time.Duration(jitter01*float64(p.JitterMaxDelay))
	return min(d, p.MaxDelay)
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
