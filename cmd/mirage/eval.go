package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/report"
	"os"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/buildinfo"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
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
policy, the gap between each predecessor's end and its successor's start, into
report.html, report.md and report.json in --out; --sweep runs a sweep file.

Protocols, metrics and sweeps in detail: docs/guide/training-and-evaluation.md.`,
		Example: `  mirage train --trace ls6.log.gz --model xgb,rf,dqn,pg --train-until 2023-02-01 --until 2023-02-15 --out ls6-models/
  mirage eval --trace ls6.log.gz --policies reactive,average,quantile,xgb,rf,dqn,pg,oracle --models ls6-models/ \
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
	sp.AddFlags(fl)
	fl.IntVar(&o.workers, "workers", 0, "simulations in parallel (default: the CPUs)")
	fl.BoolVar(&o.json, "json", false, "print the written paths and the headline figures as JSON")
	cmd.AddCommand(newEvalMergeCmd(f, nil), newEvalVerifyCmd(f, nil), newEvalWalkForwardCmd(f, nil), newEvalSiteGridCmd(f, nil))
	return cmd
}

func evalRun(ctx context.Context, o *evalOptions) error {
	e, err := o.spec.Experiment(o.changed)
	if err != nil {
		return cmdutil.Coded(err, evalCodes)
	}
	if o.spec.EmitArray {
		w, err := eval.WriteArray(e, o.spec.Sweep, "", buildinfo.Current().Version)
		if err != nil {
			return cmdutil.Coded(err, evalCodes)
		}
		return o.print(w)
	}
	rt := &eval.Runtime{Version: buildinfo.Current().Version, Command: o.argv, Workers: o.workers}
	bar := term.NewProgress(o.f.progress(), "")
	if o.f.progress() != nil {
		rt.Progress = func(c eval.CellSpec, done, total int) { bar.Update(done, total) }
	}
	w, err := eval.Run(ctx, e, o.spec.Cell, rt, func(c eval.CellSpec, i, n int) {
		bar.SetLabel(fmt.Sprintf("cell %d/%d %s", i+1, n, c.Name))
	})
	bar.Done()
	return o.printOrFail(w, err)
}

// printOrFail prints what a run wrote and returns its error, coded: a
// report without samples (eval.ErrNoSamples) is written and printed, and
// still fails the command (exit 1) with the reason.
func (o *evalOptions) printOrFail(w *eval.Written, err error) error {
	if err != nil && !(errors.Is(err, eval.ErrNoSamples) && w != nil) {
		return cmdutil.Coded(err, evalCodes)
	}
	if perr := o.print(w); perr != nil {
		return perr
	}
	return cmdutil.Coded(err, evalCodes)
}

// print prints what a run wrote: its paths, or with --json also the headline figures.
func (o *evalOptions) print(w *eval.Written) error {
	return cmdutil.PrintView(o.f.Out, o.json, w.JSON(), w)
}

// evalMergeOptions are the flags of mirage eval merge.
type evalMergeOptions struct {
	evalOptions
	title string
	paths []string
}

func newEvalMergeCmd(f *Factory, runF func(*evalMergeOptions) error) *cobra.Command {
	o := &evalMergeOptions{evalOptions: evalOptions{f: f}}
	cmd := &cobra.Command{
		Use: "merge --out DIR PATH...",
		Example: `  mirage eval merge --out ls6-eval ls6-eval/cells
  mirage eval merge --out all a/report.json b/report.json --title "Feb + Mar"`,
		Short: "Join cells' report JSON (job-array outputs) into one report",
		Long: `Read report JSON files (each PATH a file, or a directory of *.json) written by
"mirage eval --sweep ... --cell N" or by mirage eval, and write one report into
--out with the metrics recomputed over all their samples (see docs/guide/training-and-evaluation.md).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths, o.argv = args, os.Args
			if runF != nil {
				return runF(o)
			}
			return evalMergeRun(o)
		},
	}
	cmd.Flags().StringVar(&o.spec.Out, "out", "", "output directory (required)")
	cmd.Flags().StringVar(&o.title, "title", "", "report title (default: the first cell's)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the written paths and the headline figures as JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func evalMergeRun(o *evalMergeOptions) error {
	reports, err := eval.ReadReports(o.paths)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	r, err := report.Merge(o.title, o.argv, reports...)
	if err != nil {
		return cmdutil.Coded(err, evalCodes)
	}
	w, err := eval.WrittenReport(r, o.spec.Out)
	if err != nil {
		return err
	}
	return o.printOrFail(w, eval.CheckSamples(r, o.spec.Out))
}

func newEvalVerifyCmd(f *Factory, runF func(dir string) error) *cobra.Command {
	return &cobra.Command{
		Use:     "verify DIR",
		Example: `  mirage eval verify ls6-eval`,
		Short:   "Check that every number in DIR/report.html and DIR/report.md equals report.json",
		Long: `Check every number of report.html and report.md against report.json; exit code 3
and a list of differences when any does not match. See docs/guide/training-and-evaluation.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(args[0])
			}
			n, err := report.Verify(args[0])
			if err != nil {
				// a mismatch, an unreadable or malformed report: bad input alike
				return cmdutil.WithCode(cmdutil.ExitBadInput, err)
			}
			_, err = fmt.Fprintf(f.Out, "%d numbers in report.html and report.md match report.json\n", n)
			return err
		},
	}
}
