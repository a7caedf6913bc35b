package provisioner

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// Environment variables every segment's job sees.
const (
	EnvChain   = "MIRAGE_CHAIN"    // the chain id
	EnvSegment = "MIRAGE_SEGMENT"  // the segment index (0-based)
	EnvPrevJob = "MIRAGE_PREV_JOB" // the predecessor's job id ("" for the first segment)
)

// StepInput is everything the pure decision step reads.
type StepInput struct {
	Now       time.Time     // decision time
	Snapshot  *Snapshot     // the cluster now
	History   []Job         // jobs started or finished since the earliest time any stored segment may need, oldest first
	HistoryOK bool          // History is complete for that window: a job missing from it and from Snapshot is gone
	Chains    []ChainRecord // stored chains (only ChainActive ones are decided on) and their segments
	// HandOffs are the realised hand-offs of every stored chain, ended ones
	// included, sorted by Known (HandOffs); a decision sees those known by
	// Now (Observation.HandOffs).
	HandOffs []HandOff
	// Policies are the active chains' policies, resolved before Step by
	// their key (ResolvePolicies; the Engine does it once per cycle): Step
	// loads nothing. nil: BaselinePolicy by each chain's policy name.
	Policies map[PolicyKey]Resolved
	Rules    Rules // team rules consulted before each submission; nil admits everything
	// Self is the user whose jobs are the chains' (Job.User): a tagged job
	// of another user is never adopted, cancelled or followed, only
	// reported (EventForeign). "" skips the check (the simulator).
	Self string
	// SubmitGrace is how long a submission whose outcome was not recorded
	// holds its chain before it is taken as not done (0: DefaultSubmitGrace).
	SubmitGrace time.Duration
	// TagKey signs the comments of submissions and verifies those of tagged
	// jobs (TagKey.Verified): a job it does not verify is treated as
	// another user's. nil: no MACs (the simulator).
	TagKey *TagKey
	// Keeper is the identity of the state database deciding (TagKey.Keeper):
	// a chain another database keeps, or one whose live job another
	// database submitted, is not acted on (notKept). "" skips the checks.
	Keeper string
	// Cluster is the name of the backend's cluster (ClusterNameOf): a chain
	// registered on another cluster is not acted on. "" skips the check.
	Cluster string
}

// Step is the pure decision step: from the stored chains, the cluster
// snapshot, the history and now, it returns the plan of effects. It
// performs no I/O, reads no clock and keeps no state; policies and rules
// it consults must be pure too. For each active chain, in input order:
//
//  1. reconcile the stored segments with the backend (adopt tagged jobs the
//     store does not know, cancel duplicates, update started and ended
//     segments, mark lost ones, abandon submissions whose job never
//     appeared, record gaps between segments); then, while a submission's
//     outcome is unknown (SUBMITTING, no job found yet, its grace not
//     over), wait: deciding anything else could submit a segment twice;
//  2. if the work is done (done.go: its job said so with mirage done, or an
//     --until-done segment exited 0 before its signal point and before its
//     successor started), end the chain and cancel successors submitted
//     ahead of time;
//  3. if the chain has no segment yet, submit the first;
//  4. if the last segment has ended: by TIMEOUT or exit 0 continue with the
//     next segment (or end the chain after N segments); after a failure
//     retry it up to MaxRetries times, then end the chain as failed;
//  5. if the last segment runs and a successor is still needed, ask the
//     chain's policy whether to submit it now (while the last segment is
//     still pending, wait: at most one segment is ever queued ahead);
//  6. before any submission, ask the team rules; a refusal defers it.
//
// Every decision (including waits and errors) yields a decision-log record.
func Step(in *StepInput) *Plan {
	plan := &Plan{Now: in.Now}
	grace := in.SubmitGrace
	if grace <= 0 {
		grace = DefaultSubmitGrace
	}
	idx := indexJobs(in.Snapshot, in.History, in.Self, in.TagKey)
	ctx := &stepContext{in: in, idx: idx, grace: grace, work: in.Snapshot}
	ctx.nPending, ctx.nRunning = countStates(in.Snapshot)
	refused := map[string]string{}
	for i := range in.Chains {
		if cr := &in.Chains[i]; cr.Chain.State == ChainActive {
			if why := ctx.notKept(cr); why != "" {
				refused[cr.Chain.ID] = why
			}
		}
	}
	var reclaimed map[string]bool // jobs the backend saw mirage reclaim: gone for a known reason
	if in.Snapshot != nil {
		for _, r := range in.Snapshot.Reclaimed {
			if reclaimed == nil {
				reclaimed = map[string]bool{}
			}
			reclaimed[r.JobID] = true
		}
	}
	if why := implausibleLoss(in.Chains, refused, reclaimed, idx, in.HistoryOK); why != "" {
		plan.Halt = why
		return plan
	}
	var tails []Op
	for i := range in.Chains {
		cr := &in.Chains[i]
		if cr.Chain.State != ChainActive {
			continue
		}
		if why, ok := refused[cr.Chain.ID]; ok {
			plan.Ops = append(plan.Ops, Op{Kind: OpRecord, Record: &DecisionRecord{Time: in.Now, ChainID: cr.Chain.ID, Segment: nextIndex(cr.Segments),
				Policy: cr.Chain.Policy, Action: Wait, Reason: why}})
			continue
		}
		ops, tail := ctx.chain(cr)
		plan.Ops = append(plan.Ops, ops...)
		tails = append(tails, tail...)
	}
	plan.Ops = append(plan.Ops, tails...)
	return plan
}

// chain reconciles one active chain and decides for it (steps 1–6),
// returning its bookkeeping and its actions. A panic in either (a policy
// or a rule that fails in use) costs this chain alone its cycle: none of
// what it planned is kept, an error record says why, and the other chains
// are decided on as usual.
func (c *stepContext) chain(cr *ChainRecord) (ops, tail []Op) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		rec := &DecisionRecord{Time: c.in.Now, ChainID: cr.Chain.ID, Segment: nextIndex(cr.Segments), Policy: cr.Chain.Policy, Action: ActError,
			Error: fmt.Sprintf("the decision step failed (panic: %v): nothing is done for this chain this cycle", r)}
		ops, tail = []Op{{Kind: OpRecord, Record: rec}}, nil
	}()
	w := &chainWork{chain: cr.Chain, segs: slices.Clone(cr.Segments), now: c.in.Now, abandoned: map[segKey]time.Time{}}
	// A chain stored before #50 is this database's, on this cluster: its
	// jobs' comments say so from now on.
	w.chain.Keeper = cmp.Or(w.chain.Keeper, c.in.Keeper)
	w.chain.Cluster = cmp.Or(w.chain.Cluster, c.in.Cluster)
	sortSegments(w.segs)
	w.orig = make(map[segKey]Segment, len(w.segs))
	for _, s := range w.segs {
		w.orig[segKey{s.Index, s.Attempt}] = s
	}
	w.reconcile(c.idx, c.in.HistoryOK, c.grace) // step 1
	c.decide(w)                                 // steps 2–6
	return w.ops, w.tail
}

type stepContext struct {
	in       *StepInput
	idx      *jobIndex
	nPending int
	nRunning int
	grace    time.Duration
	// work is the snapshot the team rules judge submissions on: the
	// input's, with the submissions planned so far this cycle (reserve).
	work *Snapshot
}

func countStates(s *Snapshot) (pending, running int) {
	for i := range s.Jobs {
		switch s.Jobs[i].State {
		case StatePending:
			pending++
		case StateRunning:
			running++
		}
	}
	return
}

// nextIndex is the index after the highest of segs (0 for none): the
// segment a chain's next decision is about, for records made without one.
func nextIndex(segs []Segment) int {
	next := 0
	for _, s := range segs {
		next = max(next, s.Index+1)
	}
	return next
}

// notKept says why chain cr must not be acted on from this view ("" when
// it may): it was registered on another cluster than the backend's; or
// another state database keeps it (a chain recovered into a second
// --state while the first one's daemon runs: both submitted segment 1);
// or a job of the user's carrying its tag was submitted by another state
// database than this one, is not one of its stored segments, and still
// runs or is of a segment this database has not reached (two databases act
// on the chain: its comment names the other keeper, signed with that
// database's key, which this one's may not verify).
func (c *stepContext) notKept(cr *ChainRecord) string {
	ch, in := &cr.Chain, c.in
	if in.Cluster != "" && ch.Cluster != "" && !strings.EqualFold(ch.Cluster, in.Cluster) {
		return fmt.Sprintf("chain registered on cluster %q, but the backend answers for cluster %q: nothing is done here "+
			"(another cluster's slurm.conf, or another backend sharing this state directory? give the chain's with --slurm-conf or SLURM_CONF, or --backend)", ch.Cluster, in.Cluster)
	}
	if in.Keeper == "" {
		return ""
	}
	if ch.Keeper != "" && ch.Keeper != in.Keeper {
		return fmt.Sprintf("chain kept by another state database (keeper %s; this one is %s): that database's daemon submits its jobs, not this one's; "+
			"if that database is lost, take the chain over with mirage recover --take-over %s", ch.Keeper, in.Keeper, ch.ID)
	}
	stored := make(map[string]bool, len(cr.Segments))
	for _, s := range cr.Segments {
		stored[s.JobID] = true
	}
	next := nextIndex(cr.Segments)
	for _, tj := range slices.Concat(c.idx.tagged[ch.ID], c.idx.foreign[ch.ID]) {
		if stored[tj.job.ID] || tj.job.State.Finished() && tj.tag.Segment < next || in.Self != "" && tj.job.User != in.Self {
			continue
		}
		if sp, ok := readSpec(tj.job.Comment); ok && sp.Keeper != "" && sp.Keeper != in.Keeper {
			return fmt.Sprintf("job %s (tag %s, %s) was submitted by another state database (keeper %s; this one is %s): two databases act on this chain, so this one does nothing; "+
				"keep one: mirage cancel %s with the other --state, or delete that state directory", tj.job.ID, tj.tag, tj.job.State, sp.Keeper, in.Keeper, ch.ID)
		}
	}
	return ""
}

// policy is chain ch's policy, as resolved before Step (StepInput.Policies).
func (c *stepContext) policy(ch *Chain) (Policy, error) {
	if c.in.Policies == nil {
		return BaselinePolicy(ch.Policy)
	}
	r, ok := c.in.Policies[KeyOf(ch)]
	if !ok {
		return nil, fmt.Errorf("policy %q (models %q) was not resolved before the step", ch.Policy, ch.Models)
	}
	return r.Policy, r.Err
}

// succeeded reports whether a finished segment exited 0 before its limit.
func succeeded(s *Segment) bool { return s.State == StateCompleted && s.ExitCode == 0 }

// continues reports whether a finished segment lets the chain go on (TIMEOUT or exit 0).
func continues(s *Segment) bool { return s.State == StateTimeout || succeeded(s) }

// decide runs the rest of step 1 and steps 2–6 for one reconciled chain.
func (c *stepContext) decide(w *chainWork) {
	ch := &w.chain
	// 1. a submission with no recorded outcome and no job found yet.
	for i := range w.segs {
		if s := &w.segs[i]; s.State == StateSubmitting && s.JobID == "" {
			until := s.Submit.Add(c.grace)
			why := fmt.Sprintf("wait until %s (grace %s)", until.UTC().Format(time.RFC3339), c.grace)
			if !w.now.Before(until) {
				why = "the grace is over, but without the history a job that already ended could be missed: wait"
			}
			w.record(DecisionRecord{Segment: s.Index, Action: Wait, Reason: fmt.Sprintf("the submission of segment %d (attempt %d) at %s has no recorded outcome and no job tagged %s is in the live view or the history yet: %s",
				s.Index, s.Attempt, s.Submit.UTC().Format(time.RFC3339), Tag{ch.ID, s.Index, s.Attempt}, why)})
			return
		}
	}
	// 2. the work is done (workDone, done.go): end the chain and cancel the
	// successors submitted ahead; a segment whose job said so (mirage done)
	// but still runs gets no successor.
	for i := range w.segs {
		s := &w.segs[i]
		if s != w.final(s.Index) {
			continue
		}
		why, done := workDone(s, w.final(s.Index+1), ch)
		if !done && !s.Done {
			continue
		}
		if done {
			w.end(ChainDone, why)
		} else {
			w.record(DecisionRecord{Segment: s.Index + 1, Action: Wait, Reason: fmt.Sprintf("segment %d (job %s) said the work is finished (mirage done): no successor; the chain ends when it ends", s.Index, s.JobID)})
		}
		for j := range w.segs {
			if o := &w.segs[j]; o.Index > s.Index && o.JobID != "" && !o.State.Finished() && (done || o.Start.IsZero()) {
				rec := &DecisionRecord{Time: w.now, ChainID: ch.ID, Segment: o.Index, Policy: ch.Policy, Action: ActCancel, JobID: o.JobID,
					Reason: fmt.Sprintf("segment %d was submitted ahead of time but the work finished in segment %d: cancel it", o.Index, s.Index)}
				seg := *o
				w.tail = append(w.tail, Op{Kind: OpCancel, Segment: &seg, Record: rec})
			}
		}
		return
	}
	// 3. nothing submitted yet.
	if len(w.segs) == 0 {
		c.submit(w, 0, 0, "", DecisionRecord{Action: ActFirst, Reason: "chain registered: submit its first segment"}, placement{})
		return
	}
	last := &w.segs[len(w.segs)-1]
	n := ch.Segments
	// 4. the last segment has ended.
	if last.State.Finished() {
		switch {
		case continues(last) && n > 0 && last.Index+1 >= n:
			w.end(ChainDone, fmt.Sprintf("all %d segments ran (last: segment %d, job %s, %s)", n, last.Index, last.JobID, last.State))
		case continues(last):
			c.submit(w, last.Index+1, 0, last.JobID, DecisionRecord{Action: SubmitNow,
				Reason: fmt.Sprintf("predecessor segment %d (job %s) ended %s at %s%s: submit its successor now", last.Index, last.JobID, last.State, last.End.UTC().Format(time.RFC3339), stoppedNote(last, ch))}, placement{})
		case last.State == StateRejected && last.Index == 0:
			w.end(ChainFailed, fmt.Sprintf("the backend rejected the first segment: %s", last.Note))
		case last.Attempt < ch.MaxRetries:
			prev := ""
			if p := w.final(last.Index - 1); p != nil {
				prev = p.JobID
			}
			c.submit(w, last.Index, last.Attempt+1, prev, DecisionRecord{Action: ActRetry,
				Reason: fmt.Sprintf("segment %d failed (%s): retry %d of %d", last.Index, describeEnd(last), last.Attempt+1, ch.MaxRetries)}, placement{})
		default:
			w.end(ChainFailed, fmt.Sprintf("segment %d failed %d times in a row (max retries %d); last: %s", last.Index, last.Attempt+1, ch.MaxRetries, describeEnd(last)))
		}
		return
	}
	// 5. the last segment is pending or running.
	if last.State == StatePending && last.Pinned != "" && last.JobID != "" && c.in.Snapshot.Caps.Unpins {
		if c.unpin(w, last) {
			return
		}
	}
	// Is a successor needed, and now?
	if n > 0 && last.Index+1 >= n || last.JobID == "" {
		return
	}
	pred := c.jobOf(ch, last)
	if last.State == StatePending {
		// A successor of a job still in the queue would only queue behind
		// it; deciding for it now would let a policy pile up segments.
		w.record(DecisionRecord{Segment: last.Index + 1, Action: Wait, Reason: fmt.Sprintf("predecessor job %s still pending: a successor would only queue behind it: wait", last.JobID)})
		return
	}
	if last.State == StateUnknown {
		w.record(DecisionRecord{Segment: last.Index + 1, Action: Wait, Reason: fmt.Sprintf("state of predecessor job %s unknown (not in the live view, no history): wait", last.JobID)})
		return
	}
	pol, err := c.policy(ch)
	if err != nil {
		w.record(DecisionRecord{Segment: last.Index + 1, Action: ActError, Error: fmt.Sprintf("policy %q: %v", ch.Policy, err)})
		return
	}
	obs := Observe(w.now, c.in.Snapshot, c.in.History, ch, pred, segmentRequest(ch, last.Index+1, 0, last.JobID), knownBy(c.in.HandOffs, w.now))
	d, err := pol.Decide(obs)
	feat := d.Features
	if feat == "" {
		feat = c.digest(obs)
	}
	rec := DecisionRecord{Segment: last.Index + 1, Policy: pol.Name(), Action: d.Action, Reason: d.Reason, Score: d.Score, Features: feat}
	if err != nil {
		rec.Action, rec.Error = ActError, fmt.Sprintf("policy %s: %v", pol.Name(), err)
		w.record(rec)
		return
	}
	switch d.Action {
	case SubmitNow:
		c.submit(w, last.Index+1, 0, last.JobID, rec, placement{begin: d.Begin})
	case SubmitAfter:
		c.submit(w, last.Index+1, 0, last.JobID, rec, placement{})
	case SubmitPinned:
		if len(pred.NodeList) == 0 {
			rec.Action = Wait
			rec.Reason += fmt.Sprintf("; the nodes of predecessor job %s are not known: wait (a successor pinned to no node would run anywhere)", pred.ID)
			w.record(rec)
			return
		}
		c.submit(w, last.Index+1, 0, last.JobID, rec, placement{pin: pred.NodeList})
	case Wait:
		w.record(rec)
	default:
		rec.Action, rec.Error = ActError, fmt.Sprintf("policy %s returned unknown action %q", pol.Name(), d.Action)
		w.record(rec)
	}
}

// jobOf is the backend's job of a stored segment, or one built from the
// segment and its chain when the backend no longer lists it.
func (c *stepContext) jobOf(ch *Chain, seg *Segment) *Job {
	if j := c.idx.byID[seg.JobID]; j != nil {
		return j
	}
	return &Job{ID: seg.JobID, Name: ch.Name, Account: ch.Account, Partition: ch.Partition, State: seg.State,
		Submit: seg.Submit, Start: seg.Start, End: seg.End, TimeLimit: ch.TimeLimit, Nodes: ch.Nodes, GPUs: ch.GPUs, Comment: Tag{ch.ID, seg.Index, seg.Attempt}.String()}
}

// describeEnd renders how a segment ended, for reasons.
func describeEnd(s *Segment) string {
	out := fmt.Sprintf("job %s %s", s.JobID, s.State)
	if s.JobID == "" {
		out = string(s.State)
	}
	if s.ExitCode != 0 {
		out += " exit " + strconv.Itoa(s.ExitCode)
	}
	if s.Note != "" {
		out += ": " + s.Note
	}
	return out
}

// end ends the chain with a state and a reason.
func (w *chainWork) end(state ChainState, reason string) {
	w.chain.State, w.chain.Reason = state, reason
	c := w.chain
	w.ops = append(w.ops, Op{Kind: OpPutChain, Chain: &c})
	w.event(EventChainEnded, nil, string(state)+": "+reason, 0)
	w.record(DecisionRecord{Segment: -1, Action: ActEnd, Reason: string(state) + ": " + reason})
}

// placement is where and when a submission may start: pin, for
// SubmitPinned, the nodes the successor is restricted to; begin, for
// SubmitNow, the earliest time it may start (Decision.Begin).
type placement struct {
	pin   []string
	begin time.Time
}

// beginNote renders a begin time for a reason ("" unless after now).
func beginNote(begin, now time.Time) string {
	if !begin.After(now) {
		return ""
	}
	return " (begin " + begin.UTC().Format(time.RFC3339) + ")"
}

// submit plans the submission of segment (index, attempt) after step 6
// (team rules). rec carries the decision behind it; at, where and when the
// successor may start.
func (c *stepContext) submit(w *chainWork, index, attempt int, prevJob string, rec DecisionRecord, at placement) {
	ch := &w.chain
	req := segmentRequest(ch, index, attempt, prevJob)
	req.Comment = c.in.TagKey.Sign(c.in.Self, req.Comment)
	if rec.Action == SubmitAfter && prevJob != "" {
		req.Dependency = slurmfmt.AfterAny(prevJob)
		rec.Reason += " (dependency " + req.Dependency.String() + ")"
	}
	if rec.Action == SubmitPinned {
		req.NodeList = slices.Clone(at.pin)
		rec.Reason += " (nodelist " + strings.Join(at.pin, ",") + ")"
	}
	if rec.Action == SubmitNow && at.begin.After(w.now) {
		req.Begin = at.begin
		rec.Reason += beginNote(at.begin, w.now)
	}
	rec.Segment = index
	if !c.in.Snapshot.Caps.Queues && len(req.Dependency) > 0 {
		// The backend holds nothing back: the dependency is mirage's to keep.
		if id := c.liveDependency(req.Dependency); id != "" {
			rec.Action = Wait
			rec.Reason += fmt.Sprintf("; deferred: the backend has no job dependencies, and job %s has not ended (submitted once it is gone)", id)
			w.record(rec)
			return
		}
		req.Dependency = nil
	}
	var reclaim *Reclaim
	if c.in.Rules != nil { // 6. team rules
		adm, err := c.in.Rules.Admit(w.now, c.work, &req)
		if err != nil {
			rec.Action, rec.Error = ActError, "team rules: "+err.Error()
			w.record(rec)
			return
		}
		if !adm.Allow {
			rec.Action = Wait
			rec.Reason += "; deferred by team rules: " + adm.Reason
			w.record(rec)
			return
		}
		if adm.Reason != "" {
			rec.Reason += "; team rules: " + adm.Reason
		}
		if adm.Borrowed {
			rec.Reason += " (on borrowed quota: may be reclaimed)"
		}
		reclaim = adm.Reclaim
	}
	rec.Time, rec.ChainID = w.now, ch.ID
	if rec.Policy == "" {
		rec.Policy = ch.Policy
	}
	if at, ok := w.abandoned[segKey{index, attempt}]; ok {
		rec.Reason += fmt.Sprintf(" (again, under the same tag: the submission at %s left no job)", at.UTC().Format(time.RFC3339))
	}
	seg := Segment{ChainID: ch.ID, Index: index, Attempt: attempt, State: StatePending, Submit: w.now}
	if rec.Action == SubmitPinned { // (a team rule's placement is not a pin to lift)
		seg.Pinned = strings.Join(req.NodeList, ",")
	}
	if reclaim != nil {
		rrec := DecisionRecord{Time: w.now, ChainID: ch.ID, Segment: index, Policy: rec.Policy, Action: ActReclaim, Reason: reclaim.Reason}
		w.tail = append(w.tail, Op{Kind: OpReclaim, Reclaim: reclaim, Record: &rrec})
	}
	w.tail = append(w.tail, Op{Kind: OpSubmit, Segment: &seg, Request: &req, Record: &rec})
	if c.in.Rules != nil {
		c.reserve(&req, reclaim, Tag{ch.ID, index, attempt}.String())
	}
}

// liveDependency is the first job of dep that the snapshot still lists
// as not finished, or "".
func (c *stepContext) liveDependency(dep slurmfmt.Dependency) string {
	for _, id := range dep.JobIDs() {
		if j := c.in.Snapshot.Job(id); j != nil && !j.State.Finished() {
			return id
		}
	}
	return ""
}

// reserve enters a planned submission into the snapshot the team rules
// judge the rest of the cycle on (stepContext.work), after taking out the
// victims of its reclaim, so that two submissions of one cycle cannot both
// count on the same quota or GPUs: on a backend that does not queue, a job
// the rules placed holds its GPUs on its nodes at once; elsewhere it is a
// pending job of its team. The input snapshot is never changed.
func (c *stepContext) reserve(req *SubmitRequest, r *Reclaim, tag string) {
	if c.work == c.in.Snapshot {
		s := *c.in.Snapshot
		s.Nodes, s.Jobs = slices.Clone(s.Nodes), slices.Clone(s.Jobs)
		c.work = &s
	}
	s := c.work
	if r != nil {
		for _, v := range r.Victims {
			s.Jobs = slices.DeleteFunc(s.Jobs, func(j Job) bool {
				if j.ID != v.JobID {
					return false
				}
				s.useGPUs(j.NodeList, -j.GPUs/max(len(j.NodeList), 1))
				return true
			})
		}
	}
	j := Job{ID: "planned:" + tag, Name: req.Name, Account: req.Account, Partition: req.Partition, QOS: req.QOS, State: StatePending,
		Submit: c.in.Now, TimeLimit: req.TimeLimit, Nodes: max(req.Nodes, 1), GPUs: req.GPUs, GPUType: req.GPUType, Comment: req.Comment,
		Depend: req.Dependency.String()}
	if !s.Caps.Queues && len(req.NodeList) > 0 {
		j.State, j.Start, j.NodeList = StateRunning, c.in.Now, slices.Clone(req.NodeList)
		s.useGPUs(j.NodeList, req.GPUsPerNode())
	}
	s.Jobs = append(s.Jobs, j)
}

// useGPUs adds per GPUs (a negative number frees them) to the use of each
// named node.
func (s *Snapshot) useGPUs(nodes []string, per int) {
	for _, name := range nodes {
		if n := s.Node(name); n != nil {
			n.GPUsUsed = min(max(n.GPUsUsed+per, 0), n.GPUs)
		}
	}
}

// segmentRequest builds the submission of one segment attempt: the chain's
// shape, its tag in the comment and the MIRAGE_* environment.
func segmentRequest(ch *Chain, index, attempt int, prevJob string) SubmitRequest {
	env := maps.Clone(ch.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvChain], env[EnvSegment], env[EnvPrevJob] = ch.ID, strconv.Itoa(index), prevJob
	return SubmitRequest{
		Name: ch.Name, Script: ch.SubmitScript(), Args: slices.Clone(ch.Args), Account: ch.Account, Partition: ch.Partition,
		TimeLimit: ch.TimeLimit, Nodes: ch.Nodes, GPUs: ch.GPUs, WorkDir: ch.WorkDir,
		Comment: ChainComment(ch, index, attempt),
		Env:     env,
	}
}

// digest summarises what a policy saw, for the decision log when the
// policy reports no feature digest of its own: snapshot time, queue sizes,
// history length and the predecessor's state and times (FNV-64a, hex).
func (c *stepContext) digest(obs *Observation) string {
	h := fnv.New64a()
	var b [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	put(obs.Snapshot.Time.Unix())
	put(int64(c.nPending))
	put(int64(c.nRunning))
	put(int64(len(obs.History)))
	if p := obs.Predecessor; p != nil {
		h.Write([]byte(p.ID))
		h.Write([]byte(p.State))
		put(p.Start.Unix())
		put(int64(p.TimeLimit))
	}
	return "obs:" + hex.EncodeToString(h.Sum(nil))
}
