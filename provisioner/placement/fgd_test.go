package placement

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// FGD, the paper's gradient alone, on two tiny states worked by hand.
//
// Across nodes, the mix {1 GPU with 4 CPUs: 1}, a job of 1 GPU with 8 CPUs:
//
//	n1 (4 GPUs, 16 CPUs free): before, the class fits and no GPU is partly
//	    used: F = 0. After, 3 GPUs and 8 CPUs free: it still fits, F = 0;
//	    ΔF = 0. (frag-aware's CPU-capacity term: before, the CPU feeds 4
//	    jobs, the GPUs hold 4: 0; after, the CPU feeds 2, the GPUs hold 3:
//	    1 GPU starved, ΔF = +1.)
//	n2 (2 GPUs, 8 CPUs free): after, 1 GPU and no CPU free: the class
//	    cannot run, its free GPU is fragmented: ΔF = +1 (frag-aware: the
//	    same, before the CPU feeds 2 jobs and the GPUs hold 2).
//
// So FGD takes n1 (ΔF 0 < 1) where frag-aware ties at +1 and takes n2 by
// best fit (1 GPU left, not 3).
//
// Inside a node, the mix {0.3 GPU: ½, 1 GPU: ½}, a job of 0.3 GPU on one
// node with GPUs free 600, 300, 1000 (thousandths; CPU not tracked):
// before, no GPU has less than 300 free (F for 0.3: 0) and 600 + 300 are
// partly used (F for 1: 900): F = ½·0 + ½·900 = 450.
//
//	GPU 0 (→ 300, 300, 1000): F = ½·0 + ½·600 = 300, ΔF = −150;
//	GPU 1 (→ 600, 0, 1000):   F = ½·0 + ½·600 = 300, ΔF = −150;
//	GPU 2 (→ 600, 300, 700):  F = ½·0 + ½·1600 = 800, ΔF = +350.
//
// FGD takes GPU 0 (the tie to the lowest number), frag-aware GPU 1 (the
// tie to the least room).
func TestFGDPaperMeasure(t *testing.T) {
	st := state(t, pnode("n1", 4).cpu(16000, 0), pnode("n2", 2).cpu(8000, 0))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 4000, Weight: 1}}}
	d := Demand{GPUMilli: 1000, CPUMilli: 8000}
	p := mustPlace(t, st, d, FGD, Options{Mix: mix, Explain: true})
	if p.NodeNames()[0] != "n1" {
		t.Fatalf("FGD took %v, want n1", p.NodeNames())
	}
	if r := p.Ranked; len(r) != 2 || r[0].FragDelta != 0 || r[1].Node != "n2" || math.Abs(r[1].FragDelta-1) > 1e-12 || r[0].Scarcity != 0 {
		t.Errorf("FGD ranked %+v", r)
	}
	fa := mustPlace(t, st, d, FragAware, Options{Mix: mix, Explain: true})
	if fa.NodeNames()[0] != "n2" {
		t.Fatalf("frag-aware took %v, want n2", fa.NodeNames())
	}
	for _, c := range fa.Ranked {
		if math.Abs(c.FragDelta-1) > 1e-12 {
			t.Errorf("frag-aware on %s: ΔF %g, want 1", c.Node, c.FragDelta)
		}
	}

	one := state(t, pnode("g", 3).free(600, 300, 1000))
	mix2 := &Mix{Classes: []MixClass{{GPUMilli: 300, Weight: 0.5}, {GPUMilli: 1000, Weight: 0.5}}}
	share := Demand{GPUMilli: 300}
	p = mustPlace(t, one, share, FGD, Options{Mix: mix2})
	if a := p.Assignments[0]; !slices.Equal(a.GPUs, []int{0}) || math.Abs(p.Chosen[0].FragDelta+0.15) > 1e-12 {
		t.Errorf("FGD: GPUs %v, ΔF %g; want [0], -0.15", a.GPUs, p.Chosen[0].FragDelta)
	}
	if fa := mustPlace(t, one, share, FragAware, Options{Mix: mix2}); !slices.Equal(fa.Assignments[0].GPUs, []int{1}) {
		t.Errorf("frag-aware: GPUs %v, want [1]", fa.Assignments[0].GPUs)
	}
}

// FGD is an evaluation baseline: Place takes it, the product's list and
// parser do not.
func TestFGDNotOffered(t *testing.T) {
	if slices.Contains(Policies, FGD) {
		t.Error("FGD is in Policies")
	}
	if _, err := ParsePolicy(string(FGD)); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("ParsePolicy(fgd): %v", err)
	}
	if err := CheckPolicy(FGD); err != nil {
		t.Error(err)
	}
	if err := CheckPolicy("nope"); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("CheckPolicy(nope): %v", err)
	}
}
