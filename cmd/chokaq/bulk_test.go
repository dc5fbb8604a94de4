package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// answers is an operator at the prompt: before each answer it runs what
// happened meanwhile (dead letters arriving, another operator acting).
type answers struct {
	mu    sync.Mutex
	steps []answer
	buf   string
}

type answer struct {
	meanwhile func()
	typed     string
}

func (a *answers) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.buf == "" {
		if len(a.steps) == 0 {
			return 0, io.EOF
		}
		st := a.steps[0]
		a.steps = a.steps[1:]
		if st.meanwhile != nil {
			st.meanwhile()
		}
		a.buf = st.typed + "\n"
	}
	n := copy(p, a.buf)
	a.buf = a.buf[n:]
	return n, nil
}

func runAnswering(t *testing.T, store jobs.Store, in io.Reader, args ...string) result {
	t.Helper()
	var out, errb lockedBuffer
	args = append([]string{"--config-dir", t.TempDir()}, args...)
	code := runWith(context.Background(), args, in, &out, &errb, []string{}, func() jobs.Store { return store })
	return result{code, out.String(), errb.String()}
}

func dlqIDs(t *testing.T, s jobs.Store, q string) map[int64]bool {
	t.Helper()
	page, err := s.ListJobs(context.Background(), jobs.ListParams{Table: jobs.TableDLQ, Filter: jobs.Filter{Queue: q}, Limit: jobs.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, j := range page.Jobs {
		out[j.ID] = true
	}
	return out
}

// Two dead letters arrive while the operator types the count of three: the
// purge removes the three counted, not five, and the two stay.
func TestBulkActsOnExactlyTheDeadLettersConfirmed(t *testing.T) {
	s := memstore.New()
	counted := deadLetters(t, s, "mail", 3, jobs.ReasonFatal)
	var late []int64
	in := &answers{steps: []answer{{meanwhile: func() { late = deadLetters(t, s, "mail", 2, jobs.ReasonFatal) }, typed: "3"}}}
	r := runAnswering(t, s, in, "dlq", "purge", "--queue", "mail")
	wantExit(t, r, exitOK, "This will purge 3 dead letters. Type 3 to confirm")
	if !strings.Contains(r.stdout, "purged 3 dead letters") {
		t.Fatalf("stdout: %s", r.stdout)
	}
	left := dlqIDs(t, s, "mail")
	for _, id := range counted {
		if left[id] {
			t.Errorf("job %d, confirmed, was not purged", id)
		}
	}
	for _, id := range late {
		if !left[id] {
			t.Errorf("job %d arrived after the count and was purged", id)
		}
	}
}

// One of the three counted is resurrected elsewhere while the operator
// types: the count no longer holds, so nothing changes and the command asks
// again with the new count.
func TestBulkAsksAgainWhenTheDeadLettersChanged(t *testing.T) {
	s := memstore.New()
	ids := deadLetters(t, s, "mail", 3, jobs.ReasonFatal)
	resurrectOne := func() {
		if n, err := s.Resurrect(context.Background(), jobs.ResurrectParams{Filter: jobs.Filter{IDs: ids[:1]}}); n != 1 || err != nil {
			t.Errorf("resurrect: %d, %v", n, err)
		}
	}
	in := &answers{steps: []answer{{meanwhile: resurrectOne, typed: "3"}, {typed: "2"}}}
	r := runAnswering(t, s, in, "dlq", "purge", "--queue", "mail")
	wantExit(t, r, exitOK, "Type 3 to confirm", "The dead letters changed since they were counted: 2 match now. Nothing was changed.", "Type 2 to confirm")
	if !strings.Contains(r.stdout, "purged 2 dead letters") || len(dlqIDs(t, s, "mail")) != 0 {
		t.Fatalf("stdout %q, %d left", r.stdout, len(dlqIDs(t, s, "mail")))
	}
	if j, err := s.GetJob(context.Background(), ids[0]); err != nil || j.Table != jobs.TableHot {
		t.Fatalf("the resurrected job is %+v, %v", j, err)
	}
}

// listThenVanish resurrects one listed job right after the listing, as
// another operator could between the command's listing and its action.
type listThenVanish struct {
	jobs.Store
	once sync.Once
}

func (l *listThenVanish) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	page, err := l.Store.ListJobs(ctx, p)
	if err == nil && len(page.Jobs) > 0 && p.Table == jobs.TableDLQ {
		l.once.Do(func() {
			_, err = l.Store.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{page.Jobs[0].ID}}})
		})
	}
	return page, err
}

// A job that leaves between the listing and the action is reported, not
// silently counted as done.
func TestBulkReportsWhenFewerMatched(t *testing.T) {
	mem := memstore.New()
	deadLetters(t, mem, "mail", 3, jobs.ReasonFatal)
	r := runIn(t, &listThenVanish{Store: mem}, "3\n", "dlq", "purge", "--queue", "mail")
	wantExit(t, r, exitOK, "1 of the 3 dead letters confirmed had left the dead-letter queue meanwhile")
	if !strings.Contains(r.stdout, "purged 2 dead letters") {
		t.Fatalf("stdout: %s", r.stdout)
	}
}

func TestInputMistakesExitTwo(t *testing.T) {
	s := memstore.New()
	wantExit(t, runIn(t, s, "", "--config-dir", "/nonexistent/chokaq", "stats"), exitUsage, "/nonexistent/chokaq")
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, runIn(t, s, "", "--config-dir", file, "stats"), exitUsage, "not a directory")
	big := `{"x":"` + strings.Repeat("a", jobs.DefaultMaxPayloadBytes) + `"}`
	wantExit(t, runIn(t, s, big, "enqueue", "--type", "t", "--payload-file", "-"), exitUsage, "payload from stdin: must be at most 1048576 bytes")
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, runIn(t, s, "", "enqueue", "--type", "t", "--payload-file", path), exitUsage, "must be at most 1048576 bytes")
	wantExit(t, runIn(t, s, "", "enqueue", "--type", "t", "--payload", big), exitUsage, "must be at most 1048576 bytes")
}

// YAML reads 1e3 as a float; for a key of seconds it is 1000 seconds.
func TestSecondsAsAFloat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "appsettings.yaml"), []byte("ChokaQ:\n  FetchedJobTimeoutSeconds: 1e3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, memstore.New(), "", "--config-dir", dir, "config", "show")
	wantExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "FetchedJobTimeout: 16m40s") {
		t.Fatalf("config show:\n%s", r.stdout)
	}
}
