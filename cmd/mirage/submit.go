package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// submitOptions are the flags of mirage submit.
type submitOptions struct {
	f         *Factory
	chain     provisioner.Chain // Script, Args (the sbatch options), Segments, Policy, MaxRetries, Name
	untilDone bool
	json      bool
	new       bool
	// defaultPolicy: --policy was not given (the default learned policy
	// when its model is there, else lead).
	defaultPolicy bool
	grace         time.Duration
	policy        policyOptions
	state         stateOptions
	backend       backendOptions
}

func newSubmitCmd(f *Factory, runF func(*submitOptions) error) *cobra.Command {
	o := &submitOptions{f: f}
	cmd := &cobra.Command{
		Use:   "submit SCRIPT [--segments N | --until-done] [--policy NAME] [--max-retries N] [-- SBATCH OPTIONS...]",
		Short: "Register a chain of wall-clock-limited jobs and submit its first segment",
		Long: `Register a chain in the state database and submit its first segment with sbatch.
mirage daemon (run from cron or a systemd timer) then submits each successor ahead
of time, as the chain's policy decides. The chain's shape is read from the sbatch
options and from the script's #SBATCH lines (options win); it needs a time limit.

sbatch options go after "--", mirage's own flags before it:
  mirage submit job.sbatch --segments 4 -- -p gpu -t 24:00:00

Running the same submit again (same script, sbatch options and directory) while
its chain is active answers with that chain and exits 0; --new registers another.

Policies: reactive, dependency, lead, start-estimate, average, quantile, and the
learned ones trained by mirage train (rf, rf-golearn, rf-xgb, xgb, dqn, pg), read
from --models. Chain semantics in full: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage submit train.sbatch --until-done
  mirage submit serve.sbatch --segments 10 --policy start-estimate -- -p gpu -t 24:00:00 --gres=gpu:4
  mirage submit train.sbatch --policy xgb --models ~/mirage-models`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("submit takes one SCRIPT, then sbatch options after \"--\" (got %q)", args[:dash]))
			}
			o.chain.Script, o.chain.Args = args[0], args[dash:]
			if cmd.Flags().Changed("segments") && o.untilDone {
				return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--segments and --until-done exclude each other"))
			}
			if cmd.Flags().Changed("segments") && o.chain.Segments < 1 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--segments %d: want at least 1", o.chain.Segments))
			}
			if !cmd.Flags().Changed("segments") {
				o.chain.Segments = 0 // until done
			}
			o.defaultPolicy = !cmd.Flags().Changed("policy")
			if o.grace <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--submit-grace %s: want a positive duration", o.grace))
			}
			if runF != nil {
				return runF(o)
			}
			return submitRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.chain.Segments, "segments", 0, "run exactly N segments (default: --until-done)")
	fl.BoolVar(&o.untilDone, "until-done", false, "run until a segment exits 0 before its limit (the default)")
	fl.StringVar(&o.chain.Policy, "policy", provisioner.PolicyLead, "submission policy of the successors (default: "+models.DefaultLearned+" when --models holds it, else lead)")
	fl.IntVar(&o.chain.MaxRetries, "max-retries", 2, "failed segments retried in a row before the chain fails")
	fl.StringVar(&o.chain.Name, "name", "", "job name of every segment (default: -J, #SBATCH -J, else the script's name)")
	fl.BoolVar(&o.json, "json", false, "print the result as JSON")
	fl.BoolVar(&o.new, "new", false, "register a new chain even if one is active for the same script, options and directory")
	addSubmitGrace(cmd, &o.grace)
	o.policy.add(cmd)
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func submitRun(ctx context.Context, o *submitOptions) error {
	ch := o.chain
	if err := slurm.ChainScript(&ch); err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	if ch.MaxRetries < 0 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--max-retries %d: want 0 or more", ch.MaxRetries))
	}
	if o.defaultPolicy {
		// The default learned policy when it has been trained, else lead.
		switch _, err := o.policy.factory(o.f)(models.DefaultLearned); {
		case err == nil:
			ch.Policy = models.DefaultLearned
		case !errors.Is(err, models.ErrNoModel):
			fmt.Fprintf(o.f.ErrOut, "mirage: the default policy %s cannot be used (%v); this chain uses lead (retrain with mirage train --model %s, or pass --policy)\n", models.DefaultLearned, err, models.DefaultLearned)
		}
	}
	if _, err := o.policy.factory(o.f)(ch.Policy); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--policy: %w", err))
	}
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	if err := ping(ctx, cl); err != nil { // before anything is registered
		return err
	}
	if provisioner.RulesOf(cl) != nil && ch.Account == "" {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("script %s: the team rules (--rules) are in force and the team is the account: give one with -A/--account (after -- or in an #SBATCH line)", ch.Script))
	}
	// The lock: a daemon cycle must not decide on the chain halfway registered.
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	if ch.WorkDir, ch.Env, err = provisioner.SegmentEnv(o.f.Getenv); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	}
	if models.IsLearned(ch.Policy) { // the daemon decides with the model submit checked, from wherever it runs
		if ch.Models, err = filepath.Abs(o.policy.dir(o.f)); err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--models: %w", err))
		}
	}
	// The same submit run again (say after it exited 4) answers with the
	// chain it made; the daemon carries that chain on.
	if !o.new {
		old, err := provisioner.SameActive(ctx, st, &ch)
		if err != nil {
			return stateErr(err)
		}
		if old != nil {
			first := provisioner.First{Status: "existing"}
			if o.json {
				return cmdutil.PrintJSON(o.f.Out, first.JSON(old))
			}
			return first.WriteText(o.f.Out, old)
		}
	}
	if err := provisioner.RegisterChain(ctx, st, &ch, o.f.Now(), o.f.Seed()); err != nil {
		return stateErr(err)
	}
	// The first segment goes through the engine (the daemon's path).
	key, err := o.state.tagKey(o.f)
	if err != nil {
		return err
	}
	first, err := provisioner.SubmitFirst(ctx, newEngine(o.f, cl, st, key, o.grace, o.policy), st, &ch)
	if err != nil {
		return stateErr(err)
	}
	if o.json {
		if err := cmdutil.PrintJSON(o.f.Out, first.JSON(&ch)); err != nil {
			return err
		}
	} else {
		_ = first.WriteText(o.f.Out, &ch)
	}
	switch err := first.Err; {
	case first.Refused:
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("chain %s: %w (chain marked failed; fix the script, options or rules and submit again)", ch.ID, err))
	case errors.Is(err, provisioner.ErrRejected):
		return cmdutil.WithCode(cmdutil.ExitRejected, fmt.Errorf("chain %s: the backend rejected the first segment (chain marked failed; fix the script or options and submit again): %w", ch.ID, err))
	case err != nil:
		return stateErr(fmt.Errorf("chain %s registered, but the submission of its first segment failed or its answer was lost (mirage daemon adopts the job if Slurm has it, else submits it again after --submit-grace): %w", ch.ID, err))
	}
	return nil
}
