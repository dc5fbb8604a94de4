package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Harness is what the suite needs from the store under test.
type Harness struct {
	Store jobs.Store
	// Advance moves the store's time forward by d as seen by every rule
	// that compares a stored instant with the store's now. A store with an
	// injectable clock moves the clock; a store on a real server may instead
	// move every stored instant back by d, which no rule can tell apart.
	// It may be called from any goroutine and reports failure with t.Errorf.
	Advance func(t testing.TB, d time.Duration)
	// Settle, when set, pays what the store's moves leave owed to later
	// steps (the SQL Server store's workflow release steps, ADR 0034,
	// which its next claim runs anyway). A case calls it before it reads
	// the effect of a move on another job without claiming; nil is a
	// store whose moves settle everything themselves (the memory store).
	Settle func(t testing.TB)
}

// Factory returns a fresh, empty store for one case.
type Factory func(t *testing.T) *Harness

type testCase struct {
	name string
	run  func(t *testing.T, h *Harness)
}

type group struct {
	name  string
	cases []testCase
}

var transitionGroups = []group{
	{"Enqueue", enqueueCases},
	{"Unique", uniqueCases},
	{"Flow", flowCases},
	{"Rate", rateCases},
	{"Workflow", workflowCases},
	{"Claim", claimCases},
	{"Worker", workerCases},
	{"Batch", batchCases},
	{"Cancel", cancelCases},
	{"Schedule", scheduleCases},
	{"Retention", retentionCases},
	{"Finished", finishedCases},
	{"Rescue", append(slices.Clip(rescueCases), zombieRetryCases...)},
	{"Policy", policyCases},
	{"Operator", append(operatorCases, statsCapCase)},
	{"Depth", depthCases},
	{"QueueNames", queueNameCases},
	{"Context", contextCases},
}

// Run runs every case of the contract as a subtest, each on a fresh store:
// RunTransitions, then every invariant.
func Run(t *testing.T, newHarness Factory) {
	runGroups(t, append(transitionGroups, group{"Invariant", invariantCases}), newHarness)
}

// RunTransitions runs every case but the invariants. A store that names
// each invariant as its own top-level test (TestInvariant_I2_NoJobLost)
// calls this and RunInvariant for I1 to I7.
func RunTransitions(t *testing.T, newHarness Factory) { runGroups(t, transitionGroups, newHarness) }

// Invariants lists the invariants' names, "I1_SingleOwner" to "I7_ServerTime".
func Invariants() []string {
	out := make([]string, len(invariantCases))
	for i, c := range invariantCases {
		out[i] = c.name
	}
	return out
}

// RunInvariant runs the invariant whose name starts with id ("I2" or
// "I2_NoJobLost") on a fresh store, and fails for an unknown id.
func RunInvariant(t *testing.T, id string, newHarness Factory) {
	for _, c := range invariantCases {
		if c.name == id || strings.HasPrefix(c.name, id+"_") {
			c.run(t, newHarness(t))
			return
		}
	}
	t.Fatalf("storetest: no invariant %q (have %v)", id, Invariants())
}

func runGroups(t *testing.T, groups []group, newHarness Factory) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newHarness(t)) })
			}
		})
	}
}

// CaseCount reports how many cases Run runs (subtests of table cases not
// counted), so a store's test can assert it ran the whole contract.
func CaseCount() int {
	n := len(invariantCases)
	for _, g := range transitionGroups {
		n += len(g.cases)
	}
	return n
}

// capability returns the store as the optional capability C, or skips the
// case, naming what the store does not offer (jobs.Store: optional means
// its own interface).
func capability[C any](t *testing.T, h *Harness) C {
	t.Helper()
	c, ok := h.Store.(C)
	if !ok {
		t.Skipf("%T does not implement %v (optional)", h.Store, reflect.TypeFor[C]())
	}
	return c
}

const (
	worker1        = "worker-1"
	worker2        = "worker-2"
	defaultTimeout = 15 * time.Minute
	globalZombie   = 10 * time.Minute
	fetchedTimeout = 10 * time.Minute
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func enqueue(t *testing.T, h *Harness, p jobs.EnqueueParams) int64 {
	t.Helper()
	if p.Type == "" {
		p.Type = "test.job"
	}
	r, err := h.Store.Enqueue(ctxOf(t), p)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", p, err)
	}
	return r.ID
}

func enqueueN(t *testing.T, h *Harness, n int, p jobs.EnqueueParams) []int64 {
	t.Helper()
	if p.Type == "" {
		p.Type = "test.job"
	}
	ps := make([]jobs.EnqueueParams, n)
	for i := range ps {
		ps[i] = p
	}
	rs, err := h.Store.EnqueueMany(ctxOf(t), ps)
	if err != nil {
		t.Fatalf("EnqueueMany(%d): %v", n, err)
	}
	ids := make([]int64, n)
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

func claim(t *testing.T, h *Harness, worker string, limit int, queues ...string) []*jobs.Job {
	t.Helper()
	if len(queues) == 0 {
		queues = []string{jobs.DefaultQueue}
	}
	got, err := h.Store.Claim(ctxOf(t), jobs.ClaimParams{WorkerID: worker, Queues: queues, Limit: limit})
	if err != nil {
		t.Fatalf("Claim(%s, %d, %v): %v", worker, limit, queues, err)
	}
	return got
}

func claimOne(t *testing.T, h *Harness, queues ...string) *jobs.Job {
	t.Helper()
	got := claim(t, h, worker1, 1, queues...)
	if len(got) != 1 {
		t.Fatalf("Claim: got %d jobs, want 1", len(got))
	}
	return got[0]
}

func start(t *testing.T, h *Harness, ref jobs.LeaseRef) jobs.Started {
	t.Helper()
	st, err := h.Store.Start(ctxOf(t), ref, jobs.StartParams{DefaultTimeout: defaultTimeout})
	if err != nil {
		t.Fatalf("Start(%+v): %v", ref, err)
	}
	return st
}

// running enqueues one job, claims it and starts it.
func running(t *testing.T, h *Harness, p jobs.EnqueueParams) *jobs.Job {
	t.Helper()
	enqueue(t, h, p)
	q := p.Queue
	if q == "" {
		q = jobs.DefaultQueue
	}
	j := claimOne(t, h, q)
	start(t, h, j.Ref())
	return j
}

func get(t *testing.T, h *Harness, id int64) *jobs.Job {
	t.Helper()
	j, err := h.Store.GetJob(ctxOf(t), id)
	if err != nil {
		t.Fatalf("GetJob(%d): %v", id, err)
	}
	return j
}

func wantTable(t *testing.T, h *Harness, id int64, table jobs.Table) *jobs.Job {
	t.Helper()
	j := get(t, h, id)
	if j.Table != table {
		t.Fatalf("job %d is in %s, want %s", id, j.Table, table)
	}
	return j
}

func wantHot(t *testing.T, h *Harness, id int64, st jobs.Status) *jobs.Job {
	t.Helper()
	j := wantTable(t, h, id, jobs.TableHot)
	if j.Status != st {
		t.Fatalf("job %d status %s, want %s", id, j.Status, st)
	}
	return j
}

func wantLeaseLost(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("%s with a stale lease: err = %v, want ErrLeaseLost", op, err)
	}
}

func count(t *testing.T, h *Harness, table jobs.Table, f jobs.Filter) int64 {
	t.Helper()
	n, err := h.Store.CountJobs(ctxOf(t), table, f)
	if err != nil {
		t.Fatalf("CountJobs(%s, %+v): %v", table, f, err)
	}
	return n
}

func setQueue(t *testing.T, h *Harness, name string, u jobs.QueueUpdate) {
	t.Helper()
	if _, err := h.Store.UpdateQueue(ctxOf(t), name, u); err != nil {
		t.Fatalf("UpdateQueue(%s): %v", name, err)
	}
}

func ids(js []*jobs.Job) []int64 {
	out := make([]int64, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func rescuedIDs(rs []jobs.Rescued) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out
}

func intp(n int) *int { return &n }

// secs is a queue timeout of n seconds.
func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }

func boolp(b bool) *bool { return &b }

// closeTo reports whether two store instants are within tolerance. Stores
// round timestamps (SQL Server datetime2 to 100 ns), so exact equality is
// never asserted.
func closeTo(a, b time.Time, tol time.Duration) bool {
	d := a.Sub(b)
	return d >= -tol && d <= tol
}
