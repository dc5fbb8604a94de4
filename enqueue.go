package chokaq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// Args are a job's arguments: a value that encodes to JSON, whose Kind names
// the job's type and so the handler that runs it. Kind must not depend on
// the value (Handle calls it on the zero value):
//
//	type WelcomeArgs struct{ Email string `json:"email"` }
//
//	func (WelcomeArgs) Kind() string { return "mail.welcome" }
type Args interface {
	// Kind is the job's type, as stored and as handlers are registered
	// under: a stable name such as "mail.welcome", not the Go type's name,
	// so renaming the type does not orphan jobs already enqueued.
	Kind() string
}

// ArgsWithOpts is Args that bring their own enqueue defaults, for example
// the queue every job of their kind goes to. Options given to an Enqueue
// call override them field by field.
type ArgsWithOpts interface {
	Args
	// EnqueueOpts returns the defaults of every job of this kind.
	EnqueueOpts() EnqueueOpts
}

// EnqueueOpts are the options of one enqueue. The zero value enqueues on
// the default queue, due now, with the Client's default number of attempts.
//
// Each field is the field of the same name and type of jobs.EnqueueParams
// (TestEnqueueOptsAreTheOptionsOfEnqueueParams); a new option is that
// field, its twin there, and one line each in over and params, which
// TestEveryEnqueueOptionIsMergedAndConverted checks.
type EnqueueOpts struct {
	// Queue defaults to "default".
	Queue string
	// Priority: higher runs first among due jobs of a queue (-1000 to 1000).
	Priority int
	// Delay postpones the job by this long on the store's clock; RunAt
	// schedules it at an instant. Set one at most.
	Delay time.Duration
	RunAt time.Time
	// MaxAttempts is how many executions the job may have; 0 is the
	// Client's DefaultMaxAttempts.
	MaxAttempts int
	Tags        []string
	// IdempotencyKey is unique among active jobs: enqueueing it again while
	// the first job is active returns that job's ID, marked Duplicate.
	IdempotencyKey string
	// CreatedBy says who enqueued the job, for operators.
	CreatedBy string
	// ConcurrencyKey counts the job against its queue's limit per key
	// (MaxWorkersPerKey, KeyLimits), across every process; SequenceKey runs
	// the queue's jobs of one key one at a time, in enqueue order. An Args
	// type derives them per value through ArgsWithOpts (ADR 0031). Both
	// stores enforce them at claim; a store that cannot refuses them with
	// jobs.ErrFlowControlUnsupported rather than ignore them.
	ConcurrencyKey string
	SequenceKey    string
	// Metadata is kept with the job in every table and seen by its
	// handler (Job.Metadata): which request enqueued it, for which tenant.
	// At most 4 KiB as JSON (jobs.ValidateMetadata); operators see it on
	// the dashboard and in chokaq jobs show, so keep secrets out.
	Metadata map[string]string
	// Unique makes the job unique by its kind and what the options name
	// (arguments, fields, queue, period), held in the states they name: an
	// enqueue while another job holds the key returns that job's ID,
	// marked Duplicate. See jobs.UniqueOpts.
	Unique *jobs.UniqueOpts
}

// optField is one option of EnqueueOpts: whether its type tells itself
// when it is unset (time.Time: a zero instant in any location).
type optField struct {
	zeroer bool
}

// optFields are the options, in EnqueueOpts' order, for setOpts (a
// schedule's check of what it refuses, run once per definition).
var optFields = sync.OnceValue(func() []optField {
	opts := reflect.TypeFor[EnqueueOpts]()
	zeroer := reflect.TypeFor[interface{ IsZero() bool }]()
	out := make([]optField, opts.NumField())
	for i := range out {
		out[i] = optField{zeroer: reflect.PointerTo(opts.Field(i).Type).Implements(zeroer)}
	}
	return out
})

// set reports whether the option v (addressable) is given: not its zero
// value.
func (f optField) set(v reflect.Value) bool {
	if f.zeroer { // through a pointer, which boxes without allocating
		return !v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
	}
	return !v.IsZero()
}

// setOpts names the options o sets.
func (o *EnqueueOpts) setOpts() []string {
	var set []string
	ov := reflect.ValueOf(o).Elem()
	for i, f := range optFields() {
		if f.set(ov.Field(i)) {
			set = append(set, ov.Type().Field(i).Name)
		}
	}
	return set
}

// params encodes args into the store's form of a new job, with each
// option opts sets, else the Args' own (ArgsWithOpts), else the kind's
// policy: reg's (Config.Kinds over the code's) over the Args' own
// (ArgsWithPolicy). opts and reg may be nil.
func params(args Args, opts *EnqueueOpts, reg *processor.Registry) (jobs.EnqueueParams, error) {
	if args == nil {
		return jobs.EnqueueParams{}, fmt.Errorf("chokaq: enqueue: %w", &jobs.ValidationError{Field: "args", Value: nil, Rule: "must not be nil"})
	}
	kind, err := kindOf(args, "")
	if err != nil {
		return jobs.EnqueueParams{}, fmt.Errorf("chokaq: enqueue: %w", err)
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return jobs.EnqueueParams{}, fmt.Errorf("chokaq: encode the args of a %s job: %w", kind, err)
	}
	var o EnqueueOpts
	if d, ok := args.(ArgsWithOpts); ok {
		o = d.EnqueueOpts()
	}
	if opts != nil {
		o = opts.over(o)
	}
	kp, err := policyOf(args, "")
	if err != nil {
		return jobs.EnqueueParams{}, fmt.Errorf("chokaq: enqueue: %w", err)
	}
	if reg != nil {
		if rp, ok := reg.Policy(kind); ok {
			kp = rp.Over(kp)
		}
	}
	return withKind(jobs.EnqueueParams{
		Type: kind, Payload: payload,
		Queue: o.Queue, Priority: o.Priority, Delay: o.Delay, RunAt: o.RunAt, MaxAttempts: o.MaxAttempts,
		Tags: o.Tags, IdempotencyKey: o.IdempotencyKey, CreatedBy: o.CreatedBy, Metadata: o.Metadata,
		Unique: o.Unique, ConcurrencyKey: o.ConcurrencyKey, SequenceKey: o.SequenceKey,
	}, kp), nil
}

// over is o over base: each option o sets wins. It and params list the
// options by hand, because the enqueue path runs for every job and a copy
// by reflection costs it allocations; TestEveryEnqueueOptionIsMergedAndConverted
// sets every field by reflection and fails when one is left out here or
// in params.
func (o *EnqueueOpts) over(base EnqueueOpts) EnqueueOpts {
	if o.Queue != "" {
		base.Queue = o.Queue
	}
	if o.Priority != 0 {
		base.Priority = o.Priority
	}
	if o.Delay != 0 {
		base.Delay = o.Delay
	}
	if !o.RunAt.IsZero() {
		base.RunAt = o.RunAt
	}
	if o.MaxAttempts != 0 {
		base.MaxAttempts = o.MaxAttempts
	}
	if o.Tags != nil {
		base.Tags = o.Tags
	}
	if o.IdempotencyKey != "" {
		base.IdempotencyKey = o.IdempotencyKey
	}
	if o.CreatedBy != "" {
		base.CreatedBy = o.CreatedBy
	}
	if o.Metadata != nil {
		base.Metadata = o.Metadata
	}
	if o.Unique != nil {
		base.Unique = o.Unique
	}
	if o.ConcurrencyKey != "" {
		base.ConcurrencyKey = o.ConcurrencyKey
	}
	if o.SequenceKey != "" {
		base.SequenceKey = o.SequenceKey
	}
	return base
}

// Enqueue adds a job of args' kind, its payload args encoded as JSON, and
// wakes this process's processor. opts may be nil.
func (c *Client) Enqueue(ctx context.Context, args Args, opts *EnqueueOpts) (jobs.EnqueueResult, error) {
	p, err := params(args, opts, c.reg)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	return c.EnqueueRaw(ctx, p)
}

// EnqueueTx adds a job inside the caller's transaction: it exists if and
// only if tx commits. The store must offer jobs.TxEnqueuer, as the SQL
// Server store does (ErrTxUnsupported otherwise).
func (c *Client) EnqueueTx(ctx context.Context, tx *sql.Tx, args Args, opts *EnqueueOpts) (jobs.EnqueueResult, error) {
	p, err := params(args, opts, c.reg)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	return c.EnqueueRawTx(ctx, tx, p)
}

// EnqueueItem is one job of EnqueueMany.
type EnqueueItem struct {
	Args Args
	Opts *EnqueueOpts
}

// EnqueueMany adds jobs atomically, all or none, and returns their results
// in order. A key repeated within the batch resolves to its first job.
func (c *Client) EnqueueMany(ctx context.Context, items ...EnqueueItem) ([]jobs.EnqueueResult, error) {
	ps := make([]jobs.EnqueueParams, len(items))
	for i, it := range items {
		p, err := params(it.Args, it.Opts, c.reg)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		ps[i] = p
	}
	return c.EnqueueRawMany(ctx, ps)
}

// prepared is p with its kind's policy (the registry's, Config.Kinds
// over the code's), then after the Client's enqueue middleware (which so
// sees the job as it will be stored), with its DefaultMaxAttempts filled
// in, checked against Config.Limits: the Client's limits hold on every
// path and for every store, Config.Store's too, which then applies its own
// as well.
func (c *Client) prepared(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueParams, error) {
	if kp, ok := c.reg.Policy(p.Type); ok {
		p = withKind(p, kp)
	}
	if err := c.beforeEnqueue(ctx, &p); err != nil {
		return p, err
	}
	p.Metadata = processor.InjectTraceContext(ctx, p.Metadata)
	if p.MaxAttempts == 0 && c.cfg.DefaultMaxAttempts > 0 {
		p.MaxAttempts = c.cfg.DefaultMaxAttempts
	}
	// The normalized job goes on (the store normalizes it again, to the
	// same), so a unique job's key is hashed here once, not again by the
	// store (jobs.EnqueueParams keeps the hash with what it was taken of).
	n, err := p.Normalize(c.cfg.Limits)
	if err != nil {
		return p, err
	}
	return n, nil
}

// EnqueueRaw adds a job given in the store's own form, for payloads that
// are not JSON-encoded Args: bytes the caller carries.
func (c *Client) EnqueueRaw(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	p, err := c.prepared(ctx, p)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	r, err := c.store.Enqueue(ctx, p)
	if err != nil {
		return r, err // the store names itself
	}
	c.countEnqueued([]jobs.EnqueueParams{p}, []jobs.EnqueueResult{r})
	c.notify()
	return r, nil
}

// EnqueueRawTx is EnqueueTx of a job in the store's own form.
func (c *Client) EnqueueRawTx(ctx context.Context, tx *sql.Tx, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	txs, ok := c.store.(jobs.TxEnqueuer)
	if !ok {
		return jobs.EnqueueResult{}, fmt.Errorf("%w (this store is a %T)", ErrTxUnsupported, c.store)
	}
	p, err := c.prepared(ctx, p)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	r, err := txs.EnqueueTx(ctx, tx, p)
	if err != nil {
		return r, err // the store names itself
	}
	// Counted at insert: a job whose transaction later rolls back was
	// counted anyway, since the Client never sees the commit.
	c.countEnqueued([]jobs.EnqueueParams{p}, []jobs.EnqueueResult{r})
	return r, nil
}

// EnqueueRawMany is EnqueueMany of jobs in the store's own form.
func (c *Client) EnqueueRawMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	filled := make([]jobs.EnqueueParams, len(ps))
	for i, p := range ps {
		var err error
		if filled[i], err = c.prepared(ctx, p); err != nil {
			return nil, &jobs.BatchItemError{Index: i, Err: err}
		}
	}
	r, err := c.store.EnqueueMany(ctx, filled)
	if err != nil {
		return r, err // the store names itself
	}
	c.countEnqueued(filled, r)
	c.notify()
	return r, nil
}

// countEnqueued records the jobs an enqueue added, and apart the
// duplicates it refused (of an idempotency or unique key), which added
// nothing.
func (c *Client) countEnqueued(ps []jobs.EnqueueParams, rs []jobs.EnqueueResult) {
	m := c.cfg.Telemetry
	if m == nil {
		return
	}
	type queueType struct{ queue, typ string }
	added, dups := map[queueType]int{}, map[queueType]int{}
	for i, p := range ps {
		if i >= len(rs) {
			continue
		}
		queue := p.Queue
		if queue == "" {
			queue = jobs.DefaultQueue
		}
		if rs[i].Duplicate {
			dups[queueType{queue, p.Type}]++
		} else {
			added[queueType{queue, p.Type}]++
		}
	}
	for k, n := range added {
		m.RecordEnqueued(k.queue, k.typ, n)
	}
	for k, n := range dups {
		m.RecordDuplicates(k.queue, k.typ, n)
	}
}

func (c *Client) notify() {
	if c.proc != nil {
		c.proc.Notify()
	}
}
