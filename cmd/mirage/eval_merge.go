package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/spf13/cobra"
)

// evalMergeOptions are the flags of mirage eval merge.
type evalMergeOptions struct {
	f     *Factory
	out   string
	title string
	json  bool
	paths []string
	argv  []string
}

func newEvalMergeCmd(f *Factory, runF func(*evalMergeOptions) error) *cobra.Command {
	o := &evalMergeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "merge --out DIR PATH...",
		Short: "Join cells' report JSON (job-array outputs) into one report",
		Long: `Read report JSON files (each PATH is a file, or a directory whose *.json files
are read) written by "mirage eval --sweep ... --cell N" or by mirage eval
itself, and write one report (report.html, report.md, report.json) into
--out with the metrics recomputed over all their samples. The cells must
come from the same mirage version and bootstrap settings; a cell given
twice, or two cells disagreeing on the same hand-off, is an error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths, o.argv = args, os.Args
			if runF != nil {
				return runF(o)
			}
			return evalMergeRun(o)
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "output directory (required)")
	cmd.Flags().StringVar(&o.title, "title", "", "report title (default: the first cell's)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the written paths and the headline figures as JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func evalMergeRun(o *evalMergeOptions) error {
	var files []string
	for _, p := range o.paths {
		st, err := os.Stat(p)
		if err != nil {
			return withCode(exitBadInput, err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return withCode(exitBadInput, fmt.Errorf("%s: no *.json files", p))
		}
		slices.Sort(m)
		files = append(files, m...)
	}
	reports := make([]*eval.Report, 0, len(files))
	for _, f := range files {
		r, err := eval.ReadReportFile(f)
		if err != nil {
			if errors.Is(err, eval.ErrBadReport) {
				return withCode(exitBadInput, err)
			}
			return withCode(exitBadInput, fmt.Errorf("read %s: %w", f, err))
		}
		reports = append(reports, r)
	}
	r, err := eval.Merge(o.title, o.argv, reports...)
	if err != nil {
		return evalErr(err)
	}
	return writeReport(o.f.Out, o.json, r, o.out)
}
