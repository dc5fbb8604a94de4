package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chokaq/chokaq-go/jobs"
)

// filterFlags are the selection flags shared by list, resurrect and purge.
type filterFlags struct {
	queue, jobType, reason, from, to, text string
	olderThan                              time.Duration
}

func (ff *filterFlags) register(f *pflag.FlagSet) {
	f.StringVar(&ff.queue, "queue", "", "only this queue")
	f.StringVar(&ff.jobType, "type", "", "only this job type")
	f.StringVar(&ff.reason, "reason", "", "only this failure reason (name or number: Zombie, 2, Timeout, 7, ...)")
	f.StringVar(&ff.from, "from", "", "dead-lettered at or after (RFC 3339)")
	f.StringVar(&ff.to, "to", "", "dead-lettered before (RFC 3339)")
	f.StringVar(&ff.text, "text", "", "text in the type, error details or payload")
	f.DurationVar(&ff.olderThan, "older-than", 0, "dead-lettered more than this long ago, e.g. 720h")
}

// build turns the flags and ID arguments into a filter; bad input is a
// usage error naming the flag.
func (ff *filterFlags) build(args []string) (jobs.Filter, error) {
	f := jobs.Filter{Queue: ff.queue, Type: ff.jobType, Text: ff.text, OlderThan: ff.olderThan}
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return f, usage("job id %q: want a positive integer", a)
		}
		f.IDs = append(f.IDs, id)
	}
	if ff.reason != "" {
		r, err := jobs.ParseFailureReason(ff.reason)
		if err != nil {
			return f, usage("--reason: %v", err)
		}
		f.Reason = &r
	}
	for _, t := range []struct {
		flag, value string
		into        *time.Time
	}{{"--from", ff.from, &f.From}, {"--to", ff.to, &f.To}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339, t.value)
		if err != nil {
			return f, usage("%s %q: want RFC 3339, e.g. 2026-11-30T08:00:00Z", t.flag, t.value)
		}
		*t.into = v
	}
	if err := f.Validate(jobs.TableDLQ); err != nil {
		return f, err
	}
	return f, nil
}

func (a *app) dlqCommand() *cobra.Command {
	c := &cobra.Command{Use: "dlq", Short: "Inspect, resurrect and purge dead letters", Args: cobra.NoArgs}
	c.AddCommand(a.dlqListCommand(), a.showCommand(), a.dlqBulkCommand("resurrect"), a.dlqBulkCommand("purge"))
	return c
}

func (a *app) dlqListCommand() *cobra.Command {
	var ff filterFlags
	var limit int
	var before int64
	c := &cobra.Command{
		Use:   "list [flags]",
		Short: "List dead letters, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ff.build(nil)
			if err != nil {
				return err
			}
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			page, err := s.ListJobs(cmd.Context(), jobs.ListParams{Table: jobs.TableDLQ, Filter: f, Limit: limit, BeforeID: before})
			if err != nil {
				return err
			}
			return a.print(page, func(w *tabwriter.Writer) {
				if len(page.Jobs) == 0 {
					fmt.Fprintln(w, "no dead letters match")
					return
				}
				fmt.Fprintln(w, "ID\tQUEUE\tTYPE\tREASON\tATTEMPTS\tDEAD-LETTERED\tERROR")
				for _, j := range page.Jobs {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Queue, j.Type, j.FailureReason, j.AttemptCount, j.MaxAttempts,
						j.FinishedAt.Format(time.RFC3339), jobs.Headline(j.ErrorDetails, 60))
				}
				if page.NextBeforeID != 0 {
					fmt.Fprintf(w, "more: --before %d\n", page.NextBeforeID)
				}
			})
		},
	}
	ff.register(c.Flags())
	c.Flags().IntVar(&limit, "limit", jobs.DefaultPageSize, "page size (at most 1000)")
	c.Flags().Int64Var(&before, "before", 0, "continue below this ID (from the previous page)")
	return c
}

// showCommand is "dlq show" and "jobs show": one job, any table.
func (a *app) showCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one job in full, wherever it is (hot, archive or dead-letter queue)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return usage("job id %q: want a positive integer", args[0])
			}
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			j, err := s.GetJob(cmd.Context(), id)
			if errors.Is(err, jobs.ErrJobNotFound) {
				return notFound("job %d not found: no table holds it (hot, archive or dead-letter queue); it may have been purged", id)
			}
			if err != nil {
				return err
			}
			return a.print(j, func(w *tabwriter.Writer) { writeJob(w, j) })
		},
	}
}

func writeJob(w *tabwriter.Writer, j *jobs.Job) {
	row := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\n", k, v) }
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	row("id", j.ID)
	row("table", j.Table)
	if j.Table == jobs.TableHot {
		row("status", j.Status)
	}
	row("queue", j.Queue)
	row("type", j.Type)
	row("priority", j.Priority)
	row("attempts", fmt.Sprintf("%d of %d", j.AttemptCount, j.MaxAttempts))
	if j.SnoozeCount > 0 {
		row("snoozes", j.SnoozeCount)
	}
	if !j.CancelRequestedAt.IsZero() {
		row("cancel requested", when(j.CancelRequestedAt)+" ("+j.CancelNote+")")
	}
	row("lease", j.Lease)
	row("worker", orDefault(j.WorkerID, "-"))
	row("idempotency key", orDefault(j.IdempotencyKey, "-"))
	if j.UniqueKey != nil {
		row("unique key", j.UniqueKey.String()+" (held while "+j.UniqueStates.String()+")")
	}
	row("tags", orDefault(strings.Join(j.Tags, ","), "-"))
	row("created by", orDefault(j.CreatedBy, "-"))
	row("metadata", orDefault(metadataLine(j.Metadata), "-"))
	row("created", when(j.CreatedAt))
	row("scheduled", when(j.ScheduledAt))
	row("started", when(j.StartedAt))
	row("heartbeat", when(j.HeartbeatAt))
	row("deadline", when(j.DeadlineAt))
	if j.Table == jobs.TableHot {
		row("timeout", j.TimeoutText())
		row("zombie policy", j.ZombieText())
	}
	row("finished", when(j.FinishedAt))
	if j.Table == jobs.TableDLQ {
		row("reason", fmt.Sprintf("%s (%d)", j.FailureReason, int(j.FailureReason)))
	}
	if j.Table == jobs.TableHot && j.Status == jobs.StatusProcessing && (j.Progress > 0 || j.ProgressMessage != "") {
		// As of the last heartbeat, every 8-12 s by default.
		row("progress", fmt.Sprintf("%.0f%% %s (as of the heartbeat at %s)", 100*j.Progress, j.ProgressMessage, when(j.HeartbeatAt)))
	}
	if j.LastError != "" {
		row("last error", jobs.Headline(j.LastError, 500))
	}
	row("payload", string(j.Payload))
	if j.Output != nil {
		row("output", string(j.Output))
	}
	w.Flush()
	if j.ErrorDetails != "" {
		fmt.Fprintf(w, "error details:\n%s\n", j.ErrorDetails)
	}
}

// metadataLine is a job's metadata as key=value pairs in key order.
func metadataLine(m map[string]string) string {
	pairs := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, k+"="+m[k])
	}
	return strings.Join(pairs, " ")
}

// dlqBulkCommand builds resurrect and purge: by IDs or by filter, with a
// count preview and a confirmation, in batches with progress.
func (a *app) dlqBulkCommand(op string) *cobra.Command {
	var ff filterFlags
	var all, yes bool
	var payload, payloadFile string
	c := &cobra.Command{
		Use:   op + " [ID...] [flags]",
		Short: map[string]string{"resurrect": "Move dead letters back to Pending (attempts reset, same ID)", "purge": "Delete dead letters for good"}[op],
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ff.build(args)
			if err != nil {
				return err
			}
			if f.IsEmpty() && !all {
				return usage("refusing to %s every dead letter: give IDs or a filter (--queue, --type, --reason, --from, --to, --text, --older-than), or --all", op)
			}
			var body []byte
			if op == "resurrect" {
				if body, err = a.readPayload(payload, payloadFile, cmd.Flags().Changed("payload")); err != nil {
					return err
				}
			}
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			confirmed, done, err := a.bulkConfirmed(cmd.Context(), s, op, f, yes, body)
			if err != nil {
				return err
			}
			result := struct {
				Operation string `json:"operation"`
				Confirmed int    `json:"confirmed"`
				Done      int    `json:"done"`
			}{op, confirmed, done}
			return a.print(result, func(w *tabwriter.Writer) {
				verb := map[string]string{"resurrect": "resurrected", "purge": "purged"}[op]
				fmt.Fprintf(w, "%s %d dead letters\n", verb, done)
			})
		},
	}
	ff.register(c.Flags())
	c.Flags().BoolVar(&all, "all", false, "act on every dead letter when no IDs or filter are given")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	if op == "resurrect" {
		c.Flags().StringVar(&payload, "payload", "", "replace the payload of every resurrected job (JSON)")
		c.Flags().StringVar(&payloadFile, "payload-file", "", "replacement payload from a file, or stdin with -")
	}
	return c
}

// maxAsks bounds how often a bulk action asks again because the dead
// letters changed between the count and the action.
const maxAsks = 5

// bulkConfirmed previews the dead letters f selects, asks the operator to
// type their number (unless yes), then acts on exactly those jobs: the ones
// that matched and had been dead-lettered when they were counted, listed by
// ID, never one that arrived while the operator typed. If the number no
// longer holds, it says so and asks again. It returns how many were
// confirmed and how many the action changed; fewer change when some left
// the queue between the listing and the action, and it says so.
func (a *app) bulkConfirmed(ctx context.Context, s jobs.Admin, op string, f jobs.Filter, yes bool, payload []byte) (confirmed, done int, err error) {
	sel, err := jobs.Preview(ctx, s, jobs.TableDLQ, f)
	if err != nil {
		return 0, 0, err
	}
	var ids []int64
	for asks := 1; ; asks++ {
		if sel.Count == 0 {
			if len(f.IDs) > 0 {
				return 0, 0, notFound("none of the %d jobs named is a dead letter; nothing to %s", len(uniqueIDs(f.IDs)), op)
			}
			return 0, 0, notFound("no dead letters match; nothing to %s", op)
		}
		if named := len(uniqueIDs(f.IDs)); named > 0 && sel.Count < int64(named) {
			fmt.Fprintf(a.stderr, "%d of the %d jobs named are dead letters; the others are not (see chokaq dlq show ID)\n", sel.Count, named)
		}
		if !yes {
			if err := a.confirm(op, sel.Count); err != nil {
				return 0, 0, err
			}
		}
		ids, err = sel.IDs(ctx, s)
		if err == nil {
			break
		}
		if !errors.Is(err, jobs.ErrSelectionChanged) || asks == maxAsks {
			return 0, 0, err
		}
		if sel, err = jobs.Preview(ctx, s, jobs.TableDLQ, f); err != nil {
			return 0, 0, err
		}
		fmt.Fprintf(a.stderr, "The dead letters changed since they were counted: %d match now. Nothing was changed.\n", sel.Count)
	}
	done, err = a.bulk(ctx, s, op, ids, payload)
	if err != nil {
		return len(ids), done, fmt.Errorf("%s stopped after %d of %d dead letters: %w", op, done, len(ids), err)
	}
	if done < len(ids) {
		fmt.Fprintf(a.stderr, "%d of the %d dead letters confirmed had left the dead-letter queue meanwhile (resurrected or purged elsewhere)\n", len(ids)-done, len(ids))
	}
	return len(ids), done, nil
}

func uniqueIDs(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// confirm asks the operator to type the number of jobs. Anything else, or
// no answer, is no: nothing changes, and the command exits 2.
func (a *app) confirm(op string, n int64) error {
	fmt.Fprintf(a.stderr, "This will %s %d dead letters. Type %d to confirm: ", op, n, n)
	line, _ := a.input().ReadString('\n')
	if typed := strings.TrimSpace(line); typed != strconv.FormatInt(n, 10) {
		if typed == "" {
			return usage("%s not confirmed (no answer); nothing changed (use --yes to skip the question)", op)
		}
		return usage("%s not confirmed (typed %q, not %d); nothing changed (use --yes to skip the question)", op, typed, n)
	}
	return nil
}

// bulkBatch is how many jobs one store call of a bulk action moves.
const bulkBatch = 500

// bulk acts on ids, bulkBatch at a time, so the operator sees progress and
// a failure reports how far it got.
func (a *app) bulk(ctx context.Context, s jobs.Admin, op string, ids []int64, payload []byte) (int, error) {
	done := 0
	for chunk := range slices.Chunk(ids, bulkBatch) {
		var n int
		var err error
		if op == "resurrect" {
			n, err = s.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: chunk}, Payload: payload})
		} else {
			n, err = s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableDLQ, Filter: jobs.Filter{IDs: chunk}})
		}
		done += n
		if err != nil {
			return done, err
		}
		if len(ids) > len(chunk) {
			fmt.Fprintf(a.stderr, "%s: %d/%d\n", op, done, len(ids))
		}
	}
	return done, nil
}
