package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/eval/pack"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// packEvalOptions are the flags of "mirage pack-eval"; all but the
// policies (parsed at run time) bind into spec.
type packEvalOptions struct {
	spec     pack.Spec
	policies []string
	json     bool
	progress io.Writer // stderr on a terminal, else nil
}

func newPackEvalCmd(factory *Factory, runF func(*packEvalOptions) error) *cobra.Command {
	o := &packEvalOptions{}
	cmd := &cobra.Command{
		Use: "pack-eval --nodes NODES.csv --pods PODS.csv... [--policies first-fit,best-fit,spread,frag-aware]",
		Example: `  mirage pack-eval --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv --types 0.25
  mirage pack-eval --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv --multi-gpu 0.3 --policies frag-aware,fgd
  mirage pack-eval --nodes nodes.csv --pods a.csv,b.csv --policies best-fit,frag-aware --order trace --json`,
		Short: "Replay pod arrivals onto a node list and compare placement policies by GPU fragmentation",
		Long: `Evaluate GPU packing as in "Beware of Fragmentation" (ATC'23) on openb node and pod
lists, by default with their methodology (shuffled, inflated arrivals, 10 seeds): per list and
policy, mean ± sd of the unallocated share at 100% arrival, failed pods, the first failure and
the fragmentation along the way. See docs/guide/training-and-evaluation.md, docs/guide/team-rules.md.`,
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
	f.StringSliceVar(&o.policies, "policies", []string{"first-fit", "best-fit", "spread", "frag-aware"}, "placement policies to compare (also fgd: the ATC'23 paper's FGD as a baseline, not a policy of the rules)")
	f.StringVar((*string)(&o.spec.Mode), "mode", "fill", "fill (arrivals only, until --until of capacity) or replay (arrivals and departures on the trace clock)")
	f.Float64Var(&o.spec.Until, "until", 1.3, "fill: stop when the arrived GPU demand reaches this multiple of the capacity")
	f.StringVar(&o.spec.Order, "order", "shuffled", "fill: shuffled (the pod list shuffled and sampled, one replay per seed) or trace (the list in trace order, cycled)")
	f.IntVar(&o.spec.Seeds, "seeds", 10, "shuffled: replays per policy, one per seed")
	f.Uint64Var(&o.spec.FirstSeed, "first-seed", 42, "shuffled: the first seed (42–51 are the ATC'23 paper's)")
	f.Float64Var(&o.spec.Inflate, "inflate", 1.3, "shuffled: sample arrivals up to this multiple of the capacity")
	f.StringVar(&o.spec.Mix, "mix", "list", "frag-aware's job mix: list (the pod list's, as ATC'23) or recent (learned from the last 1,000 arrivals)")
	f.Float64Var(&o.spec.Types, "types", 0, "give this share of the GPU pods a GPU-type constraint (0.25: a quarter; see the guide)")
	f.Float64Var(&o.spec.MultiGPU, "multi-gpu", 0, "re-draw 1-GPU pods as 2-, 4- and 8-GPU pods until those carry this share of the GPU demand (0.3: 30%; see the guide)")
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
	rep, err := pack.Evaluate(ctx, spec)
	if err != nil {
		return cmdutil.Coded(err, packCodes)
	}
	return cmdutil.PrintView(out, o.json, rep, rep)
}
