package main

import (
	"github.com/mirage-gpu/mirage/internal/buildinfo"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/spf13/cobra"
)

// versionOptions are the flags of mirage version.
type versionOptions struct {
	f    *Factory
	json bool
}

func newVersionCmd(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	o := &versionOptions{f: f}
	cmd := &cobra.Command{
		Use: "version",
		Example: `  mirage version
  mirage version --json`,
		Short: "Print mirage's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return versionRun(o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return cmd
}

func versionRun(o *versionOptions) error {
	return cmdutil.PrintView(o.f.Out, o.json, buildinfo.Current(), buildinfo.Current())
}
