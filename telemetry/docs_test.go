package telemetry_test

import (
	"bytes"
	"context"
	"maps"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.yaml.in/yaml/v3"

	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
)

const operationsDoc = "../docs/operations.md"

// documented is one row of the metric table in docs/operations.md.
type documented struct {
	otel, prom, kind string
	labels           []string // sorted; none for "none"
}

var tableRow = regexp.MustCompile("^\\| `(chokaq\\.[a-z_.]+)` \\| `(chokaq_[a-z_]+)` \\| ([a-z]+) \\| ([a-z, ]+) \\|")

// metricTable parses the table's rows, by OpenTelemetry name.
func metricTable(t *testing.T, doc string) map[string]documented {
	t.Helper()
	rows := map[string]documented{}
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(line, "| `chokaq.") {
			continue
		}
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: a metric row this test cannot read:\n%s", operationsDoc, line)
		}
		d := documented{otel: m[1], prom: m[2], kind: m[3]}
		if m[4] != "none" {
			d.labels = strings.Split(m[4], ", ")
			slices.Sort(d.labels)
		}
		if _, dup := rows[d.otel]; dup {
			t.Fatalf("%s: %s is listed twice", operationsDoc, d.otel)
		}
		rows[d.otel] = d
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no metric table found", operationsDoc)
	}
	return rows
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOperationsDocListsEveryInstrument: the metric table names exactly the
// instruments New creates, each with its type, and exactly the Prometheus
// names and labels /metrics shows for them, so the operator's reference
// cannot drift from the code.
func TestOperationsDocListsEveryInstrument(t *testing.T) {
	table := metricTable(t, readDoc(t))

	// What New creates, whatever is recorded later.
	created := &namingProvider{kinds: map[string]string{}}
	m, err := telemetry.New(telemetry.Options{MeterProvider: created})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, want := slices.Sorted(maps.Keys(created.kinds)), slices.Sorted(maps.Keys(table)); !slices.Equal(got, want) {
		t.Fatalf("instruments\n code: %v\n doc:  %v", got, want)
	}
	for name, kind := range created.kinds {
		if table[name].kind != kind {
			t.Errorf("%s is a %s; the doc says %s", name, kind, table[name].kind)
		}
	}

	// What a scrape shows once every instrument has a value.
	prom, err := promexporter.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Shutdown(context.Background()) })
	pm, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	recordEveryInstrument(t, pm)
	srv := httptest.NewServer(prom.MetricsHandler())
	defer srv.Close()
	_, body := get(t, srv, "/metrics")
	scraped := scrapedFamilies(body)
	var documentedNames []string
	for _, d := range table {
		documentedNames = append(documentedNames, d.prom)
		f, ok := scraped[d.prom]
		if !ok {
			t.Errorf("%s (%s) is not on /metrics", d.prom, d.otel)
			continue
		}
		if f.kind != d.kind {
			t.Errorf("%s is a %s on /metrics; the doc says %s", d.prom, f.kind, d.kind)
		}
		if !slices.Equal(f.labels, d.labels) {
			t.Errorf("%s has labels %v on /metrics; the doc says %v", d.prom, f.labels, d.labels)
		}
	}
	if got, want := slices.Sorted(maps.Keys(scraped)), slices.Sorted(slices.Values(documentedNames)); !slices.Equal(got, want) {
		t.Errorf("chokaq families\n /metrics: %v\n doc:      %v", got, want)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// family is one chokaq metric family of a scrape.
type family struct {
	kind   string
	labels []string // sorted, without histograms' le
}

var (
	typeLine   = regexp.MustCompile(`(?m)^# TYPE (chokaq_\w+) (\w+)$`)
	seriesLine = regexp.MustCompile(`(?m)^(chokaq_\w+)(?:\{([^}]*)\})? `)
	labelName  = regexp.MustCompile(`(\w+)="`)
)

// scrapedFamilies reads the chokaq families of a Prometheus text scrape.
// The exporter names a counter family with its _total suffix; a
// histogram's labels are read from its _count series.
func scrapedFamilies(body string) map[string]family {
	out := map[string]family{}
	for _, m := range typeLine.FindAllStringSubmatch(body, -1) {
		out[m[1]] = family{kind: m[2]}
	}
	for _, m := range seriesLine.FindAllStringSubmatch(body, -1) {
		name := m[1]
		if f, ok := out[strings.TrimSuffix(name, "_count")]; ok && f.kind == "histogram" {
			name = strings.TrimSuffix(name, "_count")
		}
		f, ok := out[name]
		if !ok {
			continue // a histogram's _bucket and _sum
		}
		for _, l := range labelName.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(f.labels, l[1]) {
				f.labels = append(f.labels, l[1])
			}
		}
		slices.Sort(f.labels)
		out[name] = f
	}
	return out
}

// alertRules is the shape of a Prometheus rule file; unknown keys are
// errors, so a misspelt field does not pass as valid.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	yamlBlock    = regexp.MustCompile("(?s)```yaml\n(.*?)\n```")
	metricInExpr = regexp.MustCompile(`\bchokaq_\w+`)
	whatToDo     = regexp.MustCompile(`(?m)^\*\*(Chokaq[A-Za-z /]+)\.\*\*`)
)

// TestOperationsDocAlertRulesParse: the example rules are a valid rule file
// that covers the alerts the issue asks for, uses only metrics the table
// lists, and has a "what to do" entry for each alert.
func TestOperationsDocAlertRulesParse(t *testing.T) {
	doc := readDoc(t)
	exposed := map[string]bool{}
	for _, d := range metricTable(t, doc) {
		exposed[d.prom] = true
		if d.kind == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exposed[d.prom+s] = true
			}
		}
	}
	advice := map[string]bool{}
	for _, m := range whatToDo.FindAllStringSubmatch(doc, -1) {
		for name := range strings.SplitSeq(m[1], " / ") {
			advice[name] = true
		}
	}

	blocks := yamlBlock.FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s: no yaml block", operationsDoc)
	}
	alerts := map[string]bool{}
	for _, b := range blocks {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(b[1])))
		dec.KnownFields(true)
		var rules alertRules
		if err := dec.Decode(&rules); err != nil {
			t.Fatalf("alert rules do not parse: %v\n%s", err, b[1])
		}
		for _, g := range rules.Groups {
			if g.Name == "" || len(g.Rules) == 0 {
				t.Errorf("group %+v: want a name and rules", g)
			}
			for _, r := range g.Rules {
				if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
					t.Errorf("rule %+v: want an alert name and an expression", r)
					continue
				}
				if alerts[r.Alert] {
					t.Errorf("alert %s is defined twice", r.Alert)
				}
				alerts[r.Alert] = true
				if r.For != "" {
					if _, err := time.ParseDuration(r.For); err != nil {
						t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
					}
				}
				if r.Labels["severity"] == "" {
					t.Errorf("%s: no severity label", r.Alert)
				}
				for _, name := range metricInExpr.FindAllString(r.Expr, -1) {
					if !exposed[name] {
						t.Errorf("%s uses %s, which the metric table does not list", r.Alert, name)
					}
				}
				if !advice[r.Alert] {
					t.Errorf("%s has no entry under \"What to do\"", r.Alert)
				}
			}
		}
	}
	for _, want := range []string{"ChokaqZombieJobs", "ChokaqQueueLag", "ChokaqDeadLetterRate", "ChokaqHeartbeatFailures", "ChokaqRescueLoopNotRunning"} {
		if !alerts[want] {
			t.Errorf("no %s alert rule", want)
		}
	}
}

// namingProvider is a MeterProvider that notes the name and kind of every
// instrument made on it; the instruments themselves do nothing.
type namingProvider struct {
	noop.MeterProvider
	kinds map[string]string // name -> counter, histogram or gauge
}

func (p *namingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return namingMeter{kinds: p.kinds}
}

// namingMeter notes every kind of instrument the metric API has, so an
// instrument added later under a new kind is not missed.
type namingMeter struct {
	noop.Meter
	kinds map[string]string
}

func (m namingMeter) Int64Counter(n string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.kinds[n] = "counter"
	return m.Meter.Int64Counter(n, o...)
}

func (m namingMeter) Float64Counter(n string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.kinds[n] = "counter"
	return m.Meter.Float64Counter(n, o...)
}

func (m namingMeter) Int64ObservableCounter(n string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.kinds[n] = "counter"
	return m.Meter.Int64ObservableCounter(n, o...)
}

func (m namingMeter) Float64ObservableCounter(n string, o ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.kinds[n] = "counter"
	return m.Meter.Float64ObservableCounter(n, o...)
}

func (m namingMeter) Int64Histogram(n string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.kinds[n] = "histogram"
	return m.Meter.Int64Histogram(n, o...)
}

func (m namingMeter) Float64Histogram(n string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.kinds[n] = "histogram"
	return m.Meter.Float64Histogram(n, o...)
}

// Prometheus shows up-down counters as gauges.

func (m namingMeter) Int64UpDownCounter(n string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Int64UpDownCounter(n, o...)
}

func (m namingMeter) Float64UpDownCounter(n string, o ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Float64UpDownCounter(n, o...)
}

func (m namingMeter) Int64ObservableUpDownCounter(n string, o ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Int64ObservableUpDownCounter(n, o...)
}

func (m namingMeter) Float64ObservableUpDownCounter(n string, o ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Float64ObservableUpDownCounter(n, o...)
}

func (m namingMeter) Int64Gauge(n string, o ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Int64Gauge(n, o...)
}

func (m namingMeter) Float64Gauge(n string, o ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Float64Gauge(n, o...)
}

func (m namingMeter) Int64ObservableGauge(n string, o ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Int64ObservableGauge(n, o...)
}

func (m namingMeter) Float64ObservableGauge(n string, o ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.kinds[n] = "gauge"
	return m.Meter.Float64ObservableGauge(n, o...)
}
