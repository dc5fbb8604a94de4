package sqlserver

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
)

// declOf is the declaration go-mssqldb sends for a parameter's value: the
// rules of its makeParam and makeDecl for the kinds of value the store
// passes. A string is declared by its length (and "" as nvarchar(max)), a
// null sql.NullString as nvarchar(4000), nil as nvarchar(1), []byte by its
// length (nil and empty as varbinary(max)), a time.Time and a null
// sql.NullTime as datetimeoffset(7).
func declOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "nvarchar(1)"
	case string:
		n := len(utf16.Encode([]rune(x))) * 2
		if n == 0 || n > 8000 {
			return "nvarchar(max)"
		}
		return fmt.Sprintf("nvarchar(%d)", n/2)
	case mssql.NVarCharMax:
		return "nvarchar(max)"
	case sql.NullString:
		if x.Valid {
			return declOf(x.String)
		}
		return "nvarchar(4000)"
	case []byte:
		if len(x) == 0 || len(x) > 8000 {
			return "varbinary(max)"
		}
		return fmt.Sprintf("varbinary(%d)", len(x))
	case int64, int, sql.NullInt64:
		return "bigint"
	case int32:
		return "int"
	case bool:
		return "bit"
	case civil.DateTime:
		return "datetime2(7)"
	case time.Time:
		return "datetimeoffset(7)"
	case sql.NullTime:
		return "datetimeoffset(7)"
	case mssql.TVP:
		return "table " + x.TypeName
	}
	return fmt.Sprintf("(%T: not modelled)", v)
}

func TestDeclOf(t *testing.T) {
	for v, want := range map[any]string{
		"mail": "nvarchar(4)", "": "nvarchar(max)", mssql.NVarCharMax("x"): "nvarchar(max)",
		sql.NullString{}: "nvarchar(4000)", int64(1): "bigint", true: "bit",
	} {
		if got := declOf(v); got != want {
			t.Errorf("declOf(%#v) = %s, want %s", v, got, want)
		}
	}
	if got := declOf([]byte(nil)); got != "varbinary(max)" {
		t.Errorf("declOf(nil bytes) = %s", got)
	}
	if got := declOf([]byte("ab")); got != "varbinary(2)" {
		t.Errorf("declOf(2 bytes) = %s", got)
	}
}

// TestParameterDeclarationsDoNotVary calls every method that takes text,
// bytes or an optional value with an absent, a short and a long value, and
// checks that each parameter of each statement is declared the same every
// time. SQL Server caches a plan per distinct parameter declaration list,
// so a declaration that follows the value's length gives one plan per
// length of queue name, key or filter text.
func TestParameterDeclarationsDoNotVary(t *testing.T) {
	s, rec := recordingStore(t)
	ctx := t.Context()
	long := strings.Repeat("x", 90)
	ref := jobs.LeaseRef{ID: 42, Lease: 3}
	from := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	status, reason := jobs.StatusPending, jobs.ReasonZombie
	variants := []struct {
		queue, worker, key, text string
		payload                  []byte
		filter                   func(jobs.Table) jobs.Filter
	}{
		{"q", "w", "k", "", nil, func(jobs.Table) jobs.Filter { return jobs.Filter{} }},
		{"mail", "worker-7", "order-1001", "boom", []byte("{}"), func(tb jobs.Table) jobs.Filter {
			f := jobs.Filter{Queue: "mail", Type: "t", From: from, Text: "boom"}
			if tb == jobs.TableHot {
				f.Status = &status
			}
			return f
		}},
		{long[:50], long, long, long, []byte(long), func(tb jobs.Table) jobs.Filter {
			f := jobs.Filter{IDs: []int64{1, 2, 3}, Queue: long[:50], Type: long, From: from, To: from.Add(time.Hour), OlderThan: time.Hour, Text: long}
			if tb == jobs.TableDLQ {
				f.Reason = &reason
			}
			return f
		}},
	}
	for _, v := range variants {
		_, _ = s.Claim(ctx, jobs.ClaimParams{WorkerID: v.worker, Queues: []string{v.queue}, Limit: 5})
		_, _ = s.Enqueue(ctx, jobs.EnqueueParams{Queue: v.queue, Type: "t", IdempotencyKey: v.key, Payload: v.payload})
		_, _ = s.EnqueueMany(ctx, []jobs.EnqueueParams{{Queue: v.queue, Type: "t", IdempotencyKey: v.key}})
		_ = s.Retry(ctx, ref, jobs.RetryParams{Error: v.text})
		_ = s.DeadLetter(ctx, ref, jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: v.text})
		_, _ = s.UpdateQueue(ctx, v.queue, jobs.QueueUpdate{})
		// Flow control and rate limits (ADR 0031, 0033): keys of every
		// length go in table-valued lists, numbers as BIGINT.
		perKey, rate := len(v.key), jobs.RateLimit{Count: len(v.text) + 1, Window: time.Duration(len(v.key)+1) * time.Second}
		_, _ = s.UpdateQueue(ctx, v.queue, jobs.QueueUpdate{MaxWorkersPerKey: &perKey, KeyLimits: map[string]int{v.key: 1}, RateLimit: &rate})
		_, _ = s.Enqueue(ctx, jobs.EnqueueParams{Queue: v.queue, Type: "t", ConcurrencyKey: v.key, SequenceKey: v.text})
		_, _ = s.ClaimHeld(ctx, jobs.ClaimParams{WorkerID: v.worker, Queues: []string{v.queue}, Limit: 5})
		_, _ = s.QueueDepths(ctx, []string{v.queue}, 10)
		for _, tb := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
			_, _ = s.ListJobs(ctx, jobs.ListParams{Table: tb, Filter: v.filter(tb)})
			_, _ = s.CountJobs(ctx, tb, v.filter(tb))
		}
		_, _ = s.Resurrect(ctx, jobs.ResurrectParams{Filter: v.filter(jobs.TableDLQ), All: true, Payload: v.payload})
		_, _ = s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableArchive, Filter: v.filter(jobs.TableArchive), All: true})
		// Workflows (ADR 0034): names of every length, as text; the
		// tasks and edges as table-valued lists.
		wfName := (v.worker + "-workflow")[:min(len(v.worker)+9, jobs.MaxWorkflowNameLen)]
		_, _ = s.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: wfName, Tasks: []jobs.WorkflowTask{
			{Name: wfName, Job: jobs.EnqueueParams{Queue: v.queue, Type: "t", Payload: v.payload}},
			{Name: "after-" + v.queue, Job: jobs.EnqueueParams{Queue: v.queue, Type: "t"}, After: []string{wfName}}}})
		_, _ = s.Workflows(ctx, int64(len(v.text)), 10)
		_, _ = s.GetWorkflow(ctx, int64(len(v.key)+1))
		s.owed.Store(true)
		_, _ = s.Claim(ctx, jobs.ClaimParams{WorkerID: v.worker, Queues: []string{v.queue}, Limit: 5})
	}
	names := statementNames(s.q)
	seen := map[string]map[string][]string{} // statement -> parameter -> declarations
	for _, c := range rec.calls {
		name := names[c.query]
		if name == "" {
			name = firstLine(c.query)
		}
		if seen[name] == nil {
			seen[name] = map[string][]string{}
		}
		for _, a := range c.args {
			d := declOf(a.Value)
			if !slices.Contains(seen[name][a.Name], d) {
				seen[name][a.Name] = append(seen[name][a.Name], d)
			}
		}
	}
	checked := 0
	for stmt, params := range seen {
		for p, decls := range params {
			checked++
			if len(decls) != 1 {
				t.Errorf("statement %s declares @%s as %s: one cached plan per declaration", stmt, p, strings.Join(decls, " and "))
			}
			for _, d := range decls {
				if strings.Contains(d, "not modelled") {
					t.Errorf("statement %s: @%s is a %s", stmt, p, d)
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d parameters; the exercise no longer reaches the statements", checked)
	}
}
