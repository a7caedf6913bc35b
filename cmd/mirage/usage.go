package main

import "github.com/spf13/cobra"

// flagError is a usage error: a bad flag or argument, found by cobra (an
// unknown flag, a value that does not parse, a missing required flag, the
// wrong number of arguments). exitCode maps it to exitUsage.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// typeUsageErrors makes every usage error cobra finds in the tree a
// *flagError: flag parsing through the flag error function, the argument
// validators by wrapping them, required flags before any command runs.
func typeUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
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
