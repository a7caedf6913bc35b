package scenario_test

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
)

// BenchmarkProbe is one probe of dataset generation: fork a running
// chain's simulator (synthetic LS6-like trace on 40 nodes), submit the
// successor and run until it starts.
func BenchmarkProbe(b *testing.B) {
	sc := modeltest.Scenario(b)
	p := modeltest.Protocol().WithDefaults(sc.Config)
	base, err := sc.NewSim()
	if err != nil {
		b.Fatal(err)
	}
	at := sc.First.Add(5 * 24 * time.Hour)
	base.Run(at)
	c, err := scenario.StartChain(base, p, at, 4, "bench")
	if err != nil {
		b.Fatal(err)
	}
	c.Advance(c.TickTime(12))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Probe(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "probes/s")
}
