package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// CheckStatus is the verdict of one check of the doctor.
type CheckStatus int

const (
	// CheckOK: nothing to do.
	CheckOK CheckStatus = iota
	// CheckWarning: the store works, but something deserves a look (a
	// login with more rights than it needs, a check the login cannot run).
	CheckWarning
	// CheckFailed: the store will not work, or not as documented, here.
	CheckFailed
)

// String names the status: ok, warning or failed.
func (c CheckStatus) String() string {
	switch c {
	case CheckOK:
		return "ok"
	case CheckWarning:
		return "warning"
	}
	return "failed"
}

// MarshalText writes the status as ok, warning or failed.
func (c CheckStatus) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// DoctorCheck is one line of the doctor's report.
type DoctorCheck struct {
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	// Detail is what the check found.
	Detail string `json:"detail"`
	// ErrorNumber is the server's error number when the check failed on
	// one (229: a permission denied; 208: an object missing).
	ErrorNumber int32 `json:"error_number,omitempty"`
	// Remedy is what to do, in one line, when the check is not ok.
	Remedy string `json:"remedy,omitempty"`
}

// NotExercised names statements of the store the doctor does not run, and
// why.
type NotExercised struct {
	Statements string `json:"statements"`
	Reason     string `json:"reason"`
}

// DoctorReport is what Doctor found.
type DoctorReport struct {
	Schema       string         `json:"schema"`
	Checks       []DoctorCheck  `json:"checks"`
	NotExercised []NotExercised `json:"not_exercised"`
}

// Status is the worst status among the checks.
func (r *DoctorReport) Status() CheckStatus {
	worst := CheckOK
	for _, c := range r.Checks {
		worst = max(worst, c.Status)
	}
	return worst
}

// Add appends a check of the caller's own (the command adds one for its
// configuration).
func (r *DoctorReport) Add(c DoctorCheck) { r.Checks = append(r.Checks, c) }

// Doctor checks, with the store's own login, that the database can run the
// store: the engine, the database options that change how the statements
// lock, the schema's version, every right the statements use (by trying
// each), the round trip and the server's clock, then every worker and
// operator statement family once, through the store's own methods, in a
// private queue inside one transaction that it rolls back (so nothing is
// left, also when it is interrupted), and the locks a claim of 20 holds.
// Rescue is not exercised: its statements are not queue-scoped. ADR 0025
// says what it may and may not touch. The report is never nil: a failure
// of the server is a failed check.
func (s *Store) Doctor(ctx context.Context) *DoctorReport { return s.doctor(ctx, doctorOptions{}) }

// doctorOptions are the tests' hooks.
type doctorOptions struct {
	// now is this host's clock (time.Now).
	now func() time.Time
	// step is called as each check or family begins.
	step func(name string)
	// suffix ends the private names (random).
	suffix string
}

// doctorClaim is how many jobs the claim family takes, and whose locks the
// doctor reads.
const doctorClaim = 20

// doctorRun is one run of the doctor.
type doctorRun struct {
	base   *Store // on the pool
	st     *Store // on tx, once the families begin
	tx     *sql.Tx
	opts   doctorOptions
	report *DoctorReport

	// The private names: a queue no service uses, and what lives in it.
	queue, worker, key, schedule, leaderRole string
	role, user                               string
	level                                    serverLevel
	// lockPermission names the right that reads locks; lockErr is why the
	// doctor cannot, when it cannot.
	lockPermission string
	lockErr        error
	// ended: the server ended tx; nothing more may run on it.
	ended bool
	jobs  doctorJobs
	// claimID is the id of the last claim, for its adoption.
	claimID int64
	// workflow is the doctor's workflow, once enqueued: its ID comes from
	// a sequence, so the look for leftovers asks for it by ID.
	workflow int64
	// extra are checks a family found besides its own (the claim's locks).
	extra []DoctorCheck
}

func (s *Store) doctor(ctx context.Context, o doctorOptions) *DoctorReport {
	if o.now == nil {
		o.now = time.Now
	}
	if o.step == nil {
		o.step = func(string) {}
	}
	if o.suffix == "" {
		o.suffix = fmt.Sprintf("%012x", rand.Uint64()>>16)
	}
	d := &doctorRun{base: s, opts: o, report: &DoctorReport{Schema: s.schema},
		queue: "chokaq-doctor-" + o.suffix, worker: "chokaq-doctor-" + o.suffix, key: "chokaq-doctor:" + o.suffix + ":",
		schedule: "chokaq-doctor-" + o.suffix, leaderRole: "doctor-" + o.suffix, role: s.schema + "_app"}
	engineOK := d.checkEngine(ctx)
	if engineOK {
		d.checkDatabaseOptions(ctx)
	} else {
		for _, name := range databaseOptions {
			d.notRun(name, "the engine's version is not one the store runs on, or could not be read")
		}
	}
	schemaOK := d.checkSchema(ctx)
	d.checkPrivileges(ctx)
	d.checkClock(ctx)
	if schemaOK {
		d.checkTables(ctx)
		d.checkTypes(ctx)
		d.checkSequence(ctx)
	} else {
		d.notRun("permissions", "the schema is not at the version this binary expects")
	}
	d.checkAppLocks(ctx)
	if engineOK && schemaOK {
		d.runFamilies(ctx)
	} else {
		d.notRun("statements", "the engine or the schema check failed")
	}
	d.report.NotExercised = notExercisedReport()
	return d.report
}

func (d *doctorRun) add(c DoctorCheck) { d.report.Add(c) }

func (d *doctorRun) ok(name, detail string) {
	d.add(DoctorCheck{Name: name, Status: CheckOK, Detail: detail})
}

// failed records a check that failed on err.
func (d *doctorRun) failed(name string, err error) {
	n, remedy := d.remedy(err)
	d.add(DoctorCheck{Name: name, Status: CheckFailed, Detail: err.Error(), ErrorNumber: n, Remedy: remedy})
}

func (d *doctorRun) notRun(name, why string) {
	d.add(DoctorCheck{Name: name, Status: CheckWarning, Detail: "not run: " + why, Remedy: "fix the failed checks above, then run the doctor again"})
}

// errNumber is the server's error number in err, 0 when there is none.
func errNumber(err error) int32 {
	var me mssql.Error
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// remedy is the server's error number in err and what to do about it.
func (d *doctorRun) remedy(err error) (int32, string) {
	n := errNumber(err)
	user := d.user
	if user == "" {
		user = "<the service's user>"
	}
	switch n {
	case 229, 230, 262, 916:
		return n, fmt.Sprintf("as an owner, give the service's user the role the migrations created: ALTER ROLE %s ADD MEMBER %s",
			schema.Quote(d.role), schema.Quote(user))
	case 208, 207, 2812:
		return n, "an object the store needs is missing: run `chokaq migrate up` as an owner with this binary"
	case 1205:
		return n, "the doctor's transaction was chosen as a deadlock victim: run the doctor again (ADR 0016 gives every statement's lock order)"
	case 1222, 51001, 51003:
		return n, "a lock was not granted in time, so another session held it: run the doctor again"
	case 0:
	default:
		return n, "see the server's message above; the statement is in sqlserver/queries.go"
	}
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return 0, "the doctor was stopped or ran out of time: run it again (with a longer --timeout)"
	case errors.Is(err, driver.ErrBadConn), errors.As(err, &ne):
		return 0, "the connection failed: check the network and the server's health, then run the doctor again"
	}
	return 0, "this is the store's own finding: see the detail"
}

// checkEngine is CheckSchema's engine and compatibility-level check, and
// reports the engine's version and edition.
func (d *doctorRun) checkEngine(ctx context.Context) bool {
	d.opts.step("engine")
	lv, err := d.base.readServerLevel(ctx)
	if err != nil {
		d.failed("engine", err)
		d.failed("compatibility level", err)
		return false
	}
	d.level = lv
	defer d.checkCompatibility(lv)
	var version, edition, database, login string
	if err := d.base.db.QueryRowContext(ctx, d.base.q.doctorServer).Scan(&version, &edition, &database, &login, &d.user); err != nil {
		d.failed("engine", fmt.Errorf("sqlserver: read the server's version and edition: %w", err))
		return false
	}
	about := fmt.Sprintf("%s, version %s (engine edition %d), database %s, login %s as user %s", edition, version, lv.edition, database, login, d.user)
	engineOK := true
	switch err := lv.checkEngine(); {
	case err != nil:
		engineOK = false
		d.add(DoctorCheck{Name: "engine", Status: CheckFailed, Detail: about + ": " + err.Error(),
			Remedy: "run the store on SQL Server 2019 or later, Azure SQL Database or Azure SQL Managed Instance"})
	case lv.edition == 4:
		d.add(DoctorCheck{Name: "engine", Status: CheckWarning, Detail: about + ": Express caps a database at 10 GB and the buffer pool at about 1.4 GB",
			Remedy: "keep retention short (ChokaQ.Retention) or use another edition for a busy service"})
	case !slices.Contains([]int64{2, 3, 5, 8}, lv.edition):
		d.add(DoctorCheck{Name: "engine", Status: CheckWarning, Detail: about + ": an edition the store is not written for",
			Remedy: "run the store on SQL Server (Standard, Enterprise, Developer, Express), Azure SQL Database or Managed Instance"})
	default:
		d.ok("engine", about)
	}
	return engineOK
}

func (d *doctorRun) checkCompatibility(lv serverLevel) {
	if err := lv.checkCompatibility(); err != nil {
		d.add(DoctorCheck{Name: "compatibility level", Status: CheckFailed, Detail: err.Error(),
			Remedy: "ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 150 (or 160), as an owner, after testing your own queries at that level"})
		return
	}
	d.ok("compatibility level", fmt.Sprintf("%d (the statements are written for %d and later)", lv.compatibility, MinCompatibilityLevel))
}

// databaseOptions are the checks of checkDatabaseOptions.
var databaseOptions = []string{"read committed snapshot", "snapshot isolation", "accelerated database recovery", "optimized locking"}

// checkDatabaseOptions reports the options that change how the store's
// statements lock and roll back. Each works with the store either way: the
// report says what each means for it.
func (d *doctorRun) checkDatabaseOptions(ctx context.Context) {
	d.opts.step("database options")
	var rcsi, adr bool
	var snapshot int64
	var optimized sql.NullInt64
	if err := d.base.db.QueryRowContext(ctx, d.base.q.doctorDatabase).Scan(&rcsi, &snapshot, &adr, &optimized); err != nil {
		for _, name := range databaseOptions {
			d.failed(name, fmt.Errorf("sqlserver: read the database's options: %w", err))
		}
		return
	}
	if rcsi {
		d.ok("read committed snapshot", "on: plain reads see the last committed version instead of waiting; every statement "+
			"that skips locked rows also says READCOMMITTEDLOCK, so claims and rescue skip locked rows as with it off")
	} else {
		d.ok("read committed snapshot", "off: plain reads (stats, listings) wait for writers, briefly; "+
			"claims and rescue skip locked rows (READPAST) either way, except flow control's reads of keys and "+
			"sequences, which also wait for a caller's open transaction that enqueued a sequenced job (ADR 0031)")
	}
	switch snapshot {
	case 1:
		d.ok("snapshot isolation", "allowed: a service may enqueue inside its own SNAPSHOT transaction (EnqueueTx); "+
			"the keyed check reads the latest committed row (READCOMMITTEDLOCK) even there")
	case 0:
		d.ok("snapshot isolation", "not allowed: EnqueueTx inside a SNAPSHOT transaction would fail with error 3952; "+
			"no statement of the store needs it")
	default:
		d.add(DoctorCheck{Name: "snapshot isolation", Status: CheckWarning,
			Detail: fmt.Sprintf("changing (state %d): transactions that began under the old setting are still running", snapshot),
			Remedy: "run the doctor again once ALTER DATABASE ... SET ALLOW_SNAPSHOT_ISOLATION has finished"})
	}
	if adr {
		d.ok("accelerated database recovery", "on: rolling back a large batch (purge, resurrect, a cancelled migration) "+
			"and recovery after a restart are quick, and optimized locking may be turned on")
	} else {
		d.ok("accelerated database recovery", "off: a rollback takes as long as the work it undoes, so keep bulk "+
			"operations in their bounded batches; optimized locking needs it on")
	}
	switch {
	case !optimized.Valid:
		d.ok("optimized locking", "not available on this engine (SQL Server 2025, Azure SQL Database and Managed Instance have it): "+
			"row locks are held to COMMIT, and each batch statement stays below the 5,000 locks at which SQL Server escalates")
	case optimized.Int64 == 1:
		d.ok("optimized locking", "on: each row lock is released as its row is written and one lock on the transaction's ID "+
			"is held to COMMIT, so the claim's lock check below finds few key locks; claims still skip rows others hold")
	default:
		d.ok("optimized locking", "off: row locks are held to COMMIT; each batch statement stays below the 5,000 locks at which "+
			"SQL Server escalates to a table lock")
	}
}

// checkSchema reads the schema's version as the store's start-up check
// does, and says which command fixes it.
func (d *doctorRun) checkSchema(ctx context.Context) bool {
	d.opts.step("schema version")
	v, _, serr := schema.Status(ctx, d.base.pool, d.base.schema)
	err := schema.Check(ctx, d.base.pool, d.base.schema)
	if err == nil {
		d.ok("schema version", fmt.Sprintf("%s is at version %d, clean, the version this binary expects", d.base.schema, v))
		return d.checkNameCollation(ctx)
	}
	c := DoctorCheck{Name: "schema version", Status: CheckFailed, Detail: err.Error(), ErrorNumber: errNumber(serr)}
	switch {
	case errors.Is(err, schema.ErrDirty):
		c.Remedy = fmt.Sprintf("migration %d stopped part way: as an owner, repair the schema by hand, record the version it now matches "+
			"(`chokaq migrate force %d` if you finished the migration, `chokaq migrate force %d` if you undid it), then `chokaq migrate up`", v, v, v-1)
	case errors.Is(err, schema.ErrNotMigrated), errors.Is(err, schema.ErrOutdated):
		c.Remedy = "run `chokaq migrate up` as an owner with this binary"
	case errors.Is(err, schema.ErrTooNew):
		c.Remedy = "this binary is older than the schema: deploy the version that migrated it"
	default:
		c.ErrorNumber, c.Remedy = d.remedy(err)
	}
	d.add(c)
	return false
}

// checkNameCollation is the store's start-up refusal of name columns that
// compare case by case (ADR 0024), as a check.
func (d *doctorRun) checkNameCollation(ctx context.Context) bool {
	d.opts.step("name collation")
	err := d.base.checkNameCollation(ctx)
	if err == nil {
		d.ok("name collation", "the queue and schedule name columns ignore case, as every store compares the names")
		return true
	}
	c := DoctorCheck{Name: "name collation", Status: CheckFailed, Detail: err.Error()}
	if errors.Is(err, ErrCaseSensitiveNames) {
		c.Remedy = "the store refuses this schema at start: migrate it into a database whose default collation ignores case (SQL_Latin1_General_CP1_CI_AS, the server's default, does)"
	} else {
		c.ErrorNumber, c.Remedy = d.remedy(err)
	}
	d.add(c)
	return false
}

// checkPrivileges warns of the rights the service's login should not
// hold: it needs only the schema's application role.
func (d *doctorRun) checkPrivileges(ctx context.Context) {
	d.opts.step("least privilege")
	var owner, control, alter, member int64
	err := d.base.db.QueryRowContext(ctx, d.base.q.doctorPrivileges, named("schemaName", text(d.base.schema)), named("roleName", text(d.role))).
		Scan(&owner, &control, &alter, &member)
	if err != nil {
		d.failed("least privilege", fmt.Errorf("sqlserver: read the login's rights: %w", err))
		return
	}
	var extra []string
	if owner == 1 {
		extra = append(extra, "a member of db_owner")
	}
	if control == 1 {
		extra = append(extra, "CONTROL on the database")
	}
	if alter == 1 {
		extra = append(extra, "ALTER on schema "+d.base.schema)
	}
	membership := "a member of " + d.role
	if member != 1 {
		membership = "not a member of " + d.role + " (its rights come from elsewhere)"
	}
	if len(extra) > 0 {
		d.add(DoctorCheck{Name: "least privilege", Status: CheckWarning,
			Detail: "this login has " + strings.Join(extra, ", ") + ": more than the service needs, " + membership,
			Remedy: fmt.Sprintf("run the service with a login whose user holds only %s; keep the owner's login for `chokaq migrate`", schema.Quote(d.role))})
		return
	}
	d.ok("least privilege", "not db_owner, no CONTROL on the database, no ALTER on schema "+d.base.schema+"; "+membership)
}

// checkClock measures the round trip of the smallest statement and shows
// the server's clock beside this host's.
func (d *doctorRun) checkClock(ctx context.Context) {
	d.opts.step("round trip")
	const calls = 5
	var trips []time.Duration
	var skew time.Duration
	var server time.Time
	for range calls {
		before := d.opts.now()
		t, err := d.base.Now(ctx)
		if err != nil {
			d.failed("round trip", err)
			d.failed("clock", err)
			return
		}
		after := d.opts.now()
		trips = append(trips, after.Sub(before))
		server, skew = t, before.Add(after.Sub(before)/2).Sub(t)
	}
	slices.Sort(trips)
	d.ok("round trip", fmt.Sprintf("median %v (fastest %v, slowest %v) over %d calls of the smallest statement; "+
		"a claim, a heartbeat and a settle each cost one", round(trips[calls/2]), round(trips[0]), round(trips[calls-1]), calls))
	ahead := "ahead of"
	if skew < 0 {
		ahead, skew = "behind", -skew
	}
	d.ok("clock", fmt.Sprintf("the server's is %s; this host's is %v %s it (information only: every due time, "+
		"heartbeat and timeout is the server's clock)", server.Format(time.RFC3339Nano), round(skew), ahead))
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// checkTables tries every right on every table that some statement of the
// store uses, with probes that change no row.
func (d *doctorRun) checkTables(ctx context.Context) {
	for _, tr := range tableRights {
		name := "table " + tr.table
		d.opts.step(name)
		var denied []string
		var first error
		for _, right := range tr.rights {
			if _, err := d.base.db.ExecContext(ctx, d.base.q.probes[probeKey(tr.table, right)]); err != nil {
				first = cmpOr(first, err)
				denied = append(denied, fmt.Sprintf("%s: %v", right, err))
			}
		}
		if first != nil {
			n, remedy := d.remedy(first)
			d.add(DoctorCheck{Name: name, Status: CheckFailed, Detail: strings.Join(denied, "; "), ErrorNumber: n, Remedy: remedy})
			continue
		}
		d.ok(name, strings.Join(tr.rights, ", ")+": each tried, without changing a row")
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// doctorTypes is every table type, with an empty list of the rows the
// store sends in it.
var doctorTypes = []struct {
	name string
	rows any
}{
	{"IdLeaseList", []leaseRow{}}, {"IdList", []idRow{}}, {"JobInsertList", []insertRow{}}, {"QueueList", []queueRow{}},
	{"RetryList", []retryRow{}}, {"DeadLetterList", []deadLetterRow{}}, {"ScheduleList", []scheduleRow{}},
	{"MetadataList", []metadataRow{}}, {"OutputList", []outputRow{}}, {"ProgressList", []progressRow{}},
	{"EnqueueKeyList", []enqueueKeyRow{}}, {"FlowKeyList", []flowKeyRow{}}, {"KeyLimitList", []keyLimitRow{}},
	{"WorkflowTaskList", []workflowTaskRow{}}, {"WorkflowEdgeList", []workflowEdgeRow{}},
}

// checkTypes passes an empty list of every table type: without EXECUTE on
// a type, every statement that takes one fails with error 229.
func (d *doctorRun) checkTypes(ctx context.Context) {
	d.opts.step("table types")
	var names, denied []string
	var first error
	for _, tt := range doctorTypes {
		names = append(names, tt.name)
		var n int64
		err := d.base.db.QueryRowContext(ctx, d.base.q.probeType, named("list", mssql.TVP{TypeName: d.base.schema + "." + tt.name, Value: tt.rows})).Scan(&n)
		if err != nil {
			first = cmpOr(first, err)
			denied = append(denied, fmt.Sprintf("%s: %v", tt.name, err))
		}
	}
	if first != nil {
		n, remedy := d.remedy(first)
		d.add(DoctorCheck{Name: "table types", Status: CheckFailed, Detail: strings.Join(denied, "; "), ErrorNumber: n, Remedy: remedy})
		return
	}
	d.ok("table types", "EXECUTE on "+strings.Join(names, ", ")+": an empty list of each passed")
}

// checkSequence takes one job ID from the sequence, as every enqueue does.
func (d *doctorRun) checkSequence(ctx context.Context) {
	d.opts.step("sequence")
	var id int64
	if err := d.base.db.QueryRowContext(ctx, d.base.q.probeSequence).Scan(&id); err != nil {
		d.failed("sequence", fmt.Errorf("sqlserver: take a job ID from %s.JobIds: %w", d.base.schema, err))
		return
	}
	d.ok("sequence", fmt.Sprintf("UPDATE on %s.JobIds: took job ID %d (sequences are not rolled back: that ID stays unused)", d.base.schema, id))
}

// checkAppLocks takes and releases a session application lock, as the
// leader of rescue, retention and schedules does, on a name of its own.
// The statements' transaction locks are exercised by the families.
func (d *doctorRun) checkAppLocks(ctx context.Context) {
	d.opts.step("application locks")
	l := NewLeader(d.base, d.leaderRole)
	var err error
	for range 2 { // the second call finds the lock held (APPLOCK_MODE)
		leads, lerr := l.TryLead(ctx)
		if lerr == nil && !leads {
			lerr = errors.New("refused at once, though no process uses that name")
		}
		if lerr != nil {
			err = lerr
			break
		}
	}
	if err == nil {
		err = l.Resign(ctx)
	} else {
		_ = l.Resign(ctx)
	}
	if err != nil {
		d.failed("application locks", fmt.Errorf("sqlserver: sp_getapplock on %s: %w", l.resource, err))
		return
	}
	d.ok("application locks", "a session lock on "+l.resource+" taken, found held, and released (sp_getapplock is open to every user)")
}

// lockPermissionName is the right that lets a session read
// sys.dm_tran_locks on this engine.
func (lv serverLevel) lockPermissionName() string {
	switch {
	case lv.edition == 5:
		return "VIEW DATABASE STATE"
	case lv.edition == 8 || lv.major >= 16:
		return "VIEW SERVER PERFORMANCE STATE"
	}
	return "VIEW SERVER STATE"
}

// canReadLocks tries the lock query outside the doctor's transaction,
// where a refusal harms nothing.
func (d *doctorRun) canReadLocks(ctx context.Context) {
	d.lockPermission = d.level.lockPermissionName()
	_, d.lockErr = d.readLocks(ctx, d.base.db)
}

// lockGroup is one group of the locks a session holds.
type lockGroup struct{ typ, mode, object string }

func (d *doctorRun) readLocks(ctx context.Context, q querier) (map[lockGroup]int64, error) {
	rows, err := q.QueryContext(ctx, d.base.q.doctorLocks)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[lockGroup]int64{}
	for rows.Next() {
		var g lockGroup
		var n int64
		if err := rows.Scan(&g.typ, &g.mode, &g.object, &n); err != nil {
			return nil, err
		}
		out[g] += n
	}
	return out, rows.Err()
}

// jobsIDs lists the IDs of js.
func jobIDs(js []*jobs.Job) []int64 {
	ids := make([]int64, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}
