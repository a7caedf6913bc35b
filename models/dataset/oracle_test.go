package dataset_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
)

// TestOracleLabelsMatchBruteForce checks the oracle's labels against brute
// force: for every tick of every chain, a fresh chain is started from the
// base replay, run to the tick and the successor submitted there — no
// shared forks with the dataset generator — and the tick with the smallest
// |gap| found this way must be the one OracleTick picks from the table.
func TestOracleLabelsMatchBruteForce(t *testing.T) {
	sc := modeltest.Scenario(t)
	p := modeltest.Protocol()
	from, until := sc.First.Add(3*24*time.Hour), sc.First.Add(4*24*time.Hour)
	d, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: p, From: from, Until: until, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Episodes) < 4 {
		t.Fatalf("%d episodes, want ≥ 4", len(d.Episodes))
	}
	p = p.WithDefaults(sc.Config)
	chosenEarly := 0
	for i := range d.Episodes {
		ep := &d.Episodes[i]
		base, err := sc.NewSim()
		if err != nil {
			t.Fatal(err)
		}
		fresh := func() *scenario.ChainRun {
			c, err := scenario.StartChain(base, p, ep.Inject, ep.Nodes, scenario.ChainID(ep.Inject, ep.Nodes))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		best, bestAbs := -1, math.Inf(1)
		c := fresh()
		c.Advance(c.Deadline())
		out, err := c.SubmitSuccessor(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Censored {
			bestAbs = math.Abs(out.Gap.Seconds())
		}
		for k := range ep.Gap {
			c := fresh()
			c.Advance(c.TickTime(k))
			out, err := c.SubmitSuccessor(nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Censored {
				continue
			}
			if a := math.Abs(out.Gap.Seconds()); a < bestAbs {
				best, bestAbs = k, a
			}
		}
		if got := dataset.OracleTick(ep); got != best {
			t.Errorf("chain %s: OracleTick %d, brute force %d (|gap| %.0f s)", scenario.ChainID(ep.Inject, ep.Nodes), got, best, bestAbs)
		}
		if best >= 0 {
			chosenEarly++
			for k := range ep.Gap {
				want := 0.0
				if k >= best {
					want = 1
				}
				if got := dataset.OracleTarget(ep, k); got != want {
					t.Fatalf("chain %s tick %d: OracleTarget %g, want %g", scenario.ChainID(ep.Inject, ep.Nodes), k, got, want)
				}
			}
		}
	}
	t.Logf("%d chains; the oracle submits before the deadline in %d", len(d.Episodes), chosenEarly)
	if chosenEarly == 0 || chosenEarly == len(d.Episodes) {
		t.Errorf("the window should hold chains of both kinds (oracle early: %d of %d): pick another window", chosenEarly, len(d.Episodes))
	}
}
