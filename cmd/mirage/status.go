package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/spf13/cobra"
)

// endedShown is how long status keeps listing a chain after it ended.
const endedShown = 7 * 24 * time.Hour

// statusOptions are the flags of mirage status.
type statusOptions struct {
	f      *Factory
	chain  string
	json   bool
	active bool
	all    bool
	watch  time.Duration // redraw every this long (0: once)
	state  stateOptions
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status [CHAIN]",
		Short: "Show chains, or one chain's segments with the gaps between them",
		Long: `Without CHAIN, one line per chain (the last gap between segments: positive an
interruption, negative an overlap); with CHAIN, its segments and the gaps between
them. Reads the state database only (what the last daemon cycle saw). Chains that
ended more than 7 days ago are left out of the list unless --all.`,
		Example: `  mirage status                      # every active chain, and those ended in the last 7 days
  mirage status --all --json         # every chain the database holds
  mirage status c-20261123-ab12cd    # one chain's segments and gaps
  mirage status --watch 30s          # redrawn every 30 s until Ctrl-C`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.chain = args[0]
			}
			if o.watch < 0 || o.watch > 0 && o.json {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--watch %s: want a positive interval, without --json", o.watch))
			}
			if runF != nil {
				return runF(o)
			}
			if o.watch > 0 {
				return statusWatch(cmd.Context(), o)
			}
			return statusRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&o.active, "active", false, "only active chains")
	cmd.Flags().BoolVar(&o.all, "all", false, "also the chains that ended more than 7 days ago")
	cmd.Flags().DurationVar(&o.watch, "watch", 0, "redraw every this long (e.g. 30s) until interrupted; the database is re-read each time")
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
		v, err := chainops.ChainStatus(ctx, st, o.chain)
		if err != nil {
			return stateErr(err)
		}
		return cmdutil.PrintView(o.f.Out, o.json, v.JSON(), v)
	}
	filter := chainops.StatusFilter{ActiveOnly: o.active}
	if !o.all {
		filter.EndedAfter = o.f.Now().Add(-endedShown)
	}
	views, hidden, err := chainops.ChainStatuses(ctx, st, filter)
	if err != nil {
		return stateErr(err)
	}
	if err := cmdutil.PrintView(o.f.Out, o.json, chainops.ChainViews(views).JSON(), chainops.ChainViews(views)); err != nil {
		return err
	}
	if hidden > 0 && !o.json {
		_, err = fmt.Fprintf(o.f.ErrOut, "(%d chain(s) ended more than 7 days ago not shown: mirage status --all)\n", hidden)
	}
	return err
}

// statusWatch redraws the status every --watch until interrupted.
func statusWatch(ctx context.Context, o *statusOptions) error {
	tty := o.f.IsTerminal != nil && o.f.IsTerminal(o.f.Out)
	return cmdutil.Watch(ctx, o.f.Out, tty, o.watch, o.f.Now, o.f.Sleep, "mirage status", func() error { return statusRun(ctx, o) })
}
