package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

func newK8sCmd(factory *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes: GPU inventory per node and per team",
		Long: `Commands for mirage's Kubernetes mode.

The Kubernetes mode in full: docs/guide/kubernetes.md.`,
	}
	cmd.AddCommand(newK8sInventoryCmd(factory, nil))
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
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then inside a pod its service account, then ~/.kube/config)")
	fl.StringVar(&f.teamLabel, "team-label", k8s.DefaultTeamLabel, "pod label naming the team")
	fl.StringArrayVar(&f.namespaceTeams, "namespace-team", nil, "NAMESPACE=TEAM: pods in NAMESPACE belong to TEAM (repeatable; wins over the label)")
	fl.StringVar(&f.nodeSelector, "node-selector", "", "label selector restricting the nodes listed")
}

// config is the client configuration of the flags; with team rules, the
// rules' namespace mapping, when they list one, is the admin's and decides
// teams alone, and their teams and borrowed QOS are the client's
// (k8s.TeamsConfig).
func (f *k8sFlags) config(rules *team.Rules) (k8s.Config, error) {
	var admin map[string]string
	if rules != nil {
		rc := rules.Config()
		admin = rc.NamespaceTeams()
	}
	m, err := k8s.NewMapping(f.teamLabel, f.namespaceTeams, admin)
	if err != nil {
		return k8s.Config{}, cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	cfg := k8s.Config{Mapping: m, NodeSelector: f.nodeSelector}
	if rules != nil {
		cfg = k8s.TeamsConfig(cfg, rules)
	}
	return cfg, nil
}

// client builds the adapter from the flags.
func (f *k8sFlags) client(cfg k8s.Config) (*k8s.Client, error) {
	if f.newClient == nil {
		f.newClient = k8s.NewFromKubeconfig
	}
	c, err := f.newClient(f.kubeconfig, cfg)
	return c, cmdutil.WithCode(cmdutil.ExitBadInput, err)
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

func newK8sInventoryCmd(factory *Factory, runF func(*k8sInventoryOptions) error) *cobra.Command {
	o := &k8sInventoryOptions{}
	cmd := &cobra.Command{
		Use: "inventory",
		Example: `  mirage k8s inventory --rules teams.yaml
  mirage k8s inventory --team vision --json --kubeconfig ~/.kube/config`,
		Short: "GPUs per node and per team: total, used, borrowed, free, fragmentation",
		Long: `Print the GPU inventory of a Kubernetes cluster per node and per team.
The columns: docs/guide/kubernetes.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runK8sInventory(cmd.Context(), o, factory.Out)
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

func runK8sInventory(ctx context.Context, o *k8sInventoryOptions, w io.Writer) error {
	if o.jobSize < 0 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--job-size %d: must be ≥ 0", o.jobSize))
	}
	var rules *team.Rules
	if o.rules != "" {
		var err error
		if rules, err = loadRules(o.rules); err != nil {
			return err
		}
	}
	cfg, err := o.config(rules)
	if err != nil {
		return err
	}
	cfg.Teams = o.teams
	if rules != nil && len(cfg.Teams) == 0 {
		rc := rules.Config()
		cfg.Teams = rc.TeamNames()
	}
	c, err := o.client(cfg)
	if err != nil {
		return err
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		return cmdutil.Coded(err, k8sCodes)
	}
	if o.team != "" && inv.Team(o.team) == nil {
		if err := c.CheckTeam(o.team); err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		if len(o.teams) == 0 {
			return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("k8s: %w %q: no pod of it holds GPUs (teams seen: %s)", k8s.ErrUnknownTeam, o.team, inv.TeamNames()))
		}
	}
	v := inv.View(k8s.ViewOptions{JobSize: o.jobSize, Team: o.team, Rules: rules})
	return cmdutil.PrintView(w, o.json, v, v)
}
