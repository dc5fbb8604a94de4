package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// background is the built command running until it exits or is stopped.
type background struct {
	cmd      *exec.Cmd
	out, err *bytes.Buffer
	done     chan struct{}
}

// startBinary runs the built command like runBinary does, without waiting.
func startBinary(t *testing.T, args ...string) *background {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	b := &background{cmd: cmd, out: &bytes.Buffer{}, err: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.out, b.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

func (b *background) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// wait waits for the command to exit and returns its exit code.
func (b *background) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(limit):
		t.Fatalf("still running after %v\nstdout: %s\nstderr: %s", limit, b.out, b.err)
	}
	return b.cmd.ProcessState.ExitCode()
}

// scrape GETs a URL; ok is false while nothing answers.
func scrape(url string) (code int, body string, ok bool) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", false
	}
	return resp.StatusCode, string(b), true
}

// total adds up every series of a metric in a Prometheus text body; -1 if
// the metric has none.
func total(body, name string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`)
	ms := re.FindAllStringSubmatch(body, -1)
	if len(ms) == 0 {
		return -1
	}
	var sum float64
	for _, m := range ms {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return -1
		}
		sum += v
	}
	return sum
}

func TestServeMetrics(t *testing.T) {
	addr := freeAddr(t)
	b := startBinary(t, "serve-metrics", "--addr", addr, "--set", "Recovery.ScanInterval=1s", "--set", "Queues=mail,billing")
	base := "http://" + addr
	var code int
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		if code, body, ok = scrape(base + "/readyz"); ok && code == http.StatusOK {
			break
		}
		if b.exited() || time.Now().After(deadline) {
			t.Fatalf("never ready: %d %s\nstdout: %s\nstderr: %s", code, body, b.out, b.err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`"status": "ready"`, `"name": "store"`, `"name": "rescue"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("/readyz lacks %s:\n%s", want, body)
		}
	}
	code, body, _ = scrape(base + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`chokaq_queue_depth{queue="mail",status="pending"} 0`,
		`chokaq_queue_depth{queue="billing",status="processing"} 0`,
		`chokaq_rescue_sweeps_total{result="ok"} `,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if code, body, _ := scrape(base + "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, 15*time.Second); code != exitOK {
		t.Fatalf("exit %d after interrupt\nstdout: %s\nstderr: %s", code, b.out, b.err)
	}
	if !strings.Contains(b.out.String(), "serving http://"+addr+"/metrics") || !strings.Contains(b.out.String(), "stopped after") {
		t.Fatalf("stdout:\n%s", b.out)
	}
}

func TestServeMetricsBadAddress(t *testing.T) {
	wantExit(t, runBinary(t, "", "", "serve-metrics", "--addr", "nonsense"), exitUsage, "--addr", "host:port")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wantExit(t, runBinary(t, "", "", "serve-metrics", "--addr", ln.Addr().String()), exitRuntime, "address already in use")
	wantExit(t, runBinary(t, "", "", "demo", "--metrics-addr", "nonsense"), exitUsage, "--metrics-addr")
}

// TestDemoServesMetrics scrapes /metrics while the demo runs and checks
// that every counter, histogram and gauge of docs/operations.md shows, with
// the demo's rescues counted.
func TestDemoServesMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 15 seconds")
	}
	addr := freeAddr(t)
	b := startBinary(t, "demo", "--metrics-addr", addr, "--metrics-linger", "5s")
	positive := []string{
		"chokaq_jobs_enqueued_total", "chokaq_jobs_fetched_total", "chokaq_jobs_started_total",
		"chokaq_jobs_succeeded_total", "chokaq_jobs_failed_total", "chokaq_jobs_retried_total",
		"chokaq_jobs_dead_lettered_total", "chokaq_jobs_lease_lost_total", "chokaq_jobs_heartbeat_failures_total",
		"chokaq_rescue_recovered_total", "chokaq_rescue_archived_total", "chokaq_rescue_deadline_total",
		"chokaq_rescue_sweeps_total", "chokaq_jobs_duration_seconds_count", "chokaq_jobs_queue_lag_seconds_count",
		"chokaq_rescue_detection_latency_seconds_count",
	}
	present := []string{"chokaq_processor_buffered", "chokaq_processor_running", "chokaq_queue_depth"}
	missing := func(body string) []string {
		var out []string
		for _, n := range positive {
			if total(body, n) <= 0 {
				out = append(out, n)
			}
		}
		for _, n := range present {
			if total(body, n) < 0 {
				out = append(out, n)
			}
		}
		return out
	}
	var last string
	scrapes := 0
	for !b.exited() {
		if code, body, ok := scrape("http://" + addr + "/metrics"); ok && code == http.StatusOK {
			last = body
			scrapes++
			if len(missing(body)) == 0 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := missing(last); len(m) > 0 {
		t.Fatalf("after %d scrapes, /metrics lacks %v\nlast scrape:\n%s\nstdout: %s\nstderr: %s", scrapes, m, last, b.out, b.err)
	}
	// The demo's own numbers: one zombie, one past its deadline, two
	// recovered from Fetched, ten payments retried once.
	for name, want := range map[string]float64{
		"chokaq_rescue_archived_total": 1, "chokaq_rescue_deadline_total": 1, "chokaq_rescue_recovered_total": 2,
		"chokaq_jobs_enqueued_total": 56, "chokaq_jobs_cancelled_total": 2,
	} {
		if got := total(last, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := total(last, "chokaq_jobs_retried_total"); got < 10 {
		t.Errorf("chokaq_jobs_retried_total = %v, want at least 10", got)
	}
	if code := b.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, b.out, b.err)
	}
	if !strings.Contains(b.out.String(), "Summary") {
		t.Fatalf("demo output lacks its summary:\n%s", b.out)
	}
}
