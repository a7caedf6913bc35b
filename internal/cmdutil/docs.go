package cmdutil

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// GenDocs writes the command reference of root's tree as Markdown, one page
// per command, into dir, without cobra's dated footers (so a test can
// compare the pages with the committed ones).
func GenDocs(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	var undate func(c *cobra.Command)
	undate = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			undate(sub)
		}
	}
	undate(root)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("gen-docs: writing %s: %w", dir, err)
	}
	return nil
}
