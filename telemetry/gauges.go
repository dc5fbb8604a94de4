package telemetry

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/metric"

	"github.com/chokaq/chokaq-go/processor"
)

// ObserveProcessor adds p's buffered and running jobs to the
// chokaq.processor.buffered and chokaq.processor.running gauges, which sum
// over every processor observed. Without any, those gauges are not reported.
func (m *Metrics) ObserveProcessor(p *processor.Processor) {
	if p == nil {
		return
	}
	m.procMu.Lock()
	defer m.procMu.Unlock()
	if !slices.Contains(m.procs, p) {
		m.procs = append(m.procs, p)
	}
}

// observe is the gauges' callback, run at each collection.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	m.procMu.Lock()
	procs := slices.Clone(m.procs)
	m.procMu.Unlock()
	if len(procs) > 0 {
		var buffered, running int64
		for _, p := range procs {
			st := p.Stats()
			buffered += st.Buffered
			running += st.Running
		}
		o.ObserveInt64(m.bufferedGauge, buffered)
		o.ObserveInt64(m.runningGauge, running)
	}
	if s := m.depths.Load(); s != nil {
		for _, pt := range s.points {
			o.ObserveInt64(m.depthGauge, pt.n, metric.WithAttributeSet(pt.attrs))
		}
	}
	if s := m.waiting.Load(); s != nil {
		for _, pt := range s.points {
			o.ObserveInt64(m.waitingGauge, pt.n, metric.WithAttributeSet(pt.attrs))
		}
	}
	return nil
}
