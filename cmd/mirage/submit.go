package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
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
installed).`,
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
	fromScript, err := parseSbatchScript(fh)
	fh.Close()
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("script %s: %w", o.script, err))
	}
	fromArgs, err := parseSbatchArgs(o.sbatchArgs)
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("sbatch options: %w", err))
	}
	sh := fromScript.merge(fromArgs)
	if o.maxRetries < 0 {
		return withCode(exitUsage, fmt.Errorf("--max-retries %d: want 0 or more", o.maxRetries))
	}
	if _, err := o.f.Policies(o.policy); err != nil {
		return withCode(exitUsage, fmt.Errorf("--policy: %w", err))
	}
	name := o.name
	if name == "" {
		name = sh.name
	}
	if name == "" {
		name = filepath.Base(script)
	}
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	if engineRules(cl) != nil && sh.account == "" {
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
	now := o.f.Now()
	ch := provisioner.Chain{Name: name, Script: script, Args: o.sbatchArgs, Policy: o.policy, Segments: o.segments,
		MaxRetries: o.maxRetries, Account: sh.account, Partition: sh.partition, TimeLimit: sh.limit, Nodes: sh.nodes, GPUs: sh.gpus()}
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

// jobShape is what mirage reads of a job's sbatch options.
type jobShape struct {
	limit       time.Duration
	nodes       int
	gpusPerNode int
	gpusTotal   int
	account     string
	partition   string
	name        string
}

// merge returns s overridden by the options set in o.
func (s jobShape) merge(o jobShape) jobShape {
	if o.limit != 0 {
		s.limit = o.limit
	}
	if o.nodes != 0 {
		s.nodes = o.nodes
	}
	if o.gpusPerNode != 0 || o.gpusTotal != 0 {
		s.gpusPerNode, s.gpusTotal = o.gpusPerNode, o.gpusTotal
	}
	if o.account != "" {
		s.account = o.account
	}
	if o.partition != "" {
		s.partition = o.partition
	}
	if o.name != "" {
		s.name = o.name
	}
	return s
}

// gpus is the total GPU count.
func (s jobShape) gpus() int {
	if s.gpusTotal > 0 {
		return s.gpusTotal
	}
	return s.gpusPerNode * max(s.nodes, 1)
}

// parseSbatchScript reads the #SBATCH lines at the top of a batch script
// (sbatch stops at the first line that is neither blank nor a comment).
func parseSbatchScript(r io.Reader) (jobShape, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var args []string
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if line == 1 && !strings.HasPrefix(t, "#!") {
			return jobShape{}, errors.New("line 1: a batch script must start with #! (e.g. #!/bin/bash)")
		}
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "#") {
			break
		}
		rest, ok := strings.CutPrefix(t, "#SBATCH")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if strings.HasPrefix(f, "#") {
				break
			}
			args = append(args, f)
		}
	}
	if err := sc.Err(); err != nil {
		return jobShape{}, err
	}
	if line == 0 {
		return jobShape{}, errors.New("empty file: a batch script must start with #! (e.g. #!/bin/bash)")
	}
	sh, err := parseSbatchArgs(args)
	if err != nil {
		return sh, fmt.Errorf("#SBATCH: %w", err)
	}
	return sh, nil
}

// shapeOptions are the sbatch options that shape a chain (all take a value).
var shapeOptions = map[string]bool{"-t": true, "--time": true, "-N": true, "--nodes": true, "--gres": true, "-G": true, "--gpus": true,
	"--gpus-per-node": true, "-A": true, "--account": true, "-p": true, "--partition": true, "-J": true, "--job-name": true}

// parseSbatchArgs reads the options that shape a chain; other options pass
// through untouched. Options mirage owns are refused.
func parseSbatchArgs(args []string) (jobShape, error) {
	var sh jobShape
	for i := 0; i < len(args); i++ {
		a := args[i]
		key, val, hasVal := a, "", false
		switch {
		case strings.HasPrefix(a, "--"):
			key, val, hasVal = cutEq(a)
		case len(a) > 2 && a[0] == '-' && strings.Contains("tNGApJda", a[1:2]):
			key, val, hasVal = a[:2], strings.TrimPrefix(a[2:], "="), true
		}
		switch key {
		case "--comment", "-d", "--dependency":
			return sh, fmt.Errorf("%s: mirage sets it on every segment (its chain tag, its dependencies); remove it", key)
		case "-a", "--array":
			return sh, fmt.Errorf("%s: job arrays cannot be chained; submit one chain per task", key)
		case "--wrap":
			return sh, errors.New("--wrap: give a batch script instead")
		}
		if !shapeOptions[key] {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return sh, fmt.Errorf("%s needs a value", key)
			}
			i++
			val = args[i]
		}
		var err error
		switch key {
		case "-t", "--time":
			sh.limit, err = parseSlurmTime(val)
		case "-N", "--nodes":
			lo, _, _ := strings.Cut(val, "-")
			sh.nodes, err = strconv.Atoi(lo)
			if err == nil && sh.nodes < 1 {
				err = errors.New("want at least 1")
			}
		case "--gres":
			sh.gpusPerNode, err = parseGres(val)
			sh.gpusTotal = 0
		case "-G", "--gpus":
			_, n, found := cutLast(val, ":")
			if !found {
				n = val
			}
			sh.gpusTotal, err = strconv.Atoi(n)
			sh.gpusPerNode = 0
		case "--gpus-per-node":
			_, n, found := cutLast(val, ":")
			if !found {
				n = val
			}
			sh.gpusPerNode, err = strconv.Atoi(n)
			sh.gpusTotal = 0
		case "-A", "--account":
			sh.account = val
		case "-p", "--partition":
			sh.partition = val
		case "-J", "--job-name":
			sh.name = val
		}
		if err != nil {
			return sh, fmt.Errorf("%s %q: %w", key, val, err)
		}
	}
	if sh.gpusPerNode < 0 || sh.gpusTotal < 0 {
		return sh, errors.New("negative GPU count")
	}
	return sh, nil
}

func cutEq(a string) (key, val string, ok bool) {
	k, v, found := strings.Cut(a, "=")
	return k, v, found
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// parseGres returns the GPUs per node of a --gres value such as "gpu:4",
// "gpu:a100:4" or "gpu:a100:2,shard:1" (no count means 1).
func parseGres(v string) (int, error) {
	for _, item := range strings.Split(v, ",") {
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		if len(parts) == 1 {
			return 1, nil
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			if len(parts) == 2 {
				return 1, nil // gpu:TYPE
			}
			return 0, fmt.Errorf("GPU count %q", parts[len(parts)-1])
		}
		if n < 0 {
			return 0, errors.New("negative GPU count")
		}
		return n, nil
	}
	return 0, nil
}

// parseSlurmTime parses sbatch's --time: "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds"; "UNLIMITED"/"INFINITE" give 0 (no limit).
func parseSlurmTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE":
		return 0, nil
	case "":
		return 0, errors.New("empty time")
	}
	days, rest, hasDays := 0, s, false
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 365*100 {
			return 0, fmt.Errorf("days in %q", s)
		}
		days, rest, hasDays = n, r, true
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("time %q: too many fields", s)
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1e7 {
			return 0, fmt.Errorf("time %q: field %q", s, p)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch {
	case hasDays && len(nums) == 1:
		h = nums[0]
	case hasDays && len(nums) == 2:
		h, m = nums[0], nums[1]
	case len(nums) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		m = nums[0]
	}
	d := time.Duration(((days*24+h)*60+m)*60+sec) * time.Second
	if d == 0 {
		return 0, fmt.Errorf("time %q: zero", s)
	}
	return d, nil
}
