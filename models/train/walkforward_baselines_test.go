package train

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestWalkForwardBaselineChecks: the walk-forward pools a baseline's
// replayed outcomes only when they fall exactly on the tables' chains and
// the replay's reactive agrees with the tables. The replays here are
// fakes built from the tables (this tests the bookkeeping; eval's
// TestReplayBaselinesOnTables runs the real replay).
func TestWalkForwardBaselineChecks(t *testing.T) {
	sc := modeltest.Scenario(t)
	p := modeltest.Protocol()
	f := sc.First
	bounds := []time.Time{f.Add(8 * 24 * time.Hour), f.Add(10 * 24 * time.Hour), f.Add(11 * 24 * time.Hour)}
	data, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: p, Until: bounds[2]})
	if err != nil {
		t.Fatal(err)
	}
	var scored []dataset.ChainEpisode
	for _, fo := range Folds(data, bounds) {
		scored = append(scored, fo.Test...)
	}
	// A replay in which "lead" submits at the deadline on every chain.
	honestOn := func(eps []dataset.ChainEpisode, edit func([]WFOutcome) []WFOutcome) BaselineReplay {
		return func(_ context.Context, _ *scenario.Scenario, _ scenario.Protocol, from, until time.Time, policies []string, _ int, _ func(int, int),
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
	honest := func(edit func([]WFOutcome) []WFOutcome) BaselineReplay { return honestOn(scored, edit) }
	spec := WFSpec{Jobs: sc.Jobs, TraceName: sc.Name, Cluster: sc.Config, Protocol: p, Bounds: bounds, Seed: 1, Workers: 2,
		Baselines: []string{provisioner.PolicyLead}}
	run := func(r BaselineReplay) (*WFResult, error) {
		s := spec
		s.Replay = r
		return RunWalkForward(context.Background(), s)
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
	if _, err := run(nil); !errors.Is(err, ErrSpec) {
		t.Errorf("baselines without a replay: %v, want ErrSpec", err)
	}
	s := spec
	s.Baselines = []string{"xgb"}
	if _, err := RunWalkForward(context.Background(), s); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "as a baseline") {
		t.Errorf("a learned policy as a baseline: %v, want ErrSpec", err)
	}
	// A period from the trace's start has no earlier chain to fit on: the
	// baselines, which fit nothing, are scored; a learned policy is refused.
	s = spec
	s.Bounds = []time.Time{sc.First, bounds[0]}
	s.Replay = honestOn(data.Episodes, func(o []WFOutcome) []WFOutcome { return o })
	if res, err := RunWalkForward(context.Background(), s); err != nil {
		t.Errorf("baselines on the first period: %v", err)
	} else if len(res.Rows) == 0 {
		t.Error("baselines on the first period: no rows")
	}
	s.Policies = []string{"rf"}
	if _, err := RunWalkForward(context.Background(), s); err == nil || !strings.Contains(err.Error(), "need ≥ 10") {
		t.Errorf("a learned policy on the first period: %v, want too few chains to train on", err)
	}
}
