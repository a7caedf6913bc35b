package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// recoverOptions are the flags of mirage recover.
type recoverOptions struct {
	f       *Factory
	chains  []string // only these chains (all when empty)
	options []string // the sbatch options of the one chain named, after "--" (nil: not given)
	since   time.Duration
	dryRun  bool
	yes     bool
	take    bool // --take-over
	json    bool
	state   stateOptions
	backend backendOptions
}

func newRecoverCmd(f *Factory, runF func(*recoverOptions) error) *cobra.Command {
	o := &recoverOptions{f: f}
	cmd := &cobra.Command{
		Use:   "recover [CHAIN...] [--since 168h] [--dry-run | --yes] [-- SBATCH OPTIONS...]",
		Short: "Rebuild chains the state database does not know from the tagged jobs in squeue and sacct",
		Long: `Rebuild from the tagged jobs of squeue and sacct (the last --since) every chain
the database does not hold (with CHAIN arguments, only those). The daemon will
submit their successors from the scripts and options read back, so recover lists
them and asks first; without a terminal it needs --yes. The jobs' comments leave
out the sbatch options given after "--" at submit (every user can read them): a
chain that had some is recovered one at a time, with them given again after
"--". A chain whose jobs another state directory submitted stays that
directory's (its daemon keeps it; this one's leaves it alone) unless
--take-over: for a state directory lost with its tag.key, or moved. Slurm must
keep comments in accounting. Recovery in full: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage recover --dry-run            # what would be rebuilt
  mirage recover                      # every chain found in the last 7 days (asks first)
  mirage recover c-20261123-ab12cd --yes  # one chain, without asking
  mirage recover c-20261123-ab12cd -- --mem=40G --mail-user=me@example.org  # with its sbatch options
  mirage recover --take-over --yes    # the old state directory is gone with its tag.key: this one keeps its chains`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chains = args
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 {
					return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("sbatch options after \"--\" belong to one chain: give exactly one CHAIN before them (got %q)", args[:dash]))
				}
				o.chains, o.options = args[:1], append([]string{}, args[1:]...)
			}
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
	cmd.Flags().BoolVar(&o.yes, "yes", false, "register what is found without asking (for scripts; check it first with --dry-run)")
	cmd.MarkFlagsMutuallyExclusive("dry-run", "yes")
	cmd.Flags().BoolVar(&o.take, "take-over", false, "make this state directory keep the chains whose jobs another one submitted (only when that one is lost: two would both run them)")
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
	now := o.f.Now()
	o.warnComments(ctx, hs)
	ro := chainops.RecoverOptions{Chains: o.chains, Since: o.since, Check: recoveredSpecCheck, Options: o.options, TakeOver: o.take}
	if !o.yes {
		// List first, without the daemon lock (a cycle may run while the
		// user reads), writing nothing: no key made, no database created
		// (listStore); register only if asked to, only what was listed.
		key, err := o.state.ExistingTagKey()
		if err != nil {
			return stateErr(err)
		}
		st, done, err := o.listStore(ctx)
		if err != nil {
			return err
		}
		ro.DryRun, ro.Key, ro.Keeper = true, key, newKeeper
		if key != nil {
			ro.Keeper = key.Keeper
		}
		results, err := chainops.RecoverChains(ctx, st, cl, hs, now, ro)
		done()
		if err != nil {
			return stateErr(err)
		}
		var listed []string
		for _, r := range results {
			if r.Action == chainops.ActionWouldRecover {
				listed = append(listed, r.Chain)
			}
		}
		if o.dryRun || len(listed) == 0 {
			return o.print(results, now)
		}
		if err := o.print(results, now); err != nil {
			return err
		}
		if ok, err := o.confirm(len(listed)); !ok {
			return err
		}
		ro.Chains, ro.DryRun = listed, false
	}
	key, err := o.state.tagKey(o.f)
	if err != nil {
		return err
	}
	ro.Key, ro.Keeper = key, key.Keeper
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	results, err := chainops.RecoverChains(ctx, st, cl, hs, now, ro)
	if err != nil {
		return stateErr(err)
	}
	return o.print(results, now)
}

// newKeeper stands for the keeper of a state directory without a key yet
// (it is made when recover registers): every keeper the jobs name is then
// another one.
const newKeeper = "new"

// listStore is the store recover lists against: the state database when
// there is one, else (it was lost, or never made) an empty store, so that
// listing creates nothing. done releases it.
func (o *recoverOptions) listStore(ctx context.Context) (chainops.ChainStore, func(), error) {
	dir, err := o.state.Resolve()
	if err != nil {
		return nil, nil, stateErr(err)
	}
	if _, err := os.Stat(filepath.Join(dir, state.DBName)); errors.Is(err, fs.ErrNotExist) {
		return provisioner.NewMemStore(), func() {}, nil
	}
	st, err := o.state.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// warnComments says, on stderr, when the backend's accounting keeps no
// job comments (chainops.CommentKeeper): recover then finds a chain only
// by a job of it still in the queue, and none whose jobs have all ended.
func (o *recoverOptions) warnComments(ctx context.Context, hs provisioner.HistorySource) {
	ck, ok := hs.(chainops.CommentKeeper)
	if !ok {
		return
	}
	keeps, err := ck.KeepsComments(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(o.f.ErrOut, "mirage: could not tell whether the accounting keeps job comments (%v): chains whose jobs have all ended are found only if it does\n", err)
	case !keeps:
		fmt.Fprintf(o.f.ErrOut, "mirage: this cluster's accounting keeps no job comments (AccountingStoreFlags lacks job_comment): "+
			"a chain is found only by a job of it still in the queue, never one whose jobs have all ended; ask the admins to add job_comment to AccountingStoreFlags\n")
	}
}

// confirm asks whether to register the n chains listed: on a terminal, a
// y/N question; otherwise (or with --json) it is a usage error naming --yes.
func (o *recoverOptions) confirm(n int) (bool, error) {
	if o.json || o.f.IsTerminal == nil || !o.f.IsTerminal(o.f.In) {
		return false, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%d chain(s) would be registered (listed above), and the daemon would submit their successors "+
			"from those scripts and options: check them, then run again with --yes", n))
	}
	yes, err := cmdutil.Confirm(o.f.In, o.f.ErrOut, fmt.Sprintf("Register these %d chain(s)? The daemon will submit their successors from the scripts and options listed.", n))
	if err != nil {
		return false, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%w: nothing registered (run again with --yes to register without asking)", err))
	}
	if !yes {
		_, err = fmt.Fprintln(o.f.ErrOut, "nothing registered")
	}
	return yes, err
}

// print shows recover's results and fails for the chains asked for by name
// that no tagged job carries, or that were not registered for want of
// their sbatch options (in a sweep over every chain those are said on
// stderr: the others were registered).
func (o *recoverOptions) print(results []chainops.Recovered, now time.Time) error {
	var err error
	if o.json {
		err = cmdutil.PrintJSON(o.f.Out, append([]chainops.Recovered{}, results...))
	} else {
		err = chainops.WriteRecovered(o.f.Out, results, now.Add(-o.since))
	}
	if err != nil {
		return err
	}
	needs := chainops.NeedOptions(results)
	if len(o.chains) == 0 && needs != nil {
		fmt.Fprintf(o.f.ErrOut, "mirage: %v\n", needs)
		needs = nil
	}
	return stateErr(errors.Join(chainops.NotRecovered(results, o.since), needs))
}

// recoveredSpecCheck applies the checks of mirage submit to a chain spec
// read back from a job comment (slurm.CheckRecovered).
func recoveredSpecCheck(c *provisioner.Chain) error {
	return slurm.CheckRecovered(c, models.ChainPolicyNames())
}
