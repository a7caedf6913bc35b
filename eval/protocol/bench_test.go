package protocol

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// BenchmarkChainRun measures one chain-2 hand-off under the start-estimate
// baseline on the LS6 preset with a 14-day synthetic LS6-like trace: a
// fork of the replay, the engine's cycle every 10 minutes until the
// successor runs. Reported per chain.
func BenchmarkChainRun(b *testing.B) {
	jobs, err := traces.Synth("ls6", 14, 1)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.NewScenario("bench", jobs, sim.LS6())
	if err != nil {
		b.Fatal(err)
	}
	setup := ChainSetup{Scenario: sc, Cell: "bench", LoadScale: 1, K: 2, Until: sc.First.Add(9 * 24 * time.Hour),
		Nodes: []int{1}, Policies: []string{provisioner.PolicyStartEstimate}, Workers: 1}
	if err := setup.defaults(); err != nil {
		b.Fatal(err)
	}
	n := len(setup.Injections())
	b.ResetTimer()
	for range b.N {
		if _, _, err := RunChains(context.Background(), setup); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/chain")
}
