// Package modeltest holds the simulator fixtures that the tests of several
// models packages share: a 16-day synthetic LS6-like scenario on 40 nodes,
// a fast chain protocol, and the chain dataset generated from them once
// per test binary.
package modeltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// SimConfig is the LS6 preset cut to 40 nodes, so that the synthetic
// LS6-like load (sized for 72) queues: of the 80 test chains (days 2–12),
// 38 are low, 18 medium and 24 heavy by their reactive gap.
func SimConfig() sim.Config {
	c := sim.LS6()
	c.Nodes = c.Nodes[:40]
	return c
}

var (
	scenarioOnce sync.Once
	scenarioVal  *scenario.Scenario
	scenarioErr  error
)

// Scenario is 16 days of synthetic LS6-like jobs on 40 nodes.
func Scenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	scenarioOnce.Do(func() {
		jobs, err := traces.Synth("ls6", 16, 5)
		if err != nil {
			scenarioErr = err
			return
		}
		scenarioVal, scenarioErr = scenario.NewScenario("synth-ls6", jobs, SimConfig())
	})
	if scenarioErr != nil {
		t.Fatal(scenarioErr)
	}
	return scenarioVal
}

// Protocol is a fast protocol for tests: 12 h segments, decisions every 30 min, chains of 1 and 4 nodes every 6 h.
// Its chains run under an account of their own (scenario.FallbackAccount),
// not as a typical user of the trace (the protocol's default): the
// training tests' budgets were set on that data, and with the chains as
// typical users the DQN at TestPoliciesBeatConstants's budget no longer
// beats the constant policies (validation cost 1095.6 against 1034.9).
func Protocol() scenario.Protocol {
	return scenario.Protocol{Every: 6 * time.Hour, Tick: 30 * time.Minute, Limit: 12 * time.Hour, Nodes: []int{1, 4}, Account: scenario.FallbackAccount}
}

var (
	chainOnce sync.Once
	chainVal  *dataset.ChainData
	chainErr  error
)

// ChainData generates (once) the chain dataset of days 2–12 of the test scenario (80 chains).
func ChainData(t testing.TB) *dataset.ChainData {
	t.Helper()
	sc := Scenario(t)
	chainOnce.Do(func() {
		chainVal, chainErr = dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: Protocol(), Until: sc.First.Add(12 * 24 * time.Hour)})
	})
	if chainErr != nil {
		t.Fatal(chainErr)
	}
	return chainVal
}
