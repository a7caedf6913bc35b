package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TypeUsageErrors makes every usage error cobra finds in the tree under
// root a *FlagError: flag errors (with a hint for a mistyped flag; hint adds
// a command's own advice, may be nil), missing required flags and argument
// count errors.
func TypeUsageErrors(root *cobra.Command, hint func(cmd *cobra.Command, err error) error) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		err = flagHint(cmd, err)
		if hint != nil {
			err = hint(cmd, err)
		}
		return &FlagError{err}
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return &FlagError{err}
		}
		return nil
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return &FlagError{err}
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

// Execute runs root on args. The root command runs nothing, so its only own
// error (an unknown command) is a usage error.
func Execute(root *cobra.Command, run func() (*cobra.Command, error)) error {
	cmd, err := run()
	var fe *FlagError
	if err != nil && cmd == root && !errors.As(err, &fe) {
		return &FlagError{err}
	}
	return err
}

// IsUnknownFlag reports whether err is cobra's error for a flag cmd does not have.
func IsUnknownFlag(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown flag: --") || strings.HasPrefix(msg, "unknown shorthand flag: ")
}

// flagHint adds to an unknown-flag error the nearest flag of cmd, as cobra
// does for mistyped commands ("did you mean --active?").
func flagHint(cmd *cobra.Command, err error) error {
	given, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3 // suggest within an edit distance of 2
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := EditDistance(given, f.Name); d < bestD || d == bestD && f.Name < best {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, best)
	}
	return err
}

// EditDistance is the Levenshtein distance of a and b (bytes).
func EditDistance(a, b string) int {
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
