package protocol

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

var chainT0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func chainTestCluster(nodes int) sim.Config {
	cfg := sim.Defaults()
	for i := 1; i <= nodes; i++ {
		cfg.Nodes = append(cfg.Nodes, sim.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, GPUs: 4})
	}
	return cfg
}

// chainScenario prepares jobs for replay on a cluster of nodes 4-GPU nodes.
func chainScenario(t *testing.T, nodes int, jobs ...traces.Job) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.NewScenario("test", jobs, chainTestCluster(nodes))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func traceJob(id string, submit time.Time, wait, run, limit time.Duration, nodes int) traces.Job {
	return traces.Job{ID: id, User: "u" + id, Account: "a", Submit: submit, Start: submit.Add(wait), End: submit.Add(wait + run),
		TimeLimit: limit, Nodes: nodes, GPUs: 4 * nodes}
}

// TestRunChainsEmptyCluster: an empty 4-node cluster, chains of 3 segments
// of 55 min (each uses its limit), decisions every 10 min from injection.
// Injections at T = t0+1h and t0+3h (warm-up 1 h from the first start at
// t0, interval 2 h, window 5 h).
// Worked out by hand (as in the provisioner's own simulator test):
//
//	reactive:   seg0 T–T+55; seen ended at T+60 → seg1 T+60–T+115; at T+120 → seg2. Gaps +5 min, +5 min.
//	lead 10 m:  seg1 due at T+45 → submitted at the T+50 cycle, starts at once: gap −5 min; seg2 likewise.
//	dependency: seg1 submitted at T+10 with afterany:seg0, released at T+55: gap 0; seg2 likewise.
func TestRunChainsEmptyCluster(t *testing.T) {
	setup := ChainSetup{
		Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
		Cell:     "empty", LoadScale: 1, K: 3,
		From: chainT0, Until: chainT0.Add(5 * time.Hour), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour,
		Policies: []string{provisioner.PolicyReactive, provisioner.PolicyLead, provisioner.PolicyDependency},
	}
	var progress []int
	setup.Progress = func(done, total int) {
		if total != 6 { // 2 injections × 1 size × 3 policies
			t.Errorf("progress total %d, want 6", total)
		}
		progress = append(progress, done)
	}
	samples, unmeasured, err := RunChains(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(unmeasured) != 3 || unmeasured[metrics.Reference]+unmeasured[provisioner.PolicyLead]+unmeasured[provisioner.PolicyDependency] != 0 || len(samples) != 12 || len(progress) != 6 || progress[5] != 6 {
		t.Fatalf("%d samples, unmeasured %v, progress %v; want 12, none, 1..6", len(samples), unmeasured, progress)
	}
	want := map[string]time.Duration{provisioner.PolicyReactive: 5 * time.Minute, provisioner.PolicyLead: -5 * time.Minute, provisioner.PolicyDependency: 0}
	injects := map[time.Time]int{}
	for _, s := range samples {
		injects[s.Inject]++
		if s.Gap != want[s.Policy] || s.Censored || s.Submits != 1 || s.LoadClass != metrics.LoadLow ||
			s.Protocol != "chain-3" || s.Cell != "empty" || s.Nodes != 1 || s.GPUs != 4 || s.LoadScale != 1 {
			t.Errorf("sample %+v: want gap %v, one submit, low load", s, want[s.Policy])
		}
		if s.Segment != 1 && s.Segment != 2 {
			t.Errorf("segment %d", s.Segment)
		}
	}
	if injects[chainT0.Add(time.Hour)] != 6 || injects[chainT0.Add(3*time.Hour)] != 6 {
		t.Errorf("injections %v", injects)
	}
	// And the metrics over chains: reactive loses 2 × 5 min per chain.
	g := metrics.Compute(samples, metrics.Options{BootstrapBelow: -1})
	r := g[0]
	if r.Policy != metrics.Reference || r.Chains != 2 || r.ChainInterruptionMean != 10.0/60 {
		t.Errorf("reactive chains %d, mean %v h; want 2 chains of 1/6 h", r.Chains, r.ChainInterruptionMean)
	}
}

// TestRunChainsCensored: one node; a trace job (limit and runtime 100 h)
// arrives at T+50 while segment 0 runs, takes the node when segment 0 ends
// at T+55, and keeps it past the cut-off at T + 2·55 min + 1 h = T+170.
// The reactive successor (submitted at T+60) never starts: censored, gap
// 170 − 55 = 115 min.
func TestRunChainsCensored(t *testing.T) {
	T := chainT0.Add(time.Hour)
	setup := ChainSetup{
		Scenario: chainScenario(t, 1,
			traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1),
			traceJob("2", T.Add(50*time.Minute), 5*time.Minute, 100*time.Hour, 100*time.Hour, 1),
		),
		Cell: "c", LoadScale: 1, K: 2,
		From: chainT0, Until: T.Add(time.Minute), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour, Policies: []string{metrics.Reference},
	}
	samples, _, err := RunChains(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 {
		t.Fatalf("samples %+v", samples)
	}
	if s := samples[0]; !s.Censored || s.Gap != 115*time.Minute || s.LoadClass != metrics.LoadLow || s.Submits != 1 {
		t.Errorf("sample %+v: want censored, gap 115 min", s)
	}
}

func TestRunChainsBadSetup(t *testing.T) {
	ok := ChainSetup{Scenario: chainScenario(t, 2, traceJob("1", chainT0, 0, time.Minute, time.Hour, 1)), K: 2,
		From: chainT0, Until: chainT0.Add(10 * time.Hour), Warmup: time.Hour, Nodes: []int{1}, Policies: []string{metrics.Reference}}
	cases := map[string]func(*ChainSetup){
		"K 1":            func(s *ChainSetup) { s.K = 1 },
		"no trace":       func(s *ChainSetup) { s.Scenario = nil },
		"too many nodes": func(s *ChainSetup) { s.Nodes = []int{8} },
		"window":         func(s *ChainSetup) { s.Until = chainT0.Add(30 * time.Minute) },
		"policy":         func(s *ChainSetup) { s.Policies = []string{"no-such-policy"} },
		"no policies":    func(s *ChainSetup) { s.Policies = nil },
	}
	for name, mut := range cases {
		s := ok
		mut(&s)
		if _, _, err := RunChains(context.Background(), s); !errors.Is(err, ErrBadSetup) {
			t.Errorf("%s: err %v, want ErrBadSetup", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := RunChains(ctx, ok); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRunChainsHandOff: the empty-cluster chains of TestRunChainsEmptyCluster
// with a 2-minute hand-off. Worked out by hand: lead's successor starts at
// T+50 while its predecessor runs and signals it, which ends at T+52: gap
// −2 min (not −5); segment 2 likewise (segment 1 started at T+50, due at
// T+95, submitted at T+100 and starting then, its predecessor ends T+102).
// Reactive and dependency never start a successor over a running
// predecessor, so nothing changes for them: +5 min and 0.
func TestRunChainsHandOff(t *testing.T) {
	setup := ChainSetup{
		Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
		Cell:     "handoff", LoadScale: 1, K: 3,
		From: chainT0, Until: chainT0.Add(5 * time.Hour), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour, HandOff: 2 * time.Minute,
		Policies: []string{provisioner.PolicyReactive, provisioner.PolicyLead, provisioner.PolicyDependency},
	}
	samples, _, err := RunChains(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{provisioner.PolicyReactive: 5 * time.Minute, provisioner.PolicyLead: -2 * time.Minute, provisioner.PolicyDependency: 0}
	if len(samples) != 12 {
		t.Fatalf("%d samples, want 12", len(samples))
	}
	for _, s := range samples {
		if s.Gap != want[s.Policy] || s.Censored {
			t.Errorf("%s segment %d injected %s: gap %v, want %v", s.Policy, s.Segment, s.Inject.Format("15:04"), s.Gap, want[s.Policy])
		}
	}
}
