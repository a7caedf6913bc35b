package protocol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

var (
	wfScOnce sync.Once
	wfSc     *scenario.Scenario
	wfScErr  error
)

// wfScenario is the models packages' test scenario (models/internal/modeltest,
// which eval cannot import): 16 days of synthetic LS6-like jobs on 40 LS6
// nodes.
func wfScenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	wfScOnce.Do(func() {
		jobs, err := traces.Synth("ls6", 16, 5)
		if err != nil {
			wfScErr = err
			return
		}
		cfg := sim.LS6()
		cfg.Nodes = cfg.Nodes[:40]
		wfSc, wfScErr = scenario.NewScenario("synth-ls6", jobs, cfg)
	})
	if wfScErr != nil {
		t.Fatal(wfScErr)
	}
	return wfSc
}

// wfProtocol is modeltest's fast protocol: 12 h segments, decisions every
// 30 min, chains of 1 and 4 nodes every 6 h under an account of their own.
func wfProtocol() scenario.Protocol {
	return scenario.Protocol{Every: 6 * time.Hour, Tick: 30 * time.Minute, Limit: 12 * time.Hour, Nodes: []int{1, 4}, Account: scenario.FallbackAccount}
}

// wfTables is the small scenario's protocol, two periods (days 8–10 and
// 10–11) and the chain tables up to their end.
func wfTables(t *testing.T) (*scenario.Scenario, scenario.Protocol, []time.Time, *dataset.ChainData) {
	t.Helper()
	sc := wfScenario(t)
	p := wfProtocol()
	f := sc.First
	bounds := []time.Time{f.Add(8 * 24 * time.Hour), f.Add(10 * 24 * time.Hour), f.Add(11 * 24 * time.Hour)}
	data, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: p, Until: bounds[2]})
	if err != nil {
		t.Fatal(err)
	}
	return sc, p, bounds, data
}

// TestWalkForwardBaselineChecks: the walk-forward pools a baseline's
// replayed outcomes only when they fall exactly on the tables' chains and
// the replay's reactive agrees with the tables. The replays here are
// fakes built from the tables (this tests the bookkeeping;
// TestReplayBaselinesOnTables runs the real replay).
func TestWalkForwardBaselineChecks(t *testing.T) {
	sc, p, bounds, data := wfTables(t)
	var scored []dataset.ChainEpisode
	for _, fo := range Folds(data, bounds) {
		scored = append(scored, fo.Test...)
	}
	// A replay in which "lead" submits at the deadline on every chain.
	honestOn := func(eps []dataset.ChainEpisode, edit func([]WFOutcome) []WFOutcome) replayFunc {
		return func(_ context.Context, _ *scenario.Scenario, _ scenario.Protocol, from, until time.Time, policies []string, _ int, _ provisioner.PolicyFactory, _ func(int, int),
			emit func(string, time.Time, int, int, time.Duration, bool)) error {
			var out []WFOutcome
			for _, e := range eps {
				if e.Inject.Before(from) || !e.Inject.Before(until) {
					continue
				}
				for _, name := range policies {
					out = append(out, WFOutcome{Policy: name, Inject: e.Inject, Nodes: e.Nodes, GPUs: e.GPUs, Gap: e.Reactive})
				}
			}
			for _, o := range edit(out) {
				emit(o.Policy, o.Inject, o.Nodes, o.GPUs, time.Duration(o.Gap*float64(time.Second)), o.Censored)
			}
			return nil
		}
	}
	honest := func(edit func([]WFOutcome) []WFOutcome) replayFunc { return honestOn(scored, edit) }
	spec := WFSpec{Jobs: sc.Jobs, TraceName: sc.Name, Cluster: sc.Config, Protocol: p, Bounds: bounds, Seed: 1, Workers: 2,
		Baselines: []string{provisioner.PolicyLead}}
	run := func(r replayFunc) (*WFResult, error) {
		return runWalkForward(context.Background(), spec, r)
	}

	res, err := run(honest(func(o []WFOutcome) []WFOutcome { return o }))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Policy == provisioner.PolicyLead && (r.N == 0 || r.VsReactive != 1) {
			t.Errorf("lead at the deadline on every chain: row %+v, want × reactive = 1", r)
		}
	}
	if n := len(res.Outcomes); n != 3*len(scored) { // reactive, oracle, lead
		t.Errorf("%d outcomes for %d chains, want 3 per chain", n, len(scored))
	}

	for _, tc := range []struct {
		name string
		edit func([]WFOutcome) []WFOutcome
		want string
	}{
		{"a chain the tables lack", func(o []WFOutcome) []WFOutcome {
			o[0].Inject = o[0].Inject.Add(time.Minute)
			return o
		}, "not in the tables"},
		{"reactive disagrees", func(o []WFOutcome) []WFOutcome {
			o[0].Gap++
			return o
		}, "disagree"},
		{"a chain missing", func(o []WFOutcome) []WFOutcome { return o[:len(o)-1] }, "scored"},
		{"a chain twice, another missing", func(o []WFOutcome) []WFOutcome {
			o[len(o)-1] = o[1] // lead's outcome of the first chain in place of its last
			return o
		}, "twice"},
	} {
		if _, err := run(honest(tc.edit)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	s := spec
	s.Baselines = []string{"xgb"}
	if _, err := RunWalkForward(context.Background(), s); !errors.Is(err, train.ErrSpec) || !strings.Contains(err.Error(), "as a baseline") {
		t.Errorf("a learned policy as a baseline: %v, want ErrSpec", err)
	}
	// A period from the trace's start has no earlier chain to fit on: the
	// baselines, which fit nothing, are scored; a learned policy is refused.
	s = spec
	s.Bounds = []time.Time{sc.First, bounds[0]}
	first := honestOn(data.Episodes, func(o []WFOutcome) []WFOutcome { return o })
	if res, err := runWalkForward(context.Background(), s, first); err != nil {
		t.Errorf("baselines on the first period: %v", err)
	} else if len(res.Rows) == 0 {
		t.Error("baselines on the first period: no rows")
	}
	s.Policies = []string{"rf"}
	if _, err := runWalkForward(context.Background(), s, first); err == nil || !strings.Contains(err.Error(), "need ≥ 10") {
		t.Errorf("a learned policy on the first period: %v, want too few chains to train on", err)
	}
}

// TestWalkForwardReplaysLearnedPerPeriod: a replayed learned policy (here
// rf's pinned form) is replayed once per period, over that period's chains
// only, with a policy the walk-forward built (not the registry, which has
// no models here) of that name; the baselines' replay gets no such
// policies.
func TestWalkForwardReplaysLearnedPerPeriod(t *testing.T) {
	sc, p, bounds, data := wfTables(t)
	const replayed = "rf" + models.PinSuffix
	type call struct {
		from, until time.Time
		policies    []string
		built       bool
	}
	var calls []call
	replay := func(_ context.Context, _ *scenario.Scenario, _ scenario.Protocol, from, until time.Time, policies []string, _ int, learned provisioner.PolicyFactory, _ func(int, int),
		emit func(string, time.Time, int, int, time.Duration, bool)) error {
		c := call{from: from, until: until, policies: policies}
		if learned != nil {
			pol, err := learned(replayed)
			if err != nil {
				return err
			}
			if pol != nil && pol.Name() == replayed {
				c.built = true
			}
			if other, _ := learned(provisioner.PolicyLead); other != nil {
				return fmt.Errorf("learned built %s, which the registry builds", other.Name())
			}
		}
		calls = append(calls, c)
		for _, e := range data.Episodes {
			if e.Inject.Before(from) || !e.Inject.Before(until) {
				continue
			}
			for _, name := range policies {
				emit(name, e.Inject, e.Nodes, e.GPUs, time.Duration(e.Reactive*float64(time.Second)), false)
			}
		}
		return nil
	}
	s := WFSpec{Jobs: sc.Jobs, TraceName: sc.Name, Cluster: sc.Config, Protocol: p, Bounds: bounds, Seed: 1, Workers: 2,
		Baselines: []string{provisioner.PolicyLead}, Replayed: []string{replayed}}
	res, err := runWalkForward(context.Background(), s, replay)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 {
		t.Fatalf("%d replays, want 3 (the baselines, then one per period): %+v", len(calls), calls)
	}
	if calls[0].built || slices.Contains(calls[0].policies, replayed) {
		t.Errorf("the baselines' replay %+v: want no learned policy", calls[0])
	}
	for i, c := range calls[1:] {
		lo, hi := bounds[i], bounds[i+1]
		if !c.built || !slices.Equal(c.policies, []string{WFReactive, replayed}) {
			t.Errorf("period %d: replay %+v, want reactive and %s built by the walk-forward", i+1, c, replayed)
		}
		if c.from.Before(lo) || c.until != hi {
			t.Errorf("period %d: replayed over [%s, %s), want inside [%s, %s)", i+1, c.from, c.until, lo, hi)
		}
	}
	n := 0
	for _, o := range res.Outcomes {
		if o.Policy == replayed {
			n++
		}
	}
	scored := 0
	for _, fo := range Folds(data, bounds) {
		scored += len(fo.Test)
	}
	if n != scored {
		t.Errorf("%s scored %d chains, want %d", replayed, n, scored)
	}
	if res.Pick != replayed {
		t.Errorf("pick %q, want the only model-backed policy %s", res.Pick, replayed)
	}
	s.Policies = []string{replayed}
	if _, err := runWalkForward(context.Background(), s, replay); !errors.Is(err, train.ErrSpec) {
		t.Errorf("a policy both on the tables and replayed: %v, want ErrSpec", err)
	}
	s.Policies, s.Replayed = nil, []string{"lead" + models.PinSuffix}
	if _, err := runWalkForward(context.Background(), s, replay); !errors.Is(err, train.ErrSpec) {
		t.Errorf("the pinned form of a baseline replayed: %v, want ErrSpec", err)
	}
}
