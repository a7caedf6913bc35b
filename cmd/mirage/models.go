package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/models"

	// Every learner registers its model kinds, so trained models load.
	_ "github.com/mirage-gpu/mirage/models/learners"
)

func newModelsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List and inspect trained models",
		Long: `List the models of a models directory (each in DIR/NAME/ with its meta.json, as
mirage train writes them) or show one model's metadata: kind, feature schema,
trace, training and validation windows, seed, parameters, library versions,
decision rule and validation metrics.`,
	}
	cmd.AddCommand(newModelsLsCmd(f, nil), newModelsShowCmd(f, nil))
	return cmd
}

// modelsLsOptions are the flags of mirage models ls.
type modelsLsOptions struct {
	dir  string
	json bool
}

func newModelsLsCmd(f *Factory, runF func(*modelsLsOptions) error) *cobra.Command {
	o := &modelsLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the models in a models directory",
		Long: `List the models in DIR: name, kind, feature schema, trace, training window,
training rows and the headline validation figure (mean |gap| against the
reactive baseline for policies, median absolute error against Slurm's own
estimate for the wait predictor). A model of another feature schema than
this mirage computes is marked "(stale)": it will be refused until retrained.`,
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

func runModelsLs(w io.Writer, o *modelsLsOptions) error {
	c, err := models.List(o.dir)
	switch {
	case errors.Is(err, models.ErrModelsDir) && errors.Is(err, fs.ErrNotExist):
		return withCode(exitBadInput, fmt.Errorf("models directory %s does not exist (train with mirage train --out %s)", o.dir, o.dir))
	case errors.Is(err, models.ErrModelsDir):
		return withCode(exitUnavailable, err)
	case err != nil:
		return withCode(exitBadInput, err)
	case o.json:
		return printJSON(w, c.Entries)
	}
	return c.WriteText(w)
}

// modelsShowOptions are the flags of mirage models show.
type modelsShowOptions struct {
	dir  string
	json bool
}

func newModelsShowCmd(f *Factory, runF func(*modelsShowOptions) error) *cobra.Command {
	o := &modelsShowOptions{}
	cmd := &cobra.Command{
		Use:   "show DIR/NAME",
		Short: "Show one model's metadata",
		Long: `Show one model's meta.json: kind and task, feature schema (version and field
count), trace and windows, seed, hyper-parameters, library versions, decision
rule, training rows and time, and every validation metric. --json prints
meta.json as stored (for a wait predictor: its p10, p50 and p90 models).`,
		Args: cobra.ExactArgs(1),
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

func runModelsShow(w io.Writer, o *modelsShowOptions) error {
	c, err := models.ReadCard(o.dir)
	switch {
	case errors.Is(err, models.ErrNoModel):
		return withCode(exitBadInput, fmt.Errorf("%w: give DIR/NAME as listed by mirage models ls", err))
	case err != nil:
		return withCode(exitBadInput, err)
	case o.json:
		return printJSON(w, c.JSON())
	}
	return c.WriteText(w)
}
