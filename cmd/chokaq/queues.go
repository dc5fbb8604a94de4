package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
)

func (a *app) queuesCommand() *cobra.Command {
	c := &cobra.Command{Use: "queues", Short: "List queues and change their controls", Args: cobra.NoArgs}
	update := func(use, short string, u func(cmd *cobra.Command) (jobs.QueueUpdate, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				upd, err := u(cmd)
				if err != nil {
					return err
				}
				s, err := a.openAdmin(cmd.Context())
				if err != nil {
					return err
				}
				q, err := s.UpdateQueue(cmd.Context(), args[0], upd)
				if err != nil {
					return err
				}
				return a.print(q, func(w *tabwriter.Writer) { writeQueues(w, []jobs.QueueSettings{q}) })
			},
		}
	}
	paused, resumed := true, false
	set := update("set QUEUE [flags]", "Set MaxWorkers, timeouts (0 clears one) and retentions (default clears one)",
		func(cmd *cobra.Command) (jobs.QueueUpdate, error) {
			var u jobs.QueueUpdate
			f := cmd.Flags()
			if f.Changed("max-workers") {
				n, _ := f.GetInt("max-workers")
				u.MaxWorkers = &n
			}
			for _, d := range []struct {
				flag string
				into **time.Duration
			}{{"zombie-timeout", &u.ZombieTimeout}, {"execution-timeout", &u.ExecutionTimeout}} {
				if !f.Changed(d.flag) {
					continue
				}
				v, _ := f.GetDuration(d.flag)
				if v < 0 || v%time.Second != 0 {
					return u, usage("--%s %v: want whole seconds, e.g. 90s (0 clears it)", d.flag, v)
				}
				*d.into = &v
			}
			for _, r := range []struct {
				flag string
				into **time.Duration
			}{{"archive-retention", &u.ArchiveRetention}, {"dead-letter-retention", &u.DeadLetterRetention}} {
				if !f.Changed(r.flag) {
					continue
				}
				text, _ := f.GetString(r.flag)
				v, err := retention.ParseQueueSetting(text)
				if err != nil {
					return u, usage("--%s %q: want a duration such as 7d or 36h, 0 or forever to keep, or default", r.flag, text)
				}
				*r.into = &v
			}
			if err := flowFlags(cmd, &u); err != nil {
				return u, err
			}
			if f.Changed("weight") {
				n, _ := f.GetInt("weight")
				if err := (jobs.QueueUpdate{Weight: &n}).Validate(); err != nil {
					return u, fmt.Errorf("queue %s: --weight: %w", f.Arg(0), err) // name the queue: several may be set in a script
				}
				u.Weight = &n
			}
			if f.Changed("rate-limit") {
				text, _ := f.GetString("rate-limit")
				r, err := jobs.ParseRateLimit(text)
				if err != nil {
					return u, fmt.Errorf("queue %s: --rate-limit: %w", f.Arg(0), err)
				}
				u.RateLimit = &r
			}
			if u.IsZero() {
				return u, usage("nothing to set: give --max-workers, --zombie-timeout, --execution-timeout, --archive-retention, --dead-letter-retention, " +
					"--max-workers-per-key, --key-limit, --sequence-on-dead-letter, --weight or --rate-limit")
			}
			// Processes are running: a zombie timeout none of them with
			// default heartbeats could honour is refused.
			return u, u.ValidateAtRunTime()
		})
	set.Flags().Int("max-workers", 0, "fleet-wide cap on Fetched plus Processing jobs (0: unlimited)")
	set.Flags().Duration("zombie-timeout", 0, "heartbeat silence before rescue dead-letters a job: more than 36s, or 0 for the global one (rescue waits 3 x a job's own heartbeat maximum anyway)")
	set.Flags().Duration("execution-timeout", 0, "hard deadline of one execution (0: the processor default)")
	set.Flags().String("archive-retention", "", "how long the queue's succeeded jobs are kept: 7d, 36h, forever, or default (Retention.Archive)")
	set.Flags().String("dead-letter-retention", "", "how long the queue's dead letters are kept: 30d, forever, or default (Retention.DeadLetters)")
	set.Flags().Int("max-workers-per-key", 0, "fleet-wide cap on the Fetched plus Processing jobs of each concurrency key (0: unlimited)")
	set.Flags().StringArray("key-limit", nil, "KEY=N: the concurrency key's own cap over --max-workers-per-key; N=0 removes it (repeatable)")
	set.Flags().Int("weight", 0, "the queue's share of the claims of a processor serving it beside other queues, 1 (the default) to 1000 (ADR 0032)")
	set.Flags().String("rate-limit", "", "at most N of the queue's jobs claimed per window, fleet-wide: N/window as 100/1m or 20/s, or none to remove it (ADR 0033)")
	set.Flags().String("sequence-on-dead-letter", "", "continue (the next job of the sequence runs) or hold (it waits until the dead letter is resurrected or purged)")
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List queue control rows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			qs, err := s.Queues(cmd.Context())
			if err != nil {
				return err
			}
			return a.print(qs, func(w *tabwriter.Writer) {
				if len(qs) == 0 {
					fmt.Fprintln(w, "no queue settings (every queue runs with the defaults)")
					return
				}
				writeQueues(w, qs)
			})
		},
	},
		update("pause QUEUE", "Stop claiming from a queue (running jobs finish; buffered ones are released)",
			func(*cobra.Command) (jobs.QueueUpdate, error) { return jobs.QueueUpdate{Paused: &paused}, nil }),
		update("resume QUEUE", "Resume claiming from a queue",
			func(*cobra.Command) (jobs.QueueUpdate, error) { return jobs.QueueUpdate{Paused: &resumed}, nil }),
		set)
	return c
}

// flowFlags reads the flow-control flags of queues set into u (ADR 0031).
func flowFlags(cmd *cobra.Command, u *jobs.QueueUpdate) error {
	f := cmd.Flags()
	if f.Changed("max-workers-per-key") {
		n, _ := f.GetInt("max-workers-per-key")
		u.MaxWorkersPerKey = &n
	}
	if f.Changed("key-limit") {
		pairs, _ := f.GetStringArray("key-limit")
		u.KeyLimits = make(map[string]int, len(pairs))
		for _, kv := range pairs {
			// The cap follows the last '=': a key may hold one itself.
			i := strings.LastIndexByte(kv, '=')
			if i < 0 {
				return usage("--key-limit %q: want KEY=N, e.g. tenant-a=2 (N=0 removes the key's own cap)", kv)
			}
			k, text := kv[:i], kv[i+1:]
			n, err := strconv.Atoi(text)
			if err != nil {
				return usage("--key-limit %q: the cap %q is not a whole number", kv, text)
			}
			if _, dup := u.KeyLimits[k]; dup {
				return usage("--key-limit: key %q given twice", k)
			}
			u.KeyLimits[k] = n
		}
	}
	if f.Changed("sequence-on-dead-letter") {
		text, _ := f.GetString("sequence-on-dead-letter")
		p, err := jobs.ParseSequencePolicy(text)
		if err != nil || text == "" {
			return usage("--sequence-on-dead-letter %q: want continue or hold", text)
		}
		u.SequenceOnDeadLetter = &p
	}
	return nil
}

func writeQueues(w *tabwriter.Writer, qs []jobs.QueueSettings) {
	fmt.Fprintln(w, "QUEUE\tPAUSED\tMAX WORKERS\tZOMBIE TIMEOUT\tEXECUTION TIMEOUT\tARCHIVE RETENTION\tDEAD-LETTER RETENTION\tPER KEY\tKEY LIMITS\tON DEAD LETTER\tWEIGHT\tRATE LIMIT")
	for _, q := range qs {
		fmt.Fprintf(w, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", q.Name, q.Paused, intOr(q.MaxWorkers, "unlimited"),
			durationOr(q.ZombieTimeout, "global"), durationOr(q.ExecutionTimeout, "default"),
			retention.Text(q.ArchiveRetention), retention.Text(q.DeadLetterRetention),
			intOr(q.MaxWorkersPerKey, "unlimited"), keyLimitsText(q.KeyLimits), q.SequenceOnDeadLetter, q.ClaimWeight(), q.RateLimit)
	}
}

// keyLimitsText shows a queue's own key caps in key order, the first few
// only: a queue may name a thousand, and -o json lists them all.
func keyLimitsText(limits map[string]int) string {
	const most = 3
	if len(limits) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(limits))
	parts := make([]string, 0, most)
	for _, k := range keys[:min(most, len(keys))] {
		parts = append(parts, k+"="+strconv.Itoa(limits[k]))
	}
	text := strings.Join(parts, ",")
	if len(keys) > most {
		text += fmt.Sprintf(" (+%d more)", len(keys)-most)
	}
	return text
}

func intOr(n int, zero string) string {
	if n == 0 {
		return zero
	}
	return fmt.Sprint(n)
}

func durationOr(d time.Duration, zero string) string {
	if d == 0 {
		return zero
	}
	return d.String()
}
