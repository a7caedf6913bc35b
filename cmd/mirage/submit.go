package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

func init() { register(newSubmitCmd) }

// submitOptions are the flags of mirage submit.
type submitOptions struct {
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

func newSubmitCmd() *cobra.Command {
	o := &submitOptions{}
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
			return runSubmit(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.segments, "segments", 0, "run exactly N segments (default: --until-done)")
	f.BoolVar(&o.untilDone, "until-done", false, "run until a segment exits 0 before its limit (the default)")
	f.StringVar(&o.policy, "policy", provisioner.PolicyLead, "submission policy of the successors")
	f.IntVar(&o.maxRetries, "max-retries", 2, "failed segments retried in a row before the chain fails")
	f.StringVar(&o.name, "name", "", "job name of every segment (default: -J, #SBATCH -J, else the script's name)")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
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

func runSubmit(ctx context.Context, out io.Writer, o *submitOptions) error {
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
	policies := deps.policies
	if _, err := policies(o.policy); err != nil {
		return withCode(exitUsage, fmt.Errorf("--policy: %w", err))
	}
	name := o.name
	if name == "" {
		name = sh.Name
	}
	if name == "" {
		name = filepath.Base(script)
	}
	cl, err := deps.backend(&o.backend)
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
	lk, err := o.state.lock(ctx, o.state.lockWait)
	if err != nil {
		return stateErr(err)
	}
	defer lk.Unlock()
	// 3. register the chain under a fresh id.
	now := deps.clock.Now()
	seed := deps.seed()
	src := rand.NewPCG(seed, 0x6d69726167652d63)
	var id string
	for {
		id = provisioner.NewChainID(now, src)
		if _, err := st.Chain(ctx, id); errors.Is(err, provisioner.ErrChainNotFound) {
			break
		} else if err != nil {
			return stateErr(err)
		}
	}
	ch := provisioner.Chain{ID: id, Name: name, Script: script, Args: o.sbatchArgs, Policy: o.policy, Segments: o.segments,
		MaxRetries: o.maxRetries, Account: sh.Account, Partition: sh.Partition, TimeLimit: sh.TimeLimit, Nodes: sh.Nodes,
		GPUs: sh.GPUs(), State: provisioner.ChainActive, Created: now}
	err = st.InTx(ctx, func(tx provisioner.Store) error {
		if err := tx.PutChain(ctx, &ch); err != nil {
			return err
		}
		return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: id, Segment: -1, Kind: provisioner.EventRegistered,
			Detail: fmt.Sprintf("script %s, %s, policy %s, max retries %d, id seed %d", script, segmentsText(o.segments), o.policy, o.maxRetries, seed)})
	})
	if err != nil {
		return stateErr(err)
	}
	// 4. submit the first segment through the engine (same path as the daemon).
	rep, err := newEngine(cl, st, o.grace).CycleChains(ctx, []string{id})
	res := submitResult{Chain: id}
	switch {
	case err != nil:
		res.Status, res.Reason = "failed", err.Error()
	case len(rep.Submissions) == 0:
		if d := lastDecision(ctx, st, id); d != nil && d.Action == provisioner.ActError {
			// The team rules refused the request itself (unknown team, a
			// job larger than any node): bad input, not a deferral.
			res.Status, res.Reason = "failed", d.Error
			err = withCode(exitBadInput, errors.New(d.Error))
			ch.State, ch.Reason = provisioner.ChainFailed, "the first segment cannot be submitted: "+d.Error
			if perr := st.PutChain(ctx, &ch); perr != nil {
				return stateErr(perr)
			}
			break
		}
		res.Status, res.Reason = "deferred", lastReason(ctx, st, id)
	case rep.Submissions[0].Err != nil:
		res.Status, res.Reason = "failed", rep.Submissions[0].Err.Error()
		err = rep.Submissions[0].Err
	default:
		res.Status, res.JobID = "submitted", rep.Submissions[0].JobID
	}
	if errors.Is(err, provisioner.ErrRejected) {
		// The first segment's options are wrong: the chain cannot run.
		ch.State, ch.Reason = provisioner.ChainFailed, "the backend rejected the first segment: "+err.Error()
		if perr := st.PutChain(ctx, &ch); perr != nil {
			return stateErr(perr)
		}
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
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
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return withCode(ee.code, fmt.Errorf("chain %s: %w (chain marked failed; fix the script, options or rules and submit again)", id, ee.err))
	case errors.Is(err, provisioner.ErrRejected):
		return withCode(exitRejected, fmt.Errorf("chain %s: the backend rejected the first segment (chain marked failed; fix the script or options and submit again): %w", id, err))
	case err != nil:
		return stateErr(fmt.Errorf("chain %s registered, but the submission of its first segment failed or its answer was lost (mirage daemon adopts the job if Slurm has it, else submits it again after --submit-grace): %w", id, err))
	}
	return nil
}

func segmentsText(n int) string {
	if n == 0 {
		return "until done"
	}
	if n == 1 {
		return "1 segment"
	}
	return strconv.Itoa(n) + " segments"
}

// lastReason is the reason of a chain's last decision.
func lastReason(ctx context.Context, st provisioner.DecisionLog, id string) string {
	if d := lastDecision(ctx, st, id); d != nil {
		return d.Reason
	}
	return ""
}

// lastDecision is a chain's last decision, or nil.
func lastDecision(ctx context.Context, st provisioner.DecisionLog, id string) *provisioner.DecisionRecord {
	ds, err := st.Decisions(ctx, id)
	if err != nil || len(ds) == 0 {
		return nil
	}
	return &ds[len(ds)-1]
}
