package protocol

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

var discardLog = slog.New(slog.DiscardHandler)

// PairConfig configures RunPairs.
type PairConfig struct {
	Scenario *scenario.Scenario // trace and cluster
	Protocol scenario.Protocol  // injection and decision cadence (zero fields: the published defaults)
	From     time.Time          // first injection not before (zero: first start + warm-up)
	Until    time.Time          // injections before (zero: the trace's last submit)
	Policies []string           // registry names, in report order
	// Factory builds the policies of one worker. probe is bound to that
	// worker's chain under evaluation (pass it to models.PolicyOptions.Probe
	// so "oracle" resolves); policies are built once per worker and asked
	// about one chain at a time, so they need not be safe for concurrent use.
	Factory  func(probe models.OracleProbe) provisioner.PolicyFactory
	Workers  int                   // goroutines (0: all cores)
	Cell     string                // Sample.Cell (default: scenario name)
	Progress func(done, total int) // called after each injection, serialised
}

// RunPairs runs the published pair protocol on the scenario: at every
// injection time of the window and for each chain size, a predecessor
// (limit used fully) is injected; once it runs, each policy in turn, in its
// own fork of the same simulator state, is asked every Tick (the same
// observation builder as dataset generation and the daemon:
// provisioner.Observe) whether to submit the successor; an unsubmitted successor is submitted
// at the protocol's deadline (Lead before the predecessor's end). The run
// continues until the successor starts; its gap becomes one Sample. The
// load class of every sample of a chain is that of the reactive
// submission's gap (computed even when reactive is not among the policies).
//
// Decisions go through the provisioner's Engine, as in the daemon: each
// chain is registered in a MemStore with its running predecessor as
// segment 0, and every Tick the harness runs Engine.CycleChains on the
// chain's simulator (the sim is the Cluster and HistorySource, its logical
// clock the Clock); the engine builds the observation, asks the policy and
// submits the successor (with an afterany dependency for SubmitAfter, on
// the predecessor's nodes for SubmitPinned), and lifts a pin as it does in
// the daemon. The deadline submission is the protocol's, outside the
// engine.
//
// The base replay runs on the calling goroutine; each injection is worked
// by one goroutine on its own forks; samples are ordered by injection, then
// size, then policy, so the result does not depend on Workers.
func RunPairs(ctx context.Context, cfg PairConfig) ([]metrics.Sample, error) {
	if cfg.Scenario == nil || cfg.Factory == nil || len(cfg.Policies) == 0 {
		return nil, errors.New("pair protocol: scenario, factory and at least one policy are required")
	}
	sc := cfg.Scenario
	p := cfg.Protocol.WithDefaults(sc.Config)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	points := p.Injections(sc, cfg.From, cfg.Until)
	if len(points) == 0 {
		return nil, fmt.Errorf("pair protocol: no injection points in the window of %s", sc.Name)
	}
	cell := cfg.Cell
	if cell == "" {
		cell = sc.Name
	}
	base, err := sc.NewSim()
	if err != nil {
		return nil, err
	}
	results := make([][]metrics.Sample, len(points))
	ledger := newHandOffLedger(len(points))
	err = scenario.Forks(ctx, base, points, cfg.Workers, cfg.Progress, func() scenario.ForkWork {
		wk := &pairWorker{p: p, cell: cell, ledger: ledger}
		wk.policies, wk.err = wk.build(cfg)
		return func(ctx context.Context, i int, fork *sim.Sim) error {
			if wk.err != nil || ctx.Err() != nil {
				ledger.finish(i, nil)
				return wk.err
			}
			var err error
			results[i], err = wk.injection(ctx, i, fork, points[i])
			return err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pair protocol: %w", err)
	}
	var out []metrics.Sample
	for i := range points {
		out = append(out, results[i]...)
	}
	return out, nil
}

// pairWorker evaluates injections one at a time; run is the chain the oracle's probe looks at.
type pairWorker struct {
	p        scenario.Protocol
	cell     string
	policies []provisioner.Policy
	run      *scenario.ChainRun
	err      error
	ledger   *handOffLedger
	handOffs []provisioner.HandOff // of the injections before the current one, for an online policy
}

// handOffLedger holds, by injection, the hand-offs of the policies that
// learn from them (provisioner.LearnsFromHandOffs), so that such a policy
// replayed at injection i is given the outcomes of its own chains injected
// before i — each decision sees those known by its time, as the daemon's
// store gives them — whatever the number of workers. A worker waits for
// the injections before its own only when it reaches such a policy;
// injections are handed out in order, so the waits always point to
// earlier injections and end.
type handOffLedger struct {
	mu       sync.Mutex
	cond     *sync.Cond
	finished []bool
	next     int // every injection before next is finished
	byInj    [][]provisioner.HandOff
}

func newHandOffLedger(n int) *handOffLedger {
	l := &handOffLedger{finished: make([]bool, n), byInj: make([][]provisioner.HandOff, n)}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// finish records injection i's hand-offs (every injection must be finished once).
func (l *handOffLedger) finish(i int, hs []provisioner.HandOff) {
	l.mu.Lock()
	l.finished[i], l.byInj[i] = true, hs
	for l.next < len(l.finished) && l.finished[l.next] {
		l.next++
	}
	l.mu.Unlock()
	l.cond.Broadcast()
}

// before waits until every injection before i is finished and returns
// their hand-offs sorted by Known.
func (l *handOffLedger) before(i int) []provisioner.HandOff {
	l.mu.Lock()
	for l.next < i {
		l.cond.Wait()
	}
	var out []provisioner.HandOff
	for _, hs := range l.byInj[:i] {
		out = append(out, hs...)
	}
	l.mu.Unlock()
	slices.SortStableFunc(out, func(a, b provisioner.HandOff) int { return a.Known.Compare(b.Known) })
	return out
}

func (w *pairWorker) build(cfg PairConfig) ([]provisioner.Policy, error) {
	f := cfg.Factory(w.probe)
	out := make([]provisioner.Policy, len(cfg.Policies))
	for i, name := range cfg.Policies {
		pol, err := f(name)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", name, err)
		}
		out[i] = pol
	}
	return out, nil
}

// probe is the oracle's view of the future: the gap if the successor of the
// chain under evaluation were submitted after a delay, from a fork.
func (w *pairWorker) probe(obs *provisioner.Observation, after time.Duration) (time.Duration, error) {
	if w.run == nil {
		return 0, errors.New("oracle probe outside an evaluation")
	}
	f := w.run.Fork()
	f.Advance(obs.Now.Add(after))
	out, err := f.SubmitSuccessor(nil)
	return out.Gap, err
}

func (w *pairWorker) injection(ctx context.Context, i int, base *sim.Sim, at time.Time) ([]metrics.Sample, error) {
	var out []metrics.Sample
	var learned []provisioner.HandOff // this injection's outcomes of the online policies
	defer func() { w.ledger.finish(i, learned) }()
	w.handOffs = nil
	fed := false
	for _, n := range w.p.Nodes {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c, err := scenario.StartChain(base, w.p, at, n, scenario.ChainID(at, n))
		if errors.Is(err, scenario.ErrNeverStarted) {
			continue // no hand-off to measure; the dataset generator counts these too
		}
		if err != nil {
			return nil, err
		}
		r := c.Fork()
		r.Advance(r.Deadline())
		reactive, err := r.SubmitSuccessor(nil)
		if err != nil {
			return nil, err
		}
		class := metrics.LoadClassOf(reactive.Gap)
		for _, pol := range w.policies {
			online := provisioner.LearnsFromHandOffs(pol)
			if online && !fed {
				w.handOffs, fed = w.ledger.before(i), true
			}
			run := c.Fork()
			o, submits, err := w.play(run, pol, online)
			if err != nil {
				return nil, fmt.Errorf("policy %s, %d nodes: %w", pol.Name(), n, err)
			}
			if online && !o.Censored {
				known := o.Start
				if run.PredEnd.After(known) {
					known = run.PredEnd
				}
				learned = append(learned, provisioner.HandOff{ChainID: c.Chain.ID, Policy: pol.Name(), Nodes: n, Segment: 1, Gap: o.Gap, Known: known})
			}
			out = append(out, metrics.Sample{Policy: pol.Name(), Cell: w.cell, Protocol: metrics.ProtocolPair, ChainID: c.Chain.ID, Segment: 1,
				Inject: at, Nodes: n, GPUs: c.Chain.GPUs, LoadScale: 1, LoadClass: class, Gap: o.Gap, Submits: submits, Censored: o.Censored})
		}
	}
	return out, nil
}

// play asks pol at every tick until it submits (or the deadline) and runs
// until the successor starts. An online policy is given the hand-offs of
// the earlier injections (w.handOffs).
func (w *pairWorker) play(run *scenario.ChainRun, pol provisioner.Policy, online bool) (scenario.Outcome, int, error) {
	w.run = run
	defer func() { w.run = nil }()
	var hs []provisioner.HandOff
	if online {
		hs = w.handOffs
	}
	return w.playEngine(run, pol, hs)
}

// deadline is the protocol's forced submission.
func (w *pairWorker) deadline(run *scenario.ChainRun) (scenario.Outcome, int, error) {
	run.Advance(run.Deadline())
	o, err := run.SubmitSuccessor(nil)
	return o, 1, err
}

// simBackend is the chain's simulator as the engine's Cluster, HistorySource and Clock.
type simBackend struct{ *sim.Sim }

// History implements provisioner.HistorySource.
func (b simBackend) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	return b.Sim.History(since), nil
}

type simClock struct{ s *sim.Sim }

// Now implements provisioner.Clock: the simulator's logical clock.
func (c simClock) Now() time.Time { return c.s.Now() }

// playEngine registers the chain in a MemStore and runs the engine's cycle every tick.
func (w *pairWorker) playEngine(run *scenario.ChainRun, pol provisioner.Policy, hs []provisioner.HandOff) (scenario.Outcome, int, error) {
	ctx := context.Background()
	st := provisioner.NewMemStore()
	ch := run.Chain
	ch.Policy = pol.Name()
	if err := st.PutChain(ctx, &ch); err != nil {
		return scenario.Outcome{}, 0, err
	}
	pred := provisioner.Segment{ChainID: ch.ID, Index: 0, JobID: run.PredID, State: provisioner.StateRunning, Submit: run.Inject, Start: run.PredStart}
	if err := st.PutSegment(ctx, &pred); err != nil {
		return scenario.Outcome{}, 0, err
	}
	eng := &provisioner.Engine{Cluster: simBackend{run.S}, Store: st, Clock: simClock{run.S},
		Policies: func(provisioner.PolicyKey) (provisioner.Policy, error) { return pol, nil }, Log: discardLog,
		HandOffs: func(context.Context) ([]provisioner.HandOff, error) { return hs, nil }}
	for k := 0; k < run.Ticks(); k++ {
		run.Advance(run.TickTime(k))
		rep, err := eng.CycleChains(ctx, []string{ch.ID})
		if err != nil {
			return scenario.Outcome{}, 0, fmt.Errorf("engine cycle at %s: %w", run.TickTime(k).Format(time.RFC3339), err)
		}
		if rep.Errors > 0 {
			return scenario.Outcome{}, 0, fmt.Errorf("engine cycle at %s: %w", run.TickTime(k).Format(time.RFC3339), engineError(ctx, st, ch.ID))
		}
		if len(rep.Submissions) == 0 {
			continue
		}
		id := rep.Submissions[0].JobID
		// A pinned successor: the engine's cycle goes on every tick, as the
		// daemon's does, and lifts the pin when the policy says so.
		pinned := func() (bool, error) {
			segs, err := st.Segments(ctx, ch.ID)
			return err == nil && len(segs) > 0 && segs[len(segs)-1].Pinned != "", err
		}
		now, err := pinned()
		if err != nil {
			return scenario.Outcome{}, 0, err
		}
		o, err := w.followPinned(run, id, rep.Time, now, func() (bool, error) {
			rep, err := eng.CycleChains(ctx, []string{ch.ID})
			if err == nil && rep.Errors > 0 {
				err = engineError(ctx, st, ch.ID)
			}
			if err != nil {
				return false, fmt.Errorf("engine cycle at %s: %w", run.S.Now().Format(time.RFC3339), err)
			}
			return pinned()
		})
		return o, len(rep.Submissions), err
	}
	return w.deadline(run)
}

// followPinned runs the chain's simulator until the successor (job id,
// submitted at submit) starts or the horizon passes. While step reports
// it pinned, step is called at every tick after the submission (it asks
// the policy again and may lift the pin); after that the replay runs on.
func (w *pairWorker) followPinned(run *scenario.ChainRun, id string, submit time.Time, pinned bool, step func() (pinned bool, err error)) (scenario.Outcome, error) {
	horizon := run.PredEnd.Add(w.p.Horizon)
	var start time.Time
	var err error
	for at := submit; ; at = at.Add(w.p.Tick) {
		until := horizon
		if pinned && at.Add(w.p.Tick).Before(horizon) {
			until = at.Add(w.p.Tick)
		}
		if start, err = run.S.RunUntilStart(id, until); err != nil {
			return scenario.Outcome{}, err
		}
		if !start.IsZero() || !until.Before(horizon) {
			break
		}
		if pinned, err = step(); err != nil {
			return scenario.Outcome{}, err
		}
	}
	if start.IsZero() {
		return scenario.Outcome{Submit: submit, Gap: w.p.Horizon, Censored: true}, nil
	}
	return scenario.Outcome{Submit: submit, Start: start, Gap: start.Sub(run.PredEnd)}, nil
}

// engineError returns the last error the engine recorded for a chain.
func engineError(ctx context.Context, st *provisioner.MemStore, id string) error {
	ds, _ := st.Decisions(ctx, id)
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Error != "" {
			return errors.New(ds[i].Error)
		}
	}
	return errors.New("the engine reported an error")
}
