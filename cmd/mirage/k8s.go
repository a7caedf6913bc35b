package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/provisioner"
)

func init() { register(newK8sCmd) }

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes: GPU inventory per node and per team",
		Long: `Commands for mirage's Kubernetes mode. A pod's team comes from a namespace→team
mapping or, failing that, from a pod label (default mirage.io/team). mirage
needs only the permissions in scripts/k8s/rbac/.

The Kubernetes mode in full: docs/guide/kubernetes.md.`,
	}
	cmd.AddCommand(newK8sInventoryCmd())
	return cmd
}

// k8sFlags are the connection and team-mapping flags shared by the
// Kubernetes commands.
type k8sFlags struct {
	kubeconfig     string
	teamLabel      string
	namespaceTeams []string // ns=team
	nodeSelector   string

	// newClient builds the adapter; tests replace it with a fake clientset.
	newClient func(path string, cfg k8s.Config) (*k8s.Client, error)
}

func (f *k8sFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&f.teamLabel, "team-label", k8s.DefaultTeamLabel, "pod label naming the team")
	fl.StringArrayVar(&f.namespaceTeams, "namespace-team", nil, "NAMESPACE=TEAM: pods in NAMESPACE belong to TEAM (repeatable; wins over the label)")
	fl.StringVar(&f.nodeSelector, "node-selector", "", "label selector restricting the nodes listed")
}

// config turns the flags into the adapter's configuration.
func (f *k8sFlags) config() (k8s.Config, error) {
	cfg := k8s.Config{Mapping: k8s.Mapping{TeamLabel: f.teamLabel}, NodeSelector: f.nodeSelector}
	if len(f.namespaceTeams) > 0 {
		cfg.NamespaceTeams = map[string]string{}
		for _, kv := range f.namespaceTeams {
			ns, team, ok := strings.Cut(kv, "=")
			if !ok || ns == "" || team == "" {
				return cfg, withCode(exitUsage, fmt.Errorf("--namespace-team %q: want NAMESPACE=TEAM", kv))
			}
			cfg.NamespaceTeams[ns] = team
		}
	}
	return cfg, nil
}

// client builds the adapter from the flags.
func (f *k8sFlags) client(cfg k8s.Config) (*k8s.Client, error) {
	if f.kubeconfig == "" {
		f.kubeconfig = defaultKubeconfig()
	}
	newClient := f.newClient
	if newClient == nil {
		newClient = k8s.NewFromKubeconfig
	}
	c, err := newClient(f.kubeconfig, cfg)
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	return c, nil
}

// k8sInventoryOptions are the flags of "mirage k8s inventory".
type k8sInventoryOptions struct {
	k8sFlags
	teams   []string // known teams
	team    string   // show only this team
	jobSize int      // job size for the fragmentation column (0 = most common request)
	rules   string   // team rules file: quotas and the learned job-size mix
	json    bool
}

func newK8sInventoryCmd() *cobra.Command {
	o := &k8sInventoryOptions{}
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "GPUs per node and per team: total, used, borrowed, free, fragmentation",
		Long: `Print the GPU inventory of a Kubernetes cluster.

Per node: state (up, drained = cordoned, down = not ready), GPU product,
allocatable GPUs (TOTAL), GPUs requested by bound pods (USED), of those held by
borrowed pods (BORROWED), FREE (on up nodes only) and FRAG: free GPUs on a node
that cannot fit one job of the reference size (--job-size, default the most
common GPU request among running pods).

Per team: GPUs used and borrowed, pods bound and pending. Quota-based figures
(nominal GPUs, free quota) come from the team rules when configured, "-" otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runK8sInventory(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.k8sFlags.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.rules, "rules", "", "team rules file (YAML/JSON): quotas in the team table, FRAG under the learned job-size mix")
	f.StringSliceVar(&o.teams, "teams", nil, "known teams (comma-separated); --team must be one of them or hold GPUs")
	f.StringVar(&o.team, "team", "", "show only this team's row and the nodes it uses")
	f.IntVar(&o.jobSize, "job-size", 0, "reference job size in GPUs for the FRAG column (0 = most common request)")
	f.BoolVar(&o.json, "json", false, "print JSON instead of tables")
	return cmd
}

// defaultKubeconfig is $KUBECONFIG (its first entry), else ~/.kube/config.
func defaultKubeconfig() string {
	if v := os.Getenv("KUBECONFIG"); v != "" {
		return filepath.SplitList(v)[0]
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}

// k8sTeamQuota is the hook through which the team rules supply a team's
// nominal GPUs (its quota) for the TOTAL and FREE columns of the team table;
// nil, or ok=false, prints "-".
var k8sTeamQuota func(team string) (gpus int, ok bool)

// nodeFragmentation is the FRAG column: per node, the free GPUs that the
// job-size mix cannot use (the ATC'23 measure, provisioner.Fragmentation).
// Without team rules the mix is one job of the reference size, which makes
// FRAG the free GPUs of nodes that cannot fit such a job.
func nodeFragmentation(s *provisioner.Snapshot, mix provisioner.Mix) map[string]float64 {
	st := provisioner.PlaceStateFromSnapshot(s)
	_, _, per := st.Fragmentation(mix)
	out := make(map[string]float64, len(per))
	for i, f := range per {
		out[st.Node(i).Name] = math.Round(f*10) / 10
	}
	return out
}

// inventoryView is the JSON shape of the inventory.
type inventoryView struct {
	Time     string     `json:"time"`
	JobSize  int        `json:"job_size"`
	Nodes    []nodeView `json:"nodes"`
	Teams    []teamView `json:"teams"`
	Total    int        `json:"total"`
	Used     int        `json:"used"`
	Borrowed int        `json:"borrowed"`
	Free     int        `json:"free"`
	Frag     float64    `json:"fragmented"`
	Mix      string     `json:"mix,omitempty"`
}

type nodeView struct {
	Name     string             `json:"name"`
	State    string             `json:"state"`
	GPUType  string             `json:"gpu_type,omitempty"`
	Total    int                `json:"total"`
	Used     int                `json:"used"`
	Borrowed int                `json:"borrowed"`
	Free     int                `json:"free"`
	Frag     float64            `json:"fragmented"`
	ByTeam   map[string]int     `json:"by_team,omitempty"`
	MIG      map[string]migView `json:"mig,omitempty"`
}

type migView struct {
	Allocatable int64 `json:"allocatable"`
	Used        int64 `json:"used"`
}

type teamView struct {
	Team     string `json:"team"`
	Quota    *int   `json:"quota,omitempty"`
	Used     int    `json:"used"`
	Borrowed int    `json:"borrowed"`
	Free     *int   `json:"free,omitempty"`
	Pods     int    `json:"pods"`
	Pending  int    `json:"pending"`
}

func runK8sInventory(ctx context.Context, o *k8sInventoryOptions, w io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	cfg.Teams = o.teams
	if o.jobSize < 0 {
		return withCode(exitUsage, fmt.Errorf("--job-size %d: must be ≥ 0", o.jobSize))
	}
	var rules *provisioner.TeamRules
	if o.rules != "" {
		if rules, err = loadRules(o.rules, false); err != nil {
			return err
		}
		if len(cfg.Teams) == 0 {
			rc := rules.Config()
			cfg.Teams = rc.TeamNames()
		}
	}
	c, err := o.client(cfg)
	if err != nil {
		return err
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		return k8sErr(err)
	}
	if o.team != "" && inv.Team(o.team) == nil {
		if err := c.CheckTeam(o.team); err != nil {
			return withCode(exitBadInput, err)
		}
		if len(o.teams) == 0 {
			return withCode(exitBadInput, fmt.Errorf("k8s: %w %q: no pod of it holds GPUs (teams seen: %s)", k8s.ErrUnknownTeam, o.team, teamNames(inv)))
		}
	}
	v := view(inv, o, rules)
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return printInventory(w, v)
}

// k8sErr maps adapter errors to exit codes.
func k8sErr(err error) error {
	switch {
	case errors.Is(err, provisioner.ErrUnavailable):
		return withCode(exitUnavailable, err)
	case errors.Is(err, k8s.ErrUnknownTeam):
		return withCode(exitBadInput, err)
	case errors.Is(err, provisioner.ErrRejected):
		return withCode(exitRejected, err)
	}
	return err
}

func teamNames(inv *k8s.Inventory) string {
	var names []string
	for _, t := range inv.Teams {
		if t.Team != "" {
			names = append(names, t.Team)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// view computes the printed figures (fragmentation and quota through the hooks).
func view(inv *k8s.Inventory, o *k8sInventoryOptions, rules *provisioner.TeamRules) inventoryView {
	size := o.jobSize
	if size == 0 {
		size = commonJobSize(inv)
	}
	s := inv.Snapshot()
	v := inventoryView{Time: inv.Time.UTC().Format("2006-01-02T15:04:05Z"), JobSize: size,
		Nodes: []nodeView{}, Teams: []teamView{}}
	mix := provisioner.Mix{Classes: []provisioner.MixClass{{GPUMilli: size * provisioner.MilliGPU, Weight: 1}}}
	quota := k8sTeamQuota
	if rules != nil {
		rs := k8s.RulesSnapshot(inv, rules)
		cfg := rules.Config()
		if o.jobSize == 0 {
			mix = provisioner.MixFromJobs(provisioner.PlaceStateFromSnapshot(rs), rs, nil,
				inv.Time.Add(-time.Duration(cfg.Placement.HistoryWindow)), provisioner.MixOptions{PriorJobs: cfg.Placement.PriorJobs})
			v.Mix = mix.String()
		}
		quota = func(team string) (int, bool) {
			if q := cfg.Team(team); q != nil {
				return q.GPUs, true
			}
			return 0, false
		}
	}
	frag := nodeFragmentation(s, mix)
	for _, n := range inv.Nodes {
		if o.team != "" && n.ByTeam[o.team] == 0 {
			continue
		}
		nv := nodeView{Name: n.Name, State: string(n.State), GPUType: n.GPUType, Total: n.GPUs, Used: n.Used,
			Borrowed: n.Borrowed, Free: n.Free, Frag: frag[n.Name], ByTeam: n.ByTeam}
		for name, c := range n.MIG {
			if nv.MIG == nil {
				nv.MIG = map[string]migView{}
			}
			nv.MIG[name] = migView{Allocatable: c.Allocatable, Used: c.Used}
		}
		v.Nodes = append(v.Nodes, nv)
		v.Total += n.GPUs
		v.Used += n.Used
		v.Borrowed += n.Borrowed
		v.Free += n.Free
		v.Frag += nv.Frag
	}
	for _, t := range inv.Teams {
		if o.team != "" && t.Team != o.team {
			continue
		}
		tv := teamView{Team: t.Team, Used: t.Used, Borrowed: t.Borrowed, Pods: t.Pods, Pending: t.Pending}
		if quota != nil {
			if q, ok := quota(t.Team); ok {
				free := max(q-(t.Used-t.Borrowed), 0)
				tv.Quota, tv.Free = &q, &free
			}
		}
		v.Teams = append(v.Teams, tv)
	}
	return v
}

// commonJobSize is the most common GPU request among running GPU pods (ties:
// the larger), or 1 when there are none.
func commonJobSize(inv *k8s.Inventory) int {
	count := map[int]int{}
	for _, j := range inv.Jobs {
		if j.State == provisioner.StateRunning && j.GPUs > 0 {
			count[j.GPUs]++
		}
	}
	best, bestN := 1, 0
	for size, n := range count {
		if n > bestN || n == bestN && size > best {
			best, bestN = size, n
		}
	}
	return best
}

func printInventory(w io.Writer, v inventoryView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tGPU-TYPE\tTOTAL\tUSED\tBORROWED\tFREE\tFRAG\t")
	for _, n := range v.Nodes {
		typ := n.GPUType
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", n.Name, n.State, typ, n.Total, n.Used, n.Borrowed, n.Free, fmtGPUs(n.Frag))
	}
	fmt.Fprintf(tw, "all\t\t\t%d\t%d\t%d\t%d\t%s\t\n", v.Total, v.Used, v.Borrowed, v.Free, fmtGPUs(v.Frag))
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.Mix != "" {
		fmt.Fprintf(w, "(FRAG: free GPUs the expected job mix cannot use (ATC'23 measure); mix: %s)\n\n", v.Mix)
	} else {
		fmt.Fprintf(w, "(FRAG: free GPUs on nodes that cannot fit a %d-GPU job)\n\n", v.JobSize)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tQUOTA\tUSED\tBORROWED\tFREE\tPODS\tPENDING\t")
	teams := append([]teamView(nil), v.Teams...)
	sort.Slice(teams, func(a, b int) bool { return teams[a].Team < teams[b].Team })
	for _, t := range teams {
		name := t.Team
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t\n", name, optInt(t.Quota), t.Used, t.Borrowed, optInt(t.Free), t.Pods, t.Pending)
	}
	return tw.Flush()
}

// fmtGPUs prints a GPU figure with at most one decimal.
func fmtGPUs(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) }

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
