package team

import (
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// ExplainInput is the question of a dry run: what would happen to this
// request on this cluster now.
type ExplainInput struct {
	Rules    *Rules                    // the team rules; nil: the placement alone, quotas not checked
	Policy   placement.Policy          // without Rules, the placement policy ("" = frag-aware); with Rules theirs applies
	Now      time.Time                 // decision time
	Snapshot *provisioner.Snapshot     // the cluster (its Caps decide whether work that cannot start now is queued or deferred)
	Request  provisioner.SubmitRequest // the job (not modified: Explain works on a copy)
	All      bool                      // list every candidate and rejected node (else the best 5 and a count per reason)
}

// Explanation is a dry run's account of one job: the verdict and why, the
// team's use against its quota, the chosen nodes with the candidates'
// scores, the rejected nodes, the QOS and packing hints the submission would
// carry, and the reclaim plan when borrowed work must make room.
type Explanation struct {
	Source    string                `json:"source"` // where the cluster view came from (set by the caller)
	Team      string                `json:"team"`
	Demand    string                `json:"demand"`
	Verdict   string                `json:"verdict"` // a Verdict; without rules "placed" or "no-room"
	Reason    string                `json:"reason"`
	Usage     *Usage                `json:"usage,omitempty"`
	Policy    string                `json:"policy"`
	Nodes     []string              `json:"nodes"`
	QOS       string                `json:"qos,omitempty"`
	NodeList  []string              `json:"node_list,omitempty"`
	Exclude   []string              `json:"exclude,omitempty"`
	Mix       string                `json:"mix"`
	Ranked    []RankedNode          `json:"candidates"`
	Rejected  map[string]int        `json:"rejected"`
	RejectedN []placement.Rejection `json:"rejected_nodes,omitempty"`
	Reclaim   *ReclaimPlan          `json:"reclaim,omitempty"`
}

// RankedNode is one candidate node with its scores, best first.
type RankedNode struct {
	Node      string  `json:"node"`
	Score     float64 `json:"score"`
	Norm      float64 `json:"normalised"`
	FragDelta float64 `json:"frag_delta"`
	FreeAfter float64 `json:"free_after"`
}

// rankedShown is how many candidates an explanation lists without All.
const rankedShown = 5

// Explain answers a dry run. With rules it is Decide with every candidate
// and rejection recorded; without, the placement alone under the policy
// (frag-aware by default) and the job-size mix of the snapshot's jobs over
// DefaultMixWindow. Errors are Decide's (bad input: unknown team, a job
// larger than any node, quotas beyond the cluster, ...).
func Explain(in ExplainInput) (*Explanation, error) {
	req := in.Request
	e := &Explanation{Team: req.Account}
	if in.Rules == nil {
		return explainPlacement(in, e)
	}
	d, err := in.Rules.Decide(DecideInput{Now: in.Now, Snapshot: in.Snapshot, Request: &req, Explain: true})
	if err != nil {
		return nil, err
	}
	e.Demand, e.Verdict, e.Reason, e.Usage = d.Demand.String(), string(d.Verdict), d.Reason, &d.Usage
	e.Mix, e.Reclaim, e.NodeList, e.Exclude, e.QOS = d.Mix.String(), d.Reclaim, req.NodeList, req.Exclude, d.QOS
	e.Policy = string(in.Rules.cfg.Placement.Policy)
	if d.Placement != nil {
		e.fill(d.Placement, in.All)
	} else if d.Verdict == VerdictDefer {
		e.Nodes, e.Rejected = []string{}, map[string]int{}
	}
	return e, nil
}

// explainPlacement is Explain without team rules.
func explainPlacement(in ExplainInput, e *Explanation) (*Explanation, error) {
	d, err := placement.DemandOf(&in.Request)
	if err != nil {
		return nil, err
	}
	st := placement.FromSnapshot(in.Snapshot)
	if err := st.CheckFits(d); err != nil {
		return nil, err
	}
	pol := placement.FragAware
	if in.Policy != "" {
		pol = in.Policy
	}
	mix := placement.MixFromJobs(st, in.Snapshot, nil, in.Now.Add(-DefaultMixWindow), placement.MixOptions{})
	p, err := placement.Place(st, d, pol, placement.Options{Mix: &mix, Explain: true})
	if err != nil {
		return nil, err
	}
	e.Demand, e.Policy, e.Mix = d.String(), string(pol), mix.String()
	e.Verdict = "placed"
	if !p.OK() {
		e.Verdict = "no-room"
	}
	e.Reason = p.Reason + " (no --rules: quotas not checked)"
	e.fill(p, in.All)
	return e, nil
}

// fill copies the placement's nodes, candidates and rejections.
func (e *Explanation) fill(p *placement.Result, all bool) {
	e.Nodes, e.Rejected = p.NodeNames(), p.Rejected
	for i, c := range p.Ranked {
		if !all && i >= rankedShown {
			break
		}
		e.Ranked = append(e.Ranked, RankedNode{c.Node, c.Score, c.Norm, c.FragDelta, c.FreeAfter})
	}
	if all {
		e.RejectedN = p.Rejections
	}
}
