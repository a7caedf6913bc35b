package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

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
				return withCode(exitUsage, fmt.Errorf("--since %s: want a positive duration", o.since))
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
		return withCode(exitUnavailable, errors.New("this backend keeps no job history; recover needs one (Slurm with accounting)"))
	}
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lk, err := o.state.lock(ctx)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	now := o.f.Now()
	results, err := provisioner.RecoverChains(ctx, st, cl, hs, now, provisioner.RecoverOptions{Chains: o.chains, Since: o.since, DryRun: o.dryRun,
		Check: recoveredSpecCheck})
	if err != nil {
		return stateErr(err)
	}
	if o.json {
		err = printJSON(o.f.Out, append([]provisioner.Recovered{}, results...))
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
// read back from a job comment: the script is a readable batch script the
// user owns and nobody else may write (a comment names any path), its
// sbatch options parse and give a time limit, and its policy is known.
func recoveredSpecCheck(c *provisioner.Chain) error {
	fi, err := os.Stat(c.Script)
	if err != nil {
		return fmt.Errorf("script: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("script %s is owned by uid %d, not by you", c.Script, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("script %s may be written by group or others (mode %04o)", c.Script, fi.Mode().Perm())
	}
	_, sh, err := slurm.ReadShape(c.Script, c.Args)
	if err != nil {
		return err
	}
	if sh.TimeLimit <= 0 {
		return fmt.Errorf("script %s with its options sets no time limit", c.Script)
	}
	if !slices.Contains(models.PolicyNames(), c.Policy) {
		return fmt.Errorf("unknown policy %q", c.Policy)
	}
	return nil
}
