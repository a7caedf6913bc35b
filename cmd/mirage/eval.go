package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

func init() { register(newEvalCmd) }

// evalOptions are the flags of mirage eval.
type evalOptions struct {
	traces     []string
	format     string
	policies   []string
	models     string
	from       string
	until      string
	nodes      []int
	limit      time.Duration
	warmup     time.Duration
	interval   time.Duration
	cycle      time.Duration
	horizon    time.Duration
	loadScales []float64
	protocol   string
	preset     string
	slurmConf  string
	seed       uint64
	title      string
	out        string
	workers    int
	json       bool

	sweep     string
	cell      int
	emitArray bool

	argv     []string  // command line, for provenance
	progress io.Writer // stderr when it is a terminal, else nil
	changed  func(name string) bool
}

func newEvalCmd() *cobra.Command {
	o := &evalOptions{cell: -1}
	cmd := &cobra.Command{
		Use:   "eval --trace FILE --policies P,... --out DIR [flags] | eval --sweep SWEEP.yaml [--cell N | --emit-array]",
		Short: "Replay-evaluate submission policies on a trace; write an HTML, Markdown and JSON report",
		Long: `Replay a trace in the simulator with chains injected into it and measure, per
policy, the gap between each predecessor's end and its successor's start
(positive: interruption; negative: overlap). Every policy decides through the
provisioner engine (the daemon's code) in its own fork of the replay.

  --protocol pair      the published protocol: 48-hour predecessor/successor
                       pairs of 1 and 8 nodes every 4 hours; a successor not
                       submitted 1 minute before the end is submitted then
  --protocol chain-K   chains of K such segments

Policies: the baselines (reactive, dependency, lead, start-estimate, average,
quantile, and oracle, pair only) and the learned rf, rf-xgb, rf-golearn, xgb,
dqn, pg from --models DIR (mirage train --out DIR). The report (report.html, report.md,
report.json in --out) gives per policy, job size and load class the gap
distribution, interruption, overlap and the reduction against reactive.

--sweep FILE runs the experiment a YAML file describes; --cell N runs one cell;
--emit-array writes a Slurm job array with one cell per task, joined afterwards
by mirage eval merge.

Protocols, metrics and sweeps in detail: docs/guide/training-and-evaluation.md.`,
		Example: `  mirage train --trace ls6.log.gz --model xgb,rf,dqn,pg --train-until 2023-02-01 --until 2023-02-15 --out models/
  mirage eval --trace ls6.log.gz --policies reactive,average,quantile,xgb,rf,dqn,pg,oracle --models models/ \
      --from 2023-02-01 --until 2023-03-01 --out report/
  mirage eval --sweep sweeps/ls6.yaml --emit-array && sbatch eval-out/eval-array.sbatch
  mirage eval merge --out eval-out eval-out/cells`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && cmd.ErrOrStderr() == os.Stderr {
				o.progress = cmd.ErrOrStderr()
			}
			o.argv = os.Args
			o.changed = cmd.Flags().Changed
			return runEval(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.traces, "trace", nil, "trace file (repeatable or comma-separated)")
	f.StringVar(&o.format, "format", "", "trace format (default: sniffed)")
	f.StringSliceVar(&o.policies, "policies", nil, "policies, in report order (reactive is always run as the reference)")
	f.StringVar(&o.models, "models", "", "directory of trained models, one sub-directory per learned policy (mirage train --out)")
	f.StringVar(&o.from, "from", "", "first injection not before, RFC 3339 or YYYY-MM-DD in UTC (default and earliest: the trace's first start + --warmup)")
	f.StringVar(&o.until, "until", "", "injections before (default: the trace's last submit)")
	f.IntSliceVar(&o.nodes, "nodes", []int{1, 8}, "nodes per segment")
	f.DurationVar(&o.limit, "limit", eval.DefaultLimit, "time limit of every segment (used fully)")
	f.DurationVar(&o.warmup, "warmup", eval.DefaultWarmup, "no injection before the trace's first start + this")
	f.DurationVar(&o.interval, "interval", eval.DefaultInterval, "trace time between injections")
	f.DurationVar(&o.cycle, "cycle", eval.DefaultCycle, "decision period")
	f.DurationVar(&o.horizon, "horizon", eval.DefaultHorizon, "a successor not started this long after its predecessor's end (pair) or the chain's K limits (chain-K) is cut off (censored)")
	f.Float64SliceVar(&o.loadScales, "load-scale", []float64{1}, "arrival scalings: <1 thins, >1 replicates (seeded)")
	f.StringVar(&o.protocol, "protocol", "pair", "pair or chain-K (K ≥ 2 segments)")
	f.StringVar(&o.preset, "preset", "ls6", "simulated cluster preset: ls6 or default")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "read the simulated cluster from this slurm.conf (over the preset)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of load scaling and of the bootstrap")
	f.StringVar(&o.title, "title", "", "report title")
	f.StringVar(&o.out, "out", "", "output directory (required without --sweep; a sweep's default is its out:)")
	f.IntVar(&o.workers, "workers", 0, "simulations in parallel (default: the CPUs)")
	f.BoolVar(&o.json, "json", false, "print the written paths and the headline figures as JSON")
	f.StringVar(&o.sweep, "sweep", "", "run the experiment of this sweep file (YAML)")
	f.IntVar(&o.cell, "cell", -1, "with --sweep: run only this cell (the job-array task id)")
	f.BoolVar(&o.emitArray, "emit-array", false, "with --sweep: write the sbatch job-array script instead of running")
	cmd.AddCommand(newEvalMergeCmd(), newEvalVerifyCmd())
	return cmd
}

// parseEvalTime reads RFC 3339 or a UTC date.
func parseEvalTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, withCode(exitUsage, fmt.Errorf("--%s: %q is not RFC 3339 (2023-02-01T00:00:00Z) nor a date (2023-02-01)", flag, s))
}

// experiment builds the experiment from the flags or the sweep file.
func (o *evalOptions) experiment() (*eval.Experiment, error) {
	if o.sweep != "" {
		for _, f := range []string{"trace", "policies", "from", "until", "nodes", "limit", "warmup", "interval", "cycle", "horizon", "load-scale", "protocol", "preset", "slurm-conf", "seed", "title", "models", "format"} {
			if o.changed(f) {
				return nil, withCode(exitUsage, fmt.Errorf("--%s cannot be combined with --sweep: the sweep file says it", f))
			}
		}
		abs, err := filepath.Abs(o.sweep)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		o.sweep = abs
		e, err := eval.ParseSweep(abs)
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		if o.out != "" {
			if e.Out, err = filepath.Abs(o.out); err != nil {
				return nil, withCode(exitUsage, err)
			}
		}
		return e, nil
	}
	if o.cell >= 0 || o.emitArray {
		return nil, withCode(exitUsage, errors.New("--cell and --emit-array need --sweep"))
	}
	if len(o.traces) == 0 || len(o.policies) == 0 || o.out == "" {
		return nil, withCode(exitUsage, errors.New("need --trace, --policies and --out (or --sweep FILE)"))
	}
	from, err := parseEvalTime("from", o.from)
	if err != nil {
		return nil, err
	}
	until, err := parseEvalTime("until", o.until)
	if err != nil {
		return nil, err
	}
	e := &eval.Experiment{
		Title: o.title, Traces: o.traces, Format: o.format, Policies: o.policies, LoadScales: o.loadScales, Protocol: o.protocol,
		From: from, Until: until, Nodes: o.nodes, Limit: o.limit, Warmup: o.warmup, Interval: o.interval, Cycle: o.cycle,
		Horizon: o.horizon, Preset: o.preset, SlurmConf: o.slurmConf, Seed: o.seed, Models: o.models, Out: o.out,
	}
	if err := e.Normalize(); err != nil {
		return nil, withCode(exitUsage, err)
	}
	return e, nil
}

// evalErr maps experiment errors to exit codes.
func evalErr(err error) error {
	var ee *exitError
	switch {
	case err == nil || errors.As(err, &ee):
		return err
	case errors.Is(err, eval.ErrTrace), errors.Is(err, eval.ErrBadSweep), errors.Is(err, eval.ErrBadReport):
		// unreadable or malformed trace, sweep file or report
		return withCode(exitBadInput, err)
	case errors.Is(err, eval.ErrBadSetup):
		return withCode(exitUsage, err)
	}
	return err
}

func runEval(ctx context.Context, out io.Writer, o *evalOptions) error {
	e, err := o.experiment()
	if err != nil {
		return err
	}
	if o.emitArray {
		return emitArray(out, o, e)
	}
	rt := &eval.Runtime{Version: currentVersion().Version, Command: o.argv, Workers: o.workers}
	bar := newCountBar(o.progress, "") // train.go's terminal bar
	if o.progress != nil {
		rt.Progress = func(c eval.CellSpec, done, total int) { bar.update(done, total) }
	}
	cells := e.Cells()
	if o.cell >= 0 {
		if o.cell >= len(cells) {
			return withCode(exitUsage, fmt.Errorf("--cell %d: the sweep has cells 0 to %d", o.cell, len(cells)-1))
		}
		c := cells[o.cell]
		bar.label = fmt.Sprintf("cell %d/%d %s", o.cell+1, len(cells), c.Name)
		r, err := eval.RunCell(ctx, e, c, rt)
		bar.done()
		if err != nil {
			return evalErr(err)
		}
		path := eval.CellFile(e.Out, o.cell)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := traces.WriteFileAtomic(path, r.WriteJSON); err != nil {
			return err
		}
		return printPaths(out, o.json, map[string]string{"cell": path}, nil)
	}
	r, err := eval.RunAll(ctx, e, rt, func(c eval.CellSpec, i, n int) {
		bar.label = fmt.Sprintf("cell %d/%d %s", i+1, n, c.Name)
	})
	bar.done()
	if err != nil {
		return evalErr(err)
	}
	return writeReport(out, o.json, r, e.Out)
}

// writeReport writes the three files and prints their paths.
func writeReport(out io.Writer, asJSON bool, r *eval.Report, dir string) error {
	paths, err := r.WriteFiles(dir)
	if err != nil {
		return err
	}
	return printPaths(out, asJSON, map[string]string{"json": paths[0], "markdown": paths[1], "html": paths[2]}, r)
}

// evalHeadline is one policy's overall figures in the --json output.
type evalHeadline struct {
	Protocol         string   `json:"protocol"`
	LoadScale        float64  `json:"load_scale"`
	Policy           string   `json:"policy"`
	N                int      `json:"n"`
	InterruptionMean float64  `json:"interruption_mean_h"`
	ZeroInterruption float64  `json:"zero_interruption"`
	Reduction        *float64 `json:"reduction,omitempty"`
}

func printPaths(out io.Writer, asJSON bool, paths map[string]string, r *eval.Report) error {
	if asJSON {
		v := struct {
			Paths    map[string]string `json:"paths"`
			Samples  int               `json:"samples,omitempty"`
			Headline []evalHeadline    `json:"headline,omitempty"`
		}{Paths: paths}
		if r != nil {
			v.Samples = len(r.Samples)
			for _, g := range r.Groups {
				if g.Nodes == 0 && g.LoadClass == eval.AllClasses {
					v.Headline = append(v.Headline, evalHeadline{g.Protocol, g.LoadScale, g.Policy, g.N, g.InterruptionMean, g.ZeroInterruption, g.Reduction})
				}
			}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	for _, k := range []string{"cell", "script", "html", "markdown", "json"} {
		if p, ok := paths[k]; ok {
			if _, err := fmt.Fprintln(out, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitArray writes OUT/eval-array.sbatch and creates OUT/logs and OUT/cells.
func emitArray(out io.Writer, o *evalOptions, e *eval.Experiment) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the mirage binary for the array tasks: %w (set slurm.mirage in the sweep)", err)
	}
	script, err := eval.ArrayScript(e, o.sweep, self, currentVersion().Version)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	for _, d := range []string{"logs", "cells"} {
		if err := os.MkdirAll(filepath.Join(e.Out, d), 0o755); err != nil {
			return err
		}
	}
	path := filepath.Join(e.Out, "eval-array.sbatch")
	if err := traces.WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, script); return err }); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return err
	}
	return printPaths(out, o.json, map[string]string{"script": path, "cells": strconv.Itoa(len(e.Cells()))}, nil)
}
