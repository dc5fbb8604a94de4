package promexporter_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
)

type ReportArgs struct{}

func (ReportArgs) Kind() string { return "reports.monthly" }

// Serving the Client's metrics at /metrics in the Prometheus text format,
// next to /healthz and /readyz.
func Example() {
	ctx := context.Background()
	exp, err := promexporter.New()
	if err != nil {
		panic(err)
	}
	defer exp.Shutdown(ctx)
	metrics, err := telemetry.New(telemetry.Options{MeterProvider: exp.MeterProvider()})
	if err != nil {
		panic(err)
	}
	defer metrics.Close()

	client, err := chokaq.New(ctx, chokaq.Config{
		Store: memstore.New(), Telemetry: metrics, DisableProcessor: true, DisableRescue: true,
	}, nil)
	if err != nil {
		panic(err)
	}
	for range 3 {
		if _, err := client.Enqueue(ctx, ReportArgs{}, nil); err != nil {
			panic(err)
		}
	}

	mux := http.NewServeMux()
	telemetry.Mount(mux, exp.MetricsHandler(), client.Health())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + telemetry.PathMetrics)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "chokaq_jobs_enqueued_total{") {
			fmt.Println(lines.Text())
		}
	}
	// Output: chokaq_jobs_enqueued_total{queue="default",type="reports.monthly"} 3
}
