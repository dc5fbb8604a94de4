package sqlserver

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// Store is the SQL Server jobs.Store. It is safe for concurrent use.
type Store struct {
	forms // StartMany ... DeadLetterMany (batch.go)

	// db is where statements run: the pool, or a transaction (see on).
	db     database
	pool   *sql.DB
	schema string
	q      *queries
	limits jobs.Limits
	log    *zap.Logger
	retry  RetryPolicy
	sleep  func(context.Context, time.Duration) error
	// Batch sizes of bulk statements.
	bulkBatch   int
	insertBatch int
	// lockTimeout bounds the wait for an application lock (a key's, a
	// queue's): sp_getapplock's @LockTimeout.
	lockTimeout time.Duration
	// statsCap caps QueueStats' counts.
	statsCap int
	// newClaimID makes the id a claim stamps its rows with.
	newClaimID func() int64
	// owed is set when a claim or the probe saw a workflow release owed
	// (ADR 0034): the next claim runs release steps first. A pointer, so
	// the copies on makes share it.
	owed *atomic.Bool
	// noRelease: claims run no release step (a copy made by on).
	noRelease bool
	// workflowEnded is WithWorkflowEnded's hook, nil for none.
	workflowEnded func(jobs.Workflow)
}

var (
	_ jobs.Store      = (*Store)(nil)
	_ jobs.TxEnqueuer = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithSchema selects the schema (default schema.DefaultName).
func WithSchema(name string) Option { return func(s *Store) { s.schema = name } }

// WithLimits sets enqueue limits such as the maximum payload size.
func WithLimits(l jobs.Limits) Option { return func(s *Store) { s.limits = l } }

// WithLogger sets the logger for retries and degraded states (nil: no-op).
func WithLogger(l *zap.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
}

// WithRetryPolicy replaces DefaultRetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option { return func(s *Store) { s.retry = p } }

// WithStatsCap caps each count QueueStats reports (jobs.DefaultStatsCap).
func WithStatsCap(n int) Option { return func(s *Store) { s.statsCap = n } }

// DefaultLockTimeout bounds the wait for an idempotency key's or a queue's
// application lock. A lock not granted in time fails the call with a
// transient error, which the store's retry policy retries.
const DefaultLockTimeout = 10 * time.Second

// New returns a store over db. It does no I/O; call CheckSchema at start-up.
func New(db *sql.DB, opts ...Option) (*Store, error) {
	s := &Store{
		db:          pooled{db},
		pool:        db,
		schema:      schema.DefaultName,
		log:         zap.NewNop(),
		retry:       DefaultRetryPolicy,
		sleep:       sleepCtx,
		bulkBatch:   1000,
		insertBatch: 500,
		lockTimeout: DefaultLockTimeout,
		statsCap:    jobs.DefaultStatsCap,
		newClaimID:  randomClaimID,
		owed:        new(atomic.Bool),
	}
	s.forms = jobs.FormsOf(s)
	for _, o := range opts {
		o(s)
	}
	if db == nil {
		return nil, errors.New("sqlserver: nil *sql.DB")
	}
	if err := schema.ValidateName(s.schema); err != nil {
		return nil, err
	}
	if s.retry.MaxAttempts < 1 {
		s.retry.MaxAttempts = 1
	}
	if s.retry.BaseDelay <= 0 {
		s.retry.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if s.retry.MaxDelay < s.retry.BaseDelay {
		s.retry.MaxDelay = s.retry.BaseDelay
	}
	if s.statsCap < 1 || s.statsCap > jobs.MaxDepthCap {
		return nil, fmt.Errorf("sqlserver: stats cap %d: must be between 1 and %d", s.statsCap, jobs.MaxDepthCap)
	}
	s.q = render(s.schema)
	return s, nil
}

// Open connects to dsn and returns a store. The DSN gets an application name
// (so operators can see chokaq sessions) unless it names one.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	// A URL the driver would misread never reaches it: it would resolve
	// a piece of the password as the host.
	if err := CheckDSN(dsn); err != nil {
		return nil, err
	}
	// go-mssqldb parses the DSN here, before any I/O: an error is bad
	// input. Either error may quote the DSN, so both are redacted.
	db, err := sql.Open("sqlserver", WithAppName(dsn, "chokaq-go"))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidDSN, redact.DSN(dsn), redact.Error(err, dsn))
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlserver: cannot reach SQL Server at %s: %w", redact.DSN(dsn), redact.Error(err, dsn))
	}
	s, err := New(db, opts...)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DB returns the connection pool, for a caller's own transactions.
func (s *Store) DB() *sql.DB { return s.pool }

// Schema returns the schema name the store uses.
func (s *Store) Schema() string { return s.schema }

// Close closes the connection pool.
func (s *Store) Close() error { return s.pool.Close() }

// MinCompatibilityLevel is the lowest database compatibility level the
// store's statements are written and reviewed for (schema's).
const MinCompatibilityLevel = schema.MinCompatibilityLevel

// MinServerVersion is the lowest SQL Server major version the store runs
// on: 15, SQL Server 2019 (schema's). Azure SQL Database and Managed
// Instance always qualify.
const MinServerVersion = schema.MinServerVersion

// ErrServerVersion is wrapped by CheckSchema's error for an engine older
// than MinServerVersion; it is schema.ErrServerVersion, which schema.Up
// returns for the same server.
var ErrServerVersion = schema.ErrServerVersion

// ErrCompatibilityLevel is wrapped by CheckSchema's error for a database
// whose compatibility level is below MinCompatibilityLevel; it is
// schema.ErrCompatibilityLevel.
var ErrCompatibilityLevel = schema.ErrCompatibilityLevel

// CheckSchema returns nil when the schema is migrated to exactly the version
// this binary expects (see package schema for the sentinel errors), the
// engine is at least MinServerVersion and the database's compatibility
// level is at least MinCompatibilityLevel (schema.CheckServerLevel's
// rules), and the schema's name columns ignore case.
func (s *Store) CheckSchema(ctx context.Context) error {
	lv, err := s.readServerLevel(ctx)
	if err != nil {
		return err
	}
	if err := lv.checkEngine(); err != nil {
		return err
	}
	if err := lv.checkCompatibility(); err != nil {
		return err
	}
	if err := schema.Check(ctx, s.pool, s.schema); err != nil {
		return err
	}
	return s.checkNameCollation(ctx)
}

// ErrCaseSensitiveNames is wrapped by CheckSchema's error for a schema
// whose queue or schedule name columns compare case by case.
var ErrCaseSensitiveNames = errors.New("sqlserver: the schema's queue and schedule names compare case-sensitively")

// checkNameCollation refuses name columns whose collation does not ignore
// case: every store compares queue and schedule names ignoring case
// (jobs.QueueKey), and SQL Server's statements compare them by collation,
// so on a case-sensitive one "orders" and "Orders" would be two queues
// here and one everywhere else.
func (s *Store) checkNameCollation(ctx context.Context) error {
	var n int64
	var collation sql.NullString
	table := func(t string) mssql.NVarCharMax { return text(s.schema + "." + t) }
	err := s.do(ctx, "name collation", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.caseSensitiveNames, named("hot", table("JobsHot")), named("archive", table("JobsArchive")),
			named("dlq", table("JobsDLQ")), named("queues", table("Queues")), named("schedules", table("Schedules"))).Scan(&n, &collation)
	})
	if err != nil {
		return fmt.Errorf("sqlserver: read the collation of the schema's name columns: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%w (collation %s): chokaq-go compares queue and schedule names ignoring case; "+
			"use a database whose default collation ignores case (SQL Server's default, SQL_Latin1_General_CP1_CI_AS, does) and migrate the schema there",
			ErrCaseSensitiveNames, collation.String)
	}
	return nil
}

// serverLevel is what CheckSchema checks of the engine and the database.
type serverLevel struct {
	// compatibility is the database's compatibility level; major the
	// engine's major version (15 is SQL Server 2019); edition its
	// SERVERPROPERTY('EngineEdition') (5 Azure SQL Database, 8 Azure SQL
	// Managed Instance: always current).
	compatibility, major, edition int64
}

func (s *Store) readServerLevel(ctx context.Context) (serverLevel, error) {
	var lv serverLevel
	err := s.do(ctx, "server level", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.serverLevel).Scan(&lv.compatibility, &lv.major, &lv.edition)
	})
	if err != nil {
		return lv, fmt.Errorf("sqlserver: read the server's version and the database's compatibility level: %w", err)
	}
	return lv, nil
}

func (lv serverLevel) checkEngine() error { return schema.CheckEngine(lv.major, lv.edition) }

func (lv serverLevel) checkCompatibility() error { return schema.CheckCompatibility(lv.compatibility) }

func named(name string, v any) sql.NamedArg { return sql.Named(name, v) }

// text sends a string as NVARCHAR(MAX): go-mssqldb declares a plain string
// as nvarchar(its length), which would give a statement one cached plan per
// length. The statements copy it into a local of the column's type, and
// read the empty string as "none" (no queue, type, key or text is empty).
func text(s string) mssql.NVarCharMax { return mssql.NVarCharMax(s) }

// hexText sends bytes as hex in NVARCHAR(MAX), which the statement turns
// back with CONVERT(VARBINARY(MAX), @x, 2): go-mssqldb declares []byte as
// varbinary(its length), and nil as varbinary(max).
func hexText(b []byte) mssql.NVarCharMax { return mssql.NVarCharMax(hex.EncodeToString(b)) }

// lockTimeoutMs is sp_getapplock's @LockTimeout.
func (s *Store) lockTimeoutMs() int64 { return s.lockTimeout.Milliseconds() }

// Enqueue implements jobs.Store.
func (s *Store) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	idem := idempotency(p.IdempotencyKey != "" || p.Unique != nil)
	var r jobs.EnqueueResult
	err = s.do(ctx, "enqueue", idem, func(ctx context.Context) error {
		var err error
		r, err = s.enqueueOne(ctx, s.db, p, false)
		return err
	})
	if err != nil {
		return jobs.EnqueueResult{}, fmt.Errorf("sqlserver: enqueue %s/%s: %w", p.Queue, p.Type, err)
	}
	return r, nil
}

// ErrNilTx is wrapped by EnqueueTx's error for a nil transaction.
var ErrNilTx = errors.New("sqlserver: the caller's transaction is nil")

// EnqueueTx enqueues inside the caller's transaction: the job exists if and
// only if the caller commits. Transient errors are not retried here, because
// the transaction is the caller's to retry.
func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	if tx == nil {
		return jobs.EnqueueResult{}, fmt.Errorf("sqlserver: enqueue %s/%s in caller's transaction: %w", p.Queue, p.Type, ErrNilTx)
	}
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	r, err := s.enqueueOne(ctx, tx, p, true)
	if err != nil {
		return jobs.EnqueueResult{}, fmt.Errorf("sqlserver: enqueue %s/%s in caller's transaction: %w", p.Queue, p.Type, err)
	}
	return r, nil
}

// enqueueOne inserts one job; a keyed job goes through the key check. inTx
// says q is a transaction the caller opened (EnqueueTx, EnqueueMany): the
// statement then takes no transaction of its own, and its key locks last
// until that one ends. A unique job's bucket is computed by the statement
// unless bucket is given (a batch's, computed when it locked the keys).
func (s *Store) enqueueOne(ctx context.Context, q querier, p jobs.EnqueueParams, inTx bool, bucket ...int64) (jobs.EnqueueResult, error) {
	items := s.insertTVP([]insertRow{toInsertRow(0, p)})
	side, err := s.sideLists([]jobs.EnqueueParams{p})
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	var r jobs.EnqueueResult
	if p.IdempotencyKey == "" && p.Unique == nil {
		err := q.QueryRowContext(ctx, s.q.enqueueBatch, append(side, named("n", int64(1)), named("items", items))...).Scan(&r.ID)
		return r, err
	}
	stmt, args := s.q.enqueueKeyed, append(side, named("items", items),
		named("key", text(p.IdempotencyKey)), named("lockTimeoutMs", s.lockTimeoutMs()))
	if inTx {
		stmt = s.q.enqueueKeyedTx
	}
	if p.Unique != nil {
		hash, _, err := p.UniqueHash() // Normalize has checked it
		if err != nil {
			return r, err
		}
		stmt = s.q.enqueueUnique
		if inTx {
			stmt = s.q.enqueueUniqueTx
		}
		args = append(args, named("hashHex", hexText(hash[:])), named("periodMs", p.Unique.Period.Milliseconds()),
			named("states", int64(p.Unique.States.Effective())), named("hasBucket", flag(len(bucket) > 0)),
			named("bucket", append(bucket, 0)[0]))
	}
	for range 3 {
		err := q.QueryRowContext(ctx, stmt, args...).Scan(&r.ID, &r.Duplicate)
		if !isDuplicateKey(err) {
			return r, err
		}
		if inTx {
			// The statement read the job that won the key and found it gone
			// again (it finished between the conflict and the re-read), and
			// rethrew. Under XACT_ABORT OFF only the failed insert was rolled
			// back: the caller's transaction goes on, and the key is free.
			continue
		}
		// The key was taken by a path that takes no key lock (resurrect)
		// between the check and the insert, and the insert rolled back:
		// that job is the answer. If it is already gone, try again.
		err = q.QueryRowContext(ctx, s.q.jobByKey, named("key", text(p.IdempotencyKey))).Scan(&r.ID)
		if err == nil {
			r.Duplicate = true
			return r, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
	}
	return r, fmt.Errorf("sqlserver: idempotency key %q: taken and released three times in a row while enqueueing", p.IdempotencyKey)
}

// isDuplicateKey reports a unique index (2601) or constraint (2627) refusal.
func isDuplicateKey(err error) bool {
	var me mssql.Error
	return errors.As(err, &me) && (me.Number == 2601 || me.Number == 2627)
}

func (s *Store) insertTVP(rows []insertRow) mssql.TVP {
	return mssql.TVP{TypeName: s.schema + ".JobInsertList", Value: rows}
}

// sideLists are the side lists of an enqueue of ps, by the job's Ord (its
// index in ps): @metadata (MetadataList) and @flowKeys (FlowKeyList), each
// a row for every job that has any, so a batch without sends empty lists.
func (s *Store) sideLists(ps []jobs.EnqueueParams) ([]any, error) {
	meta, flow := []metadataRow{}, []flowKeyRow{}
	for i, p := range ps {
		m, err := jobs.EncodeMetadata(p.Metadata)
		if err != nil {
			return nil, err
		}
		if m != "" {
			meta = append(meta, metadataRow{Ord: int32(i), Metadata: m})
		}
		if p.ConcurrencyKey != "" || p.SequenceKey != "" {
			flow = append(flow, flowKeyRow{Ord: int32(i), ConcurrencyKey: nullText(p.ConcurrencyKey), SequenceKey: nullText(p.SequenceKey)})
		}
	}
	return []any{
		named("metadata", mssql.TVP{TypeName: s.schema + ".MetadataList", Value: meta}),
		named("flowKeys", mssql.TVP{TypeName: s.schema + ".FlowKeyList", Value: flow}),
	}, nil
}

// flowKeyRow is one row of the FlowKeyList table type, in column order.
type flowKeyRow struct {
	Ord            int32
	ConcurrencyKey *string
	SequenceKey    *string
}

// keyLimitRow is one row of the KeyLimitList table type, in column order.
type keyLimitRow struct {
	KeyName    string
	MaxWorkers int32
}

// nullText is s, or NULL for "".
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// metadataRow is one row of the MetadataList table type, in column order.
type metadataRow struct {
	Ord      int32
	Metadata string
}

// outputRow is one row of the OutputList table type, in column order: the
// output a handler recorded, written with its job's move (ADR 0028).
type outputRow struct {
	ID         int64
	Lease      int64
	OutputJSON string
}

// progressRow is one row of the ProgressList table type, in column order:
// the progress a handler reported, written with its job's heartbeat.
type progressRow struct {
	ID       int64
	Lease    int64
	Fraction float32
	Message  *string
}

// insertRow is one row of the JobInsertList table type, in column order.
type insertRow struct {
	Ord         int32
	Queue       string
	Type        string
	Payload     []byte
	Priority    int32
	DelayMs     int64
	RunAtMs     *int64
	MaxAttempts int32
	Tags        *string
	CreatedBy   *string
}

// EnqueueMany implements jobs.Store: one transaction, keyed items one by one
// in key order, the rest as table-valued inserts of up to insertBatch rows.
// Key order makes two batches rarely lock keys in opposite orders (Go's
// byte order is not the server's collation order, so not never); a deadlock
// victim rolls back whole and is retried.
func (s *Store) EnqueueMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	ps, err := jobs.NormalizeBatch(ps, s.limits)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	var out []jobs.EnqueueResult
	err = s.do(ctx, "enqueue batch", once, func(ctx context.Context) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if out, err = s.enqueueMany(ctx, tx, ps); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: enqueue batch of %d: %w", len(ps), err)
	}
	return out, nil
}

func (s *Store) enqueueMany(ctx context.Context, tx querier, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	out := make([]jobs.EnqueueResult, len(ps))
	var keyed, plain []int
	unique := false
	for i, p := range ps {
		if p.IdempotencyKey == "" && p.Unique == nil {
			plain = append(plain, i)
			continue
		}
		keyed = append(keyed, i)
		unique = unique || p.Unique != nil
	}
	var err error
	if unique {
		err = s.enqueueKeyedLocked(ctx, tx, ps, keyed, out)
	} else {
		err = s.enqueueIdempotent(ctx, tx, ps, keyed, out)
	}
	if err != nil {
		return nil, err
	}
	for start := 0; start < len(plain); start += s.insertBatch {
		chunk := plain[start:min(start+s.insertBatch, len(plain))]
		rows := make([]insertRow, len(chunk))
		chunkPs := make([]jobs.EnqueueParams, len(chunk))
		for ord, i := range chunk {
			rows[ord], chunkPs[ord] = toInsertRow(int32(ord), ps[i]), ps[i]
		}
		side, err := s.sideLists(chunkPs)
		if err != nil {
			return nil, err
		}
		var first int64
		err = tx.QueryRowContext(ctx, s.q.enqueueBatch,
			append(side, named("n", int64(len(rows))), named("items", s.insertTVP(rows)))...,
		).Scan(&first)
		if err != nil {
			return nil, err
		}
		for ord, i := range chunk {
			out[i] = jobs.EnqueueResult{ID: first + int64(ord)}
		}
	}
	return out, nil
}

// enqueueIdempotent enqueues a batch's items with idempotency keys and no
// unique key: one statement per key, in the order of the keys' bytes, so
// two batches rarely lock keys in opposite orders (CHECKSUM can give two
// keys one lock name, so not never); a later item with a key resolves to
// its first.
func (s *Store) enqueueIdempotent(ctx context.Context, tx querier, ps []jobs.EnqueueParams, keyed []int, out []jobs.EnqueueResult) error {
	firstOfKey := map[string]int{}
	var first []int
	for _, i := range keyed {
		if !hasKey(firstOfKey, ps[i].IdempotencyKey) {
			firstOfKey[ps[i].IdempotencyKey] = i
			first = append(first, i)
		}
	}
	slices.SortFunc(first, func(a, b int) int { return strings.Compare(ps[a].IdempotencyKey, ps[b].IdempotencyKey) })
	for _, i := range first {
		r, err := s.enqueueOne(ctx, tx, ps[i], true)
		if err != nil {
			return err
		}
		out[i] = r
	}
	for _, i := range keyed {
		if f := firstOfKey[ps[i].IdempotencyKey]; f != i {
			out[i] = jobs.EnqueueResult{ID: out[f].ID, Duplicate: true}
		}
	}
	return nil
}

// enqueueKeyedLocked enqueues a batch's keyed items when some are unique:
// qLockEnqueueKeys first takes every key's lock in the one global order
// (unique keys by hash and bucket, then idempotency keys by their bytes,
// as enqueueIdempotent takes them) and computes the buckets once; then
// each item runs in the batch's order, as the in-memory store runs them,
// and finds the jobs the items before it inserted in the transaction.
func (s *Store) enqueueKeyedLocked(ctx context.Context, tx querier, ps []jobs.EnqueueParams, keyed []int, out []jobs.EnqueueResult) error {
	var rows []enqueueKeyRow
	var idem []int
	for _, i := range keyed {
		p := ps[i]
		if p.IdempotencyKey != "" {
			idem = append(idem, i)
		}
		if p.Unique == nil {
			continue
		}
		h, _, err := p.UniqueHash() // Normalize has checked it
		if err != nil {
			return &jobs.BatchItemError{Index: i, Err: err}
		}
		period := p.Unique.Period.Milliseconds()
		rows = append(rows, enqueueKeyRow{Ord: int32(i), KeyHash: h[:], PeriodMs: &period})
	}
	slices.SortStableFunc(idem, func(a, b int) int { return strings.Compare(ps[a].IdempotencyKey, ps[b].IdempotencyKey) })
	for n, i := range idem {
		k := ps[i].IdempotencyKey
		rows = append(rows, enqueueKeyRow{Ord: int32(len(ps) + n), IdempotencyKey: &k})
	}
	rs, err := tx.QueryContext(ctx, s.q.lockEnqueueKeys, named("keys", mssql.TVP{TypeName: s.schema + ".EnqueueKeyList", Value: rows}),
		named("lockTimeoutMs", s.lockTimeoutMs()))
	if err != nil {
		return err
	}
	buckets := map[int]int64{}
	for rs.Next() {
		var ord int32
		var b int64
		if err := rs.Scan(&ord, &b); err != nil {
			rs.Close()
			return err
		}
		buckets[int(ord)] = b
	}
	if err := rs.Close(); err != nil {
		return err
	}
	if err := rs.Err(); err != nil {
		return err
	}
	for _, i := range keyed {
		var bucket []int64
		if b, ok := buckets[i]; ok {
			bucket = append(bucket, b)
		}
		r, err := s.enqueueOne(ctx, tx, ps[i], true, bucket...)
		if err != nil {
			return err
		}
		out[i] = r
	}
	return nil
}

// enqueueKeyRow is one row of the EnqueueKeyList table type, in column
// order: a unique key (its hash and period) by its item's Ord, or an
// idempotency key, whose Ord, past the items', orders the locks.
type enqueueKeyRow struct {
	Ord            int32
	KeyHash        []byte
	PeriodMs       *int64
	IdempotencyKey *string
}

func hasKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }

func toInsertRow(ord int32, p jobs.EnqueueParams) insertRow {
	r := insertRow{
		Ord: ord, Queue: p.Queue, Type: p.Type, Payload: p.Payload, Priority: int32(p.Priority),
		DelayMs: p.Delay.Milliseconds(), MaxAttempts: int32(p.MaxAttempts),
	}
	if !p.RunAt.IsZero() {
		ms := p.RunAt.UnixMilli()
		r.RunAtMs = &ms
	}
	if len(p.Tags) > 0 {
		t := strings.Join(p.Tags, ",")
		r.Tags = &t
	}
	if p.CreatedBy != "" {
		c := p.CreatedBy
		r.CreatedBy = &c
	}
	return r
}

// Claim implements jobs.Store: one round trip per queue until Limit is met.
func (s *Store) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	r, err := s.ClaimHeld(ctx, p)
	return r.Jobs, err
}

// ClaimHeld implements jobs.RateClaimer: Claim, and the queues whose rate
// limit has nothing left in its open window (ADR 0033), from each claim's
// second result.
func (s *Store) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	if err := p.Validate(); err != nil {
		return jobs.ClaimResult{}, err
	}
	released := s.owed.Load() && !s.noRelease
	if released {
		s.release(ctx)
	}
	r, err := s.claimQueues(ctx, p)
	if err != nil || released || s.noRelease || len(r.Jobs) >= p.Limit || !s.owed.Load() {
		return r, err
	}
	// The claim's replies say a release is owed, which this process did
	// not know (another process finished the parent, or this one was
	// restarted since): pay it and claim again at once, so the children a
	// parent's move released wait for no later claim.
	s.release(ctx)
	p.Limit -= len(r.Jobs)
	more, err := s.claimQueues(ctx, p)
	r.Jobs = append(r.Jobs, more.Jobs...)
	for _, h := range more.Held {
		if !slices.ContainsFunc(r.Held, func(o jobs.QueueHold) bool { return o.Queue == h.Queue }) {
			r.Held = append(r.Held, h)
		}
	}
	return r, err
}

// release runs the release steps a claim owes (releaseTasks); a failed
// step leaves the release owed for the next claim, and the claim goes on.
func (s *Store) release(ctx context.Context) {
	if err := s.releaseTasks(ctx); err != nil {
		s.log.Warn("sqlserver: workflow release step failed; the next claim tries again", zap.Error(err))
	}
}

// claimQueues claims from p's queues in order, each its own statement.
func (s *Store) claimQueues(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	var out []*jobs.Job
	var held []jobs.QueueHold
	seen := map[string]bool{}
	for _, queue := range p.Queues {
		if len(out) >= p.Limit {
			break
		}
		if seen[jobs.QueueKey(queue)] {
			continue // the same queue: names compare ignoring case
		}
		seen[jobs.QueueKey(queue)] = true
		var got []*jobs.Job
		var wait time.Duration
		claimID := s.newClaimID()
		attempt := 0
		err := s.do(ctx, "claim", idempotent, func(ctx context.Context) error {
			var err error
			if attempt++; attempt > 1 {
				// The reply to an earlier attempt may have been lost after
				// it committed: its rows carry claimID and are Fetched by
				// this worker. Adopt them rather than strand them until
				// rescue phase 1 (and, on a capped queue, hold MaxWorkers
				// slots that long).
				if got, err = s.adoptClaim(ctx, p.WorkerID, claimID); err != nil || len(got) > 0 {
					return err
				}
			}
			got, wait, err = s.claimQueueHeld(ctx, s.db, p.WorkerID, queue, p.Limit-len(out), claimID)
			return err
		})
		if err != nil {
			// Return what earlier queues gave: those rows are Fetched by
			// this worker now, and dropping them would strand them until
			// phase 1.
			return jobs.ClaimResult{Jobs: out, Held: held}, fmt.Errorf("sqlserver: claim from queue %s: %w", queue, err)
		}
		out = append(out, got...)
		if wait > 0 {
			held = append(held, jobs.QueueHold{Queue: queue, For: wait})
		}
	}
	return jobs.ClaimResult{Jobs: out, Held: held}, nil
}

func (s *Store) claimQueue(ctx context.Context, q querier, worker, queue string, limit int, claimID int64) ([]*jobs.Job, error) {
	got, _, err := s.claimQueueHeld(ctx, q, worker, queue, limit, claimID)
	return got, err
}

// claimQueueHeld is claimQueue, and how long the queue's rate limit holds
// it (0: not held): the claim's second result.
func (s *Store) claimQueueHeld(ctx context.Context, q querier, worker, queue string, limit int, claimID int64) ([]*jobs.Job, time.Duration, error) {
	rows, err := q.QueryContext(ctx, s.q.claim, named("queue", text(queue)), named("worker", text(worker)),
		named("limit", int64(limit)), named("claimId", claimID), named("lockTimeoutMs", s.lockTimeoutMs()))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	got, err := scanJobRows(rows)
	if err != nil {
		return nil, 0, err
	}
	var heldMs sql.NullInt64
	var owed bool
	if rows.NextResultSet() && rows.Next() {
		if err := rows.Scan(&heldMs, &owed); err != nil {
			return got, 0, err
		}
	}
	s.noteOwed(owed)
	return got, time.Duration(max(heldMs.Int64, 0)) * time.Millisecond, rows.Err()
}

// adoptClaim returns the rows a claim stamped with claimID took for worker.
func (s *Store) adoptClaim(ctx context.Context, worker string, claimID int64) ([]*jobs.Job, error) {
	rows, err := s.db.QueryContext(ctx, s.q.adoptClaim, named("worker", text(worker)), named("claimId", claimID),
		named("lockTimeoutMs", s.lockTimeoutMs()))
	if err != nil {
		return nil, err
	}
	return scanJobs(rows)
}

// randomClaimID is a claim's id: random, so two processes never share one;
// a worker's own claims would not collide either, and WorkerId is checked
// next to it.
func randomClaimID() int64 { return int64(rand.Uint64() >> 1) }

// Start implements jobs.Store.
func (s *Store) Start(ctx context.Context, ref jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	if err := p.Validate(); err != nil {
		return jobs.Started{}, err
	}
	var st jobs.Started
	var found bool
	err := s.do(ctx, "start", idempotent, func(ctx context.Context) error {
		var from sql.NullInt64
		err := s.db.QueryRowContext(ctx, s.q.start, append([]any{named("id", ref.ID), named("lease", ref.Lease)}, startArgs(p)...)...).
			Scan(&st.AttemptCount, &st.StartedAt, &st.DeadlineAt, &from)
		st.TimeoutFrom = jobs.PolicySource(from.Int64)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			found = false
			return nil
		case err != nil:
			return err
		}
		found = true
		st.StartedAt, st.DeadlineAt = st.StartedAt.UTC(), st.DeadlineAt.UTC()
		st.Timeout = st.DeadlineAt.Sub(st.StartedAt)
		return nil
	})
	if err != nil {
		return jobs.Started{}, fmt.Errorf("sqlserver: start job %d: %w", ref.ID, err)
	}
	if !found {
		return jobs.Started{}, fmt.Errorf("sqlserver: start job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	return st, nil
}

// progressOf is the progress rows of chunk's refs.
func progressOf(chunk []jobs.LeaseRef, byRef map[jobs.LeaseRef]progressRow) []progressRow {
	var out []progressRow
	for _, r := range chunk {
		if row, ok := byRef[r]; ok {
			out = append(out, row)
			delete(byRef, r) // a ref repeated in refs carries it once
		}
	}
	return out
}

// startArgs are the parameters of a start, one-job or batch: the default
// timeout, the heartbeat maximum, the job's or kind's timeout and its
// source, and the kind's zombie policy, each always declared the same.
func startArgs(p jobs.StartParams) []any {
	from := p.TimeoutFrom
	if from == jobs.SourceUnknown {
		from = jobs.SourceKind
	}
	return []any{named("defaultMs", p.DefaultTimeout.Milliseconds()), named("heartbeatMaxMs", p.HeartbeatMax.Milliseconds()),
		named("timeoutMs", p.Timeout.Milliseconds()), named("timeoutFrom", int64(from)), named("zombieRetryCap", int64(p.ZombieRetryCap))}
}

// leaseRow is one row of the IdLeaseList table type.
type leaseRow struct {
	ID    int64
	Lease int64
}

// leaseTVP dedupes refs (the table type has a primary key).
func (s *Store) leaseTVP(refs []jobs.LeaseRef) mssql.TVP {
	rows := make([]leaseRow, 0, len(refs))
	seen := make(map[jobs.LeaseRef]bool, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			rows = append(rows, leaseRow{ID: r.ID, Lease: r.Lease})
		}
	}
	return mssql.TVP{TypeName: s.schema + ".IdLeaseList", Value: rows}
}

// Heartbeat implements jobs.Store: one statement for every ref.
func (s *Store) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	return s.HeartbeatProgress(ctx, refs, nil)
}

// HeartbeatProgress implements jobs.Reporter: Heartbeat, the progress of
// some refs in a ProgressList beside them (qHeartbeatProgress); without
// any, the plain heartbeat goes, with nothing added.
func (s *Store) HeartbeatProgress(ctx context.Context, refs []jobs.LeaseRef, progress []jobs.ProgressItem) (jobs.HeartbeatResult, error) {
	var res jobs.HeartbeatResult
	for _, p := range progress {
		if err := p.Validate(); err != nil {
			return res, err
		}
	}
	if len(refs) == 0 {
		return res, nil
	}
	byRef := make(map[jobs.LeaseRef]progressRow, len(progress))
	for _, p := range progress {
		row := progressRow{ID: p.Ref.ID, Lease: p.Ref.Lease, Fraction: float32(p.Fraction)}
		if p.Message != "" {
			m := p.Message
			row.Message = &m
		}
		byRef[p.Ref] = row
	}
	// beaten holds every ref that matched, true for a job whose cancel was
	// requested.
	beaten := make(map[jobs.LeaseRef]bool, len(refs))
	for chunk := range slices.Chunk(refs, maxRefsPerStatement) {
		got := make(map[jobs.LeaseRef]bool, len(chunk))
		err := s.do(ctx, "heartbeat", idempotent, func(ctx context.Context) error {
			clear(got)
			stmt, args := s.q.heartbeat, []any{named("refs", s.leaseTVP(chunk))}
			if prog := progressOf(chunk, byRef); len(prog) > 0 {
				stmt, args = s.q.heartbeatProgress, append(args, named("progress", mssql.TVP{TypeName: s.schema + ".ProgressList", Value: prog}))
			}
			rows, err := s.db.QueryContext(ctx, stmt, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var r jobs.LeaseRef
				var cancel int64
				if err := rows.Scan(&r.ID, &r.Lease, &cancel); err != nil {
					return err
				}
				got[r] = cancel == 1
			}
			return rows.Err()
		})
		if err != nil {
			return jobs.HeartbeatResult{}, fmt.Errorf("sqlserver: heartbeat of %d jobs: %w", len(refs), err)
		}
		maps.Copy(beaten, got)
	}
	for _, r := range refs {
		cancel, ok := beaten[r]
		switch {
		case !ok:
			res.Lost = append(res.Lost, r)
		case cancel:
			res.CancelRequested = append(res.CancelRequested, r)
		}
	}
	return res, nil
}

// guarded runs a lease-guarded statement that ends with SELECT @@ROWCOUNT.
func (s *Store) guarded(ctx context.Context, op, stmt string, ref jobs.LeaseRef, args ...any) error {
	var n int64
	args = append(args, named("id", ref.ID), named("lease", ref.Lease))
	err := s.do(ctx, op, idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, stmt, args...).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("sqlserver: %s job %d: %w", op, ref.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlserver: %s job %d lease %d: %w", op, ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	return nil
}

// Complete implements jobs.Store.
func (s *Store) Complete(ctx context.Context, ref jobs.LeaseRef) error {
	return s.guarded(ctx, "complete", s.q.complete, ref)
}

// Retry implements jobs.Store: one item of qTransition, whose retry
// statement also honours a cancel request.
func (s *Store) Retry(ctx context.Context, ref jobs.LeaseRef, p jobs.RetryParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	r, err := s.Transition(ctx, jobs.Transitions{Retries: []jobs.RetryItem{{Ref: ref, Params: p}}})
	if err != nil {
		return err
	}
	return r.Retries[0]
}

// Snooze implements jobs.Store.
func (s *Store) Snooze(ctx context.Context, ref jobs.LeaseRef, p jobs.SnoozeParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var n int64
	err := s.do(ctx, "snooze", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.snooze, named("id", ref.ID), named("lease", ref.Lease),
			named("delayMs", p.Delay.Milliseconds())).Scan(&n)
	})
	switch {
	case err != nil:
		return fmt.Errorf("sqlserver: snooze job %d: %w", ref.ID, err)
	case n == 0:
		return lost("snooze", ref)
	case n == 2:
		return fmt.Errorf("sqlserver: snooze job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrCancelled)
	}
	return nil
}

// Cancel implements jobs.Store (qCancel).
func (s *Store) Cancel(ctx context.Context, p jobs.CancelParams) ([]jobs.CancelResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	idRows := make([]idRow, 0, len(p.IDs))
	seen := make(map[int64]bool, len(p.IDs))
	for _, id := range p.IDs {
		if !seen[id] {
			seen[id] = true
			idRows = append(idRows, idRow{ID: id})
		}
	}
	found := make(map[int64]jobs.CancelResult, len(idRows))
	err := s.do(ctx, "cancel", idempotent, func(ctx context.Context) error {
		clear(found)
		rows, err := s.db.QueryContext(ctx, s.q.cancel, named("ids", mssql.TVP{TypeName: s.schema + ".IdList", Value: idRows}),
			named("noteText", text(p.Note())))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r jobs.CancelResult
			var outcome int64
			if err := rows.Scan(&r.ID, &outcome, &r.Queue, &r.Type); err != nil {
				return err
			}
			r.Outcome = jobs.CancelOutcome(outcome)
			found[r.ID] = r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: cancel %d jobs: %w", len(p.IDs), err)
	}
	out := make([]jobs.CancelResult, len(p.IDs))
	for i, id := range p.IDs {
		r, ok := found[id]
		if !ok {
			r = jobs.CancelResult{ID: id, Outcome: jobs.CancelNotFound}
		}
		out[i] = r
	}
	return out, nil
}

// DeadLetter implements jobs.Store.
func (s *Store) DeadLetter(ctx context.Context, ref jobs.LeaseRef, p jobs.DeadLetterParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.guarded(ctx, "dead-letter", s.q.deadLetter, ref, named("reason", int64(p.Reason)), named("details", text(p.Details)))
}

// Release implements jobs.Store.
func (s *Store) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	total := 0
	for chunk := range slices.Chunk(refs, maxRefsPerStatement) {
		var n int64
		err := s.do(ctx, "release", idempotent, func(ctx context.Context) error {
			return s.db.QueryRowContext(ctx, s.q.release, named("refs", s.leaseTVP(chunk))).Scan(&n)
		})
		if err != nil {
			return total, fmt.Errorf("sqlserver: release %d jobs (%d released before): %w", len(refs), total, err)
		}
		total += int(n)
	}
	return total, nil
}

// maxRefsPerStatement caps the refs of one heartbeat or release statement:
// each takes a key lock on the clustered index and one on each index it
// changes, far below the 5,000 locks at which SQL Server escalates.
const maxRefsPerStatement = 1000

// RescueFetched implements jobs.Store (phase 1).
func (s *Store) RescueFetched(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return s.rescue(ctx, "rescue fetched", s.q.rescueFetched, p)
}

// RescueZombies implements jobs.Store (phase 2).
func (s *Store) RescueZombies(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return s.rescue(ctx, "rescue zombies", s.q.rescueZombies, p)
}

// RescueExpired implements jobs.Store (phase 3).
func (s *Store) RescueExpired(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	return s.rescue(ctx, "rescue expired", s.q.rescueExpired, p)
}

func (s *Store) rescue(ctx context.Context, op, stmt string, p jobs.RescueParams) ([]jobs.Rescued, error) {
	var out []jobs.Rescued
	err := s.do(ctx, op, idempotent, func(ctx context.Context) error {
		out = out[:0]
		args := []any{named("limit", int64(p.RescueLimit())), named("timeoutMs", p.Timeout.Milliseconds())}
		if stmt != s.q.rescueFetched {
			args = append(args, named("lockTimeoutMs", s.lockTimeoutMs())) // phases 2 and 3 take the rescue lock
		}
		rows, err := s.db.QueryContext(ctx, stmt, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		// Phase 2 returns a second result set, the jobs it recovered, with
		// a ninth column (qRescueZombies).
		for more := true; more; more = rows.NextResultSet() {
			names, err := rows.Columns()
			if err != nil {
				return err
			}
			for rows.Next() {
				var r jobs.Rescued
				var worker sql.NullString
				var reason sql.NullInt64
				dest := []any{&r.ID, &r.Queue, &r.Type, &worker, &r.Lease, &r.LastSeen, &reason, &r.At}
				if len(names) > len(dest) {
					dest = append(dest, &r.Recovered)
				}
				if err := rows.Scan(dest...); err != nil {
					return err
				}
				r.WorkerID, r.Reason, r.LastSeen, r.At = worker.String, jobs.FailureReason(reason.Int64), r.LastSeen.UTC(), r.At.UTC()
				out = append(out, r)
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: %s: %w", op, err)
	}
	return out, nil
}

// filterArgs binds a jobs.Filter to the parameters of filterWhere, each with
// the same declaration whether it filters or not (see text and hexText).
func (s *Store) filterArgs(f jobs.Filter, asOf *time.Time) []any {
	idRows := make([]idRow, 0, len(f.IDs))
	seen := make(map[int64]bool, len(f.IDs))
	for _, id := range f.IDs {
		if !seen[id] {
			seen[id] = true
			idRows = append(idRows, idRow{ID: id})
		}
	}
	var status, reason, olderThan sql.NullInt64
	if f.Status != nil {
		status = sql.NullInt64{Int64: int64(*f.Status), Valid: true}
	}
	if f.Reason != nil {
		reason = sql.NullInt64{Int64: int64(*f.Reason), Valid: true}
	}
	if f.OlderThan > 0 {
		olderThan = sql.NullInt64{Int64: f.OlderThan.Milliseconds(), Valid: true}
	}
	var at time.Time
	if asOf != nil {
		at = *asOf
	}
	return []any{
		named("hasIds", flag(len(f.IDs) > 0)), named("ids", mssql.TVP{TypeName: s.schema + ".IdList", Value: idRows}),
		named("queue", text(f.Queue)), named("type", text(f.Type)),
		named("status", status), named("reason", reason),
		named("hasFrom", flag(!f.From.IsZero())), named("from", instant(f.From)),
		named("hasTo", flag(!f.To.IsZero())), named("to", instant(f.To)),
		named("olderThanMs", olderThan),
		named("hasAsOf", flag(!at.IsZero())), named("asOf", instant(at)),
		named("text", text(f.Text)), named("textHex", hexText([]byte(f.Text))),
	}
}

// idRow is one row of the IdList table type.
type idRow struct{ ID int64 }

// instant passes a time as DATETIME2 (civil.DateTime), so it compares with
// DATETIME2 columns without converting the column; the zero time, which
// the statements ignore by its "has" bit, goes as the same type.
func instant(t time.Time) civil.DateTime { return civil.DateTimeOf(t.UTC()) }

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ListJobs implements jobs.Store.
func (s *Store) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	if err := p.Filter.Validate(p.Table); err != nil {
		return jobs.JobPage{}, err
	}
	limit := p.PageLimit()
	args := append(s.filterArgs(p.Filter, nil), named("limit", int64(limit+1)), named("beforeId", p.BeforeID))
	var page jobs.JobPage
	err := s.do(ctx, "list", idempotent, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, s.q.list[p.Table], args...)
		if err != nil {
			return err
		}
		page.Jobs, err = scanJobs(rows)
		return err
	})
	if err != nil {
		return jobs.JobPage{}, fmt.Errorf("sqlserver: list %s: %w", p.Table, err)
	}
	if len(page.Jobs) > limit {
		page.Jobs = page.Jobs[:limit]
		page.NextBeforeID = page.Jobs[limit-1].ID
	}
	return page, nil
}

// CountJobs implements jobs.Store.
func (s *Store) CountJobs(ctx context.Context, t jobs.Table, f jobs.Filter) (int64, error) {
	if err := f.Validate(t); err != nil {
		return 0, err
	}
	args := s.filterArgs(f, nil)
	var n int64
	err := s.do(ctx, "count", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.count[t], args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlserver: count %s: %w", t, err)
	}
	return n, nil
}

// Resurrect implements jobs.Store, in bounded batches; each batch is one
// transaction, so a failure part way leaves every job in exactly one table
// and the count says how many moved.
func (s *Store) Resurrect(ctx context.Context, p jobs.ResurrectParams) (int, error) {
	if err := jobs.CheckBulk(jobs.TableDLQ, p.Filter, p.All); err != nil {
		return 0, err
	}
	if p.Payload != nil && len(p.Payload) > s.limits.MaxPayload() {
		return 0, &jobs.ValidationError{Field: "payload", Value: p.Payload, Rule: fmt.Sprintf("must be at most %d bytes", s.limits.MaxPayload())}
	}
	return s.bulk(ctx, "resurrect", s.q.resurrect, p.Filter, named("replacePayload", flag(p.Payload != nil)), named("payloadHex", hexText(p.Payload)),
		named("lockTimeoutMs", s.lockTimeoutMs()))
}

// Purge implements jobs.Store, in bounded batches.
func (s *Store) Purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	if p.Table != jobs.TableArchive && p.Table != jobs.TableDLQ {
		return 0, &jobs.ValidationError{Field: "table", Value: p.Table, Rule: "purge applies to archive or dlq"}
	}
	if err := jobs.CheckBulk(p.Table, p.Filter, p.All); err != nil {
		return 0, err
	}
	return s.purge(ctx, p)
}

// purge repeats qPurge until a short batch (or p.Limit), each batch
// starting after the last job the one before deleted. As bulk, only jobs
// that finished before the purge began are touched.
func (s *Store) purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	op := "purge " + p.Table.String()
	asOf, err := s.Now(ctx)
	if err != nil {
		return 0, err
	}
	args := s.filterArgs(p.Filter, &asOf)
	total := 0
	var after jobs.TrimKey
	for {
		batch := s.bulkBatch
		if p.Limit > 0 {
			batch = min(batch, p.Limit-total)
		}
		var n int64
		var last sql.NullTime
		var lastID sql.NullInt64
		err := s.do(ctx, op, idempotent, func(ctx context.Context) error {
			return s.db.QueryRowContext(ctx, s.q.purge[p.Table], append(args, named("limit", int64(batch)),
				named("hasAfter", flag(after.ID != 0)), named("afterUtc", instant(after.FinishedAt)), named("afterId", after.ID))...).
				Scan(&n, &last, &lastID)
		})
		if err != nil {
			return total, fmt.Errorf("sqlserver: %s stopped after %d jobs: %w", op, total, err)
		}
		total += int(n)
		if int(n) < batch || (p.Limit > 0 && total >= p.Limit) || !last.Valid || !lastID.Valid {
			return total, nil
		}
		after = jobs.TrimKey{FinishedAt: last.Time.UTC(), ID: lastID.Int64}
	}
}

// bulk repeats a batch statement until a short batch. Only rows that existed
// when the operation began are touched (asOf), so a job that fails again
// while a resurrect runs is not picked up a second time.
func (s *Store) bulk(ctx context.Context, op, stmt string, f jobs.Filter, extra ...any) (int, error) {
	asOf, err := s.Now(ctx)
	if err != nil {
		return 0, err
	}
	args := append(s.filterArgs(f, &asOf), extra...)
	total := 0
	for {
		batch := s.bulkBatch
		var n int64
		err := s.do(ctx, op, idempotent, func(ctx context.Context) error {
			err := s.db.QueryRowContext(ctx, stmt, append(args, named("limit", int64(batch)))...).Scan(&n)
			if isDuplicateKey(err) {
				// Resurrect lost a key to a concurrent enqueue between its
				// check and its insert; XACT_ABORT rolled the batch back
				// whole, and the next run drops that key.
				return &rolledBack{err}
			}
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sqlserver: %s stopped after %d jobs: %w", op, total, err)
		}
		total += int(n)
		if int(n) < batch {
			return total, nil
		}
	}
}

// GetJob implements jobs.Store. A job moving between tables while the three
// tables are read could be missed once; the lookup is repeated before it
// reports ErrJobNotFound.
func (s *Store) GetJob(ctx context.Context, id int64) (*jobs.Job, error) {
	for range 2 {
		var got []*jobs.Job
		err := s.do(ctx, "get", idempotent, func(ctx context.Context) error {
			rows, err := s.db.QueryContext(ctx, s.q.getJob, named("id", id))
			if err != nil {
				return err
			}
			got, err = scanJobs(rows)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlserver: get job %d: %w", id, err)
		}
		if len(got) > 0 {
			return got[0], nil
		}
	}
	return nil, fmt.Errorf("sqlserver: job %d: %w", id, jobs.ErrJobNotFound)
}

// Queues implements jobs.Store.
func (s *Store) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	var out []jobs.QueueSettings
	err := s.do(ctx, "queues", idempotent, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, s.q.queues)
		if err != nil {
			return err
		}
		out, err = scanQueues(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: queues: %w", err)
	}
	return out, nil
}

// UpdateQueue implements jobs.Store.
func (s *Store) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	if err := jobs.ValidateQueueName(name); err != nil {
		return jobs.QueueSettings{}, err
	}
	if err := u.Validate(); err != nil {
		return jobs.QueueSettings{}, err
	}
	seconds := func(d *time.Duration) int64 {
		if d == nil {
			return 0
		}
		return int64(*d / time.Second)
	}
	val := func(p *int) int64 {
		if p == nil {
			return 0
		}
		return int64(*p)
	}
	paused := u.Paused != nil && *u.Paused
	args := []any{
		named("name", text(name)), named("lockTimeoutMs", s.lockTimeoutMs()),
		named("setPaused", flag(u.Paused != nil)), named("paused", paused),
		named("setMax", flag(u.MaxWorkers != nil)), named("max", val(u.MaxWorkers)),
		named("setZombie", flag(u.ZombieTimeout != nil)), named("zombie", seconds(u.ZombieTimeout)),
		named("setExec", flag(u.ExecutionTimeout != nil)), named("exec", seconds(u.ExecutionTimeout)),
		named("setArchive", flag(u.ArchiveRetention != nil)), named("archive", retentionArg(u.ArchiveRetention)),
		named("setDeadLetter", flag(u.DeadLetterRetention != nil)), named("deadLetter", retentionArg(u.DeadLetterRetention)),
		named("setPerKey", flag(u.MaxWorkersPerKey != nil)), named("perKey", val(u.MaxWorkersPerKey)),
		named("setSequence", flag(u.SequenceOnDeadLetter != nil)), named("sequence", int64(ptrOr(u.SequenceOnDeadLetter))),
		named("keyLimits", s.keyLimitsTVP(u.KeyLimits)),
		named("setWeight", flag(u.Weight != nil)), named("weight", val(u.Weight)),
		named("setRate", flag(u.RateLimit != nil)), named("rateCount", int64(ptrOr(u.RateLimit).Count)),
		named("rateWindowMs", ptrOr(u.RateLimit).Window.Milliseconds()),
	}
	var out []jobs.QueueSettings
	err := s.do(ctx, "update queue", idempotent, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, s.q.updateQueue, args...)
		if err != nil {
			return err
		}
		out, err = scanQueues(rows)
		return err
	})
	if err != nil {
		return jobs.QueueSettings{}, fmt.Errorf("sqlserver: update queue %s: %w", name, err)
	}
	if len(out) != 1 {
		return jobs.QueueSettings{}, fmt.Errorf("sqlserver: update queue %s: read back %d rows", name, len(out))
	}
	return out[0], nil
}

// QueueStats implements jobs.Store.
func (s *Store) QueueStats(ctx context.Context) ([]jobs.QueueStats, error) {
	var out []jobs.QueueStats
	err := s.do(ctx, "queue stats", idempotent, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, s.q.queueStats, named("cap", int64(s.statsCap)), named("maxQueues", int64(jobs.MaxStatsQueues)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st jobs.QueueStats
			var maxWorkers int64
			var oldest sql.NullTime
			var now time.Time
			var busiest sql.NullString
			var rateCount, used int64
			var ends sql.NullTime
			if err := rows.Scan(&st.Queue, &st.Paused, &maxWorkers, &st.Pending, &st.Scheduled, &st.Fetched,
				&st.Processing, &st.Archived, &st.DeadLettered, &oldest, &now,
				&st.WaitingOnKey, &st.WaitingOnSequence, &st.WaitingOnParents, &rateCount, &used, &ends, &busiest); err != nil {
				return err
			}
			st.MaxWorkers = int(maxWorkers)
			if ends.Valid {
				st.WindowUsed, st.WindowEndsAt = int(used), ends.Time.UTC()
				if used >= rateCount {
					st.WaitingOnRate = st.Pending
				}
			}
			if st.BusiestKeys, err = busiestKeys(busiest); err != nil {
				return fmt.Errorf("queue %s: busiest keys: %w", st.Queue, err)
			}
			if oldest.Valid {
				st.OldestDueAt = oldest.Time.UTC()
				st.Lag = now.Sub(oldest.Time)
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: queue stats: %w", err)
	}
	return out, nil
}

// QueueDepths implements jobs.Store.
func (s *Store) QueueDepths(ctx context.Context, queues []string, limit int) ([]jobs.QueueDepth, error) {
	if err := jobs.ValidateDepthParams(queues, limit); err != nil {
		return nil, err
	}
	var out []jobs.QueueDepth
	err := s.do(ctx, "queue depths", idempotent, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, s.q.queueDepths, named("queues", s.queueTVP(queues)), named("cap", int64(limit)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d jobs.QueueDepth
			if err := rows.Scan(&d.Queue, &d.Pending, &d.Fetched, &d.Processing); err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlserver: queue depths: %w", err)
	}
	return out, nil
}

// queueRow is one row of the QueueList table type.
type queueRow struct{ Name string }

// queueTVP dedupes names as the type's primary key compares them, by the
// database's collation, which ignores case (CheckSchema checks it): a key
// that only compared bytes sent "orders" and "Orders" both, and the
// server refused the list with error 2627. The first spelling stays.
func (s *Store) queueTVP(queues []string) mssql.TVP {
	rows := make([]queueRow, 0, len(queues))
	for _, q := range jobs.UniqueQueues(queues) {
		rows = append(rows, queueRow{Name: q})
	}
	return mssql.TVP{TypeName: s.schema + ".QueueList", Value: rows}
}

// Now implements jobs.Store: the server's SYSUTCDATETIME().
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.do(ctx, "now", idempotent, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.now).Scan(&t)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlserver: read server time: %w", err)
	}
	return t.UTC(), nil
}

// keyLimitsTVP is the KeyLimitList of an update's key limits (empty to
// leave them all), in key order so the statement's writes are in the
// order of QueueKeyLimits' key.
func (s *Store) keyLimitsTVP(ls map[string]int) mssql.TVP {
	rows := make([]keyLimitRow, 0, len(ls))
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		rows = append(rows, keyLimitRow{KeyName: k, MaxWorkers: int32(ls[k])})
	}
	return mssql.TVP{TypeName: s.schema + ".KeyLimitList", Value: rows}
}

// ptrOr is *p, or the zero value for nil.
func ptrOr[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}
