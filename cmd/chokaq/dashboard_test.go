package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// server is a running `chokaq dashboard`.
type server struct {
	cmd    *exec.Cmd
	url    string
	stdout *lockedBuffer
	stderr bytes.Buffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listeningOn = regexp.MustCompile(`listening on http://([^/]+)/`)

// startDashboard runs the built binary and waits until it says where it
// listens.
func startDashboard(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s, err := tryStartDashboard(t, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryStartDashboard is startDashboard that returns an error when the
// command exits, or says nothing, before it listens.
func tryStartDashboard(t *testing.T, env []string, args ...string) (*server, error) {
	t.Helper()
	dir := t.TempDir()
	s := &server{cmd: exec.Command(binary, append([]string{"dashboard"}, args...)...), stdout: &lockedBuffer{}}
	s.cmd.Dir = dir
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	found := make(chan string, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			s.stdout.Write([]byte(line + "\n"))
			if m := listeningOn.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		// A wildcard address is reached through loopback.
		addr = strings.Replace(strings.Replace(addr, "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
		s.url = "http://" + addr
		return s, nil
	case <-ended:
		err := s.cmd.Wait() // stderr is complete once Wait returns
		return nil, fmt.Errorf("the dashboard exited before listening: %v\n%s\n%s", err, s.stdout.String(), s.stderr.String())
	case <-time.After(20 * time.Second):
		return nil, fmt.Errorf("the dashboard did not start:\n%s", s.stdout.String())
	}
}

func (s *server) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stop interrupts the command as Ctrl-C would and expects exit 0.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after interrupt: %v\nstdout: %s\nstderr: %s", err, s.stdout.String(), s.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the dashboard did not stop on interrupt:\n%s", s.stderr.String())
	}
}

func TestDashboardServesEveryPageOnTheDemoData(t *testing.T) {
	s := startDashboard(t, nil, "--addr", "127.0.0.1:0")
	if out := s.stdout.String(); !strings.Contains(out, "in-memory store with a demo workload") {
		t.Fatalf("stdout: %s", out)
	}
	for path, want := range map[string]string{
		"/":              "demo-mail",
		"/queues":        `action="/queues/demo-reports/resume"`,
		"/active":        "report.build",
		"/dead":          "Dead letters",
		"/archive":       "Archive",
		"/static/app.js": "EventSource",
	} {
		code, body := s.get(t, path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET %s: %d, want %q in:\n%s", path, code, want, body)
		}
	}
	if code, _ := s.get(t, "/dead/resurrect"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET on an action: %d", code)
	}
	if !testing.Short() {
		// The demo fills the dead-letter page, and rescue sweeps reach the
		// console over the event stream.
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, body := s.get(t, "/dead")
			if strings.Contains(body, `class="inspect"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no dead letter after 30s:\n%s", body)
			}
			time.Sleep(500 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/events", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		for !strings.Contains(sc.Text(), "zombie rescue: recovered") {
			if !sc.Scan() {
				t.Fatalf("no rescue line on the console: %v", sc.Err())
			}
		}
		res.Body.Close()
		// Metrics and health are served beside the pages.
		if code, body := s.get(t, "/metrics"); code != http.StatusOK || !strings.Contains(body, "chokaq_jobs_started_total") ||
			!strings.Contains(body, "chokaq_rescue_sweeps_total") {
			t.Fatalf("GET /metrics: %d\n%s", code, body)
		}
		if code, _ := s.get(t, "/healthz"); code != http.StatusOK {
			t.Fatalf("GET /healthz: %d", code)
		}
		// The demo runs a healthy processor and the rescue loop on a store
		// that cannot fail: every check passes.
		wantReady(t, s, "store", "rescue", "heartbeats")

		// The inspector of one of those dead letters.
		_, dead := s.get(t, "/dead")
		m := regexp.MustCompile(`href="/job/(\d+)" class="inspect"`).FindStringSubmatch(dead)
		if m == nil {
			t.Fatalf("no inspector link on /dead:\n%s", dead)
		}
		code, body := s.get(t, "/job/"+m[1])
		for _, want := range []string{`id="job-state"`, `id="error-details"`, `id="payload"`, "Resurrect job " + m[1]} {
			if code != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("GET /job/%s: %d, want %q in:\n%s", m[1], code, want, body)
			}
		}
		if code, _ := s.get(t, "/job/999999999"); code != http.StatusNotFound {
			t.Fatalf("GET /job/ of an unknown job: %d", code)
		}
	}
	s.stop(t)
	if out := s.stdout.String(); !strings.Contains(out, "dashboard stopped") {
		t.Fatalf("stdout: %s", out)
	}
}

func TestDashboardRefusesAnOpenAddressWithoutAuth(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		r := runBinary(t, "", "", "dashboard", "--addr", addr)
		wantExit(t, r, exitUsage, "refusing to listen on "+addr+" without authentication", "127.0.0.1", "auth token")
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 {
			t.Fatalf("want one line of error:\n%s", r.stderr)
		}
	}
	wantExit(t, runBinary(t, "", "", "dashboard", "--addr", "0.0.0.0:0", "--basic-auth", "nopassword"), exitUsage, "--basic-auth: want user:password")
	wantExit(t, runBinary(t, "", "", "dashboard", "--addr", "8080"), exitUsage, "host:port")
}

func TestDashboardOnAllInterfacesWithAToken(t *testing.T) {
	s := startDashboard(t, []string{dashboardTokenEnv + "=open-sesame-1234"}, "--addr", "0.0.0.0:0", "--read-only")
	if code, _ := s.get(t, "/"); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := s.get(t, "/", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := s.get(t, "/dead", "Authorization", "Bearer open-sesame-1234")
	if code != http.StatusOK || !strings.Contains(body, "read-only") || strings.Contains(body, `method="post" action="/dead`) {
		t.Fatalf("read-only page with the token: %d\n%s", code, body)
	}
	s.stop(t)

	b := startDashboard(t, nil, "--addr", "0.0.0.0:0", "--basic-auth", "ops:pass-word")
	req, _ := http.NewRequest(http.MethodGet, b.url+"/queues", nil)
	req.SetBasicAuth("ops", "pass-word")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("basic auth: %d", res.StatusCode)
	}
	b.stop(t)
}

// /metrics and /readyz tell queue names, job types and store errors: with
// auth they need it too; /healthz stays open for liveness probes. Basic
// credentials can come from the environment, and --secure-cookies marks
// the cookies Secure.
func TestDashboardGuardsMetricsAndReadiness(t *testing.T) {
	s := startDashboard(t, []string{dashboardBasicEnv + "=ops:pass-word"}, "--addr", "0.0.0.0:0", "--secure-cookies")
	if out := s.stdout.String(); !strings.Contains(out, "authentication required for the pages, /metrics and /readyz (not /healthz)") {
		t.Fatalf("stdout: %s", out)
	}
	get := func(path string, basic bool) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
		if basic {
			req.SetBasicAuth("ops", "pass-word")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, path := range []string{"/metrics", "/readyz", "/"} {
		if res := get(path, false); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET %s without credentials: %d", path, res.StatusCode)
		}
	}
	if res := get("/metrics", true); res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics with credentials: %d", res.StatusCode)
	}
	if res := get("/readyz", true); res.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz with credentials: %d", res.StatusCode)
	}
	if res := get("/healthz", false); res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", res.StatusCode)
	}
	res := get("/dead", true)
	if c := res.Header.Get("Set-Cookie"); res.StatusCode != http.StatusOK || !strings.Contains(c, "; Secure") {
		t.Fatalf("--secure-cookies: %d, cookie %q", res.StatusCode, c)
	}
	s.stop(t)
}

// Beyond loopback, short secrets are refused; credentials from the
// environment are checked like flags.
func TestDashboardRefusesWeakSecrets(t *testing.T) {
	wantExit(t, runBinary(t, "", "", "dashboard", "--addr", "0.0.0.0:0", "--auth-token", "short-token"), exitUsage, "fewer than 16 characters")
	wantExit(t, runBinary(t, "", "", "dashboard", "--addr", ":0", "--basic-auth", "ops:pw"), exitUsage, "fewer than 8 characters")
	for env, want := range map[string]string{
		dashboardBasicEnv + "=ops:pw":      "fewer than 8 characters",
		dashboardBasicEnv + "=nopassword":  "$" + dashboardBasicEnv + ": want user:password",
		dashboardTokenEnv + "=short-token": "fewer than 16 characters",
	} {
		var out, errb bytes.Buffer
		dir := t.TempDir()
		code := runWith(context.Background(), []string{"--config-dir", dir, "dashboard", "--addr", "0.0.0.0:0"}, strings.NewReader(""), &out, &errb,
			[]string{env}, func() jobs.Store { return memstore.New() })
		wantExit(t, result{code, out.String(), errb.String()}, exitUsage, want)
	}
}

// The server bounds how long a request may take to arrive, body included.
func TestDashboardServerTimeouts(t *testing.T) {
	srv := dashboardServer(context.Background(), http.NotFoundHandler(), zap.NewNop())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.ReadTimeout > time.Minute {
		t.Fatalf("ReadHeaderTimeout %v, ReadTimeout %v", srv.ReadHeaderTimeout, srv.ReadTimeout)
	}
}

// wantReady asserts that /readyz answers 200, ready, with each named check
// run and passing.
func wantReady(t *testing.T, s *server, checks ...string) {
	t.Helper()
	code, body := s.get(t, "/readyz")
	var rep struct {
		Status string
		Checks []struct {
			Name string
			OK   bool
		}
	}
	if err := json.Unmarshal([]byte(body), &rep); code != http.StatusOK || err != nil || rep.Status != "ready" {
		t.Fatalf("GET /readyz: %d %v\n%s", code, err, body)
	}
	passed := map[string]bool{}
	for _, c := range rep.Checks {
		passed[c.Name] = c.OK
	}
	for _, name := range checks {
		if !passed[name] {
			t.Fatalf("GET /readyz: check %q missing or failing:\n%s", name, body)
		}
	}
}

// Without --addr the dashboard listens on 127.0.0.1:8080, never on every
// interface: it can resurrect and purge jobs.
func TestDashboardListensOnLoopbackByDefault(t *testing.T) {
	def := (&app{}).dashboardCommand().Flags().Lookup("addr").DefValue
	if host, _, err := net.SplitHostPort(def); err != nil || host != "127.0.0.1" {
		t.Fatalf("--addr defaults to %q", def)
	}
	// The default port may be taken on this machine; then the flag's
	// default above is all that can be checked.
	ln, err := net.Listen("tcp", def)
	if err != nil {
		t.Skipf("%s is taken (%v); not starting the dashboard on it", def, err)
	}
	ln.Close()
	s, err := tryStartDashboard(t, nil)
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			t.Skipf("%s was taken meanwhile: %v", def, err)
		}
		t.Fatal(err)
	}
	if s.url != "http://127.0.0.1:8080" {
		t.Fatalf("listening on %s, want http://127.0.0.1:8080\n%s", s.url, s.stdout.String())
	}
	if code, _ := s.get(t, "/"); code != http.StatusOK {
		t.Fatalf("GET / on the default address: %d", code)
	}
	s.stop(t)
}

// Behind a reverse proxy every client shares the proxy's address; with the
// proxy trusted, failures are counted per forwarded client, so one
// guesser's failures do not delay an operator.
func TestDashboardTrustedProxy(t *testing.T) {
	wantExit(t, runBinary(t, "", "", "dashboard", "--trusted-proxy-header", "X-Forwarded-For"), exitUsage, "TrustedProxyHeader", "needs TrustedProxies")
	wantExit(t, runBinary(t, "", "", "dashboard", "--trusted-proxy-header", "X-Forwarded-For", "--trusted-proxy", "0.0.0.0/0"), exitUsage, "trusts every address")

	s := startDashboard(t, []string{dashboardTokenEnv + "=open-sesame-1234"}, "--addr", "127.0.0.1:0", "--read-only",
		"--trusted-proxy-header", "X-Forwarded-For", "--trusted-proxy", "127.0.0.1")
	for range 10 {
		if code, _ := s.get(t, "/", "Authorization", "Bearer wrong", "X-Forwarded-For", "203.0.113.7"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d", code)
		}
	}
	if code, _ := s.get(t, "/", "Authorization", "Bearer open-sesame-1234", "X-Forwarded-For", "203.0.113.7"); code != http.StatusTooManyRequests {
		t.Fatalf("the guesser's next attempt inside its delay: %d, want 429", code)
	}
	if code, _ := s.get(t, "/", "Authorization", "Bearer open-sesame-1234", "X-Forwarded-For", "198.51.100.2"); code != http.StatusOK {
		t.Fatalf("another client behind the same proxy: %d, want 200", code)
	}
	s.stop(t)
}
