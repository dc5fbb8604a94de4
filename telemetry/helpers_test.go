package telemetry_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/chokaq/chokaq-go/telemetry"
)

// newTestMetrics returns Metrics on an SDK MeterProvider read by hand.
func newTestMetrics(t *testing.T, opts telemetry.Options) (*telemetry.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := telemetry.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// reading is one collection, by instrument name.
type reading map[string]metricdata.Metrics

func collect(t *testing.T, r *sdkmetric.ManualReader) reading {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := reading{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// key writes an attribute set as "k=v,k=v", keys sorted.
func key(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// counter returns a counter's value per attribute set; empty when the
// counter has recorded nothing.
func (rd reading) counter(t *testing.T, name string) map[string]int64 {
	t.Helper()
	m, ok := rd[name]
	if !ok {
		return map[string]int64{}
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("%s is %T, want a monotonic int64 sum", name, m.Data)
	}
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// gauge returns a gauge's value per attribute set.
func (rd reading) gauge(t *testing.T, name string) map[string]int64 {
	t.Helper()
	m, ok := rd[name]
	if !ok {
		return map[string]int64{}
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok {
		t.Fatalf("%s is %T, want an int64 gauge", name, m.Data)
	}
	out := map[string]int64{}
	for _, dp := range g.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// histogram returns a histogram's points per attribute set.
func (rd reading) histogram(t *testing.T, name string) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := rd[name]
	if !ok {
		return map[string]metricdata.HistogramDataPoint[float64]{}
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T, want a float64 histogram", name, m.Data)
	}
	if m.Unit != "s" {
		t.Fatalf("%s unit %q, want s", name, m.Unit)
	}
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, dp := range h.DataPoints {
		out[key(dp.Attributes)] = dp
	}
	return out
}

// counts turns histogram points into their counts.
func counts(hs map[string]metricdata.HistogramDataPoint[float64]) map[string]int64 {
	out := map[string]int64{}
	for k, dp := range hs {
		out[k] = int64(dp.Count)
	}
	return out
}

// wantSums compares histogram sums, in seconds, with durations. The points
// are added in the order they were recorded, which concurrent workers may
// vary, so the last bits of a float sum may differ: nothing more.
func wantSums(t *testing.T, name string, got map[string]metricdata.HistogramDataPoint[float64], want map[string]time.Duration) {
	t.Helper()
	sums := map[string]float64{}
	for k, dp := range got {
		sums[k] = dp.Sum
	}
	if !maps.EqualFunc(sums, want, func(g float64, w time.Duration) bool { return math.Abs(g-w.Seconds()) < 1e-9 }) {
		t.Errorf("%s:\n got  %v\n want %v", name, sums, want)
	}
}

// wantValues compares per-attribute values exactly.
func wantValues(t *testing.T, name string, got, want map[string]int64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", name, show(got), show(want))
	}
}

func show(m map[string]int64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString("{" + k + "}=" + strconv.FormatInt(m[k], 10) + " ")
	}
	return b.String()
}

// qt is the "queue=..,type=.." key of a job's labels.
func qt(queue, typ string) string { return "queue=" + queue + ",type=" + typ }

// qrt adds a reason.
func qrt(queue, reason, typ string) string {
	return "queue=" + queue + ",reason=" + reason + ",type=" + typ
}

// waitFor sleeps (in a synctest bubble, in fake time) until cond holds.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
