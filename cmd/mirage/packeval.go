package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// packEvalOptions are the flags of "mirage pack-eval"; all but the
// policies (parsed at run time) bind into spec.
type packEvalOptions struct {
	spec     eval.PackSpec
	policies []string
	json     bool
	progress io.Writer // stderr on a terminal, else nil
}

func newPackEvalCmd(factory *Factory, runF func(*packEvalOptions) error) *cobra.Command {
	o := &packEvalOptions{}
	cmd := &cobra.Command{
		Use: "pack-eval --nodes NODES.csv --pods PODS.csv... [--policies first-fit,best-fit,spread,frag-aware]",
		Example: `  mirage pack-eval --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv
  mirage pack-eval --nodes nodes.csv --pods a.csv,b.csv --policies best-fit,frag-aware --mode replay --json`,
		Short: "Replay pod arrivals onto a node list and compare placement policies by GPU fragmentation",
		Long: `Evaluate GPU packing as in "Beware of Fragmentation" (ATC'23) on openb node and pod
lists: per list and policy, the unallocated share at the first failure, the
fragmented share and the fragmentation along the way. Methodology:
docs/guide/training-and-evaluation.md; policies: docs/guide/team-rules.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.progress = factory.progress()
			if runF != nil {
				return runF(o)
			}
			return runPackEval(cmd.Context(), factory.Out, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec.Nodes, "nodes", "", "node list (openb_node_list_*.csv; required)")
	f.StringSliceVar(&o.spec.Pods, "pods", nil, "pod lists (openb_pod_list_*.csv; comma-separated or repeated; required)")
	f.StringSliceVar(&o.policies, "policies", []string{"first-fit", "best-fit", "spread", "frag-aware"}, "placement policies to compare")
	f.StringVar((*string)(&o.spec.Mode), "mode", "fill", "fill (arrivals only, until --until of capacity) or replay (arrivals and departures on the trace clock)")
	f.Float64Var(&o.spec.Until, "until", 1, "fill: stop when the arrived GPU demand reaches this multiple of the capacity")
	f.Uint64Var(&o.spec.Seed, "seed", 0, "fill: shuffle the arrival order with this seed (0 = trace order)")
	f.IntVar(&o.spec.Points, "points", 20, "points on the fragmentation curve")
	f.BoolVar(&o.spec.SkipBad, "skip-bad", false, "skip malformed pod rows instead of failing")
	f.BoolVar(&o.json, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("nodes")
	_ = cmd.MarkFlagRequired("pods")
	return cmd
}

func runPackEval(ctx context.Context, out io.Writer, o *packEvalOptions) error {
	spec := o.spec
	for _, p := range o.policies {
		spec.Policies = append(spec.Policies, placement.Policy(strings.TrimSpace(p)))
	}
	if err := spec.Validate(); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	if o.progress != nil {
		spec.Progress = term.NewProgress(o.progress, "")
	}
	rep, err := eval.RunPack(ctx, spec)
	if err != nil {
		return cmdutil.Coded(err, packCodes)
	}
	return cmdutil.PrintView(out, o.json, rep, rep)
}
