package main

import (
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/spf13/cobra"
)

// newGenDocsCmd is the hidden command behind "make docs": one Markdown page
// per command into --dir (TestDocsReferenceCurrent compares them with the
// committed ones).
func newGenDocsCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "gen-docs --dir DIR",
		Short:  "Write the command reference as Markdown, one page per command",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return cmdutil.GenDocs(cmd.Root(), dir) },
	}
	cmd.Flags().StringVar(&dir, "dir", "docs/reference/cli", "directory to write the pages into")
	return cmd
}
