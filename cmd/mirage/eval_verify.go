package main

import (
	"errors"
	"fmt"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/spf13/cobra"
)

func newEvalVerifyCmd() *cobra.Command {
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
			n, err := eval.VerifyReport(args[0])
			if errors.Is(err, eval.ErrMismatch) || errors.Is(err, eval.ErrBadReport) {
				return withCode(exitBadInput, err)
			}
			if err != nil {
				return withCode(exitBadInput, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d numbers in report.html and report.md match report.json\n", n)
			return err
		},
	}
}
