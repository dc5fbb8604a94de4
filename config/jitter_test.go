package config

import (
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// TestZeroJitterMeansNone: "JitterMaxDelay: 0s" in the file must reach the
// processor as no jitter, not as a zero field that takes the 1s default.
func TestZeroJitterMeansNone(t *testing.T) {
	c := mustLoad(t, source{yaml: "ChokaQ:\n  Retry:\n    BaseDelay: 10s\n    JitterMaxDelay: 0s\n"})
	pc := c.ProcessorConfig()
	if pc.Retry.JitterMaxDelay != processor.NoJitter {
		t.Fatalf("JitterMaxDelay reaches the processor as %v, want NoJitter", pc.Retry.JitterMaxDelay)
	}
	// The processor accepts it, and the delay is the bare backoff.
	if _, err := processor.New(memstore.New(), processor.NewRegistry(), pc); err != nil {
		t.Fatalf("processor.New: %v", err)
	}
	if got := pc.Retry.Delay(1, 0.999999); got != 10*time.Second {
		t.Fatalf("first retry after %v, want exactly BaseDelay 10s", got)
	}

	c = mustLoad(t, source{yaml: "ChokaQ:\n  Retry:\n    JitterMaxDelay: 250ms\n"})
	if got := c.ProcessorConfig().Retry.JitterMaxDelay; got != 250*time.Millisecond {
		t.Fatalf("JitterMaxDelay 250ms reaches the processor as %v", got)
	}
}
