package sqlserver

import (
	"regexp"
	"strings"
	"testing"
)

// The claim's flow control (ADR 0031), as rendered: the hint set of its
// reads and writes, where it takes the flow lock, and its bounds.

// A count read past a locked row is a count too low, and a key one over
// its limit (I6K); a sequence member read past is an order broken (IS). So
// no flow read reads past; only the park, which writes the claim's own
// candidates, carries the outer table's hints.
func TestClaimFlowReadsNeverReadPast(t *testing.T) {
	r := strings.NewReplacer("{{s}}", "[my_schema]")
	// The unpark's only READPAST is on the two rows it updates (below).
	if n := strings.Count(claimUnpark, "READPAST"); n != 2 {
		t.Errorf("the unpark has %d READPAST, want only its two update targets': a count read past is too low", n)
	}
	if n := strings.Count(claimJudge, "READPAST"); n != 1 || !strings.Contains(claimJudge, "AS h WITH ("+outerHotHints+")") {
		t.Errorf("the judgement has %d READPAST; want only the park's outer table (%s)", n, outerHotHints)
	}
	// Each read repeats its filtered index's filter with literals, so a
	// parameterized plan can use it.
	for _, want := range []string{
		"a.ConcurrencyKey = fw.KeyName AND a.Status IN (1, 2)", // IX_JobsHot_KeyActive
		"w.ConcurrencyKey = fw.KeyName AND w.Status = 3",       // IX_JobsHot_KeyWaiting
		"a.SequenceKey = c.SKey AND a.Status IN (1, 2)",        // IX_JobsHot_SequenceActive
		"m.SequenceKey = c.SKey AND m.Id < c.Id",               // IX_JobsHot_Sequence
		"d.SequenceKey = c.SKey AND d.Id < c.Id",               // IX_JobsDLQ_Sequence
	} {
		if !strings.Contains(r.Replace(claimUnpark+claimJudge), want) {
			t.Errorf("no flow read %q", want)
		}
	}
	// The unpark writes parked rows a cancel may hold while the cancel
	// waits for a claim's candidate, and that claim for the flow lock: it
	// reads past them (they stay parked for the next claim), one clustered
	// seek each, row locks only.
	if n := strings.Count(claimUnpark, "AS h WITH ("+outerHotHints+")"); n != 2 {
		t.Errorf("%d unpark updates read past with the outer hints (%s), want 2", n, outerHotHints)
	}
	// Equality on a key column does not promise the optimizer IS NOT NULL:
	// each read says it, so the filtered index matches.
	for _, col := range []string{"a.ConcurrencyKey", "a.SequenceKey", "m.SequenceKey", "d.SequenceKey"} {
		if n, nn := strings.Count(claimUnpark+claimJudge, col+" = "), strings.Count(claimUnpark+claimJudge, col+" IS NOT NULL AND "+col+" = "); n != nn {
			t.Errorf("%s: %d equalities, %d of them with IS NOT NULL", col, n, nn)
		}
	}
	if !strings.Contains(claimJudge, "INSERT INTO {{s}}.FlowWaits WITH (ROWLOCK)") || !strings.Contains(claimUnpark, "DELETE fw FROM {{s}}.FlowWaits AS fw WITH (ROWLOCK)") {
		t.Error("FlowWaits is written without ROWLOCK")
	}
}

// The flow lock is taken only by a claim that needs it: one whose queue
// has parked jobs (before it unparks), or one whose candidates carry a key
// (before it judges them). A claim of a queue without flow control takes
// no flow lock and reads nothing more than before.
func TestClaimTakesTheFlowLockOnlyWhenItNeedsIt(t *testing.T) {
	claim := render("my_schema").claim
	waits := strings.Index(claim, "IF EXISTS (SELECT 1 FROM [my_schema].FlowWaits WHERE Queue = @q)")
	keyed := strings.Index(claim, "IF EXISTS (SELECT 1 FROM @cand WHERE CKey IS NOT NULL OR SKey IS NOT NULL)")
	held := strings.Index(claim, "IF @flowHeld = 0")
	locks := regexp.MustCompile(`EXEC @rc = sys.sp_getapplock @Resource = @flow, @LockMode = 'Exclusive', @LockOwner = 'Transaction'`).FindAllStringIndex(claim, -1)
	if waits < 0 || keyed < 0 || held < 0 || len(locks) != 2 {
		t.Fatalf("guards at %d, %d, %d; %d flow locks: want two, each behind its guard", waits, keyed, held, len(locks))
	}
	unpark := strings.Index(claim, "UPDATE h SET Status = 0")
	judge := strings.Index(claim, "UPDATE c SET Park = 4")
	take := strings.Index(claim, "SET Status = 1, WorkerId = @w")
	if !(waits < locks[0][0] && locks[0][0] < unpark && unpark < keyed && keyed < held && held < locks[1][0] && locks[1][0] < judge && judge < take) {
		t.Errorf("order: waits %d, lock %d, unpark %d, keyed %d, held %d, lock %d, judge %d, take %d", waits, locks[0][0], unpark, keyed, held, locks[1][0], judge, take)
	}
	// Lock order: the queue's own locks (the claim's, the queue's shared,
	// the capped Queues row) come before the flow lock.
	if q := strings.Index(claim, "WITH (UPDLOCK, ROWLOCK) WHERE Name = @q"); q < 0 || q > locks[0][0] {
		t.Error("the flow lock must follow the capped queue's Queues row lock (ADR 0016)")
	}
	if !strings.Contains(claim, "N'chokaq:MY_SCHEMA:flow:' + UPPER(@q)") {
		t.Error("the flow lock is not named per schema and queue")
	}
}

// Every loop and list of the flow control is bounded: four rounds of at
// most @n candidates; an unpark of at most @limit rows, and at most @limit
// of any one key (the rest wait for the next claim): under the 5,000 locks
// at which SQL Server escalates (jobs.MaxClaimLimit is 1,000).
func TestClaimFlowControlIsBounded(t *testing.T) {
	claim := render("my_schema").claim
	for _, want := range []string{
		"WHILE @round < 4 AND @got < @n",
		"SELECT TOP (@ask) c.Id",
		"IF @parked = 0 OR @picked < @ask",
		"WHEN r.Room > @limit THEN @limit ELSE r.Room END",
	} {
		if !strings.Contains(claim, want) {
			t.Errorf("claim: no %q", want)
		}
	}
	if n := strings.Count(claim, "SELECT TOP (@limit) "); n != 2 {
		t.Errorf("claim: %d unpark selections bounded by TOP (@limit), want 2", n)
	}
}

// A rate-limited claim (ADR 0033) reads its window under the Queues row's
// update lock, and writes it back on the same row before COMMIT: one
// claim at a time per rate-limited queue, so a window's claims sum to at
// most its count. The probe calls a queue with a full, open window no
// work.
func TestRateLimitedClaimKeepsItsWindowUnderTheQueueRowLock(t *testing.T) {
	q := render("my_schema")
	claim := q.claim
	lock := strings.Index(claim, "@rateStart = RateWindowStartUtc, @rateUsed = RateUsed\n    FROM [my_schema].Queues WITH (UPDLOCK, ROWLOCK) WHERE Name = @q;")
	room := strings.Index(claim, "IF @n > @rateCount - @rateUsed SET @n = @rateCount - @rateUsed;")
	write := strings.Index(claim, "UPDATE [my_schema].Queues WITH (ROWLOCK) SET RateWindowStartUtc = @rateStart, RateUsed = @rateUsed WHERE Name = @q;")
	commit := strings.LastIndex(claim, "COMMIT TRANSACTION;")
	if lock < 0 || room < lock || write < room || commit < write {
		t.Fatalf("the window: read under the row lock at %d, capped at %d, written at %d, COMMIT at %d", lock, room, write, commit)
	}
	if !strings.Contains(claim, "IF @max IS NOT NULL OR @rated = 1") {
		t.Error("a rate-limited queue's claim does not take its Queues row's update lock")
	}
	if !strings.HasSuffix(strings.TrimSpace(claim), "SELECT @heldMs, "+strings.ReplaceAll(releaseOwed, "{{s}}", "[my_schema]")+";") {
		t.Error("the claim's second result is not the hold, then whether a workflow release is owed")
	}
	if !strings.Contains(q.dueProbe, "q.RateUsed >= q.RateCount AND DATEADD(MILLISECOND, q.RateWindowMs, q.RateWindowStartUtc) > @now") {
		t.Error("the probe does not leave out a queue whose open window is full")
	}
}
