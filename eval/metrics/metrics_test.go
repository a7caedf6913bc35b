package metrics

import (
	"math"
	"testing"
	"time"
)

// sample is a small builder: evSample("xgb", "a").gap(-2*time.Hour).class(LoadMedium)...
type evSB struct{ s Sample }

func evSample(policy, chain string) *evSB {
	return &evSB{Sample{Policy: policy, Cell: "c", Protocol: "pair", ChainID: chain, Segment: 1,
		Nodes: 1, GPUs: 3, LoadScale: 1, LoadClass: LoadLow, Submits: 1}}
}
func (b *evSB) gap(d time.Duration) *evSB { b.s.Gap = d; return b }
func (b *evSB) class(c string) *evSB      { b.s.LoadClass = c; return b }
func (b *evSB) submits(n int) *evSB       { b.s.Submits = n; return b }
func (b *evSB) nodes(n, gpus int) *evSB   { b.s.Nodes, b.s.GPUs = n, gpus; return b }
func (b *evSB) seg(i int) *evSB           { b.s.Segment = i; return b }
func (b *evSB) protocol(p string) *evSB   { b.s.Protocol = p; return b }
func (b *evSB) scale(x float64) *evSB     { b.s.LoadScale = x; return b }
func (b *evSB) censored() *evSB           { b.s.Censored = true; return b }
func evBuild(bs ...*evSB) (out []Sample) {
	for _, b := range bs {
		out = append(out, b.s)
	}
	return out
}

const hr = time.Hour

// fourHandoffs: reactive and xgb on the same four 1-node hand-offs.
//
//	chain  reactive  class   xgb     xgb submits
//	a      +3 h      medium  −2 h    2
//	b      +1 h      low     +0.5 h  1
//	c      +13 h     heavy   +4 h    1
//	d      0         low     −0.5 h  1
func fourHandoffs() []Sample {
	return evBuild(
		evSample("reactive", "a").gap(3*hr).class(LoadMedium),
		evSample("reactive", "b").gap(1*hr),
		evSample("reactive", "c").gap(13*hr).class(LoadHeavy),
		evSample("reactive", "d").gap(0),
		evSample("xgb", "a").gap(-2*hr).class(LoadMedium).submits(2),
		evSample("xgb", "b").gap(hr/2),
		evSample("xgb", "c").gap(4*hr).class(LoadHeavy),
		evSample("xgb", "d").gap(-hr/2),
	)
}

func evFind(t *testing.T, gs []GroupStats, policy string, nodes int, class string) GroupStats {
	t.Helper()
	for _, g := range gs {
		if g.Policy == policy && g.Nodes == nodes && g.LoadClass == class {
			return g
		}
	}
	t.Fatalf("no group %s/%d/%s", policy, nodes, class)
	return GroupStats{}
}

func evNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func TestComputeHandWorked(t *testing.T) {
	gs := Compute(fourHandoffs(), Options{BootstrapBelow: -1})
	// 2 policies × (all sizes, 1 node) × (all, low, medium, heavy) = 16 groups.
	if len(gs) != 16 {
		t.Fatalf("groups = %d, want 16", len(gs))
	}
	// Order: reactive first, all sizes before 1 node, all/low/medium/heavy.
	if gs[0].Policy != "reactive" || gs[0].Nodes != 0 || gs[0].LoadClass != AllClasses ||
		gs[1].LoadClass != LoadLow || gs[3].LoadClass != LoadHeavy || gs[4].Nodes != 1 || gs[8].Policy != "xgb" {
		t.Errorf("order: %v %v %v %v %v", gs[0].GroupKey, gs[1].GroupKey, gs[3].GroupKey, gs[4].GroupKey, gs[8].GroupKey)
	}
	x := evFind(t, gs, "xgb", 0, AllClasses)
	if x.N != 4 {
		t.Fatalf("n = %d", x.N)
	}
	// signed gaps sorted: −2, −0.5, 0.5, 4 (hours)
	evNear(t, "gap min", x.Gap.Min, -2)
	evNear(t, "gap max", x.Gap.Max, 4)
	evNear(t, "gap p25", x.Gap.P25, -0.875) // pos 0.75: −2 + 0.75·1.5
	evNear(t, "gap p50", x.Gap.P50, 0)      // pos 1.5: −0.5 + 0.5·1
	evNear(t, "gap p90", x.Gap.P90, 2.95)   // pos 2.7: 0.5 + 0.7·3.5
	// interruptions 0, 0, 0.5, 4
	evNear(t, "interruption mean", x.InterruptionMean, 1.125) // 4.5/4
	evNear(t, "interruption median", x.InterruptionMedian, 0.25)
	evNear(t, "interruption p90", x.InterruptionP90, 2.95)
	// overlaps 0, 0, 0.5, 2
	evNear(t, "overlap mean", x.OverlapMean, 0.625)  // 2.5/4
	evNear(t, "overlap p90", x.OverlapP90, 1.55)     // pos 2.7: 0.5 + 0.7·1.5
	evNear(t, "wasted GPU-h", x.WastedGPUHours, 7.5) // (2 + 0.5) h × 3 GPUs
	evNear(t, "zero interruption", x.ZeroInterruption, 0.5)
	evNear(t, "within hour", x.WithinHour, 0.5) // −0.5 and +0.5
	evNear(t, "mean |gap|", x.MeanAbsGap, 1.75) // 7/4
	if x.Reduction == nil || x.ReductionPairs != 4 {
		t.Fatalf("reduction %v over %d pairs", x.Reduction, x.ReductionPairs)
	}
	evNear(t, "reduction", *x.Reduction, 1-4.5/17) // reactive Σ 3+1+13+0 = 17
	if x.Submits != 5 {
		t.Errorf("submits = %d, want 5", x.Submits)
	}
	evNear(t, "submits per hand-off", x.SubmitsPerHandoff, 1.25)
	if x.CI != nil {
		t.Errorf("CI computed with bootstrap disabled")
	}
	if x.Chains != 0 {
		t.Errorf("chain figures for the pair protocol: %d chains", x.Chains)
	}

	low := evFind(t, gs, "xgb", 1, LoadLow) // b (+0.5) and d (−0.5)
	if low.N != 2 {
		t.Fatalf("low n = %d", low.N)
	}
	evNear(t, "low interruption mean", low.InterruptionMean, 0.25)
	evNear(t, "low reduction", *low.Reduction, 0.5) // 1 − 0.5/(1+0)

	r := evFind(t, gs, "reactive", 0, AllClasses) // 0, 1, 3, 13
	evNear(t, "reactive interruption mean", r.InterruptionMean, 4.25)
	evNear(t, "reactive zero share", r.ZeroInterruption, 0.25) // gap 0 counts as no interruption
	evNear(t, "reactive within hour", r.WithinHour, 0.5)       // 0 and exactly +1 h
	evNear(t, "reactive reduction", *r.Reduction, 0)
	evNear(t, "reactive wasted", r.WastedGPUHours, 0)

	rl := evFind(t, gs, "reactive", 1, LoadLow) // b +1, d 0: reactive interruption Σ 1
	evNear(t, "reactive low mean", rl.InterruptionMean, 0.5)
}

func TestComputeSizesScalesCensored(t *testing.T) {
	s := evBuild(
		evSample("reactive", "a").gap(2*hr),
		evSample("reactive", "a").gap(5*hr).nodes(8, 24).class(LoadMedium),
		evSample("reactive", "a").gap(1*hr).scale(1.2),
		evSample("pg", "a").gap(-hr).nodes(8, 24).class(LoadMedium),
		evSample("pg", "a").gap(3*hr).censored(),
	)
	gs := Compute(s, Options{BootstrapBelow: -1, Policies: []string{"pg", "reactive"}})
	if gs[0].Policy != "pg" || gs[0].LoadScale != 1 {
		t.Errorf("first group %v, want pg at scale 1 (given order)", gs[0].GroupKey)
	}
	all := evFind(t, gs, "pg", 0, AllClasses)
	if all.N != 2 || all.Censored != 1 {
		t.Errorf("pg all: n %d censored %d", all.N, all.Censored)
	}
	evNear(t, "pg wasted", all.WastedGPUHours, 24) // 1 h overlap × 24 GPUs
	// pg reduction over both sizes: pg Σ 0 + 3 = 3; reactive Σ 5 + 2 = 7.
	evNear(t, "pg reduction", *all.Reduction, 1-3.0/7)
	p8 := evFind(t, gs, "pg", 8, LoadMedium)
	evNear(t, "pg 8-node reduction", *p8.Reduction, 1) // 1 − 0/5
	// scale 1.2 is its own experiment: reactive has one hand-off there.
	n12 := 0
	for _, g := range gs {
		if g.LoadScale == 1.2 {
			n12++
			if g.N != 1 || g.Policy != "reactive" {
				t.Errorf("scale 1.2 group %v n %d", g.GroupKey, g.N)
			}
		}
	}
	if n12 != 4 { // (all, 1) sizes × (all, low) classes
		t.Errorf("scale 1.2 groups = %d, want 4", n12)
	}
}

func TestComputeNoReference(t *testing.T) {
	gs := Compute(evBuild(evSample("xgb", "a").gap(hr)), Options{BootstrapBelow: -1})
	if gs[0].Reduction != nil || gs[0].ReductionPairs != 0 {
		t.Errorf("reduction without reactive: %v", gs[0].Reduction)
	}
	// reactive without any interruption: no ratio
	gs = Compute(evBuild(evSample("reactive", "a").gap(-hr), evSample("xgb", "a").gap(hr)), Options{BootstrapBelow: -1})
	if x := evFind(t, gs, "xgb", 0, AllClasses); x.Reduction != nil || x.ReductionPairs != 1 {
		t.Errorf("reduction against zero: %v (%d pairs)", x.Reduction, x.ReductionPairs)
	}
}

func TestComputeChains(t *testing.T) {
	// chain x: hand-offs +1 h, −1 h → total interruption 1 h; chain y: +2 h, +3 h → 5 h.
	s := evBuild(
		evSample("dqn", "x").protocol("chain-3").seg(1).gap(hr),
		evSample("dqn", "x").protocol("chain-3").seg(2).gap(-hr),
		evSample("dqn", "y").protocol("chain-3").seg(1).gap(2*hr),
		evSample("dqn", "y").protocol("chain-3").seg(2).gap(3*hr),
	)
	g := evFind(t, Compute(s, Options{BootstrapBelow: -1}), "dqn", 0, AllClasses)
	if g.Chains != 2 {
		t.Fatalf("chains = %d", g.Chains)
	}
	evNear(t, "chain mean", g.ChainInterruptionMean, 3)
	evNear(t, "chain median", g.ChainInterruptionMedian, 3)
	evNear(t, "chain p90", g.ChainInterruptionP90, 4.6) // 1 + 0.9·4
}

func TestBootstrap(t *testing.T) {
	// All hand-offs identical: every resample gives the same figures.
	var same []Sample
	for _, c := range []string{"a", "b", "c", "d", "e"} {
		same = append(same, evSample("rf", c).gap(2*hr).s)
	}
	g := Compute(same, Options{Seed: 7})[0]
	if g.CI == nil {
		t.Fatal("no CI for 5 hand-offs")
	}
	if *g.CI.InterruptionMean != (Interval{2, 2}) || *g.CI.ZeroInterruption != (Interval{0, 0}) || *g.CI.WithinHour != (Interval{0, 0}) {
		t.Errorf("degenerate CIs: %+v %+v %+v", g.CI.InterruptionMean, g.CI.ZeroInterruption, g.CI.WithinHour)
	}
	if g.CI.Reduction != nil {
		t.Errorf("reduction CI without reactive")
	}

	// Varied gaps: intervals bracket the estimate, are seeded, and do not
	// depend on which other groups exist.
	var s []Sample
	for i := range 40 {
		gap := time.Duration(i%7-2) * hr
		s = append(s, evSample("reactive", string(rune('A'+i))).gap(gap+3*hr).s)
		s = append(s, evSample("rf", string(rune('A'+i))).gap(gap).s)
	}
	opts := Options{Seed: 11}
	a := evFind(t, Compute(s, opts), "rf", 0, AllClasses)
	ci := a.CI
	if ci == nil || ci.Reduction == nil {
		t.Fatalf("missing CIs: %+v", ci)
	}
	for _, c := range []struct {
		name string
		v    float64
		iv   *Interval
	}{
		{"interruption", a.InterruptionMean, ci.InterruptionMean},
		{"zero", a.ZeroInterruption, ci.ZeroInterruption},
		{"within", a.WithinHour, ci.WithinHour},
		{"abs", a.MeanAbsGap, ci.MeanAbsGap},
		{"reduction", *a.Reduction, ci.Reduction},
	} {
		if !(c.iv.Lo <= c.v && c.v <= c.iv.Hi && c.iv.Lo < c.iv.Hi) {
			t.Errorf("%s: estimate %g outside or degenerate CI [%g, %g]", c.name, c.v, c.iv.Lo, c.iv.Hi)
		}
	}
	again := evFind(t, Compute(s, opts), "rf", 0, AllClasses)
	if *again.CI.InterruptionMean != *ci.InterruptionMean || *again.CI.Reduction != *ci.Reduction {
		t.Errorf("same seed, different CIs")
	}
	other := evFind(t, Compute(s, Options{Seed: 12}), "rf", 0, AllClasses)
	if *other.CI.InterruptionMean == *ci.InterruptionMean {
		t.Errorf("different seed, identical CI %v", *ci.InterruptionMean)
	}
	extra := append(append([]Sample(nil), s...), evSample("xgb", "Z").gap(hr).s, evSample("xgb", "Y").gap(2*hr).s)
	withExtra := evFind(t, Compute(extra, opts), "rf", 0, AllClasses)
	if *withExtra.CI.InterruptionMean != *ci.InterruptionMean {
		t.Errorf("CI depends on other groups: %v vs %v", *withExtra.CI.InterruptionMean, *ci.InterruptionMean)
	}
	// At or above the threshold: no CIs.
	if g := evFind(t, Compute(s, Options{Seed: 11, BootstrapBelow: 40}), "rf", 0, AllClasses); g.CI != nil {
		t.Errorf("CI for n=40 with threshold 40")
	}
}

func TestClassifyByReference(t *testing.T) {
	s := evBuild(
		evSample("reactive", "a").gap(3*hr).class(""),    // 3 h: medium
		evSample("xgb", "a").gap(-hr).class(""),          // follows reactive on a
		evSample("reactive", "b").gap(13*hr).class(""),   // 13 h: heavy
		evSample("xgb", "b").gap(0).class("").scale(1.2), // another experiment: no reference there
		evSample("xgb", "c").gap(0).class(LoadLow),       // no reference: kept
	)
	ClassifyByReference(s)
	for i, want := range []string{LoadMedium, LoadMedium, LoadHeavy, "", LoadLow} {
		if s[i].LoadClass != want {
			t.Errorf("sample %d (%s %s): class %q, want %q", i, s[i].Policy, s[i].ChainID, s[i].LoadClass, want)
		}
	}
}

func TestParseChainProtocol(t *testing.T) {
	for in, want := range map[string]int{"chain-2": 2, "chain-10": 10, "chain-1": 0, "chain-": 0, "pair": 0, "chain-x": 0, "chain-3a": 0} {
		k, ok := ParseChainProtocol(in)
		if k != want || ok != (want > 0) {
			t.Errorf("ParseChainProtocol(%q) = %d, %v; want %d", in, k, ok, want)
		}
		if ok && ChainProtocol(k) != in {
			t.Errorf("ChainProtocol(%d) = %q", k, ChainProtocol(k))
		}
	}
}
