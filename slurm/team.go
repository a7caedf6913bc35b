package slurm

import (
	"slices"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// TeamCluster is the Slurm backend with the team rules applied. Slurm queues
// work and preempts by QOS itself, so the rules act at admission only: the
// engine asks them before each submission (TeamRules), and they set the
// borrowed QOS and packing hints (--nodelist/--exclude) on the request;
// Submit is the Client's. It implements provisioner.RulesCluster; the rules
// must be built for a queueing backend (team.NewRules(cfg, true)).
// k8s.TeamCluster is its Kubernetes counterpart.
type TeamCluster struct {
	*Client
	Rules *team.Rules
}

var (
	_ provisioner.RulesCluster = (*TeamCluster)(nil)
	_ provisioner.Unpinner     = (*TeamCluster)(nil)
)

// NewTeamCluster wraps a client with the team rules. It sets the client's
// Config.Accounts to the teams, so that the rules see every team's jobs on
// the text path too (call it before the client is in use).
func NewTeamCluster(c *Client, rules *team.Rules) *TeamCluster {
	cfg := rules.Config()
	c.cfg.Accounts = cfg.TeamNames()
	return &TeamCluster{Client: c, Rules: rules}
}

// TeamRules returns the rules, for the engine's admission step.
func (tc *TeamCluster) TeamRules() provisioner.Rules { return tc.Rules }

// Teams lists the teams the rules know, sorted.
func (tc *TeamCluster) Teams() []string {
	cfg := tc.Rules.Config()
	return slices.Clone(cfg.TeamNames())
}

// OpenChains opens the cluster of the chain commands: o resolved
// (Options.Resolve), every command killed with mirage (a crashed daemon
// leaves no sbatch running), and the team rules applied when rules is not
// nil (TeamCluster).
func OpenChains(o Options, rules *team.Rules) (provisioner.Cluster, error) {
	o.DieWithParent = true
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	c, err := Open(o)
	if err != nil {
		return nil, &optionError{ErrBadOption, err}
	}
	if rules == nil {
		return c, nil
	}
	return NewTeamCluster(c, rules), nil
}
