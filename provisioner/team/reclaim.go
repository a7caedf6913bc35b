package team

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// ErrNoReclaim is returned when reclaiming borrowed work cannot make room
// for a job (not enough borrowed GPUs where the job could run).
var ErrNoReclaim = errors.New("reclaiming borrowed work cannot make room")

// Victim is one borrowed job a reclaim stops (the core's type: a reclaim
// travels to the engine as a provisioner.Reclaim).
type Victim = provisioner.Victim

// ReclaimStepKind is one kind of reclaim step.
type ReclaimStepKind string

// Reclaim steps, performed by the caller in the order of the plan.
const (
	StepSignal ReclaimStepKind = "signal" // ask the victim to checkpoint (Cluster.Signal)
	StepWait   ReclaimStepKind = "wait"   // wait the grace period
	StepEvict  ReclaimStepKind = "evict"  // evict (stop) the victim
	StepPlace  ReclaimStepKind = "place"  // place the job on the freed node
)

// ReclaimStep is one step of a reclaim plan.
type ReclaimStep struct {
	Kind   ReclaimStepKind // what to do
	JobID  string          // the victim (signal, evict)
	Node   string          // the node (place)
	Signal string          // the signal (signal)
	Grace  time.Duration   // how long (wait; the eviction grace for evict)
	Reason string          // why, for the decision log
}

// ReclaimPlan is how to make room for one job of a team under its quota by
// stopping borrowed work.
type ReclaimPlan struct {
	Team      string           // the team the room is for
	Demand    placement.Demand // the job's demand
	Node      string           // where the job goes once the victims are gone
	Victims   []Victim         // the jobs to stop: the minimal set
	FreedGPUs int              // GPUs the victims hold in total
	Steps     []ReclaimStep    // signal each victim, wait the grace period, evict each, place
	Reason    string           // one-line summary
}

// Order is the plan as the engine carries it out (Admission.Reclaim,
// OpReclaim): the victims, the signal and the grace period of its steps.
func (p *ReclaimPlan) Order() *provisioner.Reclaim {
	r := &provisioner.Reclaim{Team: p.Team, Node: p.Node, Victims: slices.Clone(p.Victims), Reason: p.Reason}
	for _, s := range p.Steps {
		switch s.Kind {
		case StepSignal:
			r.Signal = s.Signal
		case StepWait:
			r.Grace = s.Grace
		}
	}
	return r
}

// ReclaimInput is what PlanReclaim looks at.
type ReclaimInput struct {
	Now        time.Time                   // decision time
	Snapshot   *provisioner.Snapshot       // the cluster now
	Team       string                      // the team under its quota that needs room
	Demand     placement.Demand            // the job's per-node demand (single-node jobs)
	IsBorrowed func(*provisioner.Job) bool // which running jobs are borrowed work (the only possible victims)
	Signal     string                      // checkpoint signal (default "USR1")
	Grace      time.Duration               // grace period between the signal and the eviction
	// MinRuntime is how long the borrowed work of a team runs before it
	// may be a victim (nil: at once); younger work is left alone.
	MinRuntime func(team string) time.Duration
	NodeList   []string // only these nodes (empty = any)
	Exclude    []string // never these nodes
	MaxVictims int      // borrowed jobs considered per node, exhaustively (default 16; more are ranked greedily)
}

// reclaimCost orders candidate victim sets: the documented criteria of
// PlanReclaim, each smaller-is-better, ending in the node name.
type reclaimCost struct {
	freed    int   // GPUs the set frees
	maxPrio  int64 // priority of its most important victim
	sumPrio  int64 // total priority
	progress int64 // GPU-seconds of work since the victims' last checkpoints
	victims  int   // number of victims
	node     string
}

func (a reclaimCost) compare(b reclaimCost) int {
	return cmp.Or(cmp.Compare(a.freed, b.freed), cmp.Compare(a.maxPrio, b.maxPrio), cmp.Compare(a.sumPrio, b.sumPrio),
		cmp.Compare(a.progress, b.progress), cmp.Compare(a.victims, b.victims), cmp.Compare(a.node, b.node))
}

// PlanReclaim chooses which borrowed jobs to stop so that a job of a team
// under its quota can be placed. Victims are borrowed work only, that has
// run at least its team's minimum run time (MinRuntime), and only on one
// node: the node where the job fits once they are gone (schedulable,
// GPU type allowed, big enough). Among all such sets on all nodes it picks,
// in order of criteria: (1) the fewest GPUs freed (so the set is minimal:
// dropping any victim would no longer make room), (2) the lowest priority
// (the set's most important victim least important, then the lower total),
// (3) the least progress lost since the victims' last checkpoints
// (Job.Checkpoint, else their start; GPU-seconds), (4) the fewest victims, (5) the node name. The plan's steps
// are: signal every victim, wait the grace period, evict every victim, place
// the job. It is pure: the caller performs the steps.
func PlanReclaim(in ReclaimInput) (*ReclaimPlan, error) {
	if in.Snapshot == nil || in.IsBorrowed == nil {
		return nil, errors.New("reclaim: snapshot and borrowed-work predicate are required")
	}
	d := in.Demand
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if d.NodeCount() > 1 {
		return nil, fmt.Errorf("%w: %s spans %d nodes; reclaim plans single-node jobs", ErrNoReclaim, d, d.NodeCount())
	}
	if in.Signal == "" {
		in.Signal = "USR1"
	}
	if in.MaxVictims <= 0 {
		in.MaxVictims = 16
	}
	st := placement.FromSnapshot(in.Snapshot)
	filter, err := st.Filter(d, in.NodeList, in.Exclude)
	if err != nil {
		return nil, err
	}
	// whole GPUs that must be free on the node (snapshot states count whole GPUs)
	need := 0
	if d.GPUMilli > 0 {
		need = max(d.WholeGPUs(), 1)
	}
	// Borrowed running jobs by node.
	type cand struct {
		v        Victim
		perNode  int // GPUs freed on this node
		progress int64
	}
	byNode := map[int][]cand{}
	var young time.Time // when the first borrowed job left alone for its age comes of age
	for i := range in.Snapshot.Jobs {
		j := &in.Snapshot.Jobs[i]
		if j.State != provisioner.StateRunning || j.GPUs <= 0 || !in.IsBorrowed(j) {
			continue
		}
		if in.MinRuntime != nil {
			if m := in.MinRuntime(j.Account); m > 0 && (j.Start.IsZero() || in.Now.Sub(j.Start) < m) {
				if at := j.Start.Add(m); young.IsZero() || at.Before(young) {
					young = at
				}
				continue
			}
		}
		since := j.Start
		if j.Checkpoint.After(since) {
			since = j.Checkpoint
		}
		prog := time.Duration(0)
		if !since.IsZero() && in.Now.After(since) {
			prog = in.Now.Sub(since)
		}
		per := j.GPUs / max(len(j.NodeList), 1)
		for _, name := range j.NodeList {
			ni, ok := st.Index(name)
			if !ok {
				continue
			}
			byNode[ni] = append(byNode[ni], cand{
				v:        Victim{JobID: j.ID, Team: j.Account, Node: name, GPUs: j.GPUs, Priority: j.Priority, Progress: prog},
				perNode:  per,
				progress: int64(prog/time.Second) * int64(j.GPUs),
			})
		}
	}
	var best []cand
	var bestCost reclaimCost
	found := false
	borrowedSeen := 0
	for ni, cands := range byNode {
		if !filter.Holds(ni) {
			continue
		}
		for _, x := range cands {
			borrowedSeen += x.perNode
		}
		freeNow := st.WholeFree(ni)
		if freeNow >= need {
			continue // fits without a reclaim: not this function's business
		}
		slices.SortFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(a.perNode, b.perNode), cmp.Compare(a.v.Priority, b.v.Priority),
				cmp.Compare(a.progress, b.progress), cmp.Compare(a.v.JobID, b.v.JobID))
		})
		consider := func(set []cand) {
			freedHere := 0
			cost := reclaimCost{node: st.Name(ni), victims: len(set)}
			for k, x := range set {
				freedHere += x.perNode
				cost.freed += x.v.GPUs
				cost.sumPrio += x.v.Priority
				if k == 0 || x.v.Priority > cost.maxPrio {
					cost.maxPrio = x.v.Priority
				}
				cost.progress += x.progress
			}
			if freeNow+freedHere < need {
				return
			}
			if !found || cost.compare(bestCost) < 0 {
				found, bestCost, best = true, cost, slices.Clone(set)
			}
		}
		if len(cands) <= in.MaxVictims {
			set := make([]cand, 0, len(cands))
			for mask := 1; mask < 1<<len(cands); mask++ {
				set = set[:0]
				for b := range cands {
					if mask&(1<<b) != 0 {
						set = append(set, cands[b])
					}
				}
				consider(set)
			}
		} else {
			// Too many to enumerate: take them in comparator order until enough.
			for k := 1; k <= len(cands); k++ {
				consider(cands[:k])
			}
		}
	}
	if !found {
		err := fmt.Errorf("%w for team %s's %s: %d borrowed GPUs on nodes where it could run, not enough with the free ones",
			ErrNoReclaim, in.Team, d, borrowedSeen)
		if !young.IsZero() {
			err = fmt.Errorf("%w (borrowed work younger than its minimum run time is left alone: the first comes of age at %s)",
				err, young.UTC().Format(time.RFC3339))
		}
		return nil, err
	}
	plan := &ReclaimPlan{Team: in.Team, Demand: d, Node: bestCost.node, FreedGPUs: bestCost.freed}
	slices.SortFunc(best, func(a, b cand) int { return cmp.Compare(a.v.JobID, b.v.JobID) })
	ids := make([]string, len(best))
	for k, x := range best {
		x.v.Reason = fmt.Sprintf("borrowed by %s: %d GPUs, priority %d, %s since its last checkpoint; frees room for %s on %s",
			x.v.Team, x.v.GPUs, x.v.Priority, x.v.Progress.Round(time.Second), in.Team, plan.Node)
		plan.Victims = append(plan.Victims, x.v)
		ids[k] = x.v.JobID
	}
	for _, v := range plan.Victims {
		plan.Steps = append(plan.Steps, ReclaimStep{Kind: StepSignal, JobID: v.JobID, Signal: in.Signal,
			Reason: "checkpoint before reclaim: " + v.Reason})
	}
	plan.Steps = append(plan.Steps, ReclaimStep{Kind: StepWait, Grace: in.Grace, Reason: "grace period for the checkpoint"})
	for _, v := range plan.Victims {
		plan.Steps = append(plan.Steps, ReclaimStep{Kind: StepEvict, JobID: v.JobID, Grace: in.Grace, Reason: "reclaim: " + v.Reason})
	}
	plan.Steps = append(plan.Steps, ReclaimStep{Kind: StepPlace, Node: plan.Node,
		Reason: fmt.Sprintf("%s for team %s (within its quota) on %s after reclaim", d, in.Team, plan.Node)})
	plan.Reason = fmt.Sprintf("reclaim %d borrowed GPUs on %s (%s) for team %s's %s", plan.FreedGPUs, plan.Node, strings.Join(ids, ", "), in.Team, d)
	return plan, nil
}
