package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/models"

	// Every learner registers its model kinds, so trained models load.
	_ "github.com/mirage-gpu/mirage/models/learners"
)

func newModelsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List and inspect trained models",
		Long: `List the models of a models directory (as mirage train writes them) or show one
model's metadata. See docs/guide/training-and-evaluation.md.`,
	}
	cmd.AddCommand(newModelsLsCmd(f, nil), newModelsShowCmd(f, nil))
	return cmd
}

// modelsOptions are the flags of mirage models ls and show.
type modelsOptions struct {
	dir  string
	json bool
}

func newModelsLsCmd(f *Factory, runF func(*modelsOptions) error) *cobra.Command {
	o := &modelsOptions{}
	cmd := &cobra.Command{
		Use: "ls DIR",
		Example: `  mirage models ls ~/.local/share/mirage/models
  mirage models ls ls6-models/ --json`,
		Short: "List the models in a models directory",
		Long: `List the models in DIR; one of another feature schema than this mirage computes
is marked "(stale)". See docs/guide/training-and-evaluation.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runModelsLs(f.Out, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return cmd
}

func runModelsLs(w io.Writer, o *modelsOptions) error {
	c, err := models.List(o.dir)
	switch {
	case errors.Is(err, models.ErrModelsDir) && errors.Is(err, fs.ErrNotExist):
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("models directory %s does not exist (train with mirage train --out %s)", o.dir, o.dir))
	case errors.Is(err, models.ErrModelsDir):
		return cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	case err != nil:
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	return cmdutil.PrintView(w, o.json, c.Entries, c)
}

func newModelsShowCmd(f *Factory, runF func(*modelsOptions) error) *cobra.Command {
	o := &modelsOptions{}
	cmd := &cobra.Command{
		Use: "show DIR/NAME",
		Example: `  mirage models show ls6-models/xgb
  mirage models show ls6-models/wait --json`,
		Short: "Show one model's metadata",
		Long:  `Show one model's meta.json; --json prints it as stored. See docs/guide/training-and-evaluation.md.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runModelsShow(f.Out, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print meta.json")
	return cmd
}

func runModelsShow(w io.Writer, o *modelsOptions) error {
	c, err := models.ReadCard(o.dir)
	switch {
	case errors.Is(err, models.ErrNoModel):
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("%w: give DIR/NAME as listed by mirage models ls", err))
	case err != nil:
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	return cmdutil.PrintView(w, o.json, c.JSON(), c)
}
