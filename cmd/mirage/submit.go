package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
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
	// defaultPolicy: --policy was not given (models.DefaultPolicyFor
	// chooses; the flag's default is empty so that --help shows no
	// policy that is not used).
	defaultPolicy bool
	grace         time.Duration
	cost          provisioner.GapCost // explicit weights (--cost-*)
	policy        policyOptions
	state         stateOptions
	backend       backendOptions
}

func newSubmitCmd(f *Factory, runF func(*submitOptions) error) *cobra.Command {
	o := &submitOptions{f: f}
	cmd := &cobra.Command{
		Use:   "submit SCRIPT [--segments N | --until-done] [--policy NAME] [--max-retries N] [-- SBATCH OPTIONS...]",
		Short: "Register a chain of wall-clock-limited jobs and submit its first segment",
		Long: `Register a chain and submit its first segment with sbatch; mirage daemon then
submits each successor ahead of time, as the chain's policy decides. The shape
comes from the sbatch options (after "--") and the script's #SBATCH lines; it
needs a time limit. The script must be yours and nobody else may write it (nor
replace it: not in a directory every user may write without the sticky bit);
on Slurm every segment is submitted from a private copy made now (mirage
status CHAIN shows its hash): later edits change nothing until mirage update. The same submit again, while its chain is active, answers
with that chain (--new registers another). Policies and chains in full:
docs/guide/chains-and-daemon.md.`,
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
			if fl := cmd.Flags(); fl.Changed("cost-interruption") || fl.Changed("cost-overlap") || fl.Changed("overlap-budget") {
				o.chain.Cost = &o.cost
			}
			if err := o.chain.CheckCost(); err != nil {
				return cmdutil.WithCode(cmdutil.ExitUsage, err)
			}
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
	fl.StringVar(&o.chain.Policy, "policy", "", "submission policy of the successors; NAME"+models.PinSuffix+" is learned policy NAME pinning its successors to the predecessor's nodes where no node is free (default on Slurm: pin for --workload service; otherwise the site's default, chosen from the cluster's scheduler settings (mirage site) by the site grid's ranking, and where the site is unknown or unranked "+models.DefaultPinned+" when --models holds "+models.DefaultLearned+", else xgb-pin when it holds xgb, else pin; elsewhere "+models.DefaultLearned+", else xgb, else lead)")
	fl.IntVar(&o.chain.MaxRetries, "max-retries", 2, "failed segments retried in a row before the chain fails")
	fl.StringVar(&o.chain.Name, "name", "", "job name of every segment (default: -J, #SBATCH -J, else the script's name)")
	fl.BoolVar(&o.json, "json", false, "print the result as JSON")
	fl.BoolVar(&o.new, "new", false, "register a new chain even if one is active for the same script, options and directory")
	fl.StringVar(&o.chain.Workload, "workload", "", "training or service: what the chain's hand-offs cost (default: training when the script runs mirage handoff, else the published symmetric cost)")
	fl.Float64Var(&o.cost.InterruptionPerHour, "cost-interruption", provisioner.DefaultGapCost.InterruptionPerHour, "explicit weights instead of a workload: cost of an hour of interruption")
	fl.Float64Var(&o.cost.OverlapPerHour, "cost-overlap", provisioner.DefaultGapCost.OverlapPerHour, "explicit weights: cost of an hour of overlap beyond --overlap-budget")
	fl.DurationVar(&o.cost.OverlapBudget, "overlap-budget", 0, "explicit weights: overlap that costs nothing")
	addSubmitGrace(cmd, &o.grace)
	o.policy.add(cmd)
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func submitRun(ctx context.Context, o *submitOptions) error {
	ch := o.chain
	var content []byte
	var err error
	if ch.Script, content, err = readScript(ch.Script); err != nil {
		return err
	}
	if err := slurm.ChainScript(&ch, content); err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	if ch.MaxRetries < 0 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--max-retries %d: want 0 or more", ch.MaxRetries))
	}
	dir, err := o.state.Resolve()
	if err != nil {
		return stateErr(err)
	}
	o.backend.scriptDir = scriptsDir(dir)
	o.backend.viewMemo = filepath.Join(dir, slurm.ViewMemoName)
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	if !o.defaultPolicy {
		if _, err := o.policy.factory(o.f)(ch.Policy); err != nil {
			return policyErr(fmt.Errorf("--policy: %w", err))
		}
	}
	if err := ping(ctx, cl); err != nil { // before anything is registered
		return err
	}
	if o.backend.rules != "" && ch.Account == "" {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("script %s: the team rules (--rules) are in force and the team is the account: give one with -A/--account (after -- or in an #SBATCH line)", ch.Script))
	}
	// The lock: a daemon cycle must not decide on the chain halfway registered.
	st, release, err := o.state.OpenLocked(ctx, o.state.LockWait)
	if err != nil {
		return stateErr(err)
	}
	defer release()
	if o.defaultPolicy { // the site's default: its settings are read from the cluster at most daily
		choice, warn := siteSource{f: o.f, dir: dir}.choice(ctx, cl, o.backend.capabilities())
		if warn != nil {
			fmt.Fprintf(o.f.ErrOut, "mirage: %v\n", warn)
		}
		if ch.Policy, ch.PolicyWhy, warn = choice.pick(o.policy.factory(o.f), ch.Workload); warn != nil {
			fmt.Fprintf(o.f.ErrOut, "mirage: %v\n", warn)
		}
		fmt.Fprintf(o.f.ErrOut, "mirage: policy %s, %s\n", ch.Policy, ch.PolicyWhy)
	}
	stateDir, err := o.state.Resolve() // opened above: it resolves
	if err != nil {
		return stateErr(err)
	}
	if ch.WorkDir, ch.Env, err = segmentEnv(o.f.Getenv, stateDir); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	}
	// No daemon acts on the chain through another cluster's view.
	ch.Cluster = provisioner.ClusterNameOf(cl)
	if err := checkCommentLength(ch, o.f.Now()); err != nil { // the working directory is in the comment too
		return err
	}
	if models.ParseRef(ch.Policy).UsesModel() { // the daemon decides with the model submit checked, from wherever it runs
		if ch.Models, err = filepath.Abs(o.policy.dir(o.f)); err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--models: %w", err))
		}
	}
	// The same submit run again (say after it exited 4) answers with the
	// chain it made; the daemon carries that chain on.
	if !o.new {
		old, err := chainops.SameActive(ctx, st, &ch)
		if err != nil {
			return stateErr(err)
		}
		if old != nil {
			if old.ScriptHash != "" && old.ScriptHash != safefile.Hash(content) {
				fmt.Fprintf(o.f.ErrOut, "mirage: chain %s runs %s as it was at its submit (%s); the file has changed since (now %s): "+
					"mirage update %s adopts the new version, or submit --new registers another chain\n",
					old.ID, old.Script, shortHash(old.ScriptHash), shortHash(safefile.Hash(content)), old.ID)
			}
			first := chainops.First{Status: "existing"}
			if o.json {
				return cmdutil.PrintJSON(o.f.Out, first.JSON(old))
			}
			return first.WriteText(o.f.Out, old)
		}
	}
	key, err := o.state.tagKey(o.f) // before registering: a refused key leaves nothing behind
	if err != nil {
		return err
	}
	// Only this state database's daemon acts on the chain.
	ch.Keeper = key.Keeper
	if copies := copiesOf(cl); copies != "" { // every segment is submitted from this copy
		if ch.ScriptCopy, ch.ScriptHash, err = safefile.Freeze(copies, content); err != nil {
			return stateErr(err)
		}
	}
	if err := chainops.RegisterChain(ctx, st, &ch, o.f.Now(), o.f.Seed()); err != nil {
		return stateErr(err)
	}
	// The first segment goes through the engine (the daemon's path).
	rules, err := o.backend.loadRules()
	if err != nil {
		return err
	}
	first, err := chainops.SubmitFirst(ctx, newEngine(o.f, cl, rules, st, key, o.grace, o.policy), st, &ch)
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
	return stateErr(first.Problem(ch.ID))
}

// checkCommentLength refuses a chain whose jobs' comments (the tag, the
// specification, the MAC) could exceed what Slurm accepts, which would
// have a segment rejected mid-chain.
func checkCommentLength(ch provisioner.Chain, now time.Time) error {
	ch.Created = now
	if n := provisioner.CommentLimit(&ch); n > provisioner.MaxComment {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("the comment of this chain's jobs (its tag and specification: job name, script path, "+
			"working directory, shape) would take up to %d bytes, over the %d Slurm accepts: shorten the job name (--name), the script's path "+
			"or the directory you submit from", n, provisioner.MaxComment))
	}
	return nil
}
