package models

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/provisioner"
)

func TestQBETSBound(t *testing.T) {
	// Binomial CDFs computed independently (Python, math.comb):
	// n=100, q=0.95: P(X ≤ 97) = 0.882 < 0.95 ≤ P(X ≤ 98) = 0.963 → k = 99.
	// n=20,  q=0.5:  P(X ≤ 12) = 0.868 < 0.90 ≤ P(X ≤ 13) = 0.942 → k = 14.
	// n=300, q=0.99: P(X ≤ 298) = 0.802 < 0.95 ≤ P(X ≤ 299) = 0.951 → k = 300.
	// n=10,  q=0.9:  P(X ≤ 9) = 1 − 0.9^10 = 0.651 < 0.95 → none: 11.
	tests := []struct {
		n    int
		q, c float64
		want int
	}{{100, 0.95, 0.95, 99}, {20, 0.5, 0.9, 14}, {300, 0.99, 0.95, 300}, {10, 0.9, 0.95, 11}}
	for _, tt := range tests {
		if got := QBETSBound(tt.n, tt.q, tt.c); got != tt.want {
			t.Errorf("QBETSBound(%d, %v, %v) = %d, want %d", tt.n, tt.q, tt.c, got, tt.want)
		}
	}
}

// testChainObs is an observation of a running predecessor with limit 10 h
// that started 8 h ago (2 h left), with started jobs of the given waits.
func testChainObs(waits ...time.Duration) *provisioner.Observation {
	pred := testobs.Job("pred").Running(9*testobs.Hour, 8*testobs.Hour).Limit(10 * testobs.Hour).Build()
	obs := &provisioner.Observation{Now: testobs.T0, Snapshot: &provisioner.Snapshot{Time: testobs.T0, Jobs: []provisioner.Job{pred}},
		Predecessor: &pred, Chain: &provisioner.Chain{ID: "c1", TimeLimit: 10 * testobs.Hour}}
	for i, w := range waits {
		// started i minutes ago, having waited w
		st := testobs.T0.Add(-time.Duration(i+1) * time.Minute)
		obs.History = append(obs.History, provisioner.Job{ID: "h" + strconv.Itoa(i), State: provisioner.StateRunning, Submit: st.Add(-w), Start: st})
	}
	return obs
}

func TestAveragePolicy(t *testing.T) {
	p := &AveragePolicy{}
	// waits 1 h, 2 h, 4 h: mean 7/3 h = 2 h 20 min ≥ 2 h left → submit.
	d, err := p.Decide(testChainObs(time.Hour, 2*time.Hour, 4*time.Hour))
	if err != nil || d.Action != provisioner.SubmitNow {
		t.Fatalf("decision %+v, %v; want submit (mean wait 2h20m, 2h left)", d, err)
	}
	// waits 1 h, 2 h: mean 1.5 h < 2 h left → wait.
	if d, _ := p.Decide(testChainObs(time.Hour, 2*time.Hour)); d.Action != provisioner.Wait {
		t.Errorf("decision %+v, want wait (mean 1.5 h, 2 h left)", d)
	}
	// Window 1: only the most recent start (i=0, wait 3 h) counts → submit.
	p1 := &AveragePolicy{Window: 1}
	if d, _ := p1.Decide(testChainObs(3*time.Hour, 0, 0)); d.Action != provisioner.SubmitNow {
		t.Errorf("window 1: decision %+v, want submit", d)
	}
	// No history: wait, and say why.
	if d, _ := p.Decide(testChainObs()); d.Action != provisioner.Wait || !strings.Contains(d.Reason, "no started jobs") {
		t.Errorf("empty history: %+v", d)
	}
}

func TestQuantilePolicy(t *testing.T) {
	// 20 waits of 0, 1, …, 19 × 10 min; q 0.5, c 0.9 → k = 14 (see
	// TestQBETSBound): the 14th smallest is 13 × 10 min = 2 h 10 min ≥ 2 h left → submit.
	var ws []time.Duration
	for i := 0; i < 20; i++ {
		ws = append(ws, time.Duration(i)*10*time.Minute)
	}
	p := &QuantilePolicy{Quantile: 0.5, Confidence: 0.9, Window: 20}
	d, err := p.Decide(testChainObs(ws...))
	if err != nil || d.Action != provisioner.SubmitNow {
		t.Fatalf("decision %+v, %v; want submit (bound 2h10m)", d, err)
	}
	// With c = 0.5 the bound is lower: P(X ≤ 9) = 0.412, P(X ≤ 10) = 0.588 → k = 11 → 1 h 40 min < 2 h → wait.
	p.Confidence = 0.5
	if d, _ := p.Decide(testChainObs(ws...)); d.Action != provisioner.Wait {
		t.Errorf("decision %+v, want wait (bound 1h40m)", d)
	}
	// Too few samples for the confidence: the largest is used and said so.
	q := &QuantilePolicy{Quantile: 0.9, Confidence: 0.95}
	d, _ = q.Decide(testChainObs(3*time.Hour, 0, 0))
	if d.Action != provisioner.SubmitNow || !strings.Contains(d.Reason, "the largest") {
		t.Errorf("decision %+v, want submit on the largest wait (3 h)", d)
	}
}

func TestBaselinesGate(t *testing.T) {
	for _, p := range []provisioner.Policy{&AveragePolicy{}, &QuantilePolicy{}, &OraclePolicy{Probe: func(*provisioner.Observation, time.Duration) (time.Duration, error) { return 0, nil }}} {
		obs := testChainObs(time.Hour)
		obs.Predecessor = nil
		if d, _ := p.Decide(obs); d.Action != provisioner.SubmitNow || d.Reason != ReasonNoPredecessor {
			t.Errorf("%s without predecessor: %+v", p.Name(), d)
		}
		obs = testChainObs(time.Hour)
		pend := *obs.Predecessor
		pend.State, pend.Start = provisioner.StatePending, time.Time{}
		obs.Predecessor = &pend
		if d, _ := p.Decide(obs); d.Action != provisioner.Wait || d.Reason != ReasonPredecessorPending {
			t.Errorf("%s with pending predecessor: %+v", p.Name(), d)
		}
	}
}

func TestOraclePlansTheSmallestGap(t *testing.T) {
	// 2 h left, interval 30 min, lead 1 min: offsets 0, 30, 60, 90 min and
	// the forced 119 min. Gaps: −90 min, −40, +15 (a reservation makes a
	// later start jump), −10, +200 → the smallest |gap| is −10 min at 90 min.
	gaps := map[time.Duration]time.Duration{0: -90 * time.Minute, 30 * time.Minute: -40 * time.Minute, 60 * time.Minute: 15 * time.Minute,
		90 * time.Minute: -10 * time.Minute, 119 * time.Minute: 200 * time.Minute}
	probes := 0
	o, err := NewOracle(func(obs *provisioner.Observation, after time.Duration) (time.Duration, error) {
		probes++
		g, ok := gaps[obs.Now.Sub(testobs.T0)+after]
		if !ok {
			t.Fatalf("unexpected probe at %s", obs.Now.Sub(testobs.T0)+after)
		}
		return g, nil
	}, 30*time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, 30 * time.Minute, 60 * time.Minute} {
		obs := testChainObs()
		obs.Now = testobs.T0.Add(at)
		if d, err := o.Decide(obs); err != nil || d.Action != provisioner.Wait {
			t.Fatalf("at +%s: %+v, %v; want wait", at, d, err)
		}
	}
	obs := testChainObs()
	obs.Now = testobs.T0.Add(90 * time.Minute)
	if d, _ := o.Decide(obs); d.Action != provisioner.SubmitNow || d.Score != (-10*time.Minute).Seconds() {
		t.Fatalf("at +90m: %+v, want submit with gap −10 min", d)
	}
	if probes != 5 {
		t.Errorf("%d probes, want 5 (planned once)", probes)
	}
	if _, err := NewOracle(nil, 0, 0); !errors.Is(err, ErrNoProbe) {
		t.Errorf("oracle without probe: %v", err)
	}
}

func TestPolicyFactory(t *testing.T) {
	dir := t.TempDir()
	f := PolicyFactory(dir, PolicyOptions{})
	for _, name := range []string{PolicyAverage, PolicyQuantile} {
		p, err := f(name)
		if err != nil || p.Name() != name {
			t.Errorf("%s: %v, %v", name, p, err)
		}
	}
	if _, err := f(PolicyOracle); !errors.Is(err, ErrNoProbe) {
		t.Errorf("oracle without the harness: %v, want ErrNoProbe", err)
	}
	if _, err := f("nope"); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := f("xgb"); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "mirage train --model xgb") {
		t.Errorf("missing model: %v", err)
	}
	// Provisioner baselines are delegated.
	called := ""
	g := PolicyFactory(dir, PolicyOptions{Baseline: func(name string) (provisioner.Policy, error) {
		called = name
		return &AveragePolicy{}, nil
	}})
	for _, name := range ProvisionerBaselines {
		if _, err := g(name); err != nil || called != name {
			t.Errorf("%s not delegated (%v, called %q)", name, err, called)
		}
	}
}
