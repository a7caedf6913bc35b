package provisioner

// Pin, in one place: a successor queued early on its predecessor's nodes.
//
// A pinned policy (Pinned: pin is Pinned(PolicyPin, lead); a learned
// policy's pinned form is Pinned(NAME-pin, NAME's model)) submits the
// successor while its predecessor runs, restricted to the predecessor's
// nodes (SubmitPinned: sbatch --nodelist), where a pin can hold it: it
// then queues, ages and gets the backfill reservation on those nodes, and
// starts as they free. The step asks the chain's policy again about a
// pending pinned successor and lifts the pin (OpUnpin: scontrol update
// ReqNodeList=) when the policy would now submit it unpinned and lifting
// cannot cost more than it saves (unpin, mayLiftEarly). What the site's
// scheduler makes of a pin (age weight, accrual limits, bf_window) is the
// simulator's and the real scheduler's business: docs/guide/slurm.md.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Pinned is a policy named name that pins, deciding by inner where a pin
// cannot or need not hold the successor: pin is Pinned(PolicyPin, lead).
//   - The shared rules first (predecessor ended or pending).
//   - Where the successor would fit beside its predecessor on the
//     predecessor's nodes (nodes shared between jobs), pinning cannot keep
//     them apart: inner decides.
//   - While enough whole nodes of the successor's shape are spare (free,
//     and no job waits for them: spareNodes; for a chain that hands off,
//     free), there is no need to queue pinned: inner decides. Free nodes
//     that jobs wait for are the scheduler's to give to the jobs ahead,
//     often within the second (a stream of short jobs through the same
//     nodes): a successor left to queue later would queue behind those
//     jobs. The engine asks again about a pending pinned successor and
//     lifts its node list when this policy would submit it now: after
//     the predecessor ended, or before where the chain's cost prices an
//     early start below an equal interruption
//     and, unless the chain hands off, no pending job waits for the free
//     nodes (stepContext.unpin). A submission inner decides in the last
//     decision cycle before the predecessor's limit (within DefaultLead,
//     ScaledLead) is timed to start BeginMargin before the limit
//     (Decision.Begin) rather than at once, up to a cycle early, unless
//     the chain hands off (the training workload). A lift within the lead
//     takes effect at once all the same (stepContext.unpin), but never
//     before the predecessor has run MinRun.
//   - Otherwise SubmitPinned once the predecessor's nodes are known, Wait
//     before.
//
// The result learns from hand-offs when inner does.
func Pinned(name string, inner Policy) Policy {
	return pinned{name: name, inner: inner}
}

type pinned struct {
	name  string
	inner Policy
}

func (p pinned) Name() string { return p.name }

// LearnsFromHandOffs forwards inner's (HandOffLearner).
func (p pinned) LearnsFromHandOffs() bool { return LearnsFromHandOffs(p.inner) }

func (p pinned) Decide(obs *Observation) (Decision, error) {
	if d, ok := common(obs); ok {
		return d, nil
	}
	pred := obs.Predecessor
	end, ok := limitEnd(obs)
	if !ok {
		return Decision{Action: Wait, Reason: "predecessor's time limit or start unknown: wait for it to end"}, nil
	}
	free := freeNodes(obs.Snapshot, &obs.Successor)
	spare := free // a hand-off chain's predecessor gives its nodes back a checkpoint after its successor starts (mayLiftEarly)
	if !handsOff(obs.Chain) {
		spare = spareNodes(obs.Snapshot, &obs.Successor, ownPending(obs))
	}
	need := max(obs.Successor.Nodes, 1)
	left := end.Sub(obs.Now)
	var why string
	switch {
	case fitsBeside(obs.Snapshot, pred.NodeList, &obs.Successor):
		// Pinned there, it could start beside its predecessor at once:
		// the pin would not keep them apart.
		why = fmt.Sprintf("the successor fits beside predecessor %s on its nodes, so pinning cannot keep them apart", pred.ID)
	case spare >= need:
		why = fmt.Sprintf("%d node(s) free and no job waits for them: no need to queue pinned (pinned once they fill)", spare)
	case len(pred.NodeList) == 0:
		return Decision{Action: Wait, Reason: fmt.Sprintf("%s and the nodes of predecessor %s are not known yet: wait (a pinned successor needs them)", noneSpare(free, need), pred.ID)}, nil
	default:
		return Decision{Action: SubmitPinned, Score: -left.Seconds(), Reason: fmt.Sprintf("%s, predecessor %s ends in %s: submit now, pinned to its %d node(s) (it starts as they free, never alongside it)",
			noneSpare(free, need), pred.ID, secs(left), len(pred.NodeList))}, nil
	}
	d, err := p.inner.Decide(obs)
	if err != nil {
		return d, fmt.Errorf("%s: %s: %w", p.name, p.inner.Name(), err)
	}
	as := "as " + p.inner.Name()
	if p.inner.Name() == p.name {
		as = "its model decides" // a learned policy's pinned form (its reason names the model)
	}
	d.Reason = fmt.Sprintf("%s; %s: %s", why, as, d.Reason)
	if d.Action == SubmitNow && left > BeginMargin && left <= ScaledLead(DefaultLead, limitOf(obs)) && d.Begin.IsZero() && !handsOff(obs.Chain) {
		d.Begin = end.Add(-BeginMargin)
		d.Reason += fmt.Sprintf("; the last cycle before the limit: start from %s before it, not at once", secs(BeginMargin))
	}
	return d, nil
}

// ownPending is the job id of the successor itself when it is queued
// already (a pinned successor the step asks about again: unpin), found by
// its chain tag; "" otherwise. It does not wait for the free nodes
// against itself.
func ownPending(obs *Observation) string {
	want, ok := ParseTag(obs.Successor.Comment)
	if !ok || obs.Snapshot == nil {
		return ""
	}
	for _, j := range obs.Snapshot.Pending() {
		if t, ok := ParseTag(j.Comment); ok && t.Chain == want.Chain && t.Segment == want.Segment {
			return j.ID
		}
	}
	return ""
}

// noneSpare says why fewer than need whole nodes are spare: too few are
// free, or jobs wait for the free ones.
func noneSpare(free, need int) string {
	if free < need {
		return fmt.Sprintf("no %d node(s) free", need)
	}
	return fmt.Sprintf("%d node(s) free but jobs wait for them (the scheduler gives them to the jobs ahead)", free)
}

// handsOff reports whether the chain's segments hand off (the training
// workload: a successor that starts early asks its predecessor to
// checkpoint and exit, `mirage handoff`). Such a segment also checkpoints
// ahead of its limit (--signal), so a begin time just before the limit
// could fall after it has ended; an early start costs it one checkpoint.
func handsOff(ch *Chain) bool { return ch != nil && ch.Workload == WorkloadTraining }

// fitsBeside reports whether the request's GPUs per node fit on every one
// of the given (the predecessor's) nodes beside what runs there now, as on
// nodes shared between jobs: a successor pinned to them would not wait.
// Nodes the snapshot does not list count as not fitting.
func fitsBeside(snap *Snapshot, nodes []string, req *SubmitRequest) bool {
	if snap == nil || len(nodes) == 0 || req.GPUs <= 0 {
		return false
	}
	per := req.GPUsPerNode()
	for _, name := range nodes {
		i := slices.IndexFunc(snap.Nodes, func(n Node) bool { return n.Name == name })
		if i < 0 || snap.Nodes[i].FreeGPUs() < per {
			return false
		}
	}
	return true
}

// freeNodes counts the schedulable nodes of the request's partition (any
// partition when it names none) whose GPUs are all free and number at
// least its GPUs per node: where a whole-node successor could start now.
func freeNodes(snap *Snapshot, req *SubmitRequest) int { return len(freeNodeNames(snap, req)) }

// freeNodeNames are the names of the nodes freeNodes counts, in the
// snapshot's order.
func freeNodeNames(snap *Snapshot, req *SubmitRequest) []string {
	if snap == nil {
		return nil
	}
	per := req.GPUsPerNode()
	var out []string
	for i := range snap.Nodes {
		nd := &snap.Nodes[i]
		if nd.State != NodeUp || nd.GPUsUsed > 0 || nd.GPUs < per || nd.CPUsUsed >= nd.CPUs && nd.CPUs > 0 {
			continue
		}
		if req.Partition != "" && len(nd.Partitions) > 0 && !slices.Contains(nd.Partitions, req.Partition) {
			continue
		}
		out = append(out, nd.Name)
	}
	return out
}

// spareNodes is freeNodes less what the jobs waiting for nodes could take
// of them: every pending job of the request's partition (any partition
// when it names none) other than own whose reason says it waits for nodes
// (Priority, Resources, or None: submitted, its first pass to come) takes
// its nodes, or all the free ones when it needs more (they are what it
// would start on as others free). Whole
// nodes free while such jobs wait are the scheduler's to give to the job
// ahead (a backfill reservation keeps them for it); a successor started
// early there would take them from it.
func spareNodes(snap *Snapshot, req *SubmitRequest, own string) int {
	if snap == nil {
		return 0
	}
	free := freeNodes(snap, req)
	spare := free
	for _, j := range snap.Pending() {
		if j.ID == own || !waitsForNodes(j.Reason) || req.Partition != "" && j.Partition != req.Partition {
			continue
		}
		spare -= min(max(j.Nodes, 1), free)
	}
	return max(spare, 0)
}

// waitsForNodes reports whether a pending job with this squeue reason
// waits for nodes: behind others (Priority), for nodes to free
// (Resources), or not yet looked at (None: on slurmctld a job submitted
// during a pass keeps it for a second or two, and takes the free nodes on
// the next one).
func waitsForNodes(reason string) bool {
	return reason == PendingPriority || reason == PendingResources || reason == PendingNone
}

// unpin asks the chain's policy again about its pending pinned successor,
// as if it were not submitted yet, and when it would now submit it
// unpinned (SubmitNow) plans lifting its node list (OpUnpin) and reports
// true; otherwise nothing is decided here. Once the predecessor has ended
// (another job took its nodes), the pin cannot help any more. While it
// runs, the pin holds unless the chain's cost prices an early start below
// an equal interruption (earlyStartCheaper): pinned, the successor starts
// as its predecessor's nodes free, so lifting the pin can only start it
// alongside, which under the published symmetric cost is no cheaper than
// the interruption it avoids. Unless the chain hands off, it also holds
// while the free nodes are not spare (spareNodes: jobs wait for them):
// pinned since long before, the successor has aged, and lifted it would
// jump ahead of the jobs the scheduler keeps those nodes for, holding two
// sets of nodes while they wait. A hand-off chain's predecessor frees its
// nodes a checkpoint after its successor starts.
//
// A pin held while its predecessor runs and nodes stand idle that the
// successor could start on is a decision too: it is recorded as a wait
// about the pinned segment saying why (keptPinReason), and unpin reports
// true (decided) as when it lifts the pin.
func (c *stepContext) unpin(w *chainWork, last *Segment) bool {
	ch := &w.chain
	prev := w.final(last.Index - 1)
	if prev == nil || prev.JobID == "" {
		return false
	}
	pol, err := c.policy(ch)
	if err != nil {
		return false // the policy error is recorded by the decision for the next segment, if any
	}
	obs := Observe(w.now, c.in.Snapshot, c.in.History, ch, c.jobOf(ch, prev), segmentRequest(ch, last.Index, last.Attempt, prev.JobID), knownBy(c.in.HandOffs, w.now))
	if !obs.Predecessor.State.Finished() && !mayLiftEarly(obs, last.JobID) {
		if why := keptPinReason(obs, last, prev.JobID); why != "" {
			w.record(DecisionRecord{Segment: last.Index, Action: Wait, JobID: last.JobID, Reason: why})
			return true
		}
		return false
	}
	d, err := pol.Decide(obs)
	if err != nil || d.Action != SubmitNow {
		return false
	}
	rec := DecisionRecord{Time: w.now, ChainID: ch.ID, Segment: last.Index, Policy: pol.Name(), Action: ActUnpin, JobID: last.JobID, Score: d.Score,
		Reason: fmt.Sprintf("%s; job %s, pinned to nodes %s, is still pending: lift its node list%s", d.Reason, last.JobID, last.Pinned, liftNote(d.Begin, w.now))}
	seg := *last
	w.tail = append(w.tail, Op{Kind: OpUnpin, Segment: &seg, Record: &rec})
	return true
}

// liftNote says why a lifted pin takes effect at once although the policy
// named a begin time ("" when it named none): a pending job given a begin
// time is not eligible until then (it cannot start, and Slurm's age factor
// counts only eligible time) and may lose the free nodes meanwhile, which
// for a job that has queued since its predecessor's start costs more than
// the minutes of overlap saved.
func liftNote(begin, now time.Time) string {
	if !begin.After(now) {
		return ""
	}
	return " at once (a begin time would make it ineligible until then and could leave the free nodes to others)"
}

// mayLiftEarly reports whether the pin of job own may be lifted while its
// predecessor runs (see unpin): the predecessor has run MinRun, the
// chain's cost prices an early start below an equal interruption, and the
// chain hands off or the free nodes are spare.
func mayLiftEarly(obs *Observation, own string) bool {
	if p := obs.Predecessor; p.Start.IsZero() || obs.Now.Sub(p.Start) < MinRun(limitOf(obs)) || !earlyStartCheaper(obs) {
		return false
	}
	return handsOff(obs.Chain) || spareNodes(obs.Snapshot, &obs.Successor, own) >= max(obs.Successor.Nodes, 1)
}

// keptPinReason says why the pin of the pending segment last (its
// predecessor job pred still running) holds while nodes it could start on
// stand idle, in mayLiftEarly's order: the predecessor has not run its
// minimum share, starting early costs more than it saves, or jobs wait
// for those nodes. "" when no node is idle: then holding the pin is no
// choice and the log says only that the predecessor is pending.
func keptPinReason(obs *Observation, last *Segment, pred string) string {
	idle := freeNodeNames(obs.Snapshot, &obs.Successor)
	if len(idle) == 0 {
		return ""
	}
	var why string
	switch p := obs.Predecessor; {
	case p.Start.IsZero() || obs.Now.Sub(p.Start) < MinRun(limitOf(obs)):
		why = fmt.Sprintf("job %s has not run its minimum share of its limit (%s) yet", pred, MinRun(limitOf(obs)))
	case !earlyStartCheaper(obs):
		why = "started beside it, job " + last.JobID + " would overlap it to its limit, which the chain's cost prices no lower than the interruption it saves"
	default:
		why = "jobs waiting for nodes are next for them"
	}
	verb := "is"
	if len(idle) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("kept the pin: the nodes of job %s (%s) are next for job %s when it ends; %s %s idle but %s: wait",
		pred, last.Pinned, last.JobID, strings.Join(idle, ","), verb, why)
}

// earlyStartCheaper reports whether, under the chain's cost, a successor
// starting now alongside its running predecessor (an overlap lasting to the
// predecessor's limit) costs less than an interruption of the same length:
// with a training cost (an early start costs a checkpoint) or a service's
// overlap budget, but not under the published symmetric cost. False when
// the predecessor's limit is not known.
func earlyStartCheaper(obs *Observation) bool {
	end, ok := limitEnd(obs)
	left := end.Sub(obs.Now)
	if !ok || left <= 0 {
		return false
	}
	cost := obs.Chain.CostOf()
	return cost.Cost(-left, obs.Successor.GPUs) < cost.Cost(left, obs.Successor.GPUs)
}
