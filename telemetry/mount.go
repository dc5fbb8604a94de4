package telemetry

import "net/http"

// Endpoint paths.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// Mount registers GET /metrics (when metrics is not nil), /healthz and
// /readyz (when health is not nil; /healthz alone otherwise) on mux.
func Mount(mux *http.ServeMux, metrics http.Handler, health *Health) {
	if metrics != nil {
		mux.Handle("GET "+PathMetrics, metrics)
	}
	mux.Handle("GET "+PathHealthz, Healthz())
	if health != nil {
		mux.Handle("GET "+PathReadyz, health.Readyz())
	}
}
