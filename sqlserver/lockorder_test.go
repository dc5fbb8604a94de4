package sqlserver

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// lockOrderRow names, for each statement of queries, the row of ADR 0016's
// lock-order table that says which locks it takes and in what order: one
// of the names in that row's first cell. A new statement fails
// TestEveryStatementHasItsRowInTheLockOrderTable until it has its row and
// its name here.
var lockOrderRow = map[string]string{
	"enqueueBatch": "enqueue", "enqueueKeyed": "keyed enqueue", "enqueueKeyedTx": "keyed enqueue", "jobByKey": "keyed enqueue",
	"enqueueUnique": "unique enqueue", "enqueueUniqueTx": "unique enqueue", "lockEnqueueKeys": "lock batch keys",
	"claim": "claim", "adoptClaim": "adopt a lost claim", "dueProbe": "due probe",
	"start": "start", "heartbeat": "heartbeat", "heartbeatProgress": "heartbeat with progress", "complete": "complete", "deadLetter": "dead-letter", "snooze": "snooze",
	"cancel": "cancel", "transition": "transition", "release": "release",
	"rescueFetched": "rescue phase 1", "rescueZombies": "rescue phase 2", "rescueExpired": "rescue phase 3",
	"resurrect": "resurrect", "purge": "purge", "updateQueue": "update queue",
	"list": "list", "count": "count", "getJob": "get", "queues": "queues", "schedules": "schedules",
	"queueStats": "queue stats", "queueDepths": "depths", "now": "now", "serverLevel": "server level", "caseSensitiveNames": "name collation",
	"tableQueues": "table queues", "trim": "trim", "finishedCounts": "finished counts",
	"syncSchedules": "sync schedules", "fireSchedule": "fire schedule", "pauseSchedule": "pause", "deleteSchedule": "delete schedule",
	"doctorServer": "doctor's reads", "doctorDatabase": "doctor's reads", "doctorPrivileges": "doctor's reads",
	"doctorTranState": "doctor's reads", "doctorLocks": "doctor's reads",
	"probeType": "doctor's probes", "probeSequence": "doctor's probes", "probes": "doctor's probes",
	"tryAppLock": "leader", "appLockMode": "leader", "releaseAppLock": "leader",
	"insertWorkflowTasks": "insert workflow tasks", "addTasksBegin": "add workflow tasks", "releaseTasks": "release step",
	"workflows": "workflows", "getWorkflow": "get workflow",
}

// testOnly are the statements only tests run; they need no row.
var testOnly = []string{"ageForTest", "resetForTest"}

// lockOrderNames reads the names of ADR 0016's lock-order table: each
// row's first cell, its parenthesized notes left out, split at commas.
func lockOrderNames(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../docs/adr/0016-lock-order-and-footprints.md")
	if err != nil {
		t.Fatal(err)
	}
	notes := regexp.MustCompile(`\([^)]*\)`)
	names := map[string]bool{}
	inTable := false
	for line := range strings.Lines(string(doc)) {
		switch {
		case strings.HasPrefix(line, "| statement | locks, in order |"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "| "):
			first := strings.Split(line, "|")[1]
			for name := range strings.SplitSeq(notes.ReplaceAllString(first, ""), ",") {
				names[strings.TrimSpace(name)] = true
			}
		default:
			inTable = false
		}
	}
	if len(names) < 20 {
		t.Fatalf("found %d names in ADR 0016's lock-order table; has its header changed?", len(names))
	}
	return names
}

// Every statement the store sends is in ADR 0016's lock-order table, so a
// new statement cannot land without its lock order argued.
func TestEveryStatementHasItsRowInTheLockOrderTable(t *testing.T) {
	names := lockOrderNames(t)
	fields := reflect.TypeFor[queries]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		if slices.Contains(testOnly, name) {
			continue
		}
		row, ok := lockOrderRow[name]
		switch {
		case !ok:
			t.Errorf("statement %s has no row in ADR 0016's lock-order table: add its row, and its name to lockOrderRow", name)
		case !names[row]:
			t.Errorf("statement %s: ADR 0016's lock-order table has no row named %q", name, row)
		}
	}
	for name := range lockOrderRow {
		if _, ok := fields.FieldByName(name); !ok {
			t.Errorf("lockOrderRow names %s, which is not a statement of queries", name)
		}
	}
}
