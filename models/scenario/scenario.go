package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// Scenario is a recorded trace prepared for chain experiments in the
// simulator: the replay specs (recorded holds applied, as `mirage sim`
// does) and the cluster they replay on. It is immutable; every experiment
// builds its own simulator from it.
type Scenario struct {
	Name      string         // trace name recorded in model metadata
	Config    sim.Config     // simulated cluster
	Specs     []sim.JobSpec  // replay specs, any order
	First     time.Time      // first recorded start: warm-up counts from here
	Last      time.Time      // last submit
	Jobs      []traces.Job   // the recorded jobs (for wait datasets); may be nil
	Scale     float64        // arrival scaling applied (1: the trace as recorded)
	Oversized int            // recorded jobs dropped because they ask for more nodes or GPUs than the cluster has
	index     map[string]int // spec id → index into Jobs
}

// Recorded returns the recorded job a replay spec stands for (nil when the
// scenario was built without its jobs, or id is no spec of it).
func (sc *Scenario) Recorded(id string) *traces.Job {
	i, ok := sc.index[id]
	if !ok || i >= len(sc.Jobs) {
		return nil
	}
	return &sc.Jobs[i]
}

// NewScenario prepares recorded jobs for replay on cfg: jobs with recorded
// holds are submitted at their estimated eligible time (sim.Holds), jobs
// that never started or ended are dropped, and so are jobs larger than the
// whole cluster (counted in Oversized).
func NewScenario(name string, jobs []traces.Job, cfg sim.Config) (*Scenario, error) {
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("scenario %s: cluster has no nodes", name)
	}
	_, elig := sim.Holds(jobs, sim.HoldOptions{Nodes: len(cfg.Nodes)})
	specs, index, _ := sim.FromTraces(jobs, elig)
	totalGPUs := 0
	for _, n := range cfg.Nodes {
		totalGPUs += n.GPUs
	}
	oversized := 0
	keep := specs[:0]
	keepIdx := index[:0]
	for k, sp := range specs {
		if sp.Nodes > len(cfg.Nodes) || sp.GPUs > totalGPUs {
			oversized++
			continue
		}
		keep, keepIdx = append(keep, sp), append(keepIdx, index[k])
	}
	specs, index = keep, keepIdx
	if len(specs) == 0 {
		return nil, fmt.Errorf("scenario %s: no replayable jobs (every job lacks a start or an end)", name)
	}
	sc := &Scenario{Name: name, Config: cfg, Specs: specs, Jobs: jobs, Scale: 1, Oversized: oversized, index: make(map[string]int, len(specs))}
	for k, sp := range specs {
		sc.index[sp.ID] = index[k]
		if sc.Last.IsZero() || sp.Submit.After(sc.Last) {
			sc.Last = sp.Submit
		}
	}
	for _, j := range jobs {
		if !j.Start.IsZero() && (sc.First.IsZero() || j.Start.Before(sc.First)) {
			sc.First = j.Start
		}
	}
	return sc, nil
}

// Scaled returns the scenario with its arrivals scaled by s ≥ 1: every job
// is replayed once more with probability s − ⌊s⌋ (and ⌊s⌋ − 1 more times
// for s ≥ 2), each copy submitted after a uniform jitter in [0, jitter)
// (default 1 h) under the same user and shape, so the load grows by s while
// the daily and weekly patterns and the mix of users stay. Copies get the
// id "ORIG*k". The draw is seeded: the same seed gives the same scenario.
func (sc *Scenario) Scaled(s float64, seed uint64, jitter time.Duration) (*Scenario, error) {
	if s < 1 || math.IsNaN(s) || s > 16 {
		return nil, fmt.Errorf("scenario %s: load scale %v outside [1, 16]", sc.Name, s)
	}
	if s == 1 {
		return sc, nil
	}
	if jitter <= 0 {
		jitter = time.Hour
	}
	r := rand.New(rand.NewPCG(seed, math.Float64bits(s)))
	out := *sc
	out.Scale = sc.Scale * s
	out.Name = fmt.Sprintf("%s×%g", sc.Name, out.Scale)
	out.Specs = slices.Clone(sc.Specs)
	whole := int(s)
	frac := s - float64(whole)
	for _, sp := range sc.Specs {
		n := whole - 1
		if r.Float64() < frac {
			n++
		}
		for k := 1; k <= n; k++ {
			c := sp
			c.ID = sp.ID + "*" + strconv.Itoa(k)
			c.Submit = sp.Submit.Add(time.Duration(r.Int64N(int64(jitter))))
			c.Depend = "" // copies are independent work
			out.Specs = append(out.Specs, c)
		}
	}
	slices.SortStableFunc(out.Specs, func(a, b sim.JobSpec) int { return a.Submit.Compare(b.Submit) })
	return &out, nil
}

// NewSim returns a fresh simulator loaded with the scenario's jobs, its
// clock before the first submit.
func (sc *Scenario) NewSim() (*sim.Sim, error) {
	s, err := sim.New(sc.Config)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if err := s.Load(slices.Clone(sc.Specs)); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return s, nil
}

// SimHistory adapts a simulator to provisioner.HistorySource.
type SimHistory struct{ S *sim.Sim }

// History implements provisioner.HistorySource.
func (h SimHistory) History(_ context.Context, since time.Time) ([]provisioner.Job, error) {
	return h.S.History(since), nil
}

// Protocol is the published pair protocol: a predecessor with a Limit-long
// time limit that it uses fully, of each size in Nodes, is injected into
// the trace every Every of trace time after WarmUp; while it runs, the
// policy decides every Tick (from the predecessor's start) whether to
// submit the successor; at Lead before the predecessor's end an unsubmitted
// successor is submitted regardless (the reactive submission, which is the
// whole of the reactive baseline). The gap is successor start − predecessor
// end.
type Protocol struct {
	Every         time.Duration // between injections (default 4 h)
	WarmUp        time.Duration // after the first recorded start before the first injection (default 48 h)
	Tick          time.Duration // decision interval (default 10 min)
	History       time.Duration // Observation.History window (default 24 h)
	Limit         time.Duration // predecessor and successor limit, used fully (default 48 h)
	Nodes         []int         // chain sizes (default 1 and 8)
	GPUsPerNode   int           // GPUs requested per node (default: the first node's GPUs)
	Account       string        // account of the injected chains ("", the default: a typical user's of the trace, see ChainIdentity)
	Partition     string        // partition ("": the default partition)
	Lead          time.Duration // the forced (reactive) submission comes this long before the predecessor's end (default 1 min)
	StartDeadline time.Duration // a predecessor that has not started this long after injection is skipped (default 7 days)
	Horizon       time.Duration // a successor not started this long after the predecessor's end is censored (default 14 days)
}

// DefaultProtocol returns the published protocol's parameters.
func DefaultProtocol() Protocol {
	return Protocol{Every: 4 * time.Hour, WarmUp: 48 * time.Hour, Tick: 10 * time.Minute, History: provisioner.DefaultHistoryWindow,
		Limit: 48 * time.Hour, Nodes: []int{1, 8}, Lead: time.Minute,
		StartDeadline: 7 * 24 * time.Hour, Horizon: 14 * 24 * time.Hour}
}

// WithDefaults fills zero fields from DefaultProtocol and GPUsPerNode from cfg.
func (p Protocol) WithDefaults(cfg sim.Config) Protocol {
	d := DefaultProtocol()
	if p.Every <= 0 {
		p.Every = d.Every
	}
	if p.WarmUp <= 0 {
		p.WarmUp = d.WarmUp
	}
	if p.Tick <= 0 {
		p.Tick = d.Tick
	}
	if p.History <= 0 {
		p.History = d.History
	}
	if p.Limit <= 0 {
		p.Limit = d.Limit
	}
	if len(p.Nodes) == 0 {
		p.Nodes = d.Nodes
	}
	if p.Lead <= 0 {
		p.Lead = d.Lead
	}
	if p.StartDeadline <= 0 {
		p.StartDeadline = d.StartDeadline
	}
	if p.Horizon <= 0 {
		p.Horizon = d.Horizon
	}
	if p.GPUsPerNode <= 0 && len(cfg.Nodes) > 0 {
		p.GPUsPerNode = cfg.Nodes[0].GPUs
	}
	return p
}

// Validate reports parameters the protocol cannot run with.
func (p Protocol) Validate() error {
	if p.Tick <= 0 || p.Limit <= 0 || p.Every <= 0 {
		return errors.New("protocol: tick, limit and injection interval must be positive")
	}
	if p.Lead >= p.Limit {
		return fmt.Errorf("protocol: reactive lead %s is not below the limit %s", p.Lead, p.Limit)
	}
	for _, n := range p.Nodes {
		if n <= 0 {
			return fmt.Errorf("protocol: chain size %d nodes, want ≥ 1", n)
		}
	}
	return nil
}

// Injections returns the injection times in [from, until): every Every
// from the later of from and the scenario's first start + WarmUp (from
// zero: no lower bound; until zero: the last submit).
func (p Protocol) Injections(sc *Scenario, from, until time.Time) []time.Time {
	start := sc.First.Add(p.WarmUp)
	if from.After(start) {
		start = from
	}
	if until.IsZero() {
		until = sc.Last
	}
	var out []time.Time
	for t := start; t.Before(until); t = t.Add(p.Every) {
		out = append(out, t)
	}
	return out
}

// ErrNeverStarted: an injected predecessor did not start before the protocol's StartDeadline.
var ErrNeverStarted = errors.New("injected predecessor never started")

// ChainRun is one injected chain in its own simulator: the predecessor has
// started and the simulator advances tick by tick. Dataset generation, the
// RL environment and the evaluation harness all drive chains through it,
// so every policy sees observations built by the same code at the same
// instants.
type ChainRun struct {
	P         Protocol                  // protocol (defaults filled)
	S         *sim.Sim                  // the chain's simulator (owned)
	Chain     provisioner.Chain         // the chain record policies see
	PredID    string                    // predecessor job id
	Succ      provisioner.SubmitRequest // successor request
	Inject    time.Time                 // injection time
	PredStart time.Time                 // predecessor start
	PredEnd   time.Time                 // predecessor end (start + limit: it uses its limit fully)
	// First is the first decision instant: the simulator's clock when the
	// predecessor's start is seen, PredStart or a few seconds later (the
	// simulator reports a start once the instant after it is processed).
	// Decisions follow every Tick from it.
	First time.Time
}

// StartChain forks base (whose clock must not be past inject), submits a
// predecessor of the given size at inject under chain id id, and runs
// until it starts (ErrNeverStarted after StartDeadline).
func StartChain(base *sim.Sim, p Protocol, inject time.Time, nodes int, id string) (*ChainRun, error) {
	f := base.Fork()
	f.Run(inject)
	if !f.Now().Equal(inject) {
		return nil, fmt.Errorf("start chain %s: simulator is at %s, not at the injection time %s", id, f.Now().Format(time.RFC3339), inject.Format(time.RFC3339))
	}
	ch := provisioner.Chain{ID: id, Name: "mirage-" + id, Account: ChainIdentity(f, nodes, p.Account), Partition: p.Partition, TimeLimit: p.Limit,
		Nodes: nodes, GPUs: nodes * p.GPUsPerNode, Segments: 2, State: provisioner.ChainActive, Created: inject}
	req := func(seg int) provisioner.SubmitRequest {
		return provisioner.SubmitRequest{Name: ch.Name, Account: ch.Account, Partition: ch.Partition, TimeLimit: ch.TimeLimit,
			Nodes: ch.Nodes, GPUs: ch.GPUs, Comment: provisioner.MustTag(id, seg, 0)}
	}
	ctx := context.Background()
	predID, err := f.Submit(ctx, req(0))
	if err != nil {
		return nil, fmt.Errorf("start chain %s: %w", id, err)
	}
	start, err := f.RunUntilStart(predID, inject.Add(p.StartDeadline))
	if err != nil {
		return nil, fmt.Errorf("start chain %s: %w", id, err)
	}
	if start.IsZero() {
		return nil, fmt.Errorf("start chain %s injected %s: %w within %s", id, inject.Format(time.RFC3339), ErrNeverStarted, p.StartDeadline)
	}
	first := f.Now()
	if first.Before(start) {
		first = start
	}
	return &ChainRun{P: p, S: f, Chain: ch, PredID: predID, Succ: req(1), Inject: inject, PredStart: start, PredEnd: start.Add(p.Limit), First: first}, nil
}

// FallbackAccount is the account of injected chains when the replay has no
// job to take a user from (ChainIdentity).
const FallbackAccount = "mirage"

// ChainIdentity sets who the jobs of a chain of the given size, about to be
// injected into s, run as, and returns their account: account when set
// (its jobs run as a user named alike, the simulator's default); else a
// typical user of the replayed trace, the one of median fair-share among
// those whose jobs of that size started in the week before
// (sim.Sim.TypicalUser), so that fair-share, MaxJobsAccrue and the
// account's features treat the chain as they treat the site's users (as a
// user of its own it had the best fair-share there is);
// FallbackAccount if no job started in that week. The simulator gives the
// chain's jobs recorded priorities like the trace's (sim.Sim.Submit) by
// itself.
func ChainIdentity(s *sim.Sim, nodes int, account string) string {
	if account != "" {
		return account
	}
	user, acct, ok := s.TypicalUser(nodes)
	if !ok {
		return FallbackAccount
	}
	s.SetSubmitUser(user)
	return acct
}

// ChainID names the chain injected at inject with nodes nodes, e.g. "i20230201T0400-n8".
func ChainID(inject time.Time, nodes int) string {
	return "i" + inject.UTC().Format("20060102T1504") + "-n" + strconv.Itoa(nodes)
}

// Ticks is the number of regular decision instants before the deadline.
func (c *ChainRun) Ticks() int {
	d := c.Deadline().Sub(c.First)
	if d <= 0 {
		return 0
	}
	return int((d + c.P.Tick - 1) / c.P.Tick)
}

// TickTime is the k-th decision instant: First + k·Tick.
func (c *ChainRun) TickTime(k int) time.Time { return c.First.Add(time.Duration(k) * c.P.Tick) }

// Deadline is when an unsubmitted successor is submitted regardless: Lead before the predecessor's end.
func (c *ChainRun) Deadline() time.Time { return c.PredEnd.Add(-c.P.Lead) }

// Advance runs the chain's simulator to at (not before its clock).
func (c *ChainRun) Advance(at time.Time) {
	c.S.Run(at)
}

// Observe advances to at and builds the observation (see Observe).
func (c *ChainRun) Observe(at time.Time) (*provisioner.Observation, error) {
	c.Advance(at)
	return Observe(context.Background(), c.S, SimHistory{c.S}, at, c.P.History, &c.Chain, c.PredID, c.Succ)
}

// Observe reads the cluster c and its history h and builds, with
// provisioner.Observe, the observation a policy sees for one chain at now:
// the cluster's snapshot, the jobs that started or finished in the last
// window (default provisioner.DefaultHistoryWindow; empty when the backend
// keeps no accounting: ErrNoAccounting is not an error here), the
// predecessor as the snapshot reports it (or, once it has left the queue,
// as the history does; nil when neither knows it) and the successor
// request. The simulator harness calls it with a sim.Sim and SimHistory;
// the daemon's step builds its observations with provisioner.Observe too.
func Observe(ctx context.Context, c provisioner.Cluster, h provisioner.HistorySource, now time.Time, window time.Duration,
	chain *provisioner.Chain, predID string, succ provisioner.SubmitRequest) (*provisioner.Observation, error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("observe chain: snapshot: %w", err)
	}
	if now.IsZero() {
		now = snap.Time
	}
	if window <= 0 {
		window = provisioner.DefaultHistoryWindow
	}
	var hist []provisioner.Job
	if h != nil {
		hist, err = h.History(ctx, now.Add(-window))
		if err != nil && !errors.Is(err, provisioner.ErrNoAccounting) && !errors.Is(err, provisioner.ErrIncomplete) { // features from what was read
			return nil, fmt.Errorf("observe chain: history: %w", err)
		}
	}
	var pred *provisioner.Job
	if predID != "" {
		pred = provisioner.FindJob(snap, hist, predID)
	}
	return provisioner.Observe(now, snap, hist, chain, pred, succ, nil), nil
}

// Outcome is what became of one submission of the successor.
type Outcome struct {
	Submit   time.Time     // when the successor was submitted
	Start    time.Time     // when it started (zero if censored)
	Gap      time.Duration // start − predecessor end; with Censored, the horizon (a lower bound)
	Censored bool          // not started within the horizon
}

// SubmitSuccessor submits the successor now in the chain's own simulator
// (dependency, e.g. slurmfmt.AfterAny(ID), may be nil) and runs until it
// starts. The chain's simulator is consumed: call it once, or on a Fork.
func (c *ChainRun) SubmitSuccessor(dependency slurmfmt.Dependency) (Outcome, error) {
	req := c.Succ
	req.Dependency = dependency
	return c.submit(req)
}

// SubmitBegin is SubmitSuccessor with an earliest start (sbatch --begin;
// Decision.Begin): the successor is submitted now and may start from begin.
func (c *ChainRun) SubmitBegin(begin time.Time) (Outcome, error) {
	req := c.Succ
	req.Begin = begin
	return c.submit(req)
}

// SubmitPinned is SubmitSuccessor restricted to nodes (the predecessor's:
// provisioner.SubmitPinned).
func (c *ChainRun) SubmitPinned(nodes []string) (Outcome, error) {
	req := c.Succ
	req.NodeList = nodes
	return c.submit(req)
}

func (c *ChainRun) submit(req provisioner.SubmitRequest) (Outcome, error) {
	now := c.S.Now()
	id, err := c.S.Submit(context.Background(), req)
	if err != nil {
		return Outcome{}, fmt.Errorf("chain %s: submit successor: %w", c.Chain.ID, err)
	}
	horizon := c.PredEnd.Add(c.P.Horizon)
	start, err := c.S.RunUntilStart(id, horizon)
	if err != nil {
		return Outcome{}, fmt.Errorf("chain %s: %w", c.Chain.ID, err)
	}
	if start.IsZero() {
		return Outcome{Submit: now, Gap: c.P.Horizon, Censored: true}, nil
	}
	return Outcome{Submit: now, Start: start, Gap: start.Sub(c.PredEnd)}, nil
}

// Probe returns the outcome of submitting the successor now, in a fork
// (the chain's simulator is left as it was).
func (c *ChainRun) Probe() (Outcome, error) {
	f := *c
	f.S = c.S.Fork()
	return f.SubmitSuccessor(nil)
}

// ProbeAt returns the outcome of submitting the successor at t ≥ now, in a fork.
func (c *ChainRun) ProbeAt(t time.Time) (Outcome, error) {
	f := *c
	f.S = c.S.Fork()
	f.Advance(t)
	return f.SubmitSuccessor(nil)
}

// Fork returns an independent copy of the run.
func (c *ChainRun) Fork() *ChainRun {
	f := *c
	f.S = c.S.Fork()
	return &f
}

// WithSeed returns the scenario with another simulator seed: the same
// recorded load, replayed with other scheduling-latency draws.
func (sc *Scenario) WithSeed(seed uint64) *Scenario {
	out := *sc
	out.Config.Seed = seed
	return &out
}
