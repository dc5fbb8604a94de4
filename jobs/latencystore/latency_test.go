package latencystore_test

import (
	"context"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// BenchmarkCallLatency reports how long a call takes that should take
// 500 us: the wrapper's precision.
func BenchmarkCallLatency(b *testing.B) {
	s := latencystore.New(memstore.New(), latencystore.Config{Delay: 500 * time.Microsecond})
	defer s.Close()
	ctx := context.Background()
	for b.Loop() {
		_, _ = s.Queues(ctx)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/call")
}

var _ jobs.Store = (*latencystore.Store)(nil)
