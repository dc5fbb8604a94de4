package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
)

func (a *app) jobsCommand() *cobra.Command {
	c := &cobra.Command{Use: "jobs", Short: "See and steer active jobs: list, show, cancel", Args: cobra.NoArgs}
	c.AddCommand(a.jobsListCommand(), a.showCommand(), a.jobsCancelCommand())
	return c
}

// hotStatuses are the states "jobs list --status" takes: Pending splits
// into due (pending) and not yet due (scheduled), as the dashboard shows.
var hotStatuses = map[string]jobs.Status{
	"pending": jobs.StatusPending, "scheduled": jobs.StatusPending,
	"fetched": jobs.StatusFetched, "processing": jobs.StatusProcessing,
}

// maxListPages bounds how many store pages "jobs list --status pending" or
// "scheduled" reads to fill one page of the kind it shows.
const maxListPages = 20

func (a *app) jobsListCommand() *cobra.Command {
	var queue, jobType, status string
	var limit int
	var before int64
	c := &cobra.Command{
		Use:   "list [flags]",
		Short: "List active jobs (pending, scheduled, fetched or processing), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := jobs.Filter{Queue: queue, Type: jobType}
			if status != "" {
				st, ok := hotStatuses[strings.ToLower(status)]
				if !ok {
					return usage("--status %q: want pending, scheduled, fetched or processing", status)
				}
				f.Status = &st
			}
			if err := f.Validate(jobs.TableHot); err != nil {
				return err
			}
			if limit < 1 || limit > jobs.MaxPageSize {
				return usage("--limit %d: want 1 to %d", limit, jobs.MaxPageSize)
			}
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			now, err := s.Now(cmd.Context())
			if err != nil {
				return err
			}
			// keep tells a due Pending job from a scheduled one, when asked.
			keep := func(j *jobs.Job) bool {
				switch strings.ToLower(status) {
				case "pending":
					return !j.ScheduledAt.After(now)
				case "scheduled":
					return j.ScheduledAt.After(now)
				}
				return true
			}
			var page jobs.JobPage
			next := before
			for range maxListPages {
				got, err := s.ListJobs(cmd.Context(), jobs.ListParams{Table: jobs.TableHot, Filter: f, Limit: limit, BeforeID: next})
				if err != nil {
					return err
				}
				for _, j := range got.Jobs {
					if keep(j) && len(page.Jobs) < limit {
						page.Jobs = append(page.Jobs, j)
					}
				}
				next = got.NextBeforeID
				if next == 0 || len(page.Jobs) == limit {
					break
				}
			}
			if len(page.Jobs) > 0 && next != 0 {
				page.NextBeforeID = page.Jobs[len(page.Jobs)-1].ID
			}
			return a.print(page, func(w *tabwriter.Writer) {
				if len(page.Jobs) == 0 {
					fmt.Fprintln(w, "no active jobs match")
					return
				}
				fmt.Fprintln(w, "ID\tQUEUE\tTYPE\tSTATE\tATTEMPTS\tDUE\tWORKER\tNOTE")
				for _, j := range page.Jobs {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.Queue, j.Type, stateOf(j, now), j.AttemptCount, j.MaxAttempts,
						j.ScheduledAt.Format(time.RFC3339), orDefault(j.WorkerID, "-"), noteOf(j))
				}
				if page.NextBeforeID != 0 {
					fmt.Fprintf(w, "more: --before %d\n", page.NextBeforeID)
				}
			})
		},
	}
	c.Flags().StringVar(&queue, "queue", "", "only this queue")
	c.Flags().StringVar(&jobType, "type", "", "only this job type")
	c.Flags().StringVar(&status, "status", "", "only jobs in this state: pending (due), scheduled (not yet due), fetched or processing")
	c.Flags().IntVar(&limit, "limit", jobs.DefaultPageSize, "page size (at most 1000)")
	c.Flags().Int64Var(&before, "before", 0, "continue below this ID (from the previous page)")
	return c
}

// stateOf names a hot job's state as "jobs list" shows it.
func stateOf(j *jobs.Job, now time.Time) string {
	switch {
	case j.Status == jobs.StatusPending && j.ScheduledAt.After(now):
		return "scheduled"
	case j.Status == jobs.StatusPending:
		return "pending"
	}
	return strings.ToLower(j.Status.String())
}

func noteOf(j *jobs.Job) string {
	if !j.CancelRequestedAt.IsZero() {
		return "cancel requested"
	}
	if j.SnoozeCount > 0 {
		return fmt.Sprintf("snoozed %d", j.SnoozeCount)
	}
	return ""
}

func (a *app) jobsCancelCommand() *cobra.Command {
	var reason, by string
	c := &cobra.Command{
		Use:   "cancel ID... [--reason TEXT]",
		Short: "Cancel jobs: one not yet started goes to the dead-letter queue at once; a running one is asked to stop at its next heartbeat",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, arg := range args {
				id, err := strconv.ParseInt(arg, 10, 64)
				if err != nil || id <= 0 {
					return usage("job id %q: want a positive integer", arg)
				}
				ids[i] = id
			}
			p := jobs.CancelParams{IDs: ids, By: by, Reason: reason}
			if err := p.Validate(); err != nil {
				return &usageError{err}
			}
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			rs, err := s.Cancel(cmd.Context(), p)
			if err != nil {
				return err
			}
			type result struct {
				ID      int64  `json:"id"`
				Outcome string `json:"outcome"`
			}
			out := make([]result, len(rs))
			missing := 0
			for i, r := range rs {
				out[i] = result{r.ID, r.Outcome.String()}
				if r.Outcome == jobs.CancelNotFound {
					missing++
				}
			}
			if err := a.print(out, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "ID\tOUTCOME")
				for _, r := range out {
					fmt.Fprintf(w, "%d\t%s\n", r.ID, r.Outcome)
				}
			}); err != nil {
				return err
			}
			if missing == len(rs) {
				return notFound("no job with these IDs: no table holds them")
			}
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for the dead letter's details")
	c.Flags().StringVar(&by, "by", defaultActor(), "who cancels, for the dead letter's details")
	return c
}

// defaultActor names the operator: the login running the command.
func defaultActor() string {
	for _, v := range []string{"USER", "USERNAME", "LOGNAME"} {
		if u := os.Getenv(v); u != "" {
			return u + " (chokaq jobs cancel)"
		}
	}
	return "chokaq jobs cancel"
}
