// Package promexporter serves chokaq-go's OpenTelemetry metrics (package
// telemetry) in the Prometheus text format. It is its own package so that a
// service that exports metrics another way links no Prometheus library.
package promexporter

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Exporter is an OpenTelemetry MeterProvider whose readings are served in
// the Prometheus text format. It has its own prometheus.Registry: nothing
// is registered globally, so several can live in one process (tests) and an
// application's own default registry is left alone.
type Exporter struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
}

// New builds the exporter and its MeterProvider. opts are passed
// to the provider (for example sdkmetric.WithResource to name the service).
// The registry also carries the Go runtime and process collectors
// (go_*, process_*), which operators expect next to an exporter.
func New(opts ...sdkmetric.Option) (*Exporter, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("promexporter: register Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("promexporter: register process collector: %w", err)
	}
	// Scope labels (otel_scope_name, ...) would add three labels to every
	// series for no information: every chokaq metric has one scope.
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("promexporter: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exp)}, opts...)...)
	return &Exporter{registry: reg, provider: provider}, nil
}

// MeterProvider is what telemetry.Options.MeterProvider should be for the
// metrics to be served.
func (p *Exporter) MeterProvider() metric.MeterProvider { return p.provider }

// MetricsHandler serves /metrics.
func (p *Exporter) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{Registry: p.registry})
}

// Shutdown stops the provider; later collections report nothing.
func (p *Exporter) Shutdown(ctx context.Context) error {
	if err := p.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("promexporter: shut down meter provider: %w", err)
	}
	return nil
}
