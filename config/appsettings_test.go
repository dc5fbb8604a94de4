package config

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// appsettings.yaml is the reference a user reads: each key gets its own
// comment on the line above it, so a key added to keys without one fails
// here rather than shipping undocumented.
func TestAppsettingsYAMLCommentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../appsettings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// keyLine finds the line of a dotted key under ChokaQ, 0 when absent.
	keyLine := func(name string) int {
		n, line := doc.Content[0], 0
		for _, seg := range append([]string{root}, strings.Split(name, ".")...) {
			var next *yaml.Node
			for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					next, line = n.Content[i+1], n.Content[i].Line
				}
			}
			if next == nil {
				return 0
			}
			n = next
		}
		return line
	}
	for _, k := range keys {
		if k.alias != "" {
			continue // the legacy keys are listed in the header, checked by TestAppsettingsYAML
		}
		t.Run(k.name, func(t *testing.T) {
			line := keyLine(k.name)
			if line == 0 {
				t.Fatalf("appsettings.yaml lacks ChokaQ.%s", k.name)
			}
			above := strings.TrimSpace(lines[line-2])
			if !strings.HasPrefix(above, "#") || len(strings.TrimSpace(strings.TrimPrefix(above, "#"))) < 10 {
				t.Errorf("line %d, ChokaQ.%s, has no comment line above it; the line above is %q", line, k.name, lines[line-2])
			}
		})
	}
}

// appsettings.yaml says what docs/design.md and processor.Stop say: a stop
// cancels the handlers after ShutdownTimeout and waits as long again, so it
// takes up to twice the setting, which an orchestrator's grace must cover.
func TestAppsettingsSaysAStopTakesUpToTwiceShutdownTimeout(t *testing.T) {
	b, err := os.ReadFile("../appsettings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != "ShutdownTimeout: 30s" {
			continue
		}
		var comment []string
		for j := i - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "#"); j-- {
			comment = append([]string{strings.TrimSpace(lines[j])}, comment...)
		}
		if text := strings.Join(comment, " "); !strings.Contains(text, "twice") {
			t.Errorf("the comment of Execution.ShutdownTimeout does not say a stop takes up to twice it: %q", text)
		}
		return
	}
	t.Fatal("appsettings.yaml has no ShutdownTimeout: 30s")
}

// An empty WorkerId becomes host-pid-random in the processor, so two
// processes on one host, or two processors in one process, never share a
// name in the store.
func TestDefaultWorkerIDIsHostPidRandom(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	shape := regexp.MustCompile(`^` + regexp.QuoteMeta(host) + `-` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{6}$`)
	seen := map[string]bool{}
	for range 3 {
		p, err := processor.New(memstore.New(), processor.NewRegistry(), Default().ProcessorConfig())
		if err != nil {
			t.Fatal(err)
		}
		id := p.WorkerID()
		if !shape.MatchString(id) {
			t.Fatalf("WorkerID %q does not match %s", id, shape)
		}
		if seen[id] {
			t.Fatalf("WorkerID %q given twice", id)
		}
		seen[id] = true
	}
	// A configured WorkerId is used as written.
	c := Default()
	c.WorkerID = "billing-7"
	if p, err := processor.New(memstore.New(), processor.NewRegistry(), c.ProcessorConfig()); err != nil || p.WorkerID() != "billing-7" {
		t.Fatalf("configured WorkerId: %v %v", p, err)
	}
}
