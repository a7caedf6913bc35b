package slurm

import (
	"github.com/mirage-gpu/mirage/provisioner"
)

// Capabilities are Slurm's, carried by every Snapshot: it queues jobs that
// cannot start yet (holding dependent ones until their dependency is met)
// and lifts a pending job's node list (Client.Unpin).
var Capabilities = provisioner.Capabilities{Queues: true, Unpins: true}

var _ provisioner.Unpinner = (*Client)(nil)

// OpenChains opens the cluster of the chain commands: o resolved
// (Options.Resolve) and every command killed with mirage (a crashed daemon
// leaves no sbatch running). accounts, when not empty (the team rules'
// teams), become Config.Accounts, so that the rules see every team's jobs
// on the text path too. The team rules themselves are the engine's
// (provisioner.Engine.Rules): Slurm applies what they decide through the
// request (a preemptible QOS, --nodelist/--exclude hints) and reclaims
// borrowed work by its own QOS preemption.
func OpenChains(o Options, accounts []string) (*Client, error) {
	o.DieWithParent = true
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	c, err := Open(o)
	if err != nil {
		return nil, &optionError{ErrBadOption, err}
	}
	if len(accounts) > 0 {
		c.cfg.Accounts = accounts
	}
	return c, nil
}
