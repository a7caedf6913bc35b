package protocol

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// TestRecordedPriorityPresetMeasuresChains: under a preset that weighs the
// trace's recorded priorities as calibration.md's calibrated LS6 preset
// does (recorded 5000, size 500, fair-share 500, age 0), injected chains
// are ranked by the same model: each of their jobs gets a recorded
// priority like the trace's jobs of its size (sim.Sim.Submit), and runs as
// a user of the trace (scenario.ChainIdentity). The trace: 12 synthetic
// LS6 days at 2.5 times their load on 40 nodes (the queue seldom empties),
// every job given a recorded priority uniform in [1, 1000). A chain with no
// recorded priority sat below every trace job whose recorded factor (5000
// × priority / 999) beat its own size and fair-share factors, so while the
// queue lasted its predecessor never started: measured before this rule, 3
// of the 63 injections. Ranked among the trace's jobs, every 1-node
// predecessor starts within the 7-day deadline and every injection is
// measured.
func TestRecordedPriorityPresetMeasuresChains(t *testing.T) {
	jobs, err := traces.Synth("ls6", 12, 5)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range jobs {
		jobs[i].Priority = 1 + r.Int64N(999)
	}
	cfg := sim.LS6()
	cfg.Nodes = cfg.Nodes[:40]
	cfg.PriorityWeightAge, cfg.PriorityWeightJobSize, cfg.PriorityWeightFairshare, cfg.PriorityWeightRecorded = 0, 500, 500, 5000
	cfg.BFInterval = time.Minute
	sc, err := scenario.NewScenario("synth-ls6-recorded", jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err = sc.Scaled(2.5, 1, 0); err != nil {
		t.Fatal(err)
	}
	p := scenario.Protocol{Every: 12 * time.Hour, Tick: 30 * time.Minute, Limit: 12 * time.Hour, Nodes: []int{1}}
	injections := len(p.WithDefaults(cfg).Injections(sc, time.Time{}, time.Time{}))
	samples, err := RunPairs(context.Background(), PairConfig{Scenario: sc, Protocol: p, Policies: []string{"reactive"}, Workers: 2,
		Factory: testFactory(testFieldRule{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d injections, %d measured", injections, len(samples))
	if injections < 10 || len(samples) != injections {
		t.Errorf("%d of %d injections measured, want all", len(samples), injections)
	}
}
