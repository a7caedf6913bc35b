package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

// evalOptions are the flags of mirage eval.
type evalOptions struct {
	f       *Factory
	spec    eval.Spec
	workers int
	json    bool
	argv    []string // command line, for provenance
	changed func(name string) bool
}

func newEvalCmd(f *Factory, runF func(*evalOptions) error) *cobra.Command {
	o := &evalOptions{f: f, spec: eval.Spec{Cell: -1}}
	sp := &o.spec
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
			o.argv = os.Args
			o.changed = cmd.Flags().Changed
			if runF != nil {
				return runF(o)
			}
			return evalRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&sp.Traces, "trace", nil, "trace file (repeatable or comma-separated)")
	fl.StringVar(&sp.Format, "format", "", "trace format (default: sniffed)")
	fl.StringSliceVar(&sp.Policies, "policies", nil, "policies, in report order (reactive is always run as the reference)")
	fl.StringVar(&sp.Models, "models", "", "directory of trained models, one sub-directory per learned policy (mirage train --out)")
	fl.StringVar(&sp.From, "from", "", "first injection not before, RFC 3339 or YYYY-MM-DD in UTC (default and earliest: the trace's first start + --warmup)")
	fl.StringVar(&sp.Until, "until", "", "injections before (default: the trace's last submit)")
	fl.IntSliceVar(&sp.Nodes, "nodes", []int{1, 8}, "nodes per segment")
	fl.DurationVar(&sp.Limit, "limit", eval.DefaultLimit, "time limit of every segment (used fully)")
	fl.DurationVar(&sp.Warmup, "warmup", eval.DefaultWarmup, "no injection before the trace's first start + this")
	fl.DurationVar(&sp.Interval, "interval", eval.DefaultInterval, "trace time between injections")
	fl.DurationVar(&sp.Cycle, "cycle", eval.DefaultCycle, "decision period")
	fl.DurationVar(&sp.Horizon, "horizon", eval.DefaultHorizon, "a successor not started this long after its predecessor's end (pair) or the chain's K limits (chain-K) is cut off (censored)")
	fl.Float64SliceVar(&sp.LoadScales, "load-scale", []float64{1}, "arrival scalings: <1 thins, >1 replicates (seeded)")
	fl.StringVar(&sp.Protocol, "protocol", "pair", "pair or chain-K (K ≥ 2 segments)")
	fl.StringVar(&sp.Preset, "preset", "ls6", "simulated cluster preset: ls6 or default")
	fl.StringVar(&sp.SlurmConf, "slurm-conf", "", "read the simulated cluster from this slurm.conf (over the preset)")
	fl.Uint64Var(&sp.Seed, "seed", 1, "seed of load scaling and of the bootstrap")
	fl.StringVar(&sp.Title, "title", "", "report title")
	fl.StringVar(&sp.Out, "out", "", "output directory (required without --sweep; a sweep's default is its out:)")
	fl.IntVar(&o.workers, "workers", 0, "simulations in parallel (default: the CPUs)")
	fl.BoolVar(&o.json, "json", false, "print the written paths and the headline figures as JSON")
	fl.StringVar(&sp.Sweep, "sweep", "", "run the experiment of this sweep file (YAML)")
	fl.IntVar(&sp.Cell, "cell", -1, "with --sweep: run only this cell (the job-array task id)")
	fl.BoolVar(&sp.EmitArray, "emit-array", false, "with --sweep: write the sbatch job-array script instead of running")
	cmd.AddCommand(newEvalMergeCmd(f, nil), newEvalVerifyCmd(f, nil))
	return cmd
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

func evalRun(ctx context.Context, o *evalOptions) error {
	out := o.f.Out
	e, err := o.spec.Experiment(o.changed)
	if err != nil {
		return evalErr(err)
	}
	if o.spec.EmitArray {
		return emitArray(out, o, e)
	}
	rt := &eval.Runtime{Version: currentVersion().Version, Command: o.argv, Workers: o.workers}
	bar := term.NewProgress(o.f.progress(), "")
	if o.f.progress() != nil {
		rt.Progress = func(c eval.CellSpec, done, total int) { bar.Update(done, total) }
	}
	cells := e.Cells()
	if o.spec.Cell >= 0 {
		if o.spec.Cell >= len(cells) {
			return withCode(exitUsage, fmt.Errorf("--cell %d: the sweep has cells 0 to %d", o.spec.Cell, len(cells)-1))
		}
		c := cells[o.spec.Cell]
		bar.SetLabel(fmt.Sprintf("cell %d/%d %s", o.spec.Cell+1, len(cells), c.Name))
		r, err := eval.RunCell(ctx, e, c, rt)
		bar.Done()
		if err != nil {
			return evalErr(err)
		}
		path := eval.CellFile(e.Out, o.spec.Cell)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := traces.WriteFileAtomic(path, r.WriteJSON); err != nil {
			return err
		}
		return printPaths(out, o.json, map[string]string{"cell": path}, nil)
	}
	r, err := eval.RunAll(ctx, e, rt, func(c eval.CellSpec, i, n int) {
		bar.SetLabel(fmt.Sprintf("cell %d/%d %s", i+1, n, c.Name))
	})
	bar.Done()
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
		return printJSON(out, v)
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
	script, err := eval.ArrayScript(e, o.spec.Sweep, self, currentVersion().Version)
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
