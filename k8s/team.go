package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// ErrDeferred is returned by TeamCluster.Place when the team rules defer
// the submission (over quota with nothing idle to borrow, or no room and
// no borrowed work to reclaim). Nothing was created.
// It matches provisioner.ErrNotSubmitted.
var ErrDeferred error = deferredError{}

type deferredError struct{}

func (deferredError) Error() string { return "deferred" }

// Is makes a deferral match provisioner.ErrNotSubmitted.
func (deferredError) Is(target error) bool { return target == provisioner.ErrNotSubmitted }

// ErrNotBorrowed is returned when a reclaim victim turns out not to be
// borrowed work when it is about to be evicted: it is not evicted.
var ErrNotBorrowed = provisioner.ErrNotBorrowed

// TeamCluster is the direct, one-job API of the team rules on Kubernetes:
// Plan (the dry run of mirage place) and Place (decide and carry out at
// once). It takes one snapshot, asks the rules (team.Rules.Decide, the
// decision the engine's Step asks for through Admit) and carries the
// decision out as the engine does: a reclaim through
// provisioner.ExecuteReclaim, the job through Client.Submit onto the
// chosen node. The chain commands and the controller do not use it: their
// engine reads one snapshot per cycle and executes Step's ops.
type TeamCluster struct {
	*Client
	Rules *team.Rules
	Log   *slog.Logger // decision log (default slog.Default())
}

// NewTeamCluster wraps a client with the team rules (TeamsConfig applied).
func NewTeamCluster(c *Client, rules *team.Rules) *TeamCluster {
	c.cfg = TeamsConfig(c.cfg, rules)
	return &TeamCluster{Client: c, Rules: rules}
}

// TeamsConfig is cfg for the team rules: borrowed work gets the rules'
// borrowed QOS (hence the borrowed label and priority class) and, when
// cfg lists no teams, the rules' teams are the known teams.
func TeamsConfig(cfg Config, rules *team.Rules) Config {
	rc := rules.Config()
	cfg.BorrowedQOS = rc.Borrowing.QOS
	if len(cfg.Teams) == 0 {
		cfg.Teams = rc.TeamNames()
	}
	return cfg
}

func (tc *TeamCluster) log() *slog.Logger {
	if tc.Log != nil {
		return tc.Log
	}
	return slog.Default()
}

// Plan is the dry run: the team rules' decision for req on the current
// snapshot, without changing anything. req is not modified.
func (tc *TeamCluster) Plan(ctx context.Context, req provisioner.SubmitRequest) (*team.Decision, *provisioner.Snapshot, error) {
	snap, err := tc.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, err := tc.Rules.Decide(team.DecideInput{Now: snap.Time, Snapshot: snap, Request: &req})
	if err != nil {
		return nil, snap, err
	}
	return d, snap, nil
}

// PlaceResult reports what Place did.
type PlaceResult struct {
	Decision *team.Decision // the rules' decision
	JobID    string         // the deployed job ("" when deferred)
	Node     string         // where it went
	Borrowed bool           // deployed as borrowed work
	Log      []string       // what was done, in order
}

// Place decides and carries out one submission:
//
//  1. one snapshot (an unreachable API server stops here: nothing changed);
//  2. the team rules' decision;
//  3. admit or borrow: deploy onto the chosen node (borrowed work with the
//     borrowed QOS, hence the borrowed label and priority class);
//  4. reclaim: provisioner.ExecuteReclaim — every victim asked to
//     checkpoint, then all evicted at once with the grace period (a victim
//     no longer borrowed work is not evicted, and the job is not
//     deployed) — then deploy onto the freed node;
//  5. defer: nothing is created; the error wraps ErrDeferred.
func (tc *TeamCluster) Place(ctx context.Context, req provisioner.SubmitRequest) (*PlaceResult, error) {
	d, _, err := tc.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &PlaceResult{Decision: d}
	logf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		res.Log = append(res.Log, msg)
		tc.log().Info("k8s team rules: "+msg, "team", d.Team, "verdict", d.Verdict)
	}
	logf("%s: %s", d.Verdict, d.Reason)
	r := req
	if r.QOS == tc.cfg.BorrowedQOS {
		r.QOS = "" // borrowed only when the rules say so now
	}
	switch d.Verdict {
	case team.VerdictAdmit, team.VerdictBorrow:
		r.NodeList = d.Placement.NodeNames()
		if d.Verdict == team.VerdictBorrow {
			r.QOS = d.QOS
		}
	case team.VerdictReclaim:
		notes, err := provisioner.ExecuteReclaim(ctx, tc.Client, d.Reclaim.Order())
		for _, n := range notes {
			logf("%s", n)
		}
		if err != nil {
			return res, fmt.Errorf("k8s: %w", err)
		}
		r.NodeList = []string{d.Reclaim.Node}
	default:
		return res, fmt.Errorf("k8s: team %s: %w by the team rules: %s", d.Team, ErrDeferred, d.Reason)
	}
	id, err := tc.Client.Submit(ctx, r)
	if err != nil {
		return res, err
	}
	res.JobID, res.Node = id, r.NodeList[0]
	res.Borrowed = r.QOS != "" && r.QOS == tc.cfg.BorrowedQOS
	logf("deployed %s on %s (borrowed: %t)", id, res.Node, res.Borrowed)
	return res, nil
}

// Teams lists the teams the rules know, sorted.
func (tc *TeamCluster) Teams() []string {
	cfg := tc.Rules.Config()
	return slices.Clone(cfg.TeamNames())
}

// ExplainState fills in the cluster state of a placement dry run
// (mirage place) from the live cluster: its snapshot (borrowed pods marked
// with the client's borrowed QOS, checkpoints, Kubernetes' Capabilities)
// and its time. It returns where the state came from, for the verdict's
// header.
func (c *Client) ExplainState(ctx context.Context, in *team.ExplainInput) (source string, err error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	in.Snapshot, in.Now = snap, snap.Time
	return "kubernetes " + c.kubeconfig + " (judged as mirage's Kubernetes mode)", nil
}
