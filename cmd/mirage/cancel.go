package main

import (
	"context"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/spf13/cobra"
)

// cancelOptions are the flags of mirage cancel.
type cancelOptions struct {
	f       *Factory
	chain   string
	state   stateOptions
	backend backendOptions
}

func newCancelCmd(f *Factory, runF func(*cancelOptions) error) *cobra.Command {
	o := &cancelOptions{f: f}
	cmd := &cobra.Command{
		Use: "cancel CHAIN",
		Example: `  mirage cancel c-20261123-ab12cd
  mirage cancel c-20261123-ab12cd --state /scratch/me/mirage-state`,
		Short: "Stop a chain: no more successors, and its pending or running jobs cancelled",
		Long: `Marks the chain cancelled first (no daemon cycle submits for it again), then
cancels its pending or running jobs, including a live job carrying the chain's tag
that the database does not know. Running it again retries the jobs that are left.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chain = args[0]
			if runF != nil {
				return runF(o)
			}
			return cancelRun(cmd.Context(), o)
		},
	}
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func cancelRun(ctx context.Context, o *cancelOptions) error {
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	c, err := st.Chain(ctx, o.chain)
	if err != nil {
		return stateErr(err)
	}
	backend := func() (provisioner.Cluster, error) {
		cl, err := o.f.Backend(&o.backend)
		if err != nil {
			return nil, err
		}
		return cl, ping(ctx, cl)
	}
	res, err := chainops.CancelChain(ctx, st, c, backend, o.f.Now(), chainops.CancelledPrinter(o.f.Out))
	if err != nil {
		return stateErr(err)
	}
	return res.WriteText(o.f.Out, c)
}
