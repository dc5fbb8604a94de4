package chokaq_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/chokaqtest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

func clientWith(t *testing.T, mws ...chokaq.EnqueueMiddleware) (*chokaq.Client, *memstore.Store) {
	t.Helper()
	s := memstore.New()
	c, err := chokaq.New(t.Context(), chokaq.Config{Store: s, DisableProcessor: true, DisableRescue: true, EnqueueMiddleware: mws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// TestEnqueueMiddlewareRunsInOrderOnEveryPath: each middleware sees the
// job as the one before left it, on Enqueue and EnqueueMany alike.
func TestEnqueueMiddlewareRunsInOrderOnEveryPath(t *testing.T) {
	ctx := t.Context()
	c, _ := clientWith(t,
		chokaq.EnqueueMiddleware{Name: "who", Before: func(ctx context.Context, p *jobs.EnqueueParams) error {
			p.CreatedBy = "checkout"
			return nil
		}},
		chokaq.EnqueueMiddleware{Name: "tag", Before: func(ctx context.Context, p *jobs.EnqueueParams) error {
			p.Tags = append(p.Tags, "by:"+p.CreatedBy)
			return nil
		}},
	)
	one, err := c.Enqueue(ctx, WelcomeArgs{Email: "a@example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	many, err := c.EnqueueMany(ctx, chokaq.EnqueueItem{Args: WelcomeArgs{}}, chokaq.EnqueueItem{Args: ReportArgs{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{one.ID, many[0].ID, many[1].ID} {
		j, err := c.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.CreatedBy != "checkout" || strings.Join(j.Tags, ",") != "by:checkout" {
			t.Errorf("job %d: created by %q, tags %q", id, j.CreatedBy, j.Tags)
		}
	}
}

// TestEnqueueMiddlewareRefusesAndPanicsAreNamed: a refusal or a panic
// names the middleware and inserts nothing, not even the batch's other
// jobs.
func TestEnqueueMiddlewareRefusesAndPanicsAreNamed(t *testing.T) {
	ctx := t.Context()
	errNoTenant := errors.New("no tenant in the context")
	c, s := clientWith(t, chokaq.EnqueueMiddleware{Name: "tenancy", Before: func(ctx context.Context, p *jobs.EnqueueParams) error {
		switch p.Type {
		case "reports.monthly":
			return errNoTenant
		case "broken":
			panic("tenancy table gone")
		}
		return nil
	}})
	_, err := c.Enqueue(ctx, ReportArgs{}, nil)
	if !errors.Is(err, errNoTenant) || !strings.Contains(err.Error(), `enqueue middleware "tenancy" refused the reports.monthly job`) {
		t.Errorf("refusal: %v", err)
	}
	_, err = c.EnqueueMany(ctx, chokaq.EnqueueItem{Args: WelcomeArgs{}}, chokaq.EnqueueItem{Args: ReportArgs{}})
	if !errors.Is(err, errNoTenant) {
		t.Errorf("batch refusal: %v", err)
	}
	_, err = c.EnqueueRaw(ctx, jobs.EnqueueParams{Type: "broken"})
	var pe *chokaq.PanicError
	if !errors.As(err, &pe) || pe.Middleware != "tenancy" || !strings.Contains(err.Error(), "tenancy table gone") {
		t.Errorf("panic: %v", err)
	}
	if n, _ := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); n != 0 {
		t.Errorf("%d jobs inserted, want none", n)
	}
}

func TestNewRefusesBadEnqueueMiddleware(t *testing.T) {
	ok := func(context.Context, *jobs.EnqueueParams) error { return nil }
	for name, mws := range map[string][]chokaq.EnqueueMiddleware{
		"EnqueueMiddleware[0].Name":   {{Before: ok}},
		"EnqueueMiddleware[0].Before": {{Name: "x"}},
		"EnqueueMiddleware[1].Name":   {{Name: "x", Before: ok}, {Name: "x", Before: ok}},
	} {
		_, err := chokaq.New(t.Context(), chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true, EnqueueMiddleware: mws}, nil)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestHandlerSeesTheMetadataItWasEnqueuedWith: EnqueueOpts.Metadata is
// kept with the job and given to its handler; metadata past 4 KiB is
// refused at enqueue, naming the field.
func TestHandlerSeesTheMetadataItWasEnqueuedWith(t *testing.T) {
	ctx := t.Context()
	reg := chokaq.NewRegistry()
	var seen map[string]string
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error {
		seen = job.Metadata
		return nil
	})
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"request_id": "r-42"}
	o, err := w.Work(ctx, WelcomeArgs{}, &chokaq.EnqueueOpts{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(seen, meta) || !maps.Equal(o.Job.Metadata, meta) {
		t.Errorf("handler saw %v, archive kept %v, want %v", seen, o.Job.Metadata, meta)
	}
	_, err = w.Client().Enqueue(ctx, WelcomeArgs{}, &chokaq.EnqueueOpts{Metadata: map[string]string{"k": strings.Repeat("x", jobs.MaxMetadataBytes)}})
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || ve.Field != "metadata" {
		t.Errorf("4 KiB past the limit: %v", err)
	}
}
