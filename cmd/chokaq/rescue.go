package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/zombie"
)

func (a *app) rescueCommand() *cobra.Command {
	var loop, single bool
	c := &cobra.Command{
		Use:   "rescue",
		Short: "Run one rescue sweep now, or --loop as a standalone maintenance process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), loop)
			if err != nil {
				return err
			}
			rc := cfg.RescueConfig()
			rc.Logger = a.log
			if single {
				sq, ok := s.(*sqlserver.Store)
				if !ok {
					return usage("--single needs SQL Server")
				}
				rc.Leader = sqlserver.NewLeader(sq, "rescue")
			}
			r, err := zombie.New(s, rc)
			if err != nil {
				return err
			}
			if !loop {
				res, err := r.Sweep(cmd.Context())
				if err != nil {
					return err
				}
				return a.print(res, func(w *tabwriter.Writer) {
					fmt.Fprintln(w, res.String())
				})
			}
			if err := r.Start(cmd.Context()); err != nil {
				return err
			}
			a.log.Info("rescue loop running; Ctrl-C stops it")
			<-cmd.Context().Done()
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.Stop(stopCtx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
				return err
			}
			c := r.Counters()
			a.say("rescue loop stopped after %d sweeps: recovered %d, zombies %d, past deadline %d", c.Sweeps, c.Recovered, c.Zombies, c.Expired)
			return nil
		},
	}
	c.Flags().BoolVar(&loop, "loop", false, "keep sweeping every Recovery.ScanInterval until interrupted (needs SQL Server)")
	c.Flags().BoolVar(&single, "single", false, "elect one rescuer per schema with sp_getapplock (SQL Server)")
	return c
}
