package models

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// testSimConfig is the LS6 preset cut to 40 nodes, so that the synthetic
// LS6-like load (sized for 72) queues: of the 80 test chains (days 2–12),
// 38 are low, 18 medium and 24 heavy by their reactive gap.
func testSimConfig() sim.Config {
	c := sim.LS6()
	c.Nodes = c.Nodes[:40]
	return c
}

var (
	testScenarioOnce sync.Once
	testScenarioVal  *Scenario
	testScenarioErr  error
)

// testScenario is 16 days of synthetic LS6-like jobs on 40 nodes.
func testScenario(t testing.TB) *Scenario {
	t.Helper()
	testScenarioOnce.Do(func() {
		jobs, err := traces.Synth("ls6", 16, 5)
		if err != nil {
			testScenarioErr = err
			return
		}
		testScenarioVal, testScenarioErr = NewScenario("synth-ls6", jobs, testSimConfig())
	})
	if testScenarioErr != nil {
		t.Fatal(testScenarioErr)
	}
	return testScenarioVal
}

// testProtocol is a fast protocol for tests: 12 h segments, decisions every 30 min, chains of 1 and 4 nodes every 6 h.
func testProtocol() Protocol {
	return Protocol{Every: 6 * time.Hour, Tick: 30 * time.Minute, Limit: 12 * time.Hour, Nodes: []int{1, 4}}
}

func TestProtocolInjections(t *testing.T) {
	sc := &Scenario{First: time.Date(2023, 1, 1, 6, 0, 0, 0, time.UTC), Last: time.Date(2023, 1, 5, 0, 0, 0, 0, time.UTC)}
	p := Protocol{Every: 12 * time.Hour, WarmUp: 48 * time.Hour}
	// first start + 48 h = Jan 3 06:00; then 18:00; Jan 4 06:00, 18:00; the last submit (Jan 5 00:00) ends it.
	got := p.Injections(sc, time.Time{}, time.Time{})
	want := []time.Time{time.Date(2023, 1, 3, 6, 0, 0, 0, time.UTC), time.Date(2023, 1, 3, 18, 0, 0, 0, time.UTC),
		time.Date(2023, 1, 4, 6, 0, 0, 0, time.UTC), time.Date(2023, 1, 4, 18, 0, 0, 0, time.UTC)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("injections %v, want %v", got, want)
	}
	// from after the warm-up wins; until cuts.
	got = p.Injections(sc, time.Date(2023, 1, 4, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 4, 12, 0, 0, 0, time.UTC))
	if len(got) != 1 || !got[0].Equal(time.Date(2023, 1, 4, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("windowed injections %v, want [Jan 4 00:00]", got)
	}
	if err := (Protocol{Tick: time.Minute, Limit: time.Hour, Every: time.Hour, Lead: 2 * time.Hour}).Validate(); err == nil {
		t.Error("a lead above the limit must be refused")
	}
}

func TestScenarioScaled(t *testing.T) {
	sc := testScenario(t)
	a, err := sc.Scaled(1.5, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sc.Scaled(1.5, 3, 0)
	if !reflect.DeepEqual(a.Specs, b.Specs) {
		t.Error("same seed, different scaled scenarios")
	}
	n := len(sc.Specs)
	// Each job is copied with probability 0.5: the count is Binomial(n, 0.5),
	// within 5 standard deviations (√n/2 each) of n/2 for any sane seed.
	extra := len(a.Specs) - n
	if sd := 0.5 * float64(sqrtInt(n)); float64(extra) < float64(n)/2-5*sd || float64(extra) > float64(n)/2+5*sd {
		t.Errorf("%d copies of %d jobs, want about %d", extra, n, n/2)
	}
	ids := map[string]bool{}
	for i, sp := range a.Specs {
		if ids[sp.ID] {
			t.Fatalf("duplicate id %s", sp.ID)
		}
		ids[sp.ID] = true
		if i > 0 && sp.Submit.Before(a.Specs[i-1].Submit) {
			t.Fatal("scaled specs not in submit order")
		}
	}
	if a.Scale != 1.5 || a.Name != "synth-ls6×1.5" {
		t.Errorf("scale %v name %q", a.Scale, a.Name)
	}
	if same, _ := sc.Scaled(1, 3, 0); same != sc {
		t.Error("scale 1 must return the scenario itself")
	}
	if _, err := sc.Scaled(0.5, 3, 0); err == nil {
		t.Error("scale below 1 must be refused")
	}
}

func sqrtInt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// testChainData generates (once) the chain dataset of days 2–12 of the test scenario (80 chains).
var (
	testChainOnce sync.Once
	testChainVal  *ChainData
	testChainErr  error
)

func testChainData(t testing.TB) *ChainData {
	t.Helper()
	sc := testScenario(t)
	testChainOnce.Do(func() {
		testChainVal, testChainErr = GenerateChainData(context.Background(), sc, GenOptions{Protocol: testProtocol(), Until: sc.First.Add(12 * 24 * time.Hour)})
	})
	if testChainErr != nil {
		t.Fatal(testChainErr)
	}
	return testChainVal
}

func TestChainDataDeterministicAcrossWorkers(t *testing.T) {
	sc := testScenario(t)
	o := GenOptions{Protocol: testProtocol(), From: sc.First.Add(3 * 24 * time.Hour), Until: sc.First.Add(5 * 24 * time.Hour)}
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
	sc := testScenario(t)
	d := testChainData(t)
	p := testProtocol().WithDefaults(sc.Config)
	ep := d.Episodes[len(d.Episodes)-1]
	base, err := sc.NewSim()
	if err != nil {
		t.Fatal(err)
	}
	base.Run(ep.Inject)
	for _, k := range []int{0, 7, 23} {
		c, err := StartChain(base, p, ep.Inject, ep.Nodes, ChainID(ep.Inject, ep.Nodes))
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
	c, _ := StartChain(base, p, ep.Inject, ep.Nodes, ChainID(ep.Inject, ep.Nodes))
	c.Advance(c.Deadline())
	out, err := c.SubmitSuccessor("")
	if err != nil || out.Gap.Seconds() != ep.Reactive {
		t.Errorf("deadline submission gap %s (%v), dataset reactive %v s", out.Gap, err, ep.Reactive)
	}
}

func TestObserveFromPorts(t *testing.T) {
	sc := testScenario(t)
	p := testProtocol().WithDefaults(sc.Config)
	base, err := sc.NewSim()
	if err != nil {
		t.Fatal(err)
	}
	at := sc.First.Add(4 * 24 * time.Hour)
	base.Run(at)
	c, err := StartChain(base, p, at, 1, "obs")
	if err != nil {
		t.Fatal(err)
	}
	now := c.TickTime(3)
	obs, err := c.Observe(now)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := c.S.Snapshot(context.Background())
	if !reflect.DeepEqual(obs.Snapshot, snap) {
		t.Error("observation snapshot differs from the cluster's")
	}
	if !reflect.DeepEqual(obs.History, c.S.History(now.Add(-24*time.Hour))) {
		t.Error("observation history is not the last 24 h of the record")
	}
	if obs.Predecessor == nil || obs.Predecessor.ID != c.PredID || obs.Predecessor.State != provisioner.StateRunning || !obs.Predecessor.Start.Equal(c.PredStart) {
		t.Errorf("predecessor %+v", obs.Predecessor)
	}
	if obs.Successor.Nodes != 1 || obs.Successor.GPUs != 3 || obs.Successor.TimeLimit != 12*time.Hour || obs.Chain.ID != "obs" || !obs.Now.Equal(now) {
		t.Errorf("successor %+v chain %+v now %s", obs.Successor, obs.Chain, obs.Now)
	}
	// A backend without accounting: no history, no error; a predecessor that left the queue is found in the history.
	fin := provisioner.Job{ID: "p9", State: provisioner.StateCompleted, Start: now.Add(-time.Hour), End: now}
	o2, err := features.Observe(context.Background(), c.S, testHistory{jobs: []provisioner.Job{fin}}, now, 0, nil, "p9", provisioner.SubmitRequest{})
	if err != nil || o2.Predecessor == nil || o2.Predecessor.State != provisioner.StateCompleted {
		t.Errorf("finished predecessor from history: %+v, %v", o2.Predecessor, err)
	}
	o3, err := features.Observe(context.Background(), c.S, testHistory{err: provisioner.ErrNoAccounting}, now, 0, nil, "", provisioner.SubmitRequest{})
	if err != nil || o3.History != nil {
		t.Errorf("no accounting: %v, history %d", err, len(o3.History))
	}
	if _, err := features.Observe(context.Background(), c.S, testHistory{err: errors.New("boom")}, now, 0, nil, "", provisioner.SubmitRequest{}); err == nil {
		t.Error("a history failure other than ErrNoAccounting must be reported")
	}
}

type testHistory struct {
	jobs []provisioner.Job
	err  error
}

func (h testHistory) History(context.Context, time.Time) ([]provisioner.Job, error) {
	return h.jobs, h.err
}

func TestSimEnvMatchesTableEnv(t *testing.T) {
	sc := testScenario(t)
	d := testChainData(t)
	from := d.Episodes[0].Inject
	env, err := NewSimEnv(sc, testProtocol(), from, from.Add(time.Hour), DefaultGapCost, false, 1)
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
		tab := &TableEnv{Episodes: []ChainEpisode{*ep}, Cost: DefaultGapCost, Scale: 60, rng: env.rng}
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
