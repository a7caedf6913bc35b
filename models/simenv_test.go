package models

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
)

// testChainData generates (once) the chain dataset of days 2–12 of the test scenario (80 chains).
var (
	testChainOnce sync.Once
	testChainVal  *ChainData
	testChainErr  error
)

func testChainData(t testing.TB) *ChainData {
	t.Helper()
	sc := modeltest.Scenario(t)
	testChainOnce.Do(func() {
		testChainVal, testChainErr = GenerateChainData(context.Background(), sc, GenOptions{Protocol: modeltest.Protocol(), Until: sc.First.Add(12 * 24 * time.Hour)})
	})
	if testChainErr != nil {
		t.Fatal(testChainErr)
	}
	return testChainVal
}

func TestChainDataDeterministicAcrossWorkers(t *testing.T) {
	sc := modeltest.Scenario(t)
	o := GenOptions{Protocol: modeltest.Protocol(), From: sc.First.Add(3 * 24 * time.Hour), Until: sc.First.Add(5 * 24 * time.Hour)}
	o.Workers = 1
	a, err := GenerateChainData(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 3
	b, err := GenerateChainData(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Episodes) != 16 { // 8 injections (every 6 h over 2 days) × 2 sizes
		t.Fatalf("%d episodes, want 16", len(a.Episodes))
	}
	if !reflect.DeepEqual(a.Episodes, b.Episodes) || a.Probes != b.Probes {
		t.Error("1 and 3 workers gave different datasets")
	}
	// 12 h limit, 1 min lead, 30 min ticks: ticks at 0, 30, …, 690 min (24), + the deadline probe.
	for _, ep := range a.Episodes {
		if len(ep.X) != 24 || len(ep.Gap) != 24 || ep.Tick != 30*time.Minute || ep.PredEnd.Sub(ep.PredStart) != 12*time.Hour {
			t.Fatalf("episode shape: %d ticks, tick %s, run %s", len(ep.X), ep.Tick, ep.PredEnd.Sub(ep.PredStart))
		}
	}
	if a.Probes != 16*25 {
		t.Errorf("%d probes, want 400", a.Probes)
	}
}

func TestChainEpisodeMatchesIndependentProbes(t *testing.T) {
	sc := modeltest.Scenario(t)
	d := testChainData(t)
	p := modeltest.Protocol().WithDefaults(sc.Config)
	ep := d.Episodes[len(d.Episodes)-1]
	base, err := sc.NewSim()
	if err != nil {
		t.Fatal(err)
	}
	base.Run(ep.Inject)
	for _, k := range []int{0, 7, 23} {
		c, err := scenario.StartChain(base, p, ep.Inject, ep.Nodes, scenario.ChainID(ep.Inject, ep.Nodes))
		if err != nil {
			t.Fatal(err)
		}
		// Submitting at tick k from a chain that jumped there directly.
		out, err := c.ProbeAt(c.TickTime(k))
		if err != nil {
			t.Fatal(err)
		}
		if out.Gap.Seconds() != ep.Gap[k] {
			t.Errorf("tick %d: probe gap %s, dataset %v s", k, out.Gap, ep.Gap[k])
		}
		obs, err := c.Observe(c.TickTime(k))
		if err != nil {
			t.Fatal(err)
		}
		x, _ := features.Features(obs)
		if !reflect.DeepEqual(x, ep.X[k]) {
			t.Errorf("tick %d: features differ from the dataset's", k)
		}
	}
	c, _ := scenario.StartChain(base, p, ep.Inject, ep.Nodes, scenario.ChainID(ep.Inject, ep.Nodes))
	c.Advance(c.Deadline())
	out, err := c.SubmitSuccessor("")
	if err != nil || out.Gap.Seconds() != ep.Reactive {
		t.Errorf("deadline submission gap %s (%v), dataset reactive %v s", out.Gap, err, ep.Reactive)
	}
}

func TestSimEnvMatchesTableEnv(t *testing.T) {
	sc := modeltest.Scenario(t)
	d := testChainData(t)
	from := d.Episodes[0].Inject
	env, err := NewSimEnv(sc, modeltest.Protocol(), from, from.Add(time.Hour), scenario.DefaultGapCost, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The first injection point; the env draws the size, so find its episode after Reset.
	for _, waits := range []int{0, 5, 30} {
		s, err := env.Reset()
		if err != nil {
			t.Fatal(err)
		}
		var ep *ChainEpisode
		for i := range d.Episodes {
			if d.Episodes[i].Inject.Equal(from) && d.Episodes[i].Nodes == env.run.Chain.Nodes {
				ep = &d.Episodes[i]
			}
		}
		tab := &TableEnv{Episodes: []ChainEpisode{*ep}, Cost: scenario.DefaultGapCost, Scale: 60, rng: env.rng}
		ts, _ := tab.Reset()
		if !reflect.DeepEqual(s, ts) {
			t.Fatal("first states differ")
		}
		var r1, r2 float64
		for i := 0; ; i++ {
			a := ActionWait
			if i == waits {
				a = ActionSubmit
			}
			s1, rr1, done1, err1 := env.Step(a)
			s2, rr2, done2, err2 := tab.Step(a)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if done1 != done2 || !reflect.DeepEqual(s1, s2) {
				t.Fatalf("step %d: states or ends differ", i)
			}
			r1, r2 = rr1, rr2
			if done1 {
				break
			}
		}
		// Hand check of the reward: −60·|gap h| / 60 = −|gap h|.
		if r1 != r2 || r1 != -absF(env.LastGap)/3600 || env.LastGap != tab.LastGap {
			t.Errorf("submit after %d waits: rewards %v vs %v, gaps %v vs %v", waits, r1, r2, env.LastGap, tab.LastGap)
		}
	}
}

func absF(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
