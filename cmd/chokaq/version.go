package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/schema"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the schema version this binary expects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := struct {
				Version string `json:"version"`
				Go      string `json:"go"`
				Schema  uint   `json:"schema_version"`
			}{Version: "(devel)", Go: runtime.Version(), Schema: schema.Latest()}
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v.Version = bi.Main.Version
			}
			return a.print(v, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "chokaq\t%s\ngo\t%s\nschema version\t%d\n", v.Version, v.Go, v.Schema)
			})
		},
	}
}

func (a *app) configCommand() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Inspect the effective configuration", Args: cobra.NoArgs}
	c.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration after every layer (password redacted)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.print(cfg, nil) // Config.MarshalJSON: redacted, durations as text
			}
			fmt.Fprint(a.stdout, cfg.String())
			return nil
		},
	})
	return c
}
