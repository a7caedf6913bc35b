package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// submitOptions are the flags of mirage submit.
type submitOptions struct {
	f          *Factory
	script     string
	sbatchArgs []string
	segments   int
	untilDone  bool
	policy     string
	maxRetries int
	name       string
	json       bool
	grace      time.Duration
	state      stateOptions
	backend    backendOptions
}

func newSubmitCmd(f *Factory, runF func(*submitOptions) error) *cobra.Command {
	o := &submitOptions{f: f}
	cmd := &cobra.Command{
		Use:   "submit SCRIPT [--segments N | --until-done] [--policy NAME] [--max-retries N] [-- SBATCH OPTIONS...]",
		Short: "Register a chain of wall-clock-limited jobs and submit its first segment",
		Long: `Register a chain in the state database and submit its first segment with sbatch.
mirage daemon (run from cron or a systemd timer) then submits each successor ahead
of time, as the chain's policy decides.

A segment that ends by TIMEOUT continues the chain. A segment that exits 0 before
its limit ends an --until-done chain, or the chain goes on until N segments have
run (--segments N). A failed segment is retried up to --max-retries times in a
row, then the chain stops with the reason. Each job sees MIRAGE_CHAIN,
MIRAGE_SEGMENT and MIRAGE_PREV_JOB (call mirage handoff from the script to
take over from a predecessor that still runs).

The chain's shape (time limit, nodes, GPUs, account, partition, name) is read from
the sbatch options after "--" and from the script's #SBATCH lines (options win).
mirage owns --comment (its tag) and --dependency; --array is not supported.

Policies: reactive, dependency, lead, start-estimate (and learned policies where
installed). Chain semantics in full: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage submit train.sbatch --until-done
  mirage submit serve.sbatch --segments 10 --policy start-estimate -- -p gpu -t 24:00:00 --gres=gpu:4`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return withCode(exitUsage, fmt.Errorf("submit takes one SCRIPT, then sbatch options after \"--\" (got %q)", args[:dash]))
			}
			o.script, o.sbatchArgs = args[0], args[dash:]
			if cmd.Flags().Changed("segments") && o.untilDone {
				return withCode(exitUsage, errors.New("--segments and --until-done exclude each other"))
			}
			if cmd.Flags().Changed("segments") && o.segments < 1 {
				return withCode(exitUsage, fmt.Errorf("--segments %d: want at least 1", o.segments))
			}
			if !cmd.Flags().Changed("segments") {
				o.segments = 0 // until done
			}
			if o.grace <= 0 {
				return withCode(exitUsage, fmt.Errorf("--submit-grace %s: want a positive duration", o.grace))
			}
			if runF != nil {
				return runF(o)
			}
			return submitRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.segments, "segments", 0, "run exactly N segments (default: --until-done)")
	fl.BoolVar(&o.untilDone, "until-done", false, "run until a segment exits 0 before its limit (the default)")
	fl.StringVar(&o.policy, "policy", provisioner.PolicyLead, "submission policy of the successors")
	fl.IntVar(&o.maxRetries, "max-retries", 2, "failed segments retried in a row before the chain fails")
	fl.StringVar(&o.name, "name", "", "job name of every segment (default: -J, #SBATCH -J, else the script's name)")
	fl.BoolVar(&o.json, "json", false, "print the result as JSON")
	addSubmitGrace(cmd, &o.grace)
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

// submitResult is mirage submit's JSON output.
type submitResult struct {
	Chain  string `json:"chain"`
	JobID  string `json:"job_id,omitempty"`
	Status string `json:"status"` // submitted, deferred, failed
	Reason string `json:"reason,omitempty"`
}

func submitRun(ctx context.Context, o *submitOptions) error {
	out := o.f.Out
	// 1. validate the script and read the chain's shape.
	script, err := filepath.Abs(o.script)
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("script %s: %w", o.script, err))
	}
	fh, err := os.Open(script)
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("script %s: %w (give a readable batch script)", o.script, err))
	}
	fi, err := fh.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fh.Close()
		return withCode(exitBadInput, fmt.Errorf("script %s: not a regular file", o.script))
	}
	fromScript, err := slurm.ParseBatchScript(fh)
	fh.Close()
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("script %s: %w", o.script, err))
	}
	fromArgs, err := slurm.ParseSbatchArgs(o.sbatchArgs)
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("sbatch options: %w", err))
	}
	sh := fromScript.Merge(fromArgs)
	if o.maxRetries < 0 {
		return withCode(exitUsage, fmt.Errorf("--max-retries %d: want 0 or more", o.maxRetries))
	}
	if _, err := o.f.Policies(o.policy); err != nil {
		return withCode(exitUsage, fmt.Errorf("--policy: %w", err))
	}
	name := o.name
	if name == "" {
		name = sh.Name
	}
	if name == "" {
		name = filepath.Base(script)
	}
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	if engineRules(cl) != nil && sh.Account == "" {
		return withCode(exitBadInput, fmt.Errorf("script %s: the team rules (--rules) are in force and the team is the account: give one with -A/--account (after -- or in an #SBATCH line)", o.script))
	}
	// 2. state and the lock (a daemon cycle must not decide on the chain halfway).
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lk, err := o.state.lock(ctx)
	if err != nil {
		return stateErr(err)
	}
	defer lk.Unlock()
	// 3. register the chain under a fresh id.
	now := o.f.Now()
	ch := provisioner.Chain{Name: name, Script: script, Args: o.sbatchArgs, Policy: o.policy, Segments: o.segments,
		MaxRetries: o.maxRetries, Account: sh.Account, Partition: sh.Partition, TimeLimit: sh.TimeLimit, Nodes: sh.Nodes, GPUs: sh.GPUs()}
	if err := provisioner.RegisterChain(ctx, st, &ch, now, o.f.Seed()); err != nil {
		return stateErr(err)
	}
	id := ch.ID
	// 4. submit the first segment through the engine (same path as the daemon).
	first, err := provisioner.SubmitFirst(ctx, newEngine(o.f, cl, st, o.grace), st, &ch)
	if err != nil {
		return stateErr(err)
	}
	res := submitResult{Chain: id, JobID: first.JobID, Status: first.Status, Reason: first.Reason}
	if o.json {
		if jerr := printJSON(out, res); jerr != nil {
			return jerr
		}
	} else {
		switch res.Status {
		case "submitted":
			fmt.Fprintf(out, "chain %s registered (%s, %s, policy %s); segment 0 submitted as job %s\n", id, filepath.Base(script), segmentsText(o.segments), o.policy, res.JobID)
		case "deferred":
			fmt.Fprintf(out, "chain %s registered; first segment deferred: %s (mirage daemon submits it later)\n", id, res.Reason)
		}
	}
	switch err := first.Err; {
	case first.Refused:
		return withCode(exitBadInput, fmt.Errorf("chain %s: %w (chain marked failed; fix the script, options or rules and submit again)", id, err))
	case errors.Is(err, provisioner.ErrRejected):
		return withCode(exitRejected, fmt.Errorf("chain %s: the backend rejected the first segment (chain marked failed; fix the script or options and submit again): %w", id, err))
	case err != nil:
		return stateErr(fmt.Errorf("chain %s registered, but the submission of its first segment failed or its answer was lost (mirage daemon adopts the job if Slurm has it, else submits it again after --submit-grace): %w", id, err))
	}
	return nil
}

func segmentsText(n int) string { return provisioner.SegmentsText(n) }
