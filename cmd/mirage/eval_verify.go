package main

import (
	"fmt"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/spf13/cobra"
)

// evalVerifyOptions are the arguments of mirage eval verify.
type evalVerifyOptions struct {
	f   *Factory
	dir string
}

func newEvalVerifyCmd(f *Factory, runF func(*evalVerifyOptions) error) *cobra.Command {
	o := &evalVerifyOptions{f: f}
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "Check that every number in DIR/report.html and DIR/report.md equals report.json",
		Long: `Read DIR/report.json without mirage's report types and check every figure
report.html shows (each table cell carries its JSON path and value) and
every figure in report.md's tables against it, formatted by unit (hours
with 2 decimals, shares as percent with 1, counts whole, GPU-hours with 1).
Exit code 3 and a list of differences when any number does not match.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return evalVerifyRun(o)
		},
	}
}

func evalVerifyRun(o *evalVerifyOptions) error {
	n, err := eval.VerifyReport(o.dir)
	if err != nil {
		// a mismatch, an unreadable or malformed report: bad input alike
		return withCode(exitBadInput, err)
	}
	_, err = fmt.Fprintf(o.f.Out, "%d numbers in report.html and report.md match report.json\n", n)
	return err
}
