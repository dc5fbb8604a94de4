package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) statsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Per-queue counts: pending, scheduled, fetched, processing, archived, dead-lettered, lag, and jobs waiting on a key or a sequence",
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
			return a.print(st, func(w *tabwriter.Writer) {
				if len(st) == 0 {
					fmt.Fprintln(w, "no queues yet")
					return
				}
				// WAITING-ON-KEY and WAITING-ON-SEQUENCE are Pending jobs
				// due now that flow control holds back (ADR 0031).
				fmt.Fprintln(w, "QUEUE\tPAUSED\tPENDING\tSCHEDULED\tFETCHED\tPROCESSING\tARCHIVED\tDEAD-LETTERED\tLAG\tWAITING-ON-KEY\tWAITING-ON-SEQUENCE")
				for _, q := range st {
					fmt.Fprintf(w, "%s\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n", q.Queue, q.Paused, q.Pending, q.Scheduled, q.Fetched,
						q.Processing, q.Archived, q.DeadLettered, q.Lag.Round(time.Millisecond), q.WaitingOnKey, q.WaitingOnSequence)
				}
			})
		},
	}
}
