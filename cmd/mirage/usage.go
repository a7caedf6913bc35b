package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is a usage error cobra found (flag, argument); exit 2.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// typeUsageErrors makes every usage error cobra finds in the tree a *flagError.
func typeUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &flagError{flagHint(cmd, err)} })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return &flagError{err}
		}
		return nil
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return &flagError{err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagHint adds to an unknown-flag error the nearest flag of cmd, as cobra
// does for mistyped commands ("did you mean --active?"), and on submit,
// where a mistyped flag is most often an sbatch option, the "--" rule.
func flagHint(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var given string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		given = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
	default:
		return err
	}
	if given != "" {
		best, bestD := "", 3 // suggest within an edit distance of 2
		visit := func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			if d := editDistance(given, f.Name); d < bestD || d == bestD && f.Name < best {
				best, bestD = f.Name, d
			}
		}
		cmd.Flags().VisitAll(visit)
		cmd.InheritedFlags().VisitAll(visit)
		if best != "" {
			return fmt.Errorf("%w (did you mean --%s?)", err, best)
		}
	}
	if cmd.Name() == "submit" {
		return fmt.Errorf("%w: sbatch options go after \"--\", e.g. mirage submit job.sbatch --segments 4 -- -p gpu -t 24:00:00", err)
	}
	return err
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
