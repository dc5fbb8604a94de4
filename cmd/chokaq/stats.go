package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/spf13/cobra"
)

func (a *app) statsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Per-queue counts: pending, scheduled, fetched, processing, archived, dead-lettered, lag, and jobs waiting on a key, a sequence or a rate limit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openAdmin(cmd.Context())
			if err != nil {
				return err
			}
			st, err := s.QueueStats(cmd.Context())
			if err != nil {
				return err
			}
			// The rate limits are settings, not stats: the table shows
			// each beside its window's use (ADR 0033).
			qs, err := s.Queues(cmd.Context())
			if err != nil {
				return err
			}
			limits := make(map[string]jobs.RateLimit, len(qs))
			for _, q := range qs {
				limits[jobs.QueueKey(q.Name)] = q.RateLimit
			}
			return a.print(st, func(w *tabwriter.Writer) {
				if len(st) == 0 {
					fmt.Fprintln(w, "no queues yet")
					return
				}
				// WAITING-ON-KEY and WAITING-ON-SEQUENCE are Pending jobs
				// due now that flow control holds back (ADR 0031),
				// WAITING-ON-RATE those a full rate-limit window holds
				// (ADR 0033).
				fmt.Fprintln(w, "QUEUE\tPAUSED\tPENDING\tSCHEDULED\tFETCHED\tPROCESSING\tARCHIVED\tDEAD-LETTERED\tLAG\tWAITING-ON-KEY\tWAITING-ON-SEQUENCE\tWAITING-ON-RATE\tRATE-LIMIT\tWINDOW")
				for _, q := range st {
					r := limits[jobs.QueueKey(q.Queue)]
					fmt.Fprintf(w, "%s\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", q.Queue, q.Paused, q.Pending, q.Scheduled, q.Fetched,
						q.Processing, q.Archived, q.DeadLettered, q.Lag.Round(time.Millisecond), q.WaitingOnKey, q.WaitingOnSequence,
						q.WaitingOnRate, r, windowText(r, q))
				}
			})
		},
	}
}

// windowText is a rate-limited queue's open window: its claims of the
// limit's count and when it closes ("7/100 until 12:03:04", local time),
// or "-" with no limit or no open window.
func windowText(r jobs.RateLimit, q jobs.QueueStats) string {
	if r.IsZero() || q.WindowEndsAt.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%d/%d until %s", q.WindowUsed, r.Count, q.WindowEndsAt.Local().Format(time.TimeOnly))
}
