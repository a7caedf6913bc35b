package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// recoverOptions are the flags of mirage recover.
type recoverOptions struct {
	f       *Factory
	chains  []string // only these chains (all when empty)
	since   time.Duration
	dryRun  bool
	json    bool
	state   stateOptions
	backend backendOptions
}

func newRecoverCmd(f *Factory, runF func(*recoverOptions) error) *cobra.Command {
	o := &recoverOptions{f: f}
	cmd := &cobra.Command{
		Use:   "recover [CHAIN...] [--since 168h] [--dry-run]",
		Short: "Rebuild chains the state database does not know from the tagged jobs in squeue and sacct",
		Long: `Rebuild from the tagged jobs of squeue and of sacct (the last --since) every
chain the database does not hold (with CHAIN arguments, only those), so the
daemon can carry on. Slurm must keep comments in accounting
(AccountingStoreFlags=job_comment).

Recovery in full: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage recover --dry-run            # what would be rebuilt
  mirage recover                      # every chain found in the last 7 days
  mirage recover c-20261123-ab12cd    # one chain`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chains = args
			if o.since <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--since %s: want a positive duration", o.since))
			}
			if runF != nil {
				return runF(o)
			}
			return recoverRun(cmd.Context(), o)
		},
	}
	cmd.Flags().DurationVar(&o.since, "since", 7*24*time.Hour, "how far back to read the accounting history")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show what would be recovered, change nothing")
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func recoverRun(ctx context.Context, o *recoverOptions) error {
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	if err := ping(ctx, cl); err != nil {
		return err
	}
	hs, ok := cl.(provisioner.HistorySource)
	if !ok {
		return cmdutil.WithCode(cmdutil.ExitUnavailable, errors.New("this backend keeps no job history; recover needs one (Slurm with accounting)"))
	}
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	now := o.f.Now()
	results, err := provisioner.RecoverChains(ctx, st, cl, hs, now, provisioner.RecoverOptions{Chains: o.chains, Since: o.since, DryRun: o.dryRun,
		Check: recoveredSpecCheck})
	if err != nil {
		return stateErr(err)
	}
	if o.json {
		err = cmdutil.PrintJSON(o.f.Out, append([]provisioner.Recovered{}, results...))
	} else {
		err = provisioner.WriteRecovered(o.f.Out, results, now.Add(-o.since))
	}
	if err != nil {
		return err
	}
	var missing []string
	for _, r := range results {
		if r.Action == provisioner.ActionNotFound {
			missing = append(missing, r.Chain)
		}
	}
	if len(missing) > 0 {
		return stateErr(fmt.Errorf("%s: %w: no tagged job in squeue, nor in sacct of the last %s (a longer --since looks further back)",
			strings.Join(missing, ", "), provisioner.ErrChainNotFound, o.since))
	}
	return nil
}

// recoveredSpecCheck applies the checks of mirage submit to a chain spec
// read back from a job comment (which may name any path): a batch script
// the user owns and nobody else may write, whose options parse and give a
// time limit, and a known policy.
func recoveredSpecCheck(c *provisioner.Chain) error {
	if err := safefile.CheckOwned(c.Script); err != nil {
		return fmt.Errorf("script: %w", err)
	}
	if err := slurm.ChainScript(&provisioner.Chain{Script: c.Script, Args: c.Args}); err != nil {
		return err
	}
	if !slices.Contains(models.PolicyNames(), c.Policy) {
		return fmt.Errorf("unknown policy %q", c.Policy)
	}
	return nil
}
