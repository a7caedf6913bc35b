package provisioner

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Errors of the team rules.
var (
	ErrTeamConfig          = errors.New("invalid team rules")             // the configuration file is malformed or inconsistent
	ErrUnknownTeam         = errors.New("unknown team")                   // a submission names a team the rules do not know
	ErrQuotaExceedsCluster = errors.New("team quotas exceed the cluster") // nominal GPUs add up to more than the cluster has
)

// Duration is a time.Duration written as a Go duration string ("30s", "2h")
// in the team rules file.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"30s\" or \"2h\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\" or \"2h\", got %q", s)
	}
	*d = Duration(v)
	return nil
}

// TeamConfig is the team rules file (YAML or JSON; see ParseTeamConfig):
//
//	teams:                      # one entry per team (Slurm account / Kubernetes team)
//	  - name: team-a
//	    gpus: 20                # nominal GPUs: the quota
//	    gpuTypes: {A100: 12}    # optional: nominal GPUs per GPU type (types not listed: 0)
//	    borrowLimit: 10         # optional: at most this many GPUs held as borrowed work
//	  - name: team-b
//	    gpus: 20
//	overcommit: false           # allow quotas that add up to more than the cluster
//	borrowing:
//	  enabled: true             # over-quota work may use idle GPUs as borrowed work
//	  qos: preemptible          # QOS of borrowed submissions (Slurm preempts it; Kubernetes: borrowed label)
//	  markers: [mirage-borrowed] # other QOS / priority-class names that mark borrowed work
//	  grace: 60s                # grace between the checkpoint signal and the eviction
//	  signal: USR1              # checkpoint signal
//	placement:
//	  policy: frag-aware        # first-fit, best-fit, spread or frag-aware
//	  hints: auto               # Slurm --nodelist/--exclude hints: auto, always or never
//	  historyWindow: 168h       # jobs this recent shape the job-size mix
//	  priorJobs: 20             # weight of the default mix, in pseudo-jobs
type TeamConfig struct {
	Teams      []TeamQuota     `json:"teams"`
	Overcommit bool            `json:"overcommit,omitempty"`
	Borrowing  BorrowingConfig `json:"borrowing"`
	Placement  PlacementConfig `json:"placement"`
}

// TeamQuota is one team's nominal GPUs.
type TeamQuota struct {
	Name        string         `json:"name"`                  // team name (Slurm account, Kubernetes team label or namespace mapping)
	GPUs        int            `json:"gpus"`                  // nominal GPUs in total
	GPUTypes    map[string]int `json:"gpuTypes,omitempty"`    // nominal GPUs per GPU type; when set, other types have none
	BorrowLimit *int           `json:"borrowLimit,omitempty"` // most GPUs the team may hold as borrowed work (nil = no limit)
}

// BorrowingConfig says how idle quota is lent and reclaimed.
type BorrowingConfig struct {
	Enabled *bool    `json:"enabled,omitempty"` // default true
	QOS     string   `json:"qos,omitempty"`     // default "preemptible"
	Markers []string `json:"markers,omitempty"` // default ["mirage-borrowed"] (the Kubernetes adapter's priority class)
	Grace   Duration `json:"grace,omitempty"`   // default 60s
	Signal  string   `json:"signal,omitempty"`  // default "USR1"
}

// PlacementConfig chooses the packing policy and how it is applied.
type PlacementConfig struct {
	Policy        PlacePolicy `json:"policy,omitempty"`        // default frag-aware
	Hints         HintMode    `json:"hints,omitempty"`         // default auto
	HistoryWindow Duration    `json:"historyWindow,omitempty"` // default 168h
	PriorJobs     float64     `json:"priorJobs,omitempty"`     // default 20
}

// HintMode says when the rules put packing hints (NodeList/Exclude) on a
// submission to a backend that places jobs itself (Slurm).
type HintMode string

// Hint modes.
const (
	HintsAuto   HintMode = "auto"   // only where the policy's node differs from the backend's own first fit
	HintsAlways HintMode = "always" // always pin the chosen nodes
	HintsNever  HintMode = "never"  // never
)

// Defaults of the team rules file.
const (
	DefaultBorrowedQOS    = "preemptible"
	DefaultBorrowedMarker = "mirage-borrowed"
	DefaultGrace          = 60 * time.Second
	DefaultSignal         = "USR1"
	DefaultMixWindow      = 7 * 24 * time.Hour
	// maxExcludeHint is the longest exclusion list used as a hint; beyond it
	// the chosen nodes are pinned with a node list instead.
	maxExcludeHint = 8
)

// ParseTeamConfig reads a team rules file (YAML or JSON; unknown fields are
// errors, to catch typos), fills in defaults and validates what can be
// checked without a cluster. name is used in error messages.
func ParseTeamConfig(data []byte, name string) (TeamConfig, error) {
	var c TeamConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("%w: %s: %v", ErrTeamConfig, name, err)
	}
	if err := c.normalize(); err != nil {
		return c, fmt.Errorf("%w: %s: %v", ErrTeamConfig, name, err)
	}
	return c, nil
}

// normalize fills defaults and checks the file on its own.
func (c *TeamConfig) normalize() error {
	if len(c.Teams) == 0 {
		return errors.New("no teams: list at least one under \"teams\"")
	}
	seen := map[string]bool{}
	for i, t := range c.Teams {
		where := fmt.Sprintf("teams[%d]", i)
		if t.Name == "" {
			return fmt.Errorf("%s: name is empty", where)
		}
		where += " (" + t.Name + ")"
		if seen[t.Name] {
			return fmt.Errorf("%s: team listed twice", where)
		}
		seen[t.Name] = true
		if t.GPUs < 0 {
			return fmt.Errorf("%s: gpus %d: must be ≥ 0", where, t.GPUs)
		}
		for typ, n := range t.GPUTypes {
			if typ == "" {
				return fmt.Errorf("%s: gpuTypes: empty type name", where)
			}
			if n < 0 || n > t.GPUs {
				return fmt.Errorf("%s: gpuTypes %s: %d: must be between 0 and the team's gpus (%d)", where, typ, n, t.GPUs)
			}
		}
		if t.BorrowLimit != nil && *t.BorrowLimit < 0 {
			return fmt.Errorf("%s: borrowLimit %d: must be ≥ 0", where, *t.BorrowLimit)
		}
	}
	b := &c.Borrowing
	if b.Enabled == nil {
		yes := true
		b.Enabled = &yes
	}
	if b.QOS == "" {
		b.QOS = DefaultBorrowedQOS
	}
	if b.Markers == nil {
		b.Markers = []string{DefaultBorrowedMarker}
	}
	if b.Grace < 0 {
		return fmt.Errorf("borrowing.grace %s: must be ≥ 0", time.Duration(b.Grace))
	}
	if b.Grace == 0 {
		b.Grace = Duration(DefaultGrace)
	}
	if b.Signal == "" {
		b.Signal = DefaultSignal
	}
	p := &c.Placement
	if p.Policy == "" {
		p.Policy = FragAware
	}
	if _, err := ParsePlacePolicy(string(p.Policy)); err != nil {
		return fmt.Errorf("placement.policy: %v", err)
	}
	switch p.Hints {
	case "":
		p.Hints = HintsAuto
	case HintsAuto, HintsAlways, HintsNever:
	default:
		return fmt.Errorf("placement.hints %q: want auto, always or never", p.Hints)
	}
	if p.HistoryWindow < 0 || p.PriorJobs < 0 {
		return errors.New("placement: historyWindow and priorJobs must be ≥ 0")
	}
	if p.HistoryWindow == 0 {
		p.HistoryWindow = Duration(DefaultMixWindow)
	}
	if p.PriorJobs == 0 {
		p.PriorJobs = 20
	}
	return nil
}

// Team returns a team's quota, or nil.
func (c *TeamConfig) Team(name string) *TeamQuota {
	for i := range c.Teams {
		if c.Teams[i].Name == name {
			return &c.Teams[i]
		}
	}
	return nil
}

// TeamNames lists the teams, sorted.
func (c *TeamConfig) TeamNames() []string {
	out := make([]string, len(c.Teams))
	for i, t := range c.Teams {
		out[i] = t.Name
	}
	sort.Strings(out)
	return out
}

// CheckCluster validates the quotas against a cluster: the nominal GPUs of
// all teams must not add up to more than the GPUs of all its nodes (nor, per
// GPU type, to more than it has of that type) unless overcommit is set; a
// GPU type named in a quota must exist in the cluster.
func (c *TeamConfig) CheckCluster(snap *Snapshot) error {
	capacity, byType := 0, map[string]int{}
	for i := range snap.Nodes {
		capacity += snap.Nodes[i].GPUs
		byType[snap.Nodes[i].GPUType] += snap.Nodes[i].GPUs
	}
	sum, sumType := 0, map[string]int{}
	parts := make([]string, 0, len(c.Teams))
	for _, t := range c.Teams {
		sum += t.GPUs
		parts = append(parts, fmt.Sprintf("%s %d", t.Name, t.GPUs))
		for typ, n := range t.GPUTypes {
			if _, ok := byType[typ]; !ok {
				return fmt.Errorf("%w: team %s: gpuTypes names %q, but the cluster has no GPUs of that type (types: %s)",
					ErrTeamConfig, t.Name, typ, strings.Join(typeNames(byType), ", "))
			}
			sumType[typ] += n
		}
	}
	if c.Overcommit {
		return nil
	}
	if sum > capacity {
		return fmt.Errorf("%w: quotas add up to %d GPUs (%s) but the cluster has %d; lower them or set overcommit: true",
			ErrQuotaExceedsCluster, sum, strings.Join(parts, " + "), capacity)
	}
	for _, typ := range typeNames(sumType) {
		if sumType[typ] > byType[typ] {
			return fmt.Errorf("%w: quotas for GPU type %s add up to %d but the cluster has %d of them; lower them or set overcommit: true",
				ErrQuotaExceedsCluster, typ, sumType[typ], byType[typ])
		}
	}
	return nil
}

func typeNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		if t == "" {
			t = "(untyped)"
		}
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// TeamUsage is one team's use of the cluster as the rules count it.
type TeamUsage struct {
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

// TeamDecision is the full account of one decision: what was decided, why,
// and the placement or reclaim plan behind it.
type TeamDecision struct {
	Team      string
	Demand    Demand
	Verdict   Verdict
	Reason    string
	Usage     TeamUsage    // before this job
	Placement *Placement   // the placement on free resources (nil when none was tried)
	Reclaim   *ReclaimPlan // with VerdictReclaim
	NodeList  []string     // packing hint set on the request
	Exclude   []string     // packing hint set on the request
	QOS       string       // QOS set on the request (borrowed work)
	Mix       Mix          // the job-size mix frag-aware placement measured against
}

// Allowed reports whether the submission goes ahead now.
func (d *TeamDecision) Allowed() bool { return d.Verdict != VerdictDefer }

// Borrowed reports whether the submission runs as borrowed work.
func (d *TeamDecision) Borrowed() bool { return d.Verdict == VerdictBorrow }

// TeamRules applies quotas, packing and borrowing. It implements Rules; the
// same value serves the simulator, Slurm and Kubernetes.
type TeamRules struct {
	cfg      TeamConfig
	queueing bool
	history  []Job
}

var _ Rules = (*TeamRules)(nil)

// NewTeamRules builds the rules from a parsed configuration. queueing says
// whether the backend queues jobs that cannot start yet (Slurm, the
// simulator: a job within quota is submitted even when no node fits now) or
// needs mirage to choose a node before anything is created (Kubernetes: such
// a job is deferred unless borrowed work can be reclaimed).
func NewTeamRules(cfg TeamConfig, queueing bool) (*TeamRules, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTeamConfig, err)
	}
	return &TeamRules{cfg: cfg, queueing: queueing}, nil
}

// Config returns the configuration with defaults filled in.
func (r *TeamRules) Config() TeamConfig { return r.cfg }

// WithHistory returns a copy of the rules that also learns the job-size mix
// from these recently started or finished jobs (a HistorySource's answer).
func (r *TeamRules) WithHistory(h []Job) *TeamRules {
	c := *r
	c.history = h
	return &c
}

// IsBorrowed reports whether a job is borrowed work: its QOS is the
// borrowed QOS or one of the markers.
func (r *TeamRules) IsBorrowed(j *Job) bool {
	return j.QOS != "" && (j.QOS == r.cfg.Borrowing.QOS || slices.Contains(r.cfg.Borrowing.Markers, j.QOS))
}

// Usage counts what each configured team uses in a snapshot: its own work
// (running, and pending unless held by a dependency: a successor waiting on
// its predecessor replaces it rather than adding to it) and its borrowed
// work. Jobs of accounts not in the rules count for no team.
func (r *TeamRules) Usage(snap *Snapshot) []TeamUsage {
	out := make([]TeamUsage, 0, len(r.cfg.Teams))
	for _, t := range r.cfg.Teams {
		out = append(out, r.usage(snap, t.Name, nil))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Team < out[b].Team })
	return out
}

// usage counts one team; replaced (optional) names running jobs that the
// request will replace.
func (r *TeamRules) usage(snap *Snapshot, team string, replaced map[string]bool) TeamUsage {
	u := TeamUsage{Team: team}
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
		case StateRunning:
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
		case StatePending:
			if r.IsBorrowed(j) || j.Depend != "" || j.Reason == "Dependency" {
				continue
			}
			u.Used += j.GPUs
			u.Queued += j.GPUs
			u.addType(j.GPUType, j.GPUs)
		}
	}
	return u
}

func (u *TeamUsage) addType(t string, n int) {
	if t == "" {
		return
	}
	if u.ByType == nil {
		u.ByType = map[string]int{}
	}
	u.ByType[t] += n
}

// dependsOn returns the job ids of a dependency expression
// ("afterany:1:2,afterok:3").
func dependsOn(dep string) map[string]bool {
	if dep == "" {
		return nil
	}
	out := map[string]bool{}
	for _, part := range strings.Split(dep, ",") {
		_, list, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		for _, id := range strings.Split(list, ":") {
			if id != "" {
				out[id] = true
			}
		}
	}
	return out
}

// DecideInput is what Decide looks at.
type DecideInput struct {
	Now         time.Time            // decision time
	Snapshot    *Snapshot            // the cluster now
	Request     *SubmitRequest       // the submission; Decide rewrites QOS and hints on it
	History     []Job                // recently started or finished jobs (for the job-size mix); may be empty
	Checkpoints map[string]time.Time // last checkpoint per job id, for reclaim's progress criterion
	Explain     bool                 // record every candidate and rejected node in the placements (dry runs)
}

// Decide is the team rules' decision for one submission, step by step:
//
//  1. the team must be known, the quotas must fit the cluster, and the job
//     must fit some node at all (else an error: bad input, not a deferral);
//  2. count the team's use (a running job the request depends on is
//     replaced by it, so it does not count);
//  3. within quota (total, and per GPU type when the team has type quotas):
//     place on free resources → admit (with packing hints where they help);
//     else plan a reclaim of borrowed work → reclaim; else queue (queueing
//     backends) or defer;
//  4. over quota: borrowing must be enabled and within the team's borrow
//     limit, and the job must fit idle GPUs now → borrow (QOS set to the
//     borrowed QOS); else defer.
//
// Decide is pure; on VerdictAdmit and VerdictBorrow it sets the request's
// QOS and hints, otherwise it leaves the request as it was.
func (r *TeamRules) Decide(in DecideInput) (*TeamDecision, error) {
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
	d, err := DemandOf(req)
	if err != nil {
		return nil, fmt.Errorf("team %s: %w", q.Name, err)
	}
	st := PlaceStateFromSnapshot(snap)
	if err := st.CheckFits(d); err != nil {
		return nil, fmt.Errorf("team %s: %w", q.Name, err)
	}
	history := in.History
	if history == nil {
		history = r.history
	}
	mix := MixFromJobs(st, snap, history, in.Now.Add(-time.Duration(r.cfg.Placement.HistoryWindow)),
		MixOptions{PriorJobs: r.cfg.Placement.PriorJobs})
	dec := &TeamDecision{Team: q.Name, Demand: d, Mix: mix}
	policy := r.cfg.Placement.Policy
	opts := PlaceOptions{NodeList: req.NodeList, Exclude: req.Exclude, Mix: &mix, Explain: in.Explain}
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
		p, err := Place(st, typed, policy, opts)
		if err != nil {
			return nil, fmt.Errorf("team %s: %w", q.Name, err)
		}
		dec.Placement = p
		quota := fmt.Sprintf("team %s within quota (%d of %d GPUs used, job asks %d)", q.Name, u.Used, q.GPUs, total)
		if p.OK() {
			dec.Verdict = VerdictAdmit
			dec.Reason = quota + "; " + p.Reason
			r.hint(dec, st, typed, opts, req)
			return dec, nil
		}
		plan, rerr := PlanReclaim(ReclaimInput{Now: in.Now, Snapshot: snap, Team: q.Name, Demand: typed, IsBorrowed: r.IsBorrowed,
			Checkpoints: in.Checkpoints, Signal: r.cfg.Borrowing.Signal, Grace: time.Duration(r.cfg.Borrowing.Grace),
			NodeList: req.NodeList, Exclude: req.Exclude})
		switch {
		case rerr == nil:
			dec.Verdict, dec.Reclaim = VerdictReclaim, plan
			dec.Reason = quota + "; no free room: " + plan.Reason
			if r.queueing {
				dec.Reason += fmt.Sprintf(" (the backend's preemption of QOS %s does it)", r.cfg.Borrowing.QOS)
			}
		case !errors.Is(rerr, ErrNoReclaim):
			return nil, fmt.Errorf("team %s: %w", q.Name, rerr)
		case r.queueing:
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
	switch {
	case !*r.cfg.Borrowing.Enabled:
		dec.Verdict, dec.Reason = VerdictDefer, over+"; borrowing is disabled"
		return dec, nil
	case q.BorrowLimit != nil && u.Borrowed+total > *q.BorrowLimit:
		dec.Verdict = VerdictDefer
		dec.Reason = fmt.Sprintf("%s; borrow limit %d reached (%d borrowed)", over, *q.BorrowLimit, u.Borrowed)
		return dec, nil
	}
	p, err := Place(st, d, policy, opts)
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
	r.hint(dec, st, d, opts, req)
	return dec, nil
}

// hint sets packing hints on a queueing backend's request where they help:
// when the policy's nodes differ from the backend's own choice (first fit in
// node order, as Slurm's cons_tres with equal node weights). It prefers
// excluding the few better-ranked-by-order nodes first fit would take (the
// backend may still fall back to other nodes) and pins the chosen nodes when
// that list would be long. Non-queueing backends (Kubernetes) always get the
// chosen nodes: mirage binds the work itself.
func (r *TeamRules) hint(dec *TeamDecision, st *PlaceState, d Demand, opts PlaceOptions, req *SubmitRequest) {
	chosen := dec.Placement.NodeNames()
	if !r.queueing {
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
	if r.cfg.Placement.Policy == FirstFit {
		return
	}
	ff, err := Place(st, d, FirstFit, PlaceOptions{NodeList: opts.NodeList, Exclude: opts.Exclude})
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
	c := st.compile(d)
	allow, _, _ := st.allowMask(opts.NodeList, opts.Exclude)
	var excl []string
	for i := 0; i < last; i++ {
		if !in[st.names[i]] && st.filter(i, &c, allow) == "" {
			excl = append(excl, st.names[i])
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
// work marked) with the request rewritten (QOS, packing hints).
func (r *TeamRules) Admit(now time.Time, snap *Snapshot, req *SubmitRequest) (Admission, error) {
	d, err := r.Decide(DecideInput{Now: now, Snapshot: snap, Request: req})
	if err != nil {
		return Admission{}, err
	}
	return Admission{Allow: d.Allowed(), Borrowed: d.Borrowed(), Reason: string(d.Verdict) + ": " + d.Reason}, nil
}
