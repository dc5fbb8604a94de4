package config

import (
	"context"
	"strings"
	"testing"
	"time"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

const kindsYAML = `ChokaQ:
  Kinds:
    report.build:
      Queue: reports
      Priority: 5
      MaxAttempts: 7
      Timeout: 90s
      ZombieRetries: 2
      BackoffBaseDelay: 10s
      BackoffMultiplier: 3
    Mail.Welcome:
      MaxAttempts: 2
`

// Every key of a kind, from a file, with the environment overriding one of
// them (kinds as written, keys in any case), and the Client built from it
// applying the policy.
func TestKindsFromFileAndEnvironment(t *testing.T) {
	c := mustLoad(t, source{yaml: kindsYAML, env: []string{"CHOKAQ__KINDS__MAIL.WELCOME__MAXATTEMPTS=4"}})
	r := c.Kinds["report.build"]
	if r.Queue != "reports" || r.Priority != 5 || r.MaxAttempts != 7 || r.Timeout != 90*time.Second || r.ZombieRetryCap != 2 ||
		r.Backoff == nil || r.Backoff.BaseDelay != 10*time.Second || r.Backoff.BackoffMultiplier != 3 {
		t.Fatalf("report.build = %+v (backoff %+v)", r, r.Backoff)
	}
	if m, ok := c.Kinds["Mail.Welcome"]; !ok || m.MaxAttempts != 4 || len(c.Kinds) != 2 {
		t.Fatalf("kinds %v: want Mail.Welcome, as the file spells it, with the environment's 4 attempts", c.Kinds)
	}
	cc := c.ClientConfig()
	cc.Store, cc.DisableProcessor = memstore.New(), true
	client, err := chokaq.New(context.Background(), cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.EnqueueRaw(context.Background(), jobs.EnqueueParams{Type: "report.build"})
	if err != nil {
		t.Fatal(err)
	}
	j, err := cc.Store.GetJob(context.Background(), res.ID)
	if err != nil || j.Queue != "reports" || j.MaxAttempts != 7 || j.Priority != 5 {
		t.Fatalf("job %+v, %v: want the configured kind's queue, priority and attempts", j, err)
	}
}

// Kinds compare exactly, keys ignore case: a file that names two kinds
// differing only by case is refused, naming both.
func TestKindsDifferingOnlyByCaseAreRefused(t *testing.T) {
	_, _, err := load(t, source{yaml: "ChokaQ:\n  Kinds:\n    Mail.Welcome:\n      MaxAttempts: 2\n    mail.welcome:\n      Timeout: 1m\n"})
	wantInvalid(t, err, `kind "mail.welcome"`, "from the kind at line 3", "differs only by case")
	// Across files too.
	_, _, err = load(t, source{yaml: "ChokaQ:\n  Kinds:\n    Mail.Welcome:\n      MaxAttempts: 2\n",
		files: map[string]string{"appsettings.Production.yaml": "ChokaQ:\n  Kinds:\n    MAIL.WELCOME:\n      MaxAttempts: 3\n"},
		env:   []string{"CHOKAQ_ENVIRONMENT=Production"}})
	wantInvalid(t, err, "differs only by case")
}

func TestKindKeysAreValidated(t *testing.T) {
	for yaml, parts := range map[string][]string{
		"Timeout: 1ns":           {"ChokaQ.Kinds.k.Timeout", "must be 0"},
		"ZombieRetries: 1000":    {"ChokaQ.Kinds.k.ZombieRetries", "between 0"},
		"Priority: 5000":         {"ChokaQ.Kinds.k.Priority"},
		"BackoffMultiplier: 0.5": {"ChokaQ.Kinds.k.BackoffMultiplier", "between 1"},
		"Timeout: soon":          {"ChokaQ.Kinds.k.Timeout"},
		"Retries: 3":             {"ChokaQ.Kinds.k.Retries", "unknown key"},
	} {
		_, _, err := load(t, source{yaml: "ChokaQ:\n  Kinds:\n    k:\n      " + yaml + "\n"})
		wantInvalid(t, err, parts...)
	}
	_, _, err := load(t, source{yaml: "ChokaQ:\n  Kinds:\n    k: 3\n"})
	wantInvalid(t, err, "must be a section of keys")
}

// config show prints the kinds as a file holds them, and what it prints
// loads back to the same policies.
func TestShowKinds(t *testing.T) {
	c := mustLoad(t, source{yaml: kindsYAML})
	out := c.String()
	for _, want := range []string{"Kinds:", "report.build:", "Timeout: 1m30s", "ZombieRetries: 2", "BackoffBaseDelay: 10s", "Mail.Welcome:"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q:\n%s", want, out)
		}
	}
	back := mustLoad(t, source{yaml: out})
	r, b := c.Kinds["report.build"], back.Kinds["report.build"]
	if len(back.Kinds) != 2 || r.Timeout != b.Timeout || r.ZombieRetryCap != b.ZombieRetryCap || b.Backoff == nil || *r.Backoff != *b.Backoff ||
		back.Kinds["Mail.Welcome"].MaxAttempts != 2 {
		t.Fatalf("config show does not load back the same:\n%s", out)
	}
}
