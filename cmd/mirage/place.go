package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// placeOptions are the flags of "mirage place"; the job's flags bind into req.
type placeOptions struct {
	k8sFlags
	req                     provisioner.SubmitRequest
	snapshot, rules, policy string
	all, json               bool
	now                     func() time.Time // decision time for snapshot files (tests fix it)
}

func newPlaceCmd(factory *Factory, runF func(*placeOptions) error) *cobra.Command {
	o := &placeOptions{now: time.Now, req: provisioner.SubmitRequest{Name: "mirage-place"}}
	cmd := &cobra.Command{
		Use: "place --team TEAM --gpus N (--kubeconfig FILE | --snapshot FILE) [--rules FILE]",
		Example: `  mirage place --team vision --gpus 4 --rules teams.yaml --kubeconfig ~/.kube/config
  mirage place --team nlp --gpus 16 --nodes 2 --snapshot cluster.yaml --rules teams.yaml --json`,
		Short: "Dry run: where would this job go, and why (quota, borrowing, packing, reclaim)",
		Long: `Show what the team rules would decide for one job, without submitting anything:
the verdict and its reason, the candidate and rejected nodes, packing hints and
any reclaim plan, on a Kubernetes cluster (--kubeconfig) or a snapshot file.

Team rules and the snapshot format: docs/guide/team-rules.md; the rules file:
docs/reference/rules-file.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runPlace(cmd.Context(), o, factory.Out)
		},
	}
	o.k8sFlags.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot file (YAML/JSON) instead of a Kubernetes API server")
	f.StringVar(&o.rules, "rules", "", "team rules file (YAML/JSON: quotas, borrowing, placement)")
	f.StringVar(&o.policy, "policy", "", "placement policy: first-fit, best-fit, spread or frag-aware (default: the rules', else frag-aware)")
	f.StringVar(&o.req.Account, "team", "", "team (Slurm account) of the job (required)")
	f.IntVar(&o.req.GPUs, "gpus", 0, "GPUs in total (required)")
	f.IntVar(&o.req.Nodes, "nodes", 1, "nodes (the GPUs are spread evenly)")
	f.StringVar(&o.req.GPUType, "gpu-type", "", "GPU type (product) the job requires")
	f.Var(&o.req.Dependency, "dependency", "dependency, e.g. afterany:123 (a running job it depends on does not count against the quota)")
	f.BoolVar(&o.all, "all", false, "list every candidate and rejected node (default: the best 5 and a count per reason)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("team")
	_ = cmd.MarkFlagRequired("gpus")
	return cmd
}

// loadRules reads a team rules file; any failure is bad input.
func loadRules(path string) (*team.Rules, error) {
	r, err := team.LoadRules(path)
	return r, cmdutil.WithCode(cmdutil.ExitBadInput, err)
}

func runPlace(ctx context.Context, o *placeOptions, w io.Writer) error {
	switch {
	case o.req.GPUs < 0 || o.req.Nodes < 1:
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--gpus must be ≥ 0 and --nodes ≥ 1"))
	case o.snapshot != "" && o.kubeconfig != "":
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("give --snapshot or --kubeconfig, not both"))
	}
	if o.policy != "" {
		if _, err := placement.ParsePolicy(o.policy); err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--policy: %w", err))
		}
	}
	var rules *team.Rules
	if o.rules != "" {
		var err error
		if rules, err = loadRules(o.rules); err != nil {
			return err
		}
		if rules, err = rules.WithPolicy(placement.Policy(o.policy)); err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
	}
	in := team.ExplainInput{Rules: rules, Policy: placement.Policy(o.policy), All: o.all, Request: o.req}
	var source string
	if o.snapshot != "" {
		s, err := team.LoadSnapshot(o.snapshot)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		in.Snapshot, in.Now = s, o.now()
		if !s.Time.IsZero() {
			in.Now = s.Time
		}
		source = "snapshot " + o.snapshot + " (judged as Slurm: queued when nothing fits now)"
	} else {
		cfg, err := o.config(rules)
		if err != nil {
			return err
		}
		c, err := o.client(cfg)
		if err != nil {
			return err
		}
		if source, err = c.ExplainState(ctx, &in); err != nil {
			return cmdutil.Coded(err, k8sCodes)
		}
	}
	v, err := team.Explain(in)
	if err != nil {
		return cmdutil.Coded(err, placeCodes)
	}
	v.Source = source
	if v.Ranked == nil {
		v.Ranked = []team.RankedNode{} // JSON [], not null
	}
	return cmdutil.PrintView(w, o.json, v, v)
}
