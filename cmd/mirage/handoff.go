package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/spf13/cobra"
)

// handoffOptions are the flags of mirage handoff.
type handoffOptions struct {
	f       *Factory
	handoff chainops.StopOptions
	backend backendOptions
}

func newHandoffCmd(f *Factory, runF func(*handoffOptions) error) *cobra.Command {
	o := &handoffOptions{f: f}
	h := &o.handoff
	cmd := &cobra.Command{
		Use:   "handoff [--signal USR1] [--grace 5m] [--cancel]",
		Short: "From a segment's job script: ask the predecessor to checkpoint and exit, and wait for it",
		Long: `Called by a successor's script before it loads the checkpoint: signals the
predecessor ($MIRAGE_PREV_JOB, or --job) once it has run --settle and half its
limit, and waits up to --grace for it to end (exit 0; exit 1 if it still runs,
unless --cancel). The predecessor must be a job of yours carrying the tag of the
chain ($MIRAGE_CHAIN, or --chain); without a chain nothing is signalled (exit 2).
In full: docs/guide/chains-and-daemon.md.`,
		Example: `  # in the job script, before resuming from the checkpoint:
  mirage handoff --signal USR1 --grace 5m || exit 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if h.Job == "" {
				h.Job = f.Getenv(provisioner.EnvPrevJob)
			}
			if h.Chain == "" {
				h.Chain = f.Getenv(provisioner.EnvChain)
			}
			if h.Job != "" && h.Chain == "" {
				// Without the chain, any job of the user's could be signalled
				// or cancelled through a wrong $MIRAGE_PREV_JOB or --job.
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("predecessor %s given but no chain: run mirage handoff inside a segment's job ($MIRAGE_CHAIN is set there), or give --chain; "+
					"only a job carrying that chain's tag is signalled", h.Job))
			}
			if h.Grace < 0 || h.Settle < 0 || h.Poll <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--grace and --settle must not be negative and --poll must be positive"))
			}
			if runF != nil {
				return runF(o)
			}
			return handoffRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&h.Job, "job", "", "predecessor job id (default: $MIRAGE_PREV_JOB)")
	fl.StringVar(&h.Chain, "chain", "", "the chain whose tag the predecessor must carry (default: $MIRAGE_CHAIN)")
	fl.StringVar(&h.Signal, "signal", "USR1", "signal asking the predecessor to checkpoint and exit")
	fl.DurationVar(&h.Grace, "grace", 5*time.Minute, "how long to wait for the predecessor to end")
	fl.DurationVar(&h.Poll, "poll", 5*time.Second, "how often to look whether it has ended")
	fl.DurationVar(&h.Settle, "settle", 10*time.Second, "signal only once the predecessor has run this long (its script must have set its trap), and half its limit")
	fl.BoolVar(&h.Cancel, "cancel", false, "cancel the predecessor if it still runs after the grace time")
	o.backend.add(cmd)
	return cmd
}

func handoffRun(ctx context.Context, o *handoffOptions) error {
	if o.handoff.Job == "" {
		_, err := fmt.Fprintln(o.f.Out, "no predecessor ($MIRAGE_PREV_JOB is empty): nothing to hand off")
		return err
	}
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	o.handoff.Self = provisioner.SelfOf(cl)
	return stateErr(chainops.StopPredecessor(ctx, cl, o.f.Now, o.f.Sleep, o.handoff, func(line string) { fmt.Fprintln(o.f.Out, line) }))
}
