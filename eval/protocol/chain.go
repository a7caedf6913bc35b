package protocol

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// Defaults of the chain protocol (those of the published pair protocol;
// the horizon is counted from the chain's K limits).
const (
	DefaultWarmup   = 48 * time.Hour   // no chain is injected during the first two days
	DefaultInterval = 4 * time.Hour    // one chain per size every 4 hours of trace time
	DefaultLimit    = 48 * time.Hour   // each segment's limit, used fully
	DefaultCycle    = 10 * time.Minute // the daemon's decision period
	DefaultHorizon  = 7 * 24 * time.Hour
)

// ErrBadSetup is returned for an experiment setup that cannot run.
var ErrBadSetup = errors.New("bad experiment setup")

// ChainSetup configures one cell of the chain-K protocol.
type ChainSetup struct {
	Scenario    *scenario.Scenario // the trace prepared for replay (already load-scaled) and the cluster
	Cell        string             // Sample.Cell of the results
	LoadScale   float64            // recorded in the samples
	K           int                // segments per chain (≥ 2)
	From, Until time.Time          // chains are injected in [max(From, first start + Warmup), Until) (zero Until: the last submit), as in the pair protocol
	Warmup      time.Duration      // after the trace's first recorded start, default DefaultWarmup
	Interval    time.Duration      // default DefaultInterval
	Limit       time.Duration      // per-segment limit, default DefaultLimit
	Nodes       []int              // sizes, default 1 and 8
	GPUsPerNode int                // default: the first node's GPUs
	Cycle       time.Duration      // decision period, default DefaultCycle
	Horizon     time.Duration      // simulated time after K limits before an unfinished chain is cut off (censored), default DefaultHorizon
	// HandOff is the checkpoint time of the hand-off: as a successor starts
	// while its predecessor still runs, it signals the predecessor (mirage
	// handoff), which checkpoints and exits this long after, freeing its
	// nodes for the whole cluster. 0: off (every segment runs to its end).
	HandOff time.Duration
	// Work > 0 replays whole work-conserving runs instead (the run
	// protocol, see ProtocolRun): each chain carries Work of useful work
	// and ends when it is done, however many segments that takes (K is
	// ignored). Restart (R) and Checkpoint (C) default to 5 min; NoHandOff
	// turns the successors' hand-off off.
	Work       time.Duration
	Restart    time.Duration
	Checkpoint time.Duration
	NoHandOff  bool
	Workload   string                    // the chains' workload (provisioner.Chain.Workload): learned policies decide with its thresholds
	Policies   []string                  // policies to run (include reactive: the load-class reference)
	Factory    provisioner.PolicyFactory // policies by name; nil: provisioner.BaselinePolicy
	// ProbeFactory, when set, replaces Factory: it is given each worker's
	// oracle probe (models.OracleProbe), so "oracle" can run.
	ProbeFactory func(probe models.OracleProbe) provisioner.PolicyFactory
	Workers      int                   // parallel forks, default GOMAXPROCS
	Progress     func(done, total int) // called after each chain run, from one goroutine
}

// protocol is the Sample.Protocol of the setup's results.
func (c *ChainSetup) protocol() string {
	if c.Work > 0 {
		return metrics.ProtocolRun
	}
	return metrics.ChainProtocol(c.K)
}

func (c *ChainSetup) defaults() error {
	if c.Work > 0 {
		c.K = 2 // unused: a run ends when its work is done
		if c.Restart <= 0 {
			c.Restart = DefaultRestart
		}
		if c.Checkpoint <= 0 {
			c.Checkpoint = DefaultCheckpoint
		}
	}
	if c.K < 2 {
		return fmt.Errorf("%w: chain protocol needs K ≥ 2 segments, got %d", ErrBadSetup, c.K)
	}
	if c.Scenario == nil || len(c.Scenario.Specs) == 0 {
		return fmt.Errorf("%w: empty trace", ErrBadSetup)
	}
	nodes := c.Scenario.Config.Nodes
	if len(nodes) == 0 {
		return fmt.Errorf("%w: the simulated cluster has no nodes", ErrBadSetup)
	}
	if c.Warmup <= 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Limit <= 0 {
		c.Limit = DefaultLimit
	}
	if len(c.Nodes) == 0 {
		c.Nodes = []int{1, 8}
	}
	for _, n := range c.Nodes {
		if n < 1 || n > len(nodes) {
			return fmt.Errorf("%w: %d nodes per segment on a %d-node cluster", ErrBadSetup, n, len(nodes))
		}
	}
	if c.GPUsPerNode <= 0 {
		c.GPUsPerNode = nodes[0].GPUs
	}
	if c.Cycle <= 0 {
		c.Cycle = DefaultCycle
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Work > 0 && c.Limit <= c.Restart+c.Checkpoint {
		return fmt.Errorf("%w: a %s segment limit leaves no work after the restart (%s) and the checkpoint (%s)", ErrBadSetup, c.Limit, c.Restart, c.Checkpoint)
	}
	if c.Until.IsZero() {
		c.Until = c.Scenario.Last
	}
	if len(c.Injections()) == 0 {
		return EmptyWindow(c.From, c.Until, c.Scenario.First, c.Warmup, c.Scenario.Last)
	}
	return nil
}

// Injections lists the injection times: every Interval from the later of
// From and the first recorded start + Warmup, before Until.
func (c *ChainSetup) Injections() []time.Time {
	start := c.Scenario.First.Add(c.Warmup)
	if c.From.After(start) {
		start = c.From
	}
	var out []time.Time
	for t := start; t.Before(c.Until); t = t.Add(c.Interval) {
		out = append(out, t.UTC())
	}
	return out
}

// chainCluster gives the simulator the HistorySource the engine reads, and
// (with jobs set) records the segment of each job the engine submits.
type chainCluster struct {
	*sim.Sim
	jobs map[string]int // job id → segment
}

func (c chainCluster) Submit(ctx context.Context, req provisioner.SubmitRequest) (string, error) {
	id, err := c.Sim.Submit(ctx, req)
	if t, ok := provisioner.ParseTag(req.Comment); ok && err == nil && c.jobs != nil {
		c.jobs[id] = t.Segment
	}
	return id, err
}

// handOff makes each successor signal its predecessor as it starts (the
// segment before it, its latest job), as a chain's `mirage handoff` line does.
func (c chainCluster) handOff(ctx context.Context, checkpoint time.Duration) {
	c.SetCheckpoint(checkpoint)
	latest := map[int]string{}
	c.OnStart(func(id string) {
		k, ok := c.jobs[id]
		if !ok {
			return
		}
		latest[k] = id
		if pred, ok := latest[k-1]; ok {
			_ = c.Signal(ctx, pred, "USR1") // ErrNotFound: it has ended already
		}
	})
}

// workConserving books each segment of a run as it starts (workLedger):
// it signals the predecessor (hand-off) and sets when the segment finishes
// the work.
func (c chainCluster) workConserving(ctx context.Context, l *workLedger) {
	c.SetCheckpoint(l.checkpoint)
	c.OnStart(func(id string) {
		k, ok := c.jobs[id]
		if !ok {
			return
		}
		signal, finish := l.started(k, id, c.Now())
		if signal != "" {
			_ = c.Signal(ctx, signal, "USR1")
		}
		if !finish.IsZero() {
			_ = c.FinishAt(id, finish)
		}
	})
}

func (c chainCluster) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	return c.Sim.History(since), nil
}

// chainClock is the simulator's logical clock as the engine's Clock.
type chainClock struct{ s *sim.Sim }

func (c chainClock) Now() time.Time { return c.s.Now() }

// chainTask is one chain under one policy, run on its own fork.
type chainTask struct {
	slot   int // index of the result
	fork   *sim.Sim
	inject time.Time
	chain  string
	nodes  int
	policy string
}

// chainOutcome is the samples of one task (hand-offs 1..K−1; unmeasurable
// ones left out) and, under the run protocol, the whole run.
type chainOutcome struct {
	samples []metrics.Sample
	run     *metrics.RunSample
	err     error
}

// RunChains runs the chain-K protocol: from From+Warmup, every Interval
// of trace time until Until, for each size, a chain of K segments (limit
// Limit, each running its full limit) is registered with the provisioner
// Engine on a fork of the trace replay and driven by the daemon's cycle
// every Cycle with a MemStore, once per policy — the same code path as
// on Slurm. Each successor's gap is measured on the simulator's record:
// successor start − predecessor end. A successor not started when the run
// is cut off (K limits plus Horizon after injection) gives a censored
// sample whose gap runs to the cut-off; a hand-off whose predecessor never
// ended is not measurable and left out (counted per policy in
// unmeasured). Load
// classes are set by metrics.ClassifyByReference when reactive is among the
// policies; otherwise the caller classifies (it may hold reactive's
// samples from another run).
func RunChains(ctx context.Context, setup ChainSetup) (samples []metrics.Sample, unmeasured map[string]int, err error) {
	samples, _, unmeasured, err = runChains(ctx, setup)
	return samples, unmeasured, err
}

// RunWholeRuns runs the run protocol (setup.Work > 0, see ProtocolRun) as
// RunChains runs chain-K: the per-hand-off samples, and one RunSample per
// chain and policy whose first segment started (the others are counted in
// unmeasured). Runs are classified by ClassifyRuns when reactive is among
// the policies.
func RunWholeRuns(ctx context.Context, setup ChainSetup) (samples []metrics.Sample, runs []metrics.RunSample, unmeasured map[string]int, err error) {
	if setup.Work <= 0 {
		return nil, nil, nil, fmt.Errorf("%w: the run protocol needs work > 0", ErrBadSetup)
	}
	return runChains(ctx, setup)
}

func runChains(ctx context.Context, setup ChainSetup) (samples []metrics.Sample, runs []metrics.RunSample, unmeasured map[string]int, err error) {
	if err := setup.defaults(); err != nil {
		return nil, nil, nil, err
	}
	pols := setup.Policies
	if len(pols) == 0 {
		return nil, nil, nil, fmt.Errorf("%w: no policies", ErrBadSetup)
	}
	for _, p := range pols { // fail early on unknown names
		if _, err := newPolicyCache(setup.workerFactory(&chainProbe{})).get(p); err != nil {
			return nil, nil, nil, fmt.Errorf("%w: policy %s: %v", ErrBadSetup, p, err)
		}
	}
	base, err := setup.Scenario.NewSim() // recorded holds already folded into submit times
	if err != nil {
		return nil, nil, nil, fmt.Errorf("chain protocol: %w", err)
	}
	// A no-op decision callback keeps the replay's clock running through
	// quiet stretches, so Run(at) always reaches at (forks replace it).
	base.OnTick(time.Hour, func(time.Time, provisioner.Cluster) {})
	injections := setup.Injections()
	total := len(injections) * len(setup.Nodes) * len(pols)
	outcomes := make([]chainOutcome, total)
	tasks := make(chan chainTask, setup.Workers)
	done := make(chan int, setup.Workers)
	var wg sync.WaitGroup
	for range setup.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probe := &chainProbe{cycle: setup.Cycle, horizon: setup.Horizon}
			cache := newPolicyCache(setup.workerFactory(probe)) // per worker: policies need not be safe for concurrent use
			for t := range tasks {
				outcomes[t.slot] = runChainTask(ctx, &setup, cache, t, probe)
				done <- t.slot
			}
		}()
	}
	// Feed tasks in trace order: advance the replay to each injection and fork it.
	feedErr := make(chan error, 1)
	go func() {
		defer close(tasks)
		slot := 0
		for i, at := range injections {
			if err := ctx.Err(); err != nil {
				feedErr <- err
				return
			}
			base.Run(at)
			for _, n := range setup.Nodes {
				for _, p := range pols {
					tasks <- chainTask{slot: slot, fork: base.Fork(), inject: at, chain: fmt.Sprintf("k%04d-n%d", i, n), nodes: n, policy: p}
					slot++
				}
			}
		}
		feedErr <- nil
	}()
	go func() { wg.Wait(); close(done) }()
	finished := 0
	for range done {
		finished++
		if setup.Progress != nil {
			setup.Progress(finished, total)
		}
	}
	if err := <-feedErr; err != nil {
		return nil, nil, nil, err
	}
	unmeasured = map[string]int{}
	for i, o := range outcomes {
		if o.err != nil {
			return nil, nil, nil, o.err
		}
		samples = append(samples, o.samples...)
		switch {
		case setup.Work <= 0:
			unmeasured[pols[i%len(pols)]] += setup.K - 1 - len(o.samples) // slots run policies innermost
		case o.run != nil:
			runs = append(runs, *o.run)
		default:
			unmeasured[pols[i%len(pols)]]++ // its first segment never started
		}
	}
	metrics.ClassifyByReference(samples)
	metrics.ClassifyRuns(runs, samples)
	metrics.ClassifyRunSamples(samples, runs)
	return samples, runs, unmeasured, nil
}

// policyCache builds each policy once (Engine.Step asks the factory on every cycle).
type policyCache struct {
	factory provisioner.PolicyFactory
	m       map[string]policyOrErr
}

type policyOrErr struct {
	p   provisioner.Policy
	err error
}

func newPolicyCache(f provisioner.PolicyFactory) *policyCache {
	return &policyCache{factory: f, m: map[string]policyOrErr{}}
}

func (c *policyCache) get(name string) (provisioner.Policy, error) {
	if e, ok := c.m[name]; ok {
		return e.p, e.err
	}
	var e policyOrErr
	if c.factory != nil {
		e.p, e.err = c.factory(name)
	} else {
		e.p, e.err = provisioner.BaselinePolicy(name)
	}
	c.m[name] = e
	return e.p, e.err
}

func runChainTask(ctx context.Context, setup *ChainSetup, cache *policyCache, t chainTask, probe *chainProbe) chainOutcome {
	f := t.fork
	f.OnProgress(nil)
	st := provisioner.NewMemStore()
	segments := setup.K
	if setup.Work > 0 {
		segments = 0 // until the work is done
	}
	ch := provisioner.Chain{
		ID: t.chain, Name: "mirage-eval", Script: "/dev/null", Policy: t.policy, Segments: segments,
		Account: scenario.ChainIdentity(f, t.nodes, ""), TimeLimit: setup.Limit, Nodes: t.nodes, GPUs: t.nodes * setup.GPUsPerNode,
		State: provisioner.ChainActive, Created: t.inject, Workload: setup.Workload,
	}
	fail := func(err error) chainOutcome {
		return chainOutcome{err: fmt.Errorf("chain %s (%s, %d nodes, injected %s): %w", t.chain, t.policy, t.nodes, t.inject.Format(time.RFC3339), err)}
	}
	if err := st.PutChain(ctx, &ch); err != nil {
		return fail(err)
	}
	cl := chainCluster{Sim: f}
	var ledger *workLedger
	switch {
	case setup.Work > 0:
		cl.jobs = map[string]int{}
		ledger = newWorkLedger(setup.Work, setup.Restart, setup.Checkpoint, setup.Limit, !setup.NoHandOff)
		cl.workConserving(ctx, ledger)
	case setup.HandOff > 0:
		cl.jobs = map[string]int{}
		cl.handOff(ctx, setup.HandOff)
	}
	probe.f, probe.ledger, probe.cursor = f, ledger, nil // the oracle's view of this task
	probe.task++
	eng := &provisioner.Engine{Cluster: cl, Store: st, Clock: chainClock{f}, Policies: provisioner.ByName(cache.get), Log: slog.New(slog.DiscardHandler)}
	if _, err := eng.CycleChains(ctx, []string{ch.ID}); err != nil { // the first segment, as `mirage submit` does
		return fail(err)
	}
	var cycleErr error
	f.OnTick(setup.Cycle, func(time.Time, provisioner.Cluster) {
		if cycleErr != nil {
			return
		}
		if _, err := eng.Cycle(ctx); err != nil {
			cycleErr = fmt.Errorf("cycle at %s: %w", f.Now().Format(time.RFC3339), err)
		}
	})
	deadline := t.inject.Add(time.Duration(setup.K)*setup.Limit + setup.Horizon)
	if setup.Work > 0 {
		deadline = t.inject.Add(setup.Work + 2*setup.Horizon)
	}
	step := max(setup.Limit/4, time.Hour)
	for f.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		f.Run(minTime(f.Now().Add(step), deadline))
		if cycleErr != nil {
			return fail(cycleErr)
		}
		c, err := st.Chain(ctx, ch.ID)
		if err != nil {
			return fail(err)
		}
		if c.State != provisioner.ChainActive {
			if c.State != provisioner.ChainDone {
				return fail(fmt.Errorf("chain ended %s: %s", c.State, c.Reason))
			}
			break
		}
	}
	// The simulator's record of the chain's jobs: per segment, the attempt that started first.
	runs := map[int]interval{}
	for _, j := range f.History(t.inject) {
		tag, ok := provisioner.ParseTag(j.Comment)
		if !ok || tag.Chain != ch.ID {
			continue
		}
		if r, seen := runs[tag.Segment]; !seen || j.Start.Before(r.start) {
			runs[tag.Segment] = interval{j.Start, j.End}
		}
	}
	submits := map[int]int{}
	evs, err := st.Events(ctx, ch.ID)
	if err != nil {
		return fail(err)
	}
	for _, e := range evs {
		if e.Kind == provisioner.EventSubmitted {
			submits[e.Segment]++
		}
	}
	var out []metrics.Sample
	cut := f.Now()
	handoffs := setup.K - 1
	if setup.Work > 0 { // every segment that worked had its successor's hand-off, but the last
		n := workingSegments(runs, ledger.doneAt())
		handoffs = n - 1
		if n > 0 && ledger.doneAt().IsZero() {
			handoffs++ // the work is not done: its successor's (censored) hand-off too
		}
	}
	for k := 1; k <= handoffs; k++ {
		pred, ok := runs[k-1]
		if !ok || pred.end.IsZero() {
			continue // the predecessor never ended: not measurable
		}
		s := metrics.Sample{
			Policy: t.policy, Cell: setup.Cell, Protocol: setup.protocol(), ChainID: ch.ID, Segment: k,
			Inject: t.inject, Nodes: t.nodes, GPUs: ch.GPUs, LoadScale: setup.LoadScale, Submits: submits[k],
		}
		if succ, ok := runs[k]; ok {
			s.Gap = succ.start.Sub(pred.end)
		} else {
			s.Gap, s.Censored = cut.Sub(pred.end), true
		}
		out = append(out, s)
	}
	o := chainOutcome{samples: out}
	if setup.Work > 0 {
		o.run = wholeRun(setup, t, ch.GPUs, ledger, runs, cut)
		if o.run != nil { // the cut-off is never before inject + W: the work takes W
			o.run.OthersQueued = f.QueuedGPUHours(t.inject, t.inject.Add(setup.Work))
		}
	}
	return o
}

// wholeRun is the RunSample of a run protocol task from the simulator's
// record of its segments (runs, by segment) and the ledger; nil when its
// first segment never started.
func wholeRun(setup *ChainSetup, t chainTask, gpus int, l *workLedger, runs map[int]interval, cut time.Time) *metrics.RunSample {
	first, ok := runs[0]
	if !ok {
		return nil
	}
	r := &metrics.RunSample{
		Policy: t.policy, Cell: setup.Cell, Protocol: metrics.ProtocolRun, ChainID: t.chain, Inject: t.inject, Nodes: t.nodes, GPUs: gpus,
		LoadScale: setup.LoadScale, Work: setup.Work, Segments: workingSegments(runs, l.doneAt()),
	}
	done := l.doneAt()
	if done.IsZero() || done.After(cut) {
		done, r.Censored = cut, true
	}
	r.Completion = done.Sub(first.start)
	var spans []interval
	var work, held time.Duration
	for _, sr := range runs { // every segment that ran is charged, a late one too
		end := sr.end
		if end.IsZero() || end.After(cut) {
			end = cut // still running at the cut-off
		}
		spans = append(spans, interval{sr.start, end})
		held += end.Sub(sr.start) // whole durations: the sum does not depend on the map's order
	}
	r.ChargedGPU = float64(gpus) * held.Hours()
	for _, s := range l.segs {
		if s.handed {
			r.HandOffs++
		}
		if !s.end.After(cut) {
			work += s.work
		}
	}
	r.UsefulGPU = float64(gpus) * min(work, setup.Work).Hours()
	r.Downtime = downtime(first.start, done, spans)
	return r
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// workingSegments counts a run's segments that started before its work
// was done (done zero: all of them): a successor that starts as the work
// ends (a dependency released by the last segment's exit, before the
// daemon cancels it) is charged but is neither a segment of the run nor a
// hand-off. Segments start in index order.
func workingSegments(runs map[int]interval, done time.Time) int {
	n := 0
	for k := 0; ; k++ {
		r, ok := runs[k]
		if !ok || !done.IsZero() && !r.start.Before(done) {
			return n
		}
		n++
	}
}
