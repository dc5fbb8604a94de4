package faultstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// Every method of the wrapper that takes a context, found by reflection so
// that a method added to a store interface cannot be missed, fails with
// ErrCut while cut, without reaching the store; and the wrapper plays
// every role of a store.
func TestCutFailsEveryCallOfEveryRoleUntilRestored(t *testing.T) {
	mem := memstore.New()
	s := faultstore.New(mem)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	wrapper := reflect.TypeOf(s)
	for _, role := range []reflect.Type{
		reflect.TypeFor[jobs.Store](), reflect.TypeFor[jobs.Enqueuer](), reflect.TypeFor[jobs.Worker](),
		reflect.TypeFor[jobs.Rescuer](), reflect.TypeFor[jobs.Scheduler](), reflect.TypeFor[jobs.Admin](),
		reflect.TypeFor[jobs.BatchWorker](), reflect.TypeFor[jobs.Transitioner](),
	} {
		if !wrapper.Implements(role) {
			t.Errorf("the wrapper is not a %v", role)
		}
	}
	s.Cut()
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	cut := map[string]bool{}
	for i := range wrapper.NumMethod() {
		m := wrapper.Method(i)
		if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
			continue // Cut, Restore, IsCut
		}
		args := []reflect.Value{reflect.ValueOf(s), reflect.ValueOf(ctx)}
		for k := 2; k < m.Type.NumIn(); k++ {
			args = append(args, reflect.Zero(m.Type.In(k)))
		}
		out := m.Func.Call(args)
		last := out[len(out)-1]
		if m.Type.Out(m.Type.NumOut()-1) != errType {
			t.Errorf("%s returns no error last", m.Name)
			continue
		}
		if err, _ := last.Interface().(error); !errors.Is(err, faultstore.ErrCut) {
			t.Errorf("%s while cut: %v, want ErrCut", m.Name, err)
		}
		cut[m.Name] = true
	}
	// Each role's every method is among those cut.
	for _, role := range []reflect.Type{reflect.TypeFor[jobs.Store](), reflect.TypeFor[jobs.BatchWorker]()} {
		for i := range role.NumMethod() {
			if name := role.Method(i).Name; !cut[name] {
				t.Errorf("%v.%s is not cut", role, name)
			}
		}
	}
	for _, name := range []string{"Schedules", "SyncSchedules", "FireSchedule", "PauseSchedule", "DeleteSchedule", "TableQueues", "Trim"} {
		if !cut[name] {
			t.Errorf("%s is not cut", name)
		}
	}
	if n, _ := mem.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 1 {
		t.Fatalf("a cut call reached the store: %d jobs", n)
	}
	s.Restore()
	if _, err := s.GetJob(ctx, 1); err != nil {
		t.Fatalf("after restore: %v", err)
	}
	if _, err := s.Schedules(ctx); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
