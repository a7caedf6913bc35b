package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// updateOptions are the flags of mirage update.
type updateOptions struct {
	f     *Factory
	chain string
	state stateOptions
}

func newUpdateCmd(f *Factory, runF func(*updateOptions) error) *cobra.Command {
	o := &updateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "update CHAIN",
		Short: "Adopt the current version of a chain's script for the segments not yet submitted",
		Long: `Every segment of a chain is submitted from the private copy of its script that
mirage submit made (mirage status CHAIN shows its hash), whatever happens to the
file afterwards: an edit is reported, not followed. update reads the file again
with submit's checks (yours, nobody else may write it or replace it) and makes
its copy the one the chain's later segments run; their time limit, nodes, GPUs,
partition and account are read again from it and the chain's sbatch options.
Segments already submitted keep the version they were submitted with.`,
		Example: `  mirage update c-20261123-ab12cd
  mirage update c-20261123-ab12cd --state /scratch/me/mirage-state`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chain = args[0]
			if runF != nil {
				return runF(o)
			}
			return updateRun(cmd.Context(), o)
		},
	}
	o.state.add(cmd)
	return cmd
}

func updateRun(ctx context.Context, o *updateOptions) error {
	dir, err := o.state.Resolve()
	if err != nil {
		return stateErr(err)
	}
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	ch, err := st.Chain(ctx, o.chain)
	if err != nil {
		return stateErr(err)
	}
	switch {
	case ch.State != provisioner.ChainActive:
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("chain %s is %s: no segment will be submitted again; submit the script anew", ch.ID, ch.State))
	case ch.ScriptCopy == "":
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("chain %s has no private copy of its script: on Slurm the next daemon cycle makes one from %s "+
			"(see mirage log %s --events); on Kubernetes the script runs from the image", ch.ID, ch.Script, ch.ID))
	}
	abs, content, err := readScript(ch.Script)
	if err != nil {
		return err
	}
	next := *ch
	next.Script = abs
	if ch.Cost != nil { // ChainScript sets its hand-off flag
		cost := *ch.Cost
		next.Cost = &cost
	}
	if err := slurm.ChainScript(&next, content); err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	if next.ScriptCopy, next.ScriptHash, err = safefile.Freeze(scriptsDir(dir), content); err != nil {
		return stateErr(err)
	}
	next.ScriptSeen = ""
	detail := updateDetail(ch, &next)
	if detail == "" {
		if ch.ScriptSeen != "" || ch.ScriptCopy != next.ScriptCopy {
			if err := st.PutChain(ctx, &next); err != nil {
				return stateErr(err)
			}
		}
		_, err := fmt.Fprintf(o.f.Out, "chain %s already runs %s as it is now (%s): nothing to adopt\n", ch.ID, ch.Script, shortHash(ch.ScriptHash))
		return err
	}
	err = st.InTx(ctx, func(tx provisioner.Store) error {
		if err := tx.PutChain(ctx, &next); err != nil {
			return err
		}
		return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: o.f.Now(), ChainID: ch.ID, Segment: -1,
			Kind: provisioner.EventScript, Detail: "mirage update: " + detail})
	})
	if err != nil {
		return stateErr(err)
	}
	_, err = fmt.Fprintf(o.f.Out, "chain %s: %s; segments already submitted keep the version they were submitted with\n", ch.ID, detail)
	return err
}

// updateDetail says what adopting next instead of ch changes ("" when
// nothing: the same script and shape).
func updateDetail(ch, next *provisioner.Chain) string {
	detail := ""
	if next.ScriptHash != ch.ScriptHash {
		detail = fmt.Sprintf("segments submitted from now on run %s as it is now (%s, was %s)", ch.Script, shortHash(next.ScriptHash), shortHash(ch.ScriptHash))
	}
	for _, f := range []struct {
		name     string
		was, now any
	}{
		{"time limit", ch.TimeLimit.Round(time.Second), next.TimeLimit.Round(time.Second)}, {"nodes", ch.Nodes, next.Nodes}, {"GPUs", ch.GPUs, next.GPUs},
		{"partition", ch.Partition, next.Partition}, {"account", ch.Account, next.Account}, {"workload", ch.Workload, next.Workload},
	} {
		if f.was != f.now {
			if detail == "" {
				detail = "the same script"
			}
			detail += fmt.Sprintf("; %s %v (was %v)", f.name, f.now, f.was)
		}
	}
	return detail
}
