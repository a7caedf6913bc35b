package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// ErrDeferred is returned by TeamCluster.Submit when the submission cannot
// go ahead now: the team rules defer it (over quota with nothing idle to
// borrow, or no room and no borrowed work to reclaim), or it depends on a
// job that has not ended. Nothing was created; the engine tries again on
// its next cycle (it is deliberately not provisioner.ErrRejected, which
// would count as a failed attempt).
// It matches provisioner.ErrNotSubmitted, so the engine decides again at
// its next cycle without waiting for a submission grace.
var ErrDeferred error = deferredError{}

type deferredError struct{}

func (deferredError) Error() string { return "deferred" }

// Is makes a deferral match provisioner.ErrNotSubmitted.
func (deferredError) Is(target error) bool { return target == provisioner.ErrNotSubmitted }

// ErrNotBorrowed is returned when a reclaim victim turns out not to carry
// the borrowed label when it is about to be evicted: nothing is evicted.
var ErrNotBorrowed = errors.New("reclaim victim is not borrowed work")

// TeamCluster is the Kubernetes backend with the team rules applied: its
// Submit takes the inventory, asks the rules (quota, borrowing, packing),
// reclaims borrowed work when a team under its quota needs room, and
// deploys onto the chosen node. It implements provisioner.RulesCluster; the
// rules must be built for a non-queueing backend (team.NewRules(cfg, false)).
// slurm.TeamCluster is its Slurm counterpart.
type TeamCluster struct {
	*Client
	Rules *team.Rules
	Log   *slog.Logger // decision log (default slog.Default())

	mu     sync.Mutex
	warned map[string]bool // mislabelled pods already logged, by pod and label
}

var _ provisioner.RulesCluster = (*TeamCluster)(nil)

// NewTeamCluster wraps a client with the team rules. The client's borrowed
// QOS becomes the rules' (so borrowed submissions get the borrowed label and
// priority class) and, when the client lists no teams, the rules' teams
// become its known teams.
func NewTeamCluster(c *Client, rules *team.Rules) *TeamCluster {
	cfg := rules.Config()
	c.cfg.BorrowedQOS = cfg.Borrowing.QOS
	if len(c.cfg.Teams) == 0 {
		c.cfg.Teams = cfg.TeamNames()
	}
	return &TeamCluster{Client: c, Rules: rules}
}

// maxWarned bounds the pods remembered as already logged.
const maxWarned = 4096

// inventory is Client.Inventory, logging once per pod and label each pod
// whose team or borrowed label claims what the mapping does not give it.
func (tc *TeamCluster) inventory(ctx context.Context) (*Inventory, error) {
	inv, err := tc.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, ml := range inv.Mislabelled {
		key := ml.Pod + " " + ml.Label
		if tc.warned[key] {
			continue
		}
		if tc.warned == nil || len(tc.warned) >= maxWarned { // bounded: tenants choose how many pods there are
			tc.warned = map[string]bool{}
		}
		tc.warned[key] = true
		tc.log().Warn("k8s: a pod's label claims what mirage does not count it as (teams come from the namespace mapping, borrowed work from its priority class); logged once per pod",
			"pod", ml.Pod, "label", ml.Label, "value", ml.Claimed, "counted", ml.Counted)
	}
	return inv, nil
}

func (tc *TeamCluster) log() *slog.Logger {
	if tc.Log != nil {
		return tc.Log
	}
	return slog.Default()
}

// RulesSnapshot is the inventory as the team rules see it: borrowed pods
// (Mapping.Borrowed) carry the rules' borrowed QOS, the mark
// the rules recognise on every backend.
func RulesSnapshot(inv *Inventory, rules *team.Rules) *provisioner.Snapshot {
	s := inv.Snapshot()
	qos := rules.Config().Borrowing.QOS
	for i := range s.Jobs {
		if inv.BorrowedJobs[s.Jobs[i].ID] {
			s.Jobs[i].QOS = qos
		}
	}
	return s
}

// Snapshot implements provisioner.Cluster with the rules' view of the
// inventory (RulesSnapshot): borrowed pods carry the borrowed QOS, so that
// the engine's Rules.Admit counts them as the TeamCluster does.
func (tc *TeamCluster) Snapshot(ctx context.Context) (*provisioner.Snapshot, error) {
	inv, err := tc.inventory(ctx)
	if err != nil {
		return nil, err
	}
	return RulesSnapshot(inv, tc.Rules), nil
}

// Plan is the dry run: the team rules' decision for req on the current
// inventory, without changing anything. req is not modified.
func (tc *TeamCluster) Plan(ctx context.Context, req provisioner.SubmitRequest) (*team.Decision, *Inventory, error) {
	inv, err := tc.inventory(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, err := tc.Rules.Decide(team.DecideInput{Now: tc.cfg.Clock.Now(), Snapshot: RulesSnapshot(inv, tc.Rules),
		Request: &req, Checkpoints: inv.Checkpoints})
	if err != nil {
		return nil, inv, err
	}
	return d, inv, nil
}

// PlaceResult reports what Place did.
type PlaceResult struct {
	Decision *team.Decision // the rules' decision
	JobID    string         // the deployed job ("" when deferred)
	Node     string         // where it went
	Borrowed bool           // deployed as borrowed work
	Evicted  []*EvictResult // the reclaim's evictions, by victim
	Log      []string       // what was done, in order
}

// Place admits, places, reclaims if needed and deploys one submission:
//
//  1. inventory (an unreachable API server stops here: nothing changed);
//  2. the team rules' decision;
//  3. admit or borrow: deploy onto the chosen node (borrowed work with the
//     borrowed QOS, hence the borrowed label and priority class);
//  4. reclaim: check that every victim still carries the borrowed label
//     (else stop, nothing evicted), ask each to checkpoint (annotation and
//     hook), evict them all at once with the grace period (each gets the
//     whole grace period), then deploy onto the freed node;
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
	switch d.Verdict {
	case team.VerdictAdmit, team.VerdictBorrow:
		r := req
		r.NodeList = d.Placement.NodeNames()
		switch {
		case d.Verdict == team.VerdictBorrow:
			r.QOS = d.QOS
		case r.QOS == tc.Rules.Config().Borrowing.QOS:
			r.QOS = "" // within quota now (an earlier Admit may have said borrow): never deployed as borrowed work
		}
		return tc.deploy(ctx, res, r, logf)
	case team.VerdictReclaim:
		if err := tc.reclaim(ctx, res, d.Reclaim, logf); err != nil {
			return res, err
		}
		r := req
		r.NodeList = []string{d.Reclaim.Node}
		if r.QOS == tc.Rules.Config().Borrowing.QOS {
			r.QOS = "" // within quota: never deployed as borrowed work
		}
		// The freed room must still be there (nothing else took it meanwhile).
		inv, err := tc.inventory(ctx)
		if err != nil {
			return res, err
		}
		if n := inv.Node(d.Reclaim.Node); n == nil || n.Free < req.GPUs/max(req.Nodes, 1) {
			free := 0
			if n != nil {
				free = n.Free
			}
			return res, fmt.Errorf("k8s: team %s: after the reclaim node %s has %d free GPUs, the job needs %d: %w",
				d.Team, d.Reclaim.Node, free, req.GPUs, ErrDeferred)
		}
		return tc.deploy(ctx, res, r, logf)
	}
	return res, fmt.Errorf("k8s: team %s: %w by the team rules: %s", d.Team, ErrDeferred, d.Reason)
}

// deploy creates the workload and records it in the result.
func (tc *TeamCluster) deploy(ctx context.Context, res *PlaceResult, req provisioner.SubmitRequest, logf func(string, ...any)) (*PlaceResult, error) {
	id, err := tc.Client.Submit(ctx, req)
	if err != nil {
		return res, err
	}
	res.JobID, res.Node = id, req.NodeList[0]
	res.Borrowed = req.QOS != "" && req.QOS == tc.cfg.BorrowedQOS
	logf("deployed %s on %s (borrowed: %t)", id, res.Node, res.Borrowed)
	return res, nil
}

// reclaim performs a reclaim plan's signal, wait and evict steps.
func (tc *TeamCluster) reclaim(ctx context.Context, res *PlaceResult, plan *team.ReclaimPlan, logf func(string, ...any)) error {
	// Every victim must still be borrowed work, checked on fresh objects.
	for _, v := range plan.Victims {
		ref, err := ParseRef(v.JobID)
		if err != nil {
			return err
		}
		pods, err := tc.refPods(ctx, ref)
		if err != nil {
			return fmt.Errorf("k8s: reclaim: %w", err)
		}
		m := tc.mapping()
		for i := range pods {
			if p := &pods[i]; !m.Borrowed(p) {
				return fmt.Errorf("k8s: reclaim: %w: pod %s/%s of %s is not borrowed work (priority class %q, label %s=%q); nothing evicted",
					ErrNotBorrowed, p.Namespace, p.Name, v.JobID, p.Spec.PriorityClassName, LabelBorrowed, p.Labels[LabelBorrowed])
			}
		}
	}
	var signal string
	for _, s := range plan.Steps {
		if s.Kind == team.StepSignal {
			signal = s.Signal
		}
	}
	grace := stepGrace(plan)
	// Checkpoint signals first, for all victims; an unreachable API server stops here.
	for _, v := range plan.Victims {
		err := tc.Signal(ctx, v.JobID, signal)
		switch {
		case errors.Is(err, provisioner.ErrUnavailable), errors.Is(err, provisioner.ErrNotFound), errors.Is(err, ErrBadRef):
			return fmt.Errorf("k8s: reclaim: checkpoint signal to %s: %w; nothing evicted", v.JobID, err)
		case err != nil:
			logf("checkpoint signal to %s partly failed (eviction goes ahead: the owner's quota must be freed): %v", v.JobID, err)
		default:
			logf("asked %s to checkpoint (%s)", v.JobID, signal)
		}
	}
	// Then evict them together, each with the full grace period.
	type out struct {
		i   int
		r   *EvictResult
		err error
	}
	outs := make([]out, len(plan.Victims))
	var wg sync.WaitGroup
	for i, v := range plan.Victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tc.Evict(ctx, v.JobID, grace, fmt.Sprintf("team %s needs its quota: %s", plan.Team, v.Reason))
			outs[i] = out{i, r, err}
		}()
	}
	wg.Wait()
	var errs []error
	for i, o := range outs {
		if o.r != nil {
			res.Evicted = append(res.Evicted, o.r)
		}
		if o.err != nil {
			errs = append(errs, fmt.Errorf("evict %s: %w", plan.Victims[i].JobID, o.err))
			continue
		}
		logf("evicted %s after a %s grace period (forced after the grace period: %d pods)", plan.Victims[i].JobID, grace, len(o.r.Forced))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("k8s: reclaim for team %s: %w", plan.Team, err)
	}
	return nil
}

// stepGrace is the plan's grace period (its wait step).
func stepGrace(plan *team.ReclaimPlan) time.Duration {
	for _, s := range plan.Steps {
		if s.Kind == team.StepWait {
			return s.Grace
		}
	}
	return 0
}

// Submit implements provisioner.Cluster with the team rules: Place, then
// the deployed job's id. Kubernetes has no job dependencies: a request that
// depends on jobs (afterany/afterok, treated alike) is deferred while any of
// them still holds its pods, and placed once they are gone. A deferral is an
// error wrapping ErrDeferred.
func (tc *TeamCluster) Submit(ctx context.Context, req provisioner.SubmitRequest) (string, error) {
	if len(req.Dependency) > 0 {
		inv, err := tc.inventory(ctx)
		if err != nil {
			return "", err
		}
		for _, id := range req.Dependency.JobIDs() {
			for i := range inv.Jobs {
				if inv.Jobs[i].ID == id {
					return "", fmt.Errorf("k8s: %s %w: it waits for %s to end (%s; Kubernetes has no job dependencies)", req.Name, ErrDeferred, id, req.Dependency)
				}
			}
		}
		req.Dependency = nil
	}
	res, err := tc.Place(ctx, req)
	if err != nil {
		return "", err
	}
	return res.JobID, nil
}

// TeamRules returns the rules, for the engine's admission step (the same
// rules the cluster applies at submission).
func (tc *TeamCluster) TeamRules() provisioner.Rules { return tc.Rules }

// Teams lists the teams the rules know, sorted.
func (tc *TeamCluster) Teams() []string {
	cfg := tc.Rules.Config()
	return slices.Clone(cfg.TeamNames())
}

// ExplainState fills in the cluster state of a placement dry run
// (mirage place) from the live inventory: the snapshot, as the team rules
// see it when in.Rules is set, its time and the checkpoints running. It
// returns where the state came from, for the verdict's header.
func (c *Client) ExplainState(ctx context.Context, in *team.ExplainInput) (source string, err error) {
	inv, err := c.Inventory(ctx)
	if err != nil {
		return "", err
	}
	in.Snapshot, in.Now, in.Checkpoints = inv.Snapshot(), inv.Time, inv.Checkpoints
	if in.Rules != nil {
		in.Snapshot = RulesSnapshot(inv, in.Rules)
	}
	return "kubernetes " + c.kubeconfig + " (judged as mirage's Kubernetes mode)", nil
}
