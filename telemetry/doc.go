// Package telemetry records chokaq-go's metrics through the OpenTelemetry
// metric API and serves them, with health and readiness checks, over HTTP.
//
// Metrics is the recorder. It implements processor.Observer, so a processor
// reports claims, starts and outcomes to it; OnRescue, OnSweep and
// SampleDepthsAfterSweep hang on the rescue loop's hooks; ObserveProcessor
// adds a processor's buffer and running gauges. InstrumentProcessor and
// InstrumentRescue do that wiring on a config while keeping any hooks the
// caller set. Label sets are bounded: queue and type are capped at
// Options.MaxLabelValues distinct values each (later ones are recorded as
// "other"), and reason is the closed set of jobs.FailureReason names.
//
// Package promexporter's Exporter is an SDK MeterProvider whose readings are
// served in the Prometheus text format from its own registry (no global
// state); it is a package of its own, so that a service that exports
// metrics another way links no Prometheus library. Health answers /healthz
// and /readyz. Mount puts the metrics handler and both checks on a ServeMux:
//
//	prom, _ := promexporter.New()
//	m, _ := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider()})
//	client, _ := chokaq.New(ctx, chokaq.Config{Telemetry: m}, reg)
//	mux := http.NewServeMux()
//	telemetry.Mount(mux, prom.MetricsHandler(), client.Health())
//
// docs/operations.md lists every metric under its OpenTelemetry and its
// Prometheus name, with example alert rules.
package telemetry
