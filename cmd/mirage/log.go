package main

import (
	"context"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/spf13/cobra"
)

// logOptions are the flags of mirage log.
type logOptions struct {
	f      *Factory
	chain  string
	json   bool
	events bool
	state  stateOptions
}

func newLogCmd(f *Factory, runF func(*logOptions) error) *cobra.Command {
	o := &logOptions{f: f}
	cmd := &cobra.Command{
		Use: "log CHAIN",
		Example: `  mirage log c-20261123-ab12cd               # each decision: policy, action, reason
  mirage log c-20261123-ab12cd --events      # and the event log (submissions with their spec, starts, ends)
  mirage log c-20261123-ab12cd --json | jq '.decisions[-1]'`,
		Short: "Show a chain's decisions with their reasons (and, with --events, what happened to its jobs)",
		Long: `Every decision the daemon made for the chain, oldest first, with its reason;
consecutive waits for the same reason are one entry (wait ×N). --events adds
the event log: submissions, starts, ends, gaps between segments.

The logs in full: docs/guide/chains-and-daemon.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chain = args[0]
			if runF != nil {
				return runF(o)
			}
			return logRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&o.events, "events", false, "also print the event log")
	o.state.add(cmd)
	return cmd
}

func logRun(ctx context.Context, o *logOptions) error {
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lg, err := chainops.ChainLog(ctx, st, o.chain, o.events)
	if err != nil {
		return stateErr(err)
	}
	if o.json {
		return cmdutil.PrintJSON(o.f.Out, lg.JSON())
	}
	return lg.WriteText(o.f.Out, o.events)
}
