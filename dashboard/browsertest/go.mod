module github.com/chokaq/chokaq-go/dashboard/browsertest

go 1.26.0

require (
	github.com/chokaq/chokaq-go v0.0.0
	github.com/chromedp/chromedp v0.23.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)

replace github.com/chokaq/chokaq-go => ../..
