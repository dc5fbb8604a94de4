package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// source is a test's configuration: an optional appsettings.yaml, extra
// files, environment variables and overrides. The real process
// environment is never read: Env is always non-nil.
type source struct {
	yaml      string            // appsettings.yaml; "" writes none
	files     map[string]string // more files in the same directory
	env       []string
	overrides map[string]string
	opts      Options // Dir and Env are filled in
}

// load runs Load on src in a fresh directory and returns the config, the
// path of appsettings.yaml and the error.
func load(t *testing.T, src source) (*Config, string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, baseFile)
	if src.yaml != "" {
		writeFile(t, dir, baseFile, src.yaml)
	}
	for name, content := range src.files {
		writeFile(t, dir, name, content)
	}
	opts := src.opts
	opts.Dir = dir
	if opts.File != "" {
		opts.File = filepath.Join(dir, opts.File)
	}
	opts.Env = append([]string{}, src.env...)
	opts.Overrides = src.overrides
	c, err := Load(opts)
	return c, path, err
}

// mustLoad is load that fails the test on error.
func mustLoad(t *testing.T, src source) *Config {
	t.Helper()
	c, _, err := load(t, src)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// wantInvalid checks that err is an *Error wrapping ErrInvalid whose text
// contains every part.
func wantInvalid(t *testing.T, err error, parts ...string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("Load succeeded; want an error containing %q", parts)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
	}
	e, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
	return e
}

// nested renders "a.b.c: v" as YAML under the ChokaQ section.
func nested(path, value string) string {
	var b strings.Builder
	b.WriteString("ChokaQ:\n")
	segs := strings.Split(path, ".")
	for i, s := range segs {
		b.WriteString(strings.Repeat("  ", i+1))
		b.WriteString(s)
		b.WriteString(":")
		if i == len(segs)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }
