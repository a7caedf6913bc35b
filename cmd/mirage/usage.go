package main

import (
	"fmt"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/spf13/cobra"
)

// submitHint adds to an unknown flag of submit, most often an sbatch
// option, the "--" rule.
func submitHint(cmd *cobra.Command, err error) error {
	if cmd.Name() != "submit" || !cmdutil.IsUnknownFlag(err) {
		return err
	}
	return fmt.Errorf("%w: sbatch options go after \"--\", e.g. mirage submit job.sbatch --segments 4 -- -p gpu -t 24:00:00", err)
}
