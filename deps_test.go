package chokaq_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The libraries a service embedding chokaq-go should not link: a
// configuration library (config is a package of its own), a metrics
// exporter (telemetry/promexporter), and test tooling (Docker, a browser
// driver), which live in nested modules.
var heavy = []string{"github.com/spf13/viper", "prometheus", "testcontainers", "docker", "chromedp"}

// TestLightDependencies lists what the root package and the SQL Server store
// link, and what the main module requires.
func TestLightDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("dependency check skipped: no go command on PATH")
	}
	for _, pkg := range []string{".", "./sqlserver"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		nonStd := 0
		for _, d := range deps {
			if strings.Contains(d, ".") {
				nonStd++
			}
			for _, h := range heavy {
				if strings.Contains(d, h) {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
		t.Logf("%s: %d packages, %d outside the standard library", pkg, len(deps), nonStd)
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"testcontainers", "chromedp"} {
		if strings.Contains(string(mod), h) {
			t.Errorf("go.mod lists %s: test tooling belongs in a nested module", h)
		}
	}
}
