package team

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// Usage is one team's use of the cluster as the rules count it.
type Usage struct {
	Team     string         `json:"team"`               // team
	Quota    int            `json:"quota"`              // nominal GPUs
	Used     int            `json:"used"`               // GPUs of the team's own (not borrowed) work, running or queued
	Borrowed int            `json:"borrowed"`           // GPUs of the team's running borrowed work
	ByType   map[string]int `json:"by_type,omitempty"`  // Used per GPU type (the node's type; queued work: its constraint)
	Queued   int            `json:"queued,omitempty"`   // of Used, GPUs of queued (pending) work
	Replaced int            `json:"replaced,omitempty"` // GPUs of a running job the request depends on (it ends before the request starts)
}

// Verdict is the team rules' decision for one submission.
type Verdict string

// Verdicts.
const (
	VerdictAdmit   Verdict = "admit"   // within quota, placed now
	VerdictQueue   Verdict = "queue"   // within quota, no node fits now: the backend queues it (Slurm)
	VerdictReclaim Verdict = "reclaim" // within quota, placed after borrowed work is reclaimed (plan attached)
	VerdictBorrow  Verdict = "borrow"  // over quota, placed on idle GPUs as borrowed, preemptible work
	VerdictDefer   Verdict = "defer"   // not now (over quota without idle GPUs, or no room at all)
)

// Decision is the full account of one decision: what was decided, why,
// and the placement or reclaim plan behind it.
type Decision struct {
	Team      string
	Demand    placement.Demand
	Verdict   Verdict
	Reason    string
	Usage     Usage             // before this job
	Placement *placement.Result // the placement on free resources (nil when none was tried)
	Reclaim   *ReclaimPlan      // with VerdictReclaim
	NodeList  []string          // packing hint set on the request
	Exclude   []string          // packing hint set on the request
	QOS       string            // QOS set on the request (borrowed work)
	Mix       placement.Mix     // the job-size mix frag-aware placement measured against
}

// Allowed reports whether the submission goes ahead now.
func (d *Decision) Allowed() bool { return d.Verdict != VerdictDefer }

// Borrowed reports whether the submission runs as borrowed work.
func (d *Decision) Borrowed() bool { return d.Verdict == VerdictBorrow }

// Rules applies quotas, packing and borrowing. It implements Rules; the
// same value serves the simulator, Slurm and Kubernetes: what the backend
// does by itself (whether it queues work that cannot start yet) comes with
// each snapshot it judges (provisioner.Capabilities).
type Rules struct {
	cfg     Config
	history []provisioner.Job
}

var _ provisioner.Rules = (*Rules)(nil)

// NewRules builds the rules from a parsed configuration.
func NewRules(cfg Config) (*Rules, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return &Rules{cfg: cfg}, nil
}

// Config returns the configuration with defaults filled in.
func (r *Rules) Config() Config { return r.cfg }

// WithPolicy returns the rules with placement policy p instead of the
// file's (unchanged if p is empty).
func (r *Rules) WithPolicy(p placement.Policy) (*Rules, error) {
	if p == "" {
		return r, nil
	}
	cfg := r.Config()
	cfg.Placement.Policy = p
	return NewRules(cfg)
}

// LoadRules reads and parses a team rules file and builds its Rules.
func LoadRules(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("team rules: %w", err)
	}
	cfg, err := ParseConfig(data, path)
	if err != nil {
		return nil, err
	}
	return NewRules(cfg)
}

// WithHistory returns a copy of the rules that also learns the job-size mix
// from these recently started or finished jobs (a HistorySource's answer).
func (r *Rules) WithHistory(h []provisioner.Job) *Rules {
	c := *r
	c.history = h
	return &c
}

// IsBorrowed reports whether a job is borrowed work: its QOS is the
// borrowed QOS or one of the markers.
func (r *Rules) IsBorrowed(j *provisioner.Job) bool {
	return j.QOS != "" && (j.QOS == r.cfg.Borrowing.QOS || slices.Contains(r.cfg.Borrowing.Markers, j.QOS))
}

// Usage counts what each configured team uses in a snapshot: its own work
// (running, and pending unless held by a dependency: a successor waiting on
// its predecessor replaces it rather than adding to it) and its borrowed
// work. Jobs of accounts not in the rules count for no team.
func (r *Rules) Usage(snap *provisioner.Snapshot) []Usage {
	out := make([]Usage, 0, len(r.cfg.Teams))
	for _, t := range r.cfg.Teams {
		out = append(out, r.usage(snap, t.Name, nil))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Team < out[b].Team })
	return out
}

// usage counts one team; replaced (optional) names running jobs that the
// request will replace.
func (r *Rules) usage(snap *provisioner.Snapshot, team string, replaced map[string]bool) Usage {
	u := Usage{Team: team}
	if q := r.cfg.Team(team); q != nil {
		u.Quota = q.GPUs
	}
	types := make(map[string]string, len(snap.Nodes))
	for i := range snap.Nodes {
		types[snap.Nodes[i].Name] = snap.Nodes[i].GPUType
	}
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if j.Account != team || j.GPUs <= 0 {
			continue
		}
		switch j.State {
		case provisioner.StateRunning:
			if r.IsBorrowed(j) {
				u.Borrowed += j.GPUs
				continue
			}
			if replaced[j.ID] {
				u.Replaced += j.GPUs
				continue
			}
			u.Used += j.GPUs
			if len(j.NodeList) > 0 {
				per := j.GPUs / len(j.NodeList)
				for _, n := range j.NodeList {
					u.addType(types[n], per)
				}
			} else {
				u.addType(j.GPUType, j.GPUs)
			}
		case provisioner.StatePending:
			if r.IsBorrowed(j) || j.Depend != "" || j.Reason == provisioner.PendingDependency {
				continue
			}
			u.Used += j.GPUs
			u.Queued += j.GPUs
			u.addType(j.GPUType, j.GPUs)
		}
	}
	return u
}

func (u *Usage) addType(t string, n int) {
	if t == "" {
		return
	}
	if u.ByType == nil {
		u.ByType = map[string]int{}
	}
	u.ByType[t] += n
}

// dependsOn is the set of jobs a dependency waits for.
func dependsOn(dep slurmfmt.Dependency) map[string]bool {
	ids := dep.JobIDs()
	if len(ids) == 0 {
		return nil
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// DecideInput is what Decide looks at.
type DecideInput struct {
	Now      time.Time                  // decision time
	Snapshot *provisioner.Snapshot      // the cluster now
	Request  *provisioner.SubmitRequest // the submission; Decide rewrites QOS and hints on it
	History  []provisioner.Job          // recently started or finished jobs (for the job-size mix); may be empty
	Explain  bool                       // record every candidate and rejected node in the placements (dry runs)
}

// Decide is the team rules' decision for one submission, step by step:
//
//  1. the team must be known, the quotas must fit the cluster, and the job
//     must fit some node at all (else an error: bad input, not a deferral);
//  2. count the team's use (a running job the request depends on is
//     replaced by it, so it does not count);
//  3. within quota (total, and per GPU type when the team has type quotas):
//     place on free resources → admit (with packing hints where they help,
//     or the chosen node on a backend that does not queue); else plan a
//     reclaim of borrowed work → reclaim; else queue (backends that queue,
//     snapshot.Caps.Queues) or defer;
//  4. over quota: borrowing must be enabled and within the team's borrow
//     limit, and the job must fit idle GPUs now → borrow (QOS set to the
//     borrowed QOS); else defer.
//
// Decide is pure; on VerdictAdmit and VerdictBorrow it sets the request's
// QOS and hints, otherwise it leaves the request as it was.
func (r *Rules) Decide(in DecideInput) (*Decision, error) {
	req, snap := in.Request, in.Snapshot
	if req == nil || snap == nil {
		return nil, errors.New("team rules: request and snapshot are required")
	}
	// 1. Bad input.
	q := r.cfg.Team(req.Account)
	if q == nil {
		team := req.Account
		if team == "" {
			team = "(none)"
		}
		return nil, fmt.Errorf("%w %q: the team rules know %s; add it to the rules file or submit under one of them",
			ErrUnknownTeam, team, strings.Join(r.cfg.TeamNames(), ", "))
	}
	if err := r.cfg.CheckCluster(snap); err != nil {
		return nil, err
	}
	d, err := placement.DemandOf(req)
	if err != nil {
		return nil, fmt.Errorf("team %s: %w", q.Name, err)
	}
	st := placement.FromSnapshot(snap)
	if err := st.CheckFits(d); err != nil {
		return nil, fmt.Errorf("team %s: %w", q.Name, err)
	}
	history := in.History
	if history == nil {
		history = r.history
	}
	mix := r.mix(st, snap, history, in.Now)
	dec := &Decision{Team: q.Name, Demand: d, Mix: mix}
	policy := r.cfg.Placement.Policy
	opts := placement.Options{NodeList: req.NodeList, Exclude: req.Exclude, Mix: &mix, Explain: in.Explain}
	// 2. Use.
	u := r.usage(snap, q.Name, dependsOn(req.Dependency))
	dec.Usage = u
	total := req.GPUs
	// 3. Within quota?
	within := u.Used+total <= q.GPUs
	typed := d // the demand restricted to the types where the team has quota left
	if within && len(q.GPUTypes) > 0 {
		var ok []string
		for _, t := range sortedKeys(q.GPUTypes) {
			if u.ByType[t]+total <= q.GPUTypes[t] && (len(d.GPUTypes) == 0 || slices.Contains(d.GPUTypes, t)) {
				ok = append(ok, t)
			}
		}
		within = len(ok) > 0
		typed.GPUTypes = ok
	}
	if within {
		p, err := placement.Place(st, typed, policy, opts)
		if err != nil {
			return nil, fmt.Errorf("team %s: %w", q.Name, err)
		}
		dec.Placement = p
		quota := fmt.Sprintf("team %s within quota (%d of %d GPUs used, job asks %d)", q.Name, u.Used, q.GPUs, total)
		if p.OK() {
			dec.Verdict = VerdictAdmit
			dec.Reason = quota + "; " + p.Reason
			r.hint(dec, snap, st, typed, opts, req)
			return dec, nil
		}
		plan, rerr := PlanReclaim(ReclaimInput{Now: in.Now, Snapshot: snap, Team: q.Name, Demand: typed, IsBorrowed: r.IsBorrowed,
			Signal: r.cfg.Borrowing.Signal, Grace: time.Duration(r.cfg.Borrowing.Grace), MinRuntime: r.cfg.MinRuntime,
			NodeList: req.NodeList, Exclude: req.Exclude})
		switch {
		case rerr == nil:
			dec.Verdict, dec.Reclaim = VerdictReclaim, plan
			dec.Reason = quota + "; no free room: " + plan.Reason
			if snap.Caps.Queues {
				dec.Reason += fmt.Sprintf(" (the backend's preemption of QOS %s does it)", r.cfg.Borrowing.QOS)
			}
		case !errors.Is(rerr, ErrNoReclaim):
			return nil, fmt.Errorf("team %s: %w", q.Name, rerr)
		case snap.Caps.Queues:
			dec.Verdict = VerdictQueue
			dec.Reason = quota + "; queued: " + p.Reason
		default:
			dec.Verdict = VerdictDefer
			dec.Reason = quota + "; deferred: " + p.Reason + "; " + rerr.Error()
		}
		return dec, nil
	}
	// 4. Over quota: borrow idle GPUs, or wait.
	over := fmt.Sprintf("team %s over quota (%d of %d GPUs used, job asks %d)", q.Name, u.Used, q.GPUs, total)
	if len(q.GPUTypes) > 0 && u.Used+total <= q.GPUs {
		over = fmt.Sprintf("team %s over its GPU-type quotas %v (uses %v, job asks %d)", q.Name, q.GPUTypes, u.ByType, total)
	}
	switch backoff := r.backoff(snap, q.Name, in.Now); {
	case !*r.cfg.Borrowing.Enabled:
		dec.Verdict, dec.Reason = VerdictDefer, over+"; borrowing is disabled"
		return dec, nil
	case backoff != "":
		dec.Verdict, dec.Reason = VerdictDefer, over+"; "+backoff
		return dec, nil
	case q.BorrowLimit != nil && u.Borrowed+total > *q.BorrowLimit:
		dec.Verdict = VerdictDefer
		dec.Reason = fmt.Sprintf("%s; borrow limit %d reached (%d borrowed)", over, *q.BorrowLimit, u.Borrowed)
		return dec, nil
	}
	p, err := placement.Place(st, d, policy, opts)
	if err != nil {
		return nil, fmt.Errorf("team %s: %w", q.Name, err)
	}
	dec.Placement = p
	if !p.OK() {
		dec.Verdict, dec.Reason = VerdictDefer, over+"; no idle GPUs to borrow: "+p.Reason
		return dec, nil
	}
	dec.Verdict = VerdictBorrow
	dec.QOS = r.cfg.Borrowing.QOS
	req.QOS = dec.QOS
	dec.Reason = fmt.Sprintf("%s; borrows idle GPUs as preemptible work (QOS %s, reclaimed after a %s signal and %s grace when their owners need them): %s",
		over, dec.QOS, r.cfg.Borrowing.Signal, time.Duration(r.cfg.Borrowing.Grace), p.Reason)
	r.hint(dec, snap, st, d, opts, req)
	return dec, nil
}

// backoff says why team may not borrow at now ("" when it may): its
// borrowed work was reclaimed (snap.Reclaimed) less than its back-off ago.
func (r *Rules) backoff(snap *provisioner.Snapshot, team string, now time.Time) string {
	b := r.cfg.Backoff(team)
	if b <= 0 {
		return ""
	}
	var last *provisioner.Reclaimed
	for i := range snap.Reclaimed {
		rc := &snap.Reclaimed[i]
		if rc.Team == team && !rc.Time.After(now) && now.Sub(rc.Time) < b && (last == nil || rc.Time.After(last.Time)) {
			last = rc
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("its borrowed work (%s) was reclaimed at %s: it borrows again from %s (back-off %s)",
		last.JobID, last.Time.UTC().Format(time.RFC3339), last.Time.Add(b).UTC().Format(time.RFC3339), b)
}

// Mix is the job-size mix the rules' frag-aware placement measures against
// at now: learned from the snapshot's running and pending jobs and the
// history given by WithHistory, over the placement window of the rules
// file, blended with the power-of-two default (placement.MixFromJobs).
func (r *Rules) Mix(snap *provisioner.Snapshot, now time.Time) placement.Mix {
	return r.mix(placement.FromSnapshot(snap), snap, r.history, now)
}

// mix is Mix on a state already built from snap, with this history.
func (r *Rules) mix(st *placement.State, snap *provisioner.Snapshot, history []provisioner.Job, now time.Time) placement.Mix {
	return placement.MixFromJobs(st, snap, history, now.Add(-time.Duration(r.cfg.Placement.HistoryWindow)),
		placement.MixOptions{PriorJobs: r.cfg.Placement.PriorJobs})
}

// hint sets packing hints on a queueing backend's request where they help:
// when the policy's nodes differ from the backend's own choice (first fit in
// node order, as Slurm's cons_tres with equal node weights). It prefers
// excluding the few better-ranked-by-order nodes first fit would take (the
// backend may still fall back to other nodes) and pins the chosen nodes when
// that list would be long. Backends that do not queue (Kubernetes) always
// get the chosen nodes: the work is created for them.
func (r *Rules) hint(dec *Decision, snap *provisioner.Snapshot, st *placement.State, d placement.Demand, opts placement.Options, req *provisioner.SubmitRequest) {
	chosen := dec.Placement.NodeNames()
	if !snap.Caps.Queues {
		dec.NodeList, req.NodeList = chosen, chosen
		return
	}
	switch r.cfg.Placement.Hints {
	case HintsNever:
		return
	case HintsAlways:
		dec.NodeList, req.NodeList = chosen, chosen
		return
	}
	if r.cfg.Placement.Policy == placement.FirstFit {
		return
	}
	ff, err := placement.Place(st, d, placement.FirstFit, placement.Options{NodeList: opts.NodeList, Exclude: opts.Exclude})
	if err != nil || !ff.OK() || slices.Equal(ff.NodeNames(), chosen) {
		dec.Reason += "; no packing hint (the backend's own first fit picks the same nodes)"
		return
	}
	// The nodes first fit would take before reaching the chosen ones.
	in := map[string]bool{}
	for _, n := range chosen {
		in[n] = true
	}
	last := 0
	for _, a := range dec.Placement.Assignments {
		last = max(last, a.Node)
	}
	filter, err := st.Filter(d, opts.NodeList, opts.Exclude)
	if err != nil {
		return // not reached: first fit accepted the same lists
	}
	var excl []string
	for i := 0; i < last; i++ {
		if !in[st.Name(i)] && filter.Reason(i) == "" {
			excl = append(excl, st.Name(i))
		}
	}
	if len(excl) > 0 && len(excl) <= maxExcludeHint {
		dec.Exclude = excl
		req.Exclude = append(slices.Clone(req.Exclude), excl...)
		dec.Reason += "; hint: exclude " + strings.Join(excl, ",") + " (first fit would take them)"
		return
	}
	dec.NodeList, req.NodeList = chosen, chosen
	dec.Reason += "; hint: node list " + strings.Join(chosen, ",")
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Admit implements Rules for the engine: Decide without history beyond
// WithHistory, mapped to an Admission (allowed unless deferred; borrowed
// work marked) with the request rewritten (QOS, packing hints or, on a
// backend that does not queue, the chosen node). A reclaim on such a
// backend comes with the Admission, for the engine to carry out before the
// submission, and the request names the node it frees; on a backend that
// queues, its own preemption reclaims.
func (r *Rules) Admit(now time.Time, snap *provisioner.Snapshot, req *provisioner.SubmitRequest) (provisioner.Admission, error) {
	d, err := r.Decide(DecideInput{Now: now, Snapshot: snap, Request: req})
	if err != nil {
		return provisioner.Admission{}, err
	}
	adm := provisioner.Admission{Allow: d.Allowed(), Borrowed: d.Borrowed(), Reason: string(d.Verdict) + ": " + d.Reason}
	if d.Verdict == VerdictReclaim && !snap.Caps.Queues {
		adm.Reclaim = d.Reclaim.Order()
		req.NodeList = []string{d.Reclaim.Node}
	}
	return adm, nil
}
