package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/zombie"
)

func (a *app) rescueCommand() *cobra.Command {
	var loop, single bool
	c := &cobra.Command{
		Use:   "rescue",
		Short: "Run one rescue sweep now, or --loop as a standalone maintenance process (rescue, retention, the file's schedules)",
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
			if loop {
				return a.maintain(cmd.Context(), cfg, s, single)
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
			res, err := r.Sweep(cmd.Context())
			if err != nil {
				return err
			}
			return a.print(res, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, res.String())
			})
		},
	}
	c.Flags().BoolVar(&loop, "loop", false, "keep running until interrupted: rescue every Recovery.ScanInterval, retention, and the schedules of the file (needs SQL Server)")
	c.Flags().BoolVar(&single, "single", false, "elect one rescuer per schema with sp_getapplock (SQL Server)")
	return c
}

// maintain runs a Client without workers: the rescue loop, retention, and
// the file's schedules, each led by one process per schema (the rescue
// loop only with --single), until interrupted.
func (a *app) maintain(ctx context.Context, cfg *config.Config, s jobs.Store, single bool) error {
	cc := cfg.ClientConfig()
	cc.Store, cc.DisableProcessor, cc.SingleRescuer, cc.Logger = s, true, single, a.log
	client, err := chokaq.New(ctx, cc, nil)
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	n := len(cc.RawSchedules)
	a.log.Info(fmt.Sprintf("maintenance running: rescue, retention (archive %s, dead letters %s) and %d schedules; Ctrl-C stops it",
		retention.Text(client.Retainer().Config().Archive), retention.Text(client.Retainer().Config().DeadLetters), n))
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
		return err
	}
	rc := client.Rescuer().Counters()
	a.say("maintenance stopped after %d rescue sweeps (recovered %d, zombies %d, past deadline %d); retention deleted %d jobs",
		rc.Sweeps, rc.Recovered, rc.Zombies, rc.Expired, client.Retainer().Deleted())
	return nil
}
