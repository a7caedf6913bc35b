package main

import (
	"context"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

// statusOptions are the flags of mirage status.
type statusOptions struct {
	f      *Factory
	chain  string
	json   bool
	active bool
	state  stateOptions
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status [CHAIN]",
		Short: "Show chains, or one chain's segments with the gaps between them",
		Long: `Without CHAIN, one line per chain (the last gap between segments: positive an
interruption, negative an overlap); with CHAIN, its segments and the gaps between
them. Reads the state database only (what the last daemon cycle saw).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.chain = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return statusRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&o.active, "active", false, "only active chains")
	o.state.add(cmd)
	return cmd
}

func statusRun(ctx context.Context, o *statusOptions) error {
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.chain != "" {
		v, err := provisioner.ChainStatus(ctx, st, o.chain)
		if err != nil {
			return stateErr(err)
		}
		return printView(o.f.Out, o.json, v.JSON(), v)
	}
	views, err := provisioner.ChainStatuses(ctx, st, o.active)
	if err != nil {
		return stateErr(err)
	}
	return printView(o.f.Out, o.json, provisioner.ChainViews(views).JSON(), provisioner.ChainViews(views))
}
