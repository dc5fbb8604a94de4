package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
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
	go func() {
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
	case <-time.After(20 * time.Second):
		t.Fatalf("the dashboard did not start:\n%s\n%s", s.stdout.String(), s.stderr.String())
	}
	return s
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
		if code, body := s.get(t, "/readyz"); code != http.StatusOK && code != http.StatusServiceUnavailable || !strings.Contains(body, "store") {
			t.Fatalf("GET /readyz: %d %s", code, body)
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
	s := startDashboard(t, []string{dashboardTokenEnv + "=open-sesame-123"}, "--addr", "0.0.0.0:0", "--read-only")
	if code, _ := s.get(t, "/"); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := s.get(t, "/", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := s.get(t, "/dead", "Authorization", "Bearer open-sesame-123")
	if code != http.StatusOK || !strings.Contains(body, "read-only") || strings.Contains(body, `method="post" action="/dead`) {
		t.Fatalf("read-only page with the token: %d\n%s", code, body)
	}
	s.stop(t)

	b := startDashboard(t, nil, "--addr", "0.0.0.0:0", "--basic-auth", "ops:pw")
	req, _ := http.NewRequest(http.MethodGet, b.url+"/queues", nil)
	req.SetBasicAuth("ops", "pw")
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
