package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { register(newGenDocsCmd) }

// newGenDocsCmd is the hidden command behind "make docs": it writes one
// Markdown page per command of the tree into --dir (docs/reference/cli).
// The pages carry no generation date and no machine-dependent defaults, so
// TestDocsReferenceCurrent can compare them with the committed ones.
func newGenDocsCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "gen-docs --dir DIR",
		Short:  "Write the command reference as Markdown, one page per command",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("gen-docs: %w", err)
			}
			root := cmd.Root()
			disableAutoGenTag(root)
			if err := doc.GenMarkdownTree(root, dir); err != nil {
				return fmt.Errorf("gen-docs: writing %s: %w", dir, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "docs/reference/cli", "directory to write the pages into")
	return cmd
}

// disableAutoGenTag drops cobra's "Auto generated on DATE" footer from every
// page (it is set per command).
func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
