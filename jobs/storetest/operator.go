package storetest

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// deadLetter runs a job to the DLQ with a reason.
func deadLetter(t *testing.T, h *Harness, p jobs.EnqueueParams, reason jobs.FailureReason, details string) *jobs.Job {
	t.Helper()
	j := running(t, h, p)
	if err := h.Store.DeadLetter(ctxOf(t), j.Ref(), jobs.DeadLetterParams{Reason: reason, Details: details}); err != nil {
		t.Fatal(err)
	}
	return j
}

// archived runs a job to the archive.
func archived(t *testing.T, h *Harness, p jobs.EnqueueParams) *jobs.Job {
	t.Helper()
	j := running(t, h, p)
	if err := h.Store.Complete(ctxOf(t), j.Ref()); err != nil {
		t.Fatal(err)
	}
	return j
}

// archivedAfterRetry runs a job that fails once with lastError and then
// succeeds, so the archived row carries a last error.
func archivedAfterRetry(t *testing.T, h *Harness, p jobs.EnqueueParams, lastError string) *jobs.Job {
	t.Helper()
	j := running(t, h, p)
	if err := h.Store.Retry(ctxOf(t), j.Ref(), jobs.RetryParams{Error: lastError}); err != nil {
		t.Fatal(err)
	}
	again := claimOne(t, h, j.Queue)
	start(t, h, again.Ref())
	if err := h.Store.Complete(ctxOf(t), again.Ref()); err != nil {
		t.Fatal(err)
	}
	return again
}

func listIDs(t *testing.T, h *Harness, p jobs.ListParams) []int64 {
	t.Helper()
	page, err := h.Store.ListJobs(ctxOf(t), p)
	if err != nil {
		t.Fatalf("ListJobs(%+v): %v", p, err)
	}
	return ids(page.Jobs)
}

// listAll follows NextBeforeID from the newest job to the last page.
func listAll(t *testing.T, h *Harness, p jobs.ListParams) []int64 {
	t.Helper()
	var got []int64
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatalf("paging %s with %+v does not end: %v so far", p.Table, p.Filter, got)
		}
		page, err := h.Store.ListJobs(ctxOf(t), p)
		if err != nil {
			t.Fatalf("ListJobs(%+v): %v", p, err)
		}
		if len(page.Jobs) > p.PageLimit() {
			t.Fatalf("page of %d jobs, limit %d", len(page.Jobs), p.PageLimit())
		}
		got = append(got, ids(page.Jobs)...)
		if page.NextBeforeID == 0 {
			return got
		}
		p.BeforeID = page.NextBeforeID
	}
}

type listCase struct {
	name string
	f    jobs.Filter
	want []int64 // newest first
}

// wantListed checks that listing and counting agree on each filter: the
// SQL store builds the two from the same WHERE clause, per table.
func wantListed(t *testing.T, h *Harness, table jobs.Table, cases []listCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := listIDs(t, h, jobs.ListParams{Table: table, Filter: c.f})
			if !slices.Equal(got, c.want) {
				t.Fatalf("ListJobs(%s, %+v) = %v, want %v", table, c.f, got, c.want)
			}
			if n := count(t, h, table, c.f); n != int64(len(c.want)) {
				t.Fatalf("CountJobs(%s, %+v) = %d, want %d", table, c.f, n, len(c.want))
			}
		})
	}
}

var operatorCases = []testCase{
	{"ResurrectKeepsIDAndResetsAttempts", func(t *testing.T, h *Harness) {
		d := deadLetter(t, h, jobs.EnqueueParams{Payload: []byte("v1")}, jobs.ReasonMaxRetriesExceeded, "gave up")
		n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{d.ID}}, Payload: []byte("v2")})
		if err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		p := wantHot(t, h, d.ID, jobs.StatusPending)
		if p.AttemptCount != 0 || string(p.Payload) != "v2" || p.LastError != "gave up" {
			t.Fatalf("resurrected %+v, want attempt 0, edited payload, last error kept", p)
		}
		again := claimOne(t, h)
		if again.ID != d.ID || again.Lease <= d.Lease {
			t.Fatalf("reclaimed %+v, want job %d with a lease above %d", again, d.ID, d.Lease)
		}
		wantLeaseLost(t, "Complete with the pre-DLQ lease", h.Store.Complete(ctxOf(t), d.Ref()))
	}},
	{"ResurrectByFilter", func(t *testing.T, h *Harness) {
		a := deadLetter(t, h, jobs.EnqueueParams{Queue: "q1", Type: "a"}, jobs.ReasonFatal, "x")
		deadLetter(t, h, jobs.EnqueueParams{Queue: "q1", Type: "b"}, jobs.ReasonFatal, "x")
		c := deadLetter(t, h, jobs.EnqueueParams{Queue: "q1", Type: "a"}, jobs.ReasonTimeout, "x")
		deadLetter(t, h, jobs.EnqueueParams{Queue: "q2", Type: "a"}, jobs.ReasonFatal, "x")
		n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{Queue: "q1", Type: "a"}})
		if err != nil || n != 2 {
			t.Fatalf("Resurrect by queue and type = %d, %v; want 2", n, err)
		}
		wantHot(t, h, a.ID, jobs.StatusPending)
		wantHot(t, h, c.ID, jobs.StatusPending)
		if left := count(t, h, jobs.TableDLQ, jobs.Filter{}); left != 2 {
			t.Fatalf("%d dead letters left, want 2", left)
		}
	}},
	{"ResurrectRefusesEmptyFilterUnlessAll", func(t *testing.T, h *Harness) {
		deadLetter(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal, "x")
		deadLetter(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal, "x")
		if _, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{}); !errors.Is(err, jobs.ErrEmptyFilter) {
			t.Fatalf("err = %v, want ErrEmptyFilter", err)
		}
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{All: true}); err != nil || n != 2 {
			t.Fatalf("Resurrect(All) = %d, %v; want 2", n, err)
		}
	}},
	{"ResurrectDropsAKeyNowHeldByAnActiveJob", func(t *testing.T, h *Harness) {
		d := deadLetter(t, h, jobs.EnqueueParams{IdempotencyKey: "k"}, jobs.ReasonFatal, "x")
		live := enqueue(t, h, jobs.EnqueueParams{IdempotencyKey: "k"})
		if live == d.ID {
			t.Fatal("the key was still held after its job was dead-lettered")
		}
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{d.ID}}}); err != nil || n != 1 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		if j := get(t, h, d.ID); j.IdempotencyKey != "" {
			t.Fatalf("resurrected job kept key %q that job %d holds", j.IdempotencyKey, live)
		}
		if r, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", IdempotencyKey: "k"}); err != nil || r.ID != live {
			t.Fatalf("key now resolves to %+v, %v; want job %d", r, err, live)
		}
	}},
	{"ResurrectGivesASharedKeyToTheFirstToDie", func(t *testing.T, h *Harness) {
		// Two dead letters with one key: they were active one after the
		// other. Resurrecting both can give the key to one only; every
		// store gives it to the one dead-lettered first (oldest
		// FinishedAt, then lowest ID), the order resurrect walks in.
		first := deadLetter(t, h, jobs.EnqueueParams{IdempotencyKey: "k"}, jobs.ReasonFatal, "x")
		h.Advance(t, time.Second)
		second := deadLetter(t, h, jobs.EnqueueParams{IdempotencyKey: "k"}, jobs.ReasonFatal, "x")
		if n, err := h.Store.Resurrect(ctxOf(t), jobs.ResurrectParams{All: true}); err != nil || n != 2 {
			t.Fatalf("Resurrect = %d, %v", n, err)
		}
		if a, b := get(t, h, first.ID), get(t, h, second.ID); a.IdempotencyKey != "k" || b.IdempotencyKey != "" {
			t.Fatalf("keys after resurrect: first %q, second %q; want the first to keep it", a.IdempotencyKey, b.IdempotencyKey)
		}
	}},
	{"PurgeRefusesEmptyFilterUnlessAll", func(t *testing.T, h *Harness) {
		deadLetter(t, h, jobs.EnqueueParams{}, jobs.ReasonFatal, "x")
		archived(t, h, jobs.EnqueueParams{})
		for _, table := range []jobs.Table{jobs.TableDLQ, jobs.TableArchive} {
			if _, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: table}); !errors.Is(err, jobs.ErrEmptyFilter) {
				t.Fatalf("Purge(%s) with no filter: err = %v, want ErrEmptyFilter", table, err)
			}
			if n := count(t, h, table, jobs.Filter{}); n != 1 {
				t.Fatalf("a refused purge of %s left %d rows, want 1", table, n)
			}
			if n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: table, All: true}); err != nil || n != 1 {
				t.Fatalf("Purge(%s, All) = %d, %v", table, n, err)
			}
		}
	}},
	{"PurgeByIDsFilterAndAge", func(t *testing.T, h *Harness) {
		old := deadLetter(t, h, jobs.EnqueueParams{Type: "old"}, jobs.ReasonFatal, "x")
		h.Advance(t, 48*time.Hour)
		a := deadLetter(t, h, jobs.EnqueueParams{Type: "a"}, jobs.ReasonFatal, "x")
		deadLetter(t, h, jobs.EnqueueParams{Type: "b"}, jobs.ReasonZombie, "x")
		c := deadLetter(t, h, jobs.EnqueueParams{Type: "c"}, jobs.ReasonZombie, "x")
		purge := func(f jobs.Filter) int {
			n, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableDLQ, Filter: f})
			if err != nil {
				t.Fatalf("Purge(%+v): %v", f, err)
			}
			return n
		}
		if n := purge(jobs.Filter{OlderThan: 24 * time.Hour}); n != 1 {
			t.Fatalf("purge by age removed %d, want the one old job", n)
		}
		if _, err := h.Store.GetJob(ctxOf(t), old.ID); !errors.Is(err, jobs.ErrJobNotFound) {
			t.Fatalf("purged job still found: %v", err)
		}
		if n := purge(jobs.Filter{IDs: []int64{a.ID}}); n != 1 {
			t.Fatalf("purge by id removed %d", n)
		}
		if n := purge(jobs.Filter{Reason: reasonp(jobs.ReasonZombie), Type: "b"}); n != 1 {
			t.Fatalf("purge by reason and type removed %d", n)
		}
		wantTable(t, h, c.ID, jobs.TableDLQ)
		if n := count(t, h, jobs.TableDLQ, jobs.Filter{}); n != 1 {
			t.Fatalf("%d dead letters left, want only job %d", n, c.ID)
		}
	}},
	{"PurgeRefusesTheHotTable", func(t *testing.T, h *Harness) {
		enqueue(t, h, jobs.EnqueueParams{})
		_, err := h.Store.Purge(ctxOf(t), jobs.PurgeParams{Table: jobs.TableHot, All: true})
		wantInvalid(t, err, "table")
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 1 {
			t.Fatal("purge touched the hot table")
		}
	}},
	{"GetJobFindsEveryTable", func(t *testing.T, h *Harness) {
		hot := enqueue(t, h, jobs.EnqueueParams{})
		arc := archived(t, h, jobs.EnqueueParams{Queue: "q"})
		dlq := deadLetter(t, h, jobs.EnqueueParams{Queue: "q"}, jobs.ReasonFatal, "x")
		wantTable(t, h, hot, jobs.TableHot)
		wantTable(t, h, arc.ID, jobs.TableArchive)
		wantTable(t, h, dlq.ID, jobs.TableDLQ)
		if _, err := h.Store.GetJob(ctxOf(t), 1<<50); !errors.Is(err, jobs.ErrJobNotFound) {
			t.Fatalf("unknown id: err = %v, want ErrJobNotFound", err)
		}
	}},
	{"ListPagesNewestFirst", func(t *testing.T, h *Harness) {
		// Each table is listed by its own statement, so each is paged, with
		// and without a filter that the cursor has to keep applying.
		hot := enqueueN(t, h, 7, jobs.EnqueueParams{})
		var arc, arcOdd, dlq, dlqOdd []int64
		for i := range 5 {
			q := []string{"even", "odd"}[i%2]
			a := archived(t, h, jobs.EnqueueParams{Queue: q}).ID
			d := deadLetter(t, h, jobs.EnqueueParams{Queue: q}, jobs.ReasonFatal, "x").ID
			arc, dlq = append(arc, a), append(dlq, d)
			if q == "odd" {
				arcOdd, dlqOdd = append(arcOdd, a), append(dlqOdd, d)
			}
		}
		for _, want := range [][]int64{hot, arc, arcOdd, dlq, dlqOdd} {
			slices.Reverse(want)
		}
		cases := []struct {
			name  string
			table jobs.Table
			f     jobs.Filter
			want  []int64
		}{
			{"Hot", jobs.TableHot, jobs.Filter{}, hot},
			{"Archive", jobs.TableArchive, jobs.Filter{}, arc},
			{"ArchiveFiltered", jobs.TableArchive, jobs.Filter{Queue: "odd"}, arcOdd},
			{"DLQ", jobs.TableDLQ, jobs.Filter{}, dlq},
			{"DLQFiltered", jobs.TableDLQ, jobs.Filter{Queue: "odd"}, dlqOdd},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if got := listAll(t, h, jobs.ListParams{Table: c.table, Filter: c.f, Limit: 2}); !slices.Equal(got, c.want) {
					t.Fatalf("pages gave %v, want %v", got, c.want)
				}
			})
		}
	}},
	{"ListFilters", func(t *testing.T, h *Harness) {
		a := deadLetter(t, h, jobs.EnqueueParams{Queue: "q1", Type: "mail.send", Payload: []byte(`{"to":"needle@x"}`)}, jobs.ReasonFatal, "smtp refused")
		b := deadLetter(t, h, jobs.EnqueueParams{Queue: "q2", Type: "mail.send"}, jobs.ReasonZombie, "heartbeat expired")
		h.Advance(t, time.Hour)
		c := deadLetter(t, h, jobs.EnqueueParams{Queue: "q1", Type: "report"}, jobs.ReasonFatal, "disk full")
		cj := get(t, h, c.ID)
		wantListed(t, h, jobs.TableDLQ, []listCase{
			{"Queue", jobs.Filter{Queue: "q1"}, []int64{c.ID, a.ID}},
			{"Type", jobs.Filter{Type: "mail.send"}, []int64{b.ID, a.ID}},
			{"Reason", jobs.Filter{Reason: reasonp(jobs.ReasonZombie)}, []int64{b.ID}},
			{"TextInDetails", jobs.Filter{Text: "disk"}, []int64{c.ID}},
			{"TextInPayload", jobs.Filter{Text: "needle"}, []int64{a.ID}},
			{"From", jobs.Filter{From: cj.FinishedAt.Add(-time.Minute)}, []int64{c.ID}},
			{"To", jobs.Filter{To: cj.FinishedAt.Add(-time.Minute)}, []int64{b.ID, a.ID}},
			{"OlderThan", jobs.Filter{OlderThan: 30 * time.Minute}, []int64{b.ID, a.ID}},
			{"IDs", jobs.Filter{IDs: []int64{a.ID, c.ID, 1 << 50}}, []int64{c.ID, a.ID}},
		})
	}},
	{"ListArchiveFilters", func(t *testing.T, h *Harness) {
		a := archived(t, h, jobs.EnqueueParams{Queue: "q1", Type: "mail.send", Payload: []byte(`{"to":"needle@x"}`)})
		b := archivedAfterRetry(t, h, jobs.EnqueueParams{Queue: "q2", Type: "mail.send"}, "smtp timeout")
		h.Advance(t, time.Hour)
		c := archived(t, h, jobs.EnqueueParams{Queue: "q1", Type: "report"})
		cj := wantTable(t, h, c.ID, jobs.TableArchive)
		wantListed(t, h, jobs.TableArchive, []listCase{
			{"All", jobs.Filter{}, []int64{c.ID, b.ID, a.ID}},
			{"Queue", jobs.Filter{Queue: "q1"}, []int64{c.ID, a.ID}},
			{"Type", jobs.Filter{Type: "mail.send"}, []int64{b.ID, a.ID}},
			{"QueueAndType", jobs.Filter{Queue: "q1", Type: "mail.send"}, []int64{a.ID}},
			{"TextInLastError", jobs.Filter{Text: "smtp"}, []int64{b.ID}},
			{"TextInPayload", jobs.Filter{Text: "needle"}, []int64{a.ID}},
			{"TextInType", jobs.Filter{Text: "repo"}, []int64{c.ID}},
			{"From", jobs.Filter{From: cj.FinishedAt.Add(-time.Minute)}, []int64{c.ID}},
			{"To", jobs.Filter{To: cj.FinishedAt.Add(-time.Minute)}, []int64{b.ID, a.ID}},
			{"FromTo", jobs.Filter{From: cj.FinishedAt.Add(-2 * time.Hour), To: cj.FinishedAt.Add(-time.Minute)}, []int64{b.ID, a.ID}},
			{"OlderThan", jobs.Filter{OlderThan: 30 * time.Minute}, []int64{b.ID, a.ID}},
			{"IDs", jobs.Filter{IDs: []int64{a.ID, c.ID, 1 << 50}}, []int64{c.ID, a.ID}},
		})
	}},
	{"ListHotFilters", func(t *testing.T, h *Harness) {
		a := enqueue(t, h, jobs.EnqueueParams{Queue: "q1", Type: "mail.send", Payload: []byte(`{"to":"needle@x"}`)})
		b := running(t, h, jobs.EnqueueParams{Queue: "q2", Type: "mail.send"})
		if err := h.Store.Retry(ctxOf(t), b.Ref(), jobs.RetryParams{Error: "smtp timeout"}); err != nil {
			t.Fatal(err)
		}
		h.Advance(t, time.Hour)
		c := enqueue(t, h, jobs.EnqueueParams{Queue: "q1", Type: "report"})
		d := running(t, h, jobs.EnqueueParams{Queue: "q3", Type: "report"})
		cj := wantHot(t, h, c, jobs.StatusPending)
		wantListed(t, h, jobs.TableHot, []listCase{
			{"Queue", jobs.Filter{Queue: "q1"}, []int64{c, a}},
			{"Type", jobs.Filter{Type: "mail.send"}, []int64{b.ID, a}},
			{"TypeAndStatus", jobs.Filter{Type: "report", Status: statusp(jobs.StatusProcessing)}, []int64{d.ID}},
			{"TextInLastError", jobs.Filter{Text: "smtp"}, []int64{b.ID}},
			{"TextInPayload", jobs.Filter{Text: "needle"}, []int64{a}},
			{"TextInType", jobs.Filter{Text: "repo"}, []int64{d.ID, c}},
			{"From", jobs.Filter{From: cj.CreatedAt.Add(-time.Minute)}, []int64{d.ID, c}},
			{"To", jobs.Filter{To: cj.CreatedAt.Add(-time.Minute)}, []int64{b.ID, a}},
			{"FromTo", jobs.Filter{From: cj.CreatedAt.Add(-2 * time.Hour), To: cj.CreatedAt.Add(-time.Minute)}, []int64{b.ID, a}},
			{"OlderThan", jobs.Filter{OlderThan: 30 * time.Minute}, []int64{b.ID, a}},
			{"IDs", jobs.Filter{IDs: []int64{a, d.ID, 1 << 50}}, []int64{d.ID, a}},
		})
	}},
	{"ListHotByStatus", func(t *testing.T, h *Harness) {
		p := enqueue(t, h, jobs.EnqueueParams{})
		enqueue(t, h, jobs.EnqueueParams{})
		f := claimOne(t, h)
		if got := listIDs(t, h, jobs.ListParams{Table: jobs.TableHot, Filter: jobs.Filter{Status: statusp(jobs.StatusFetched)}}); !slices.Equal(got, []int64{f.ID}) {
			t.Fatalf("Fetched listing %v, want [%d]", got, f.ID)
		}
		if f.ID != p {
			t.Fatalf("claimed %d, want the oldest %d", f.ID, p)
		}
	}},
	{"ListRejectsFilterForTheWrongTable", func(t *testing.T, h *Harness) {
		_, err := h.Store.ListJobs(ctxOf(t), jobs.ListParams{Table: jobs.TableArchive, Filter: jobs.Filter{Reason: reasonp(jobs.ReasonFatal)}})
		wantInvalid(t, err, "reason")
		_, err = h.Store.ListJobs(ctxOf(t), jobs.ListParams{Table: jobs.TableDLQ, Filter: jobs.Filter{Status: statusp(jobs.StatusPending)}})
		wantInvalid(t, err, "status")
		_, err = h.Store.CountJobs(ctxOf(t), jobs.TableDLQ, jobs.Filter{Queue: "bad queue"})
		wantInvalid(t, err, "queue")
	}},
	{"QueueSettingsCreatePatchAndClear", func(t *testing.T, h *Harness) {
		s, err := h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{MaxWorkers: intp(4), ZombieTimeout: secs(120)})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Equal(jobs.QueueSettings{Name: "mail", MaxWorkers: 4, ZombieTimeout: 2 * time.Minute}) {
			t.Fatalf("created %+v", s)
		}
		s, err = h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{Paused: boolp(true), MaxWorkers: intp(0), ExecutionTimeout: secs(30)})
		if err != nil {
			t.Fatal(err)
		}
		want := jobs.QueueSettings{Name: "mail", Paused: true, ZombieTimeout: 2 * time.Minute, ExecutionTimeout: 30 * time.Second}
		if !s.Equal(want) {
			t.Fatalf("patched %+v, want %+v", s, want)
		}
		qs, err := h.Store.Queues(ctxOf(t))
		if err != nil || len(qs) != 1 || !qs[0].Equal(want) {
			t.Fatalf("Queues() = %+v, %v; want [%+v]", qs, err, want)
		}
		_, err = h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{MaxWorkers: intp(-1)})
		wantInvalid(t, err, "max_workers")
		_, err = h.Store.UpdateQueue(ctxOf(t), "bad\x01name", jobs.QueueUpdate{})
		wantInvalid(t, err, "queue")
	}},
	{"QueueWeightRoundTripsAndAnInvalidOneIsRefused", func(t *testing.T, h *Harness) {
		s, err := h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{MaxWorkers: intp(4)})
		if err != nil || s.Weight != 0 || s.ClaimWeight() != jobs.DefaultQueueWeight {
			t.Fatalf("a queue without a weight = %+v, %v; want Weight 0, weighing %d", s, err, jobs.DefaultQueueWeight)
		}
		if s, err = h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{Weight: intp(9)}); err != nil || s.Weight != 9 || s.MaxWorkers != 4 {
			t.Fatalf("UpdateQueue(Weight 9) = %+v, %v; want weight 9 beside MaxWorkers 4", s, err)
		}
		want := jobs.QueueSettings{Name: "mail", MaxWorkers: 4, Weight: 9}
		qs, err := h.Store.Queues(ctxOf(t))
		if err != nil || len(qs) != 1 || !qs[0].Equal(want) {
			t.Fatalf("Queues() = %+v, %v; want [%+v]", qs, err, want)
		}
		for _, bad := range []int{0, -1, jobs.MaxQueueWeight + 1} {
			_, err = h.Store.UpdateQueue(ctxOf(t), "mail", jobs.QueueUpdate{Weight: intp(bad)})
			wantInvalid(t, err, "weight")
			if !strings.Contains(err.Error(), strconv.Itoa(bad)) {
				t.Fatalf("weight %d refused with %q, which does not name it", bad, err)
			}
		}
		if qs, err = h.Store.Queues(ctxOf(t)); err != nil || len(qs) != 1 || qs[0].Weight != 9 {
			t.Fatalf("after the refused updates Queues() = %+v, %v; want weight 9 kept", qs, err)
		}
	}},
	{"QueueStatsCountsEveryState", func(t *testing.T, h *Harness) {
		setQueue(t, h, "idle", jobs.QueueUpdate{Paused: boolp(true)})
		archived(t, h, jobs.EnqueueParams{Queue: "w"})
		deadLetter(t, h, jobs.EnqueueParams{Queue: "w"}, jobs.ReasonFatal, "x")
		enqueueN(t, h, 3, jobs.EnqueueParams{Queue: "w"})
		enqueue(t, h, jobs.EnqueueParams{Queue: "w", Delay: time.Hour})
		h.Advance(t, 90*time.Second)
		claim(t, h, worker1, 1, "w")
		start(t, h, claim(t, h, worker1, 1, "w")[0].Ref())
		stats, err := h.Store.QueueStats(ctxOf(t))
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]jobs.QueueStats{}
		for _, s := range stats {
			byName[s.Queue] = s
		}
		if s, ok := byName["idle"]; !ok || !s.Paused {
			t.Fatalf("idle queue stats %+v, want it listed as paused", s)
		}
		w := byName["w"]
		if w.Pending != 1 || w.Scheduled != 1 || w.Fetched != 1 || w.Processing != 1 || w.Archived != 1 || w.DeadLettered != 1 {
			t.Fatalf("queue w stats %+v, want 1 of each state", w)
		}
		if w.Lag < 80*time.Second || w.Lag > 10*time.Minute {
			t.Fatalf("queue w lag %v, want about 90s", w.Lag)
		}
	}},
}

// statsCapCase checks that QueueStats' counts stop at the cap, so a poll of
// a deep backlog costs a bounded read on every store.
var statsCapCase = testCase{"QueueStatsCountsStopAtTheCap", func(t *testing.T, h *Harness) {
	enqueueN(t, h, jobs.DefaultStatsCap+3, jobs.EnqueueParams{Queue: "deep"})
	enqueueN(t, h, 2, jobs.EnqueueParams{Queue: "shallow"})
	stats, err := h.Store.QueueStats(ctxOf(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, s := range stats {
		got[s.Queue] = s.Pending
	}
	if got["deep"] != jobs.DefaultStatsCap || got["shallow"] != 2 {
		t.Fatalf("pending counts %v, want deep capped at %d and shallow 2", got, jobs.DefaultStatsCap)
	}
}}

var depthCases = []testCase{
	{"QueueDepthsCountsByStatusUpToTheCap", func(t *testing.T, h *Harness) {
		enqueueN(t, h, 7, jobs.EnqueueParams{Queue: "deep"})
		enqueueN(t, h, 2, jobs.EnqueueParams{Queue: "shallow"})
		claim(t, h, worker1, 2, "shallow")
		start(t, h, claim(t, h, worker1, 1, "deep")[0].Ref())
		got, err := h.Store.QueueDepths(ctxOf(t), []string{"deep", "shallow", "empty"}, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]jobs.QueueDepth{
			"deep":    {Queue: "deep", Pending: 5, Processing: 1}, // 6 pending, capped at 5
			"shallow": {Queue: "shallow", Fetched: 2},
			"empty":   {Queue: "empty"},
		}
		if len(got) != 3 {
			t.Fatalf("QueueDepths = %+v, want 3 queues", got)
		}
		for _, d := range got {
			if d != want[d.Queue] {
				t.Fatalf("depth %+v, want %+v", d, want[d.Queue])
			}
		}
		_, err = h.Store.QueueDepths(ctxOf(t), []string{"deep"}, 0)
		wantInvalid(t, err, "cap")
	}},
	{"RescuedReportsTheStoreTime", func(t *testing.T, h *Harness) {
		running(t, h, jobs.EnqueueParams{})
		h.Advance(t, globalZombie+time.Minute)
		rs := rescueZombies(t, h)
		if len(rs) != 1 || rs[0].At.Sub(rs[0].LastSeen) < globalZombie {
			t.Fatalf("rescued %+v: want At - LastSeen >= the zombie timeout", rs)
		}
	}},
}

func reasonp(r jobs.FailureReason) *jobs.FailureReason { return &r }
