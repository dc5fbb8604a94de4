package jobs

import "strings"

// Queue names compare ignoring case in every store: SQL Server compares
// the Queue column by the database's collation, case-insensitive by
// default, and queue names are ASCII (ValidateQueueName), so "orders" and
// "Orders" are one queue there: one control row, one claim order, one
// count. The in-memory store compares them the same way, and a process
// that names two such queues is refused (DistinctQueueNames). A job keeps
// the spelling it was enqueued with.

// QueueKey is the form under which stores compare queue names: the name in
// lower case.
func QueueKey(name string) string { return strings.ToLower(name) }

// UniqueQueues returns names without the ones equal, ignoring case, to an
// earlier one; the first spelling stays.
func UniqueQueues(names []string) []string {
	out := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if k := QueueKey(n); !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	return out
}

// DistinctQueueNames returns an error naming the first of names that
// repeats an earlier one, ignoring case: a process that lists "orders" and
// "Orders" means one queue twice, or two queues the store cannot tell apart.
func DistinctQueueNames(field string, names []string) error {
	seen := make(map[string]string, len(names))
	for _, n := range names {
		if first, ok := seen[QueueKey(n)]; ok {
			rule := "is listed twice"
			if first != n {
				rule = "is the same queue as " + first + " (queue names ignore case)"
			}
			return &ValidationError{Field: field, Value: n, Rule: rule}
		}
		seen[QueueKey(n)] = n
	}
	return nil
}
