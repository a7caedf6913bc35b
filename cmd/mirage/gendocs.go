package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGenDocsCmd is the hidden command behind "make docs": one Markdown page
// per command into --dir, without dates, so TestDocsReferenceCurrent can
// compare them with the committed ones.
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

// disableAutoGenTag drops cobra's dated footer from every page.
func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
