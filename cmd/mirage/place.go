package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/provisioner"
)

func init() { register(newPlaceCmd) }

// placeOptions are the flags of "mirage place".
type placeOptions struct {
	k8sFlags
	snapshot string
	rules    string
	policy   string
	team     string
	gpus     int
	nodes    int
	gpuType  string
	dep      string
	all      bool
	json     bool
	now      func() time.Time // decision time for snapshot files (tests fix it)
}

func newPlaceCmd() *cobra.Command {
	o := &placeOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "place --team TEAM --gpus N (--kubeconfig FILE | --snapshot FILE) [--rules FILE]",
		Short: "Dry run: where would this job go, and why (quota, borrowing, packing, reclaim)",
		Long: `Show what the team rules would decide for one job, without submitting
anything: the verdict (admit, borrow, reclaim, queue or defer) and its reason,
the team's use against its quota, the chosen nodes with every candidate's
score, every rejected node with its reason, the packing hints a Slurm
submission would carry, and, when borrowed work must make room, the reclaim
plan (checkpoint signal, grace period, evictions).

The cluster comes from a Kubernetes API server (--kubeconfig; the same team
mapping flags as "mirage k8s inventory") or from a snapshot file (--snapshot:
a Slurm-like view, YAML or JSON), for example:

  nodes:
    - {name: n1, gpus: 10, gpusUsed: 6, gpuType: A100}   # state: up (default), drained, down
    - {name: n2, gpus: 10}
  jobs:
    - {id: "101", account: team-a, state: RUNNING, gpus: 6, nodeList: [n1], qos: normal}
    - {id: "102", account: team-a, state: PENDING, gpus: 4}

Field names are those of provisioner.Snapshot, matched without regard to case.
A snapshot file is judged as Slurm would treat the job (it queues work that
cannot start; hints via --nodelist/--exclude), a Kubernetes cluster as
mirage's Kubernetes mode would (a node is chosen, or borrowed pods reclaimed).

Without --rules only the placement is shown (no quota). --policy overrides the
rules' placement policy. Team rules: docs/guide/team-rules.md; the rules file:
docs/reference/rules-file.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlace(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.k8sFlags.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot file (YAML/JSON) instead of a Kubernetes API server")
	f.StringVar(&o.rules, "rules", "", "team rules file (YAML/JSON: quotas, borrowing, placement)")
	f.StringVar(&o.policy, "policy", "", "placement policy: first-fit, best-fit, spread or frag-aware (default: the rules', else frag-aware)")
	f.StringVar(&o.team, "team", "", "team (Slurm account) of the job (required)")
	f.IntVar(&o.gpus, "gpus", 0, "GPUs in total (required)")
	f.IntVar(&o.nodes, "nodes", 1, "nodes (the GPUs are spread evenly)")
	f.StringVar(&o.gpuType, "gpu-type", "", "GPU type (product) the job requires")
	f.StringVar(&o.dep, "dependency", "", "dependency, e.g. afterany:123 (a running job it depends on does not count against the quota)")
	f.BoolVar(&o.all, "all", false, "list every candidate and rejected node (default: the best 5 and a count per reason)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("team")
	_ = cmd.MarkFlagRequired("gpus")
	return cmd
}

// loadRules reads and parses a team rules file.
func loadRules(path string, queueing bool) (*provisioner.TeamRules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("team rules: %w", err))
	}
	cfg, err := provisioner.ParseTeamConfig(data, path)
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	r, err := provisioner.NewTeamRules(cfg, queueing)
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	return r, nil
}

// loadSnapshot reads a snapshot file (YAML or JSON) and checks it.
func loadSnapshot(path string) (*provisioner.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("snapshot: %w", err))
	}
	return parseSnapshot(data, path)
}

// parseSnapshot parses and checks a snapshot; path names it in errors.
func parseSnapshot(data []byte, path string) (*provisioner.Snapshot, error) {
	var s provisioner.Snapshot
	if err := yaml.Unmarshal(data, &s); err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: %w", path, err))
	}
	if len(s.Nodes) == 0 {
		return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: no nodes (want a \"nodes:\" list)", path))
	}
	seen := map[string]bool{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		switch {
		case n.Name == "":
			return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: nodes[%d]: no name", path, i))
		case seen[n.Name]:
			return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: node %s listed twice", path, n.Name))
		case n.GPUs > provisioner.MaxNodeGPUs:
			return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: node %s: %d GPUs, more than %d", path, n.Name, n.GPUs, provisioner.MaxNodeGPUs))
		case n.GPUs < 0 || n.GPUsUsed < 0 || n.GPUsUsed > n.GPUs:
			return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: node %s: gpusUsed %d of gpus %d", path, n.Name, n.GPUsUsed, n.GPUs))
		}
		seen[n.Name] = true
		switch n.State {
		case "":
			n.State = provisioner.NodeUp
		case provisioner.NodeUp, provisioner.NodeDrained, provisioner.NodeDown, provisioner.NodeReserved:
		default:
			return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: node %s: state %q (want up, drained, down or reserved)", path, n.Name, n.State))
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		j.State = provisioner.JobState(strings.ToUpper(string(j.State)))
		for _, n := range j.NodeList {
			if !seen[n] {
				return nil, withCode(exitBadInput, fmt.Errorf("snapshot %s: job %s runs on unknown node %s", path, j.ID, n))
			}
		}
	}
	return &s, nil
}

// placeView is the JSON output of "mirage place".
type placeView struct {
	Source    string                   `json:"source"`
	Team      string                   `json:"team"`
	Demand    string                   `json:"demand"`
	Verdict   string                   `json:"verdict"`
	Reason    string                   `json:"reason"`
	Usage     *provisioner.TeamUsage   `json:"usage,omitempty"`
	Policy    string                   `json:"policy"`
	Nodes     []string                 `json:"nodes"`
	QOS       string                   `json:"qos,omitempty"`
	NodeList  []string                 `json:"node_list,omitempty"`
	Exclude   []string                 `json:"exclude,omitempty"`
	Mix       string                   `json:"mix"`
	Ranked    []candidateView          `json:"candidates"`
	Rejected  map[string]int           `json:"rejected"`
	RejectedN []provisioner.Rejection  `json:"rejected_nodes,omitempty"`
	Reclaim   *provisioner.ReclaimPlan `json:"reclaim,omitempty"`
}

type candidateView struct {
	Node      string  `json:"node"`
	Score     float64 `json:"score"`
	Norm      float64 `json:"normalised"`
	FragDelta float64 `json:"frag_delta"`
	FreeAfter float64 `json:"free_after"`
}

func runPlace(ctx context.Context, o *placeOptions, w io.Writer) error {
	switch {
	case o.gpus < 0 || o.nodes < 1:
		return withCode(exitUsage, errors.New("--gpus must be ≥ 0 and --nodes ≥ 1"))
	case o.snapshot != "" && o.kubeconfig != "":
		return withCode(exitUsage, errors.New("give --snapshot or --kubeconfig, not both"))
	}
	if o.policy != "" {
		if _, err := provisioner.ParsePlacePolicy(o.policy); err != nil {
			return withCode(exitUsage, fmt.Errorf("--policy: %w", err))
		}
	}
	queueing := o.snapshot != ""
	var rules *provisioner.TeamRules
	if o.rules != "" {
		var err error
		if rules, err = loadRules(o.rules, queueing); err != nil {
			return err
		}
		if o.policy != "" {
			cfg := rules.Config()
			cfg.Placement.Policy = provisioner.PlacePolicy(o.policy)
			if rules, err = provisioner.NewTeamRules(cfg, queueing); err != nil {
				return withCode(exitBadInput, err)
			}
		}
	}
	req := provisioner.SubmitRequest{Name: "mirage-place", Account: o.team, GPUs: o.gpus, Nodes: o.nodes, GPUType: o.gpuType, Dependency: o.dep}
	v := placeView{Team: o.team}
	var snap *provisioner.Snapshot
	var now time.Time
	var checkpoints map[string]time.Time
	if o.snapshot != "" {
		s, err := loadSnapshot(o.snapshot)
		if err != nil {
			return err
		}
		snap, now = s, o.now()
		if !s.Time.IsZero() {
			now = s.Time
		}
		v.Source = "snapshot " + o.snapshot + " (judged as Slurm: queued when nothing fits now)"
	} else {
		cfg, err := o.config()
		if err != nil {
			return err
		}
		c, err := o.client(cfg)
		if err != nil {
			return err
		}
		inv, err := c.Inventory(ctx)
		if err != nil {
			return k8sErr(err)
		}
		snap, now, checkpoints = inv.Snapshot(), inv.Time, inv.Checkpoints
		if rules != nil {
			snap = k8s.RulesSnapshot(inv, rules)
		}
		v.Source = "kubernetes " + o.kubeconfig + " (judged as mirage's Kubernetes mode)"
	}
	if rules == nil {
		return placeOnly(w, o, snap, now, req, v)
	}
	d, err := rules.Decide(provisioner.DecideInput{Now: now, Snapshot: snap, Request: &req, Checkpoints: checkpoints, Explain: true})
	if err != nil {
		return placeErr(err)
	}
	v.Demand, v.Verdict, v.Reason, v.Usage = d.Demand.String(), string(d.Verdict), d.Reason, &d.Usage
	v.Mix, v.Reclaim, v.NodeList, v.Exclude, v.QOS = d.Mix.String(), d.Reclaim, req.NodeList, req.Exclude, d.QOS
	cfg := rules.Config()
	v.Policy = string(cfg.Placement.Policy)
	if d.Placement != nil {
		fillPlacement(&v, d.Placement, o.all)
	} else if d.Verdict == provisioner.VerdictDefer {
		v.Nodes, v.Rejected = []string{}, map[string]int{}
	}
	return printPlace(w, &v, o)
}

// placeOnly shows the placement without team rules.
func placeOnly(w io.Writer, o *placeOptions, snap *provisioner.Snapshot, now time.Time, req provisioner.SubmitRequest, v placeView) error {
	d, err := provisioner.DemandOf(&req)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	st := provisioner.PlaceStateFromSnapshot(snap)
	if err := st.CheckFits(d); err != nil {
		return placeErr(err)
	}
	pol := provisioner.FragAware
	if o.policy != "" {
		pol = provisioner.PlacePolicy(o.policy)
	}
	mix := provisioner.MixFromJobs(st, snap, nil, now.Add(-provisioner.DefaultMixWindow), provisioner.MixOptions{})
	p, err := provisioner.Place(st, d, pol, provisioner.PlaceOptions{Mix: &mix, Explain: true})
	if err != nil {
		return placeErr(err)
	}
	v.Demand, v.Policy, v.Mix = d.String(), string(pol), mix.String()
	v.Verdict = "placed"
	if !p.OK() {
		v.Verdict = "no-room"
	}
	v.Reason = p.Reason + " (no --rules: quotas not checked)"
	fillPlacement(&v, p, o.all)
	return printPlace(w, &v, o)
}

// fillPlacement copies the placement's nodes, candidates and rejections.
func fillPlacement(v *placeView, p *provisioner.Placement, all bool) {
	v.Nodes, v.Rejected = p.NodeNames(), p.Rejected
	for i, c := range p.Ranked {
		if !all && i >= 5 {
			break
		}
		v.Ranked = append(v.Ranked, candidateView{c.Node, c.Score, c.Norm, c.FragDelta, c.FreeAfter})
	}
	if all {
		v.RejectedN = p.Rejections
	}
}

// placeErr maps the rules' errors to exit codes.
func placeErr(err error) error {
	switch {
	case errors.Is(err, provisioner.ErrUnknownTeam), errors.Is(err, provisioner.ErrJobTooLarge), errors.Is(err, provisioner.ErrBadDemand),
		errors.Is(err, provisioner.ErrQuotaExceedsCluster), errors.Is(err, provisioner.ErrTeamConfig), errors.Is(err, provisioner.ErrUnknownNode):
		return withCode(exitBadInput, err)
	}
	return k8sErr(err)
}

func printPlace(w io.Writer, v *placeView, o *placeOptions) error {
	if o.json {
		if v.Ranked == nil {
			v.Ranked = []candidateView{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(w, "job:      %s for team %s (dry run: nothing submitted)\n", v.Demand, v.Team)
	fmt.Fprintf(w, "cluster:  %s\n", v.Source)
	fmt.Fprintf(w, "verdict:  %s\n", v.Verdict)
	fmt.Fprintf(w, "why:      %s\n", v.Reason)
	if u := v.Usage; u != nil {
		fmt.Fprintf(w, "usage:    %d of %d GPUs within quota, %d borrowed\n", u.Used, u.Quota, u.Borrowed)
	}
	if len(v.Nodes) > 0 {
		fmt.Fprintf(w, "nodes:    %s (%s)\n", strings.Join(v.Nodes, ","), v.Policy)
	}
	if v.QOS != "" || len(v.NodeList) > 0 || len(v.Exclude) > 0 {
		var parts []string
		if v.QOS != "" {
			parts = append(parts, "QOS "+v.QOS)
		}
		if len(v.NodeList) > 0 {
			parts = append(parts, "node list "+strings.Join(v.NodeList, ","))
		}
		if len(v.Exclude) > 0 {
			parts = append(parts, "exclude "+strings.Join(v.Exclude, ","))
		}
		fmt.Fprintf(w, "submit:   %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintf(w, "mix:      %s\n", v.Mix)
	if len(v.Ranked) > 0 {
		fmt.Fprintln(w, "\ncandidates (best first):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSCORE\tNORM\tFRAG-DELTA\tFREE-AFTER\t")
		for _, c := range v.Ranked {
			fmt.Fprintf(tw, "%s\t%.3f\t%.2f\t%+.2f\t%s\t\n", c.Node, c.Score, c.Norm, c.FragDelta, fmtGPUs(c.FreeAfter))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Rejected) > 0 {
		fmt.Fprintln(w, "\nrejected:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if len(v.RejectedN) > 0 {
			for _, r := range v.RejectedN {
				fmt.Fprintf(tw, "%s\t%s\t\n", r.Node, r.Reason)
			}
		} else {
			for _, r := range sortedKeysInt(v.Rejected) {
				fmt.Fprintf(tw, "%d nodes\t%s\t\n", v.Rejected[r], r)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p := v.Reclaim; p != nil {
		fmt.Fprintf(w, "\nreclaim plan: %s\n", p.Reason)
		for i, s := range p.Steps {
			switch s.Kind {
			case provisioner.StepSignal:
				fmt.Fprintf(w, "  %d. signal %s %s (checkpoint)\n", i+1, s.JobID, s.Signal)
			case provisioner.StepWait:
				fmt.Fprintf(w, "  %d. wait %s (grace period)\n", i+1, s.Grace)
			case provisioner.StepEvict:
				fmt.Fprintf(w, "  %d. evict %s — %s\n", i+1, s.JobID, s.Reason)
			case provisioner.StepPlace:
				fmt.Fprintf(w, "  %d. place on %s\n", i+1, s.Node)
			}
		}
	}
	return nil
}

func sortedKeysInt(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
