package placement

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A scarce GPU model kept free for the job that needs it. Nodes: a (model
// X, 1 GPU) and b (model Y, 2 GPUs); the mix: 1 GPU of any model 90%, 2
// GPUs of any model 4%, 1 GPU of X only 6%. An unconstrained 1-GPU job
// arrives. Worked by hand:
//
//	a: before, the 2-GPU class cannot fit (1 GPU): F = 0.04·1000 = 40;
//	   after, nothing is free: F = 0. ΔF = −40 (−0.04 GPU).
//	b: before, the X class is not allowed: F = 0.06·2000 = 120; after (one
//	   GPU left) the 2-GPU class cannot fit and X still not allowed:
//	   F = 0.04·1000 + 0.06·1000 = 100. ΔF = −20 (−0.02 GPU).
//
// FGD's gradient alone (and best-fit, which leaves a full) take a, and
// the X job that follows finds nothing. Scarcity: the GPU demand per job
// is 0.9·1000 + 0.04·2000 + 0.06·1000 = 1040 thousandths, of which the
// 2-GPU class carries 80/1040 = 1/13 (7.7%, below ExtensionFullBelow: the
// extensions count in full), and 3 GPUs are free. The X class (held by a
// only) asks 60/1040 = 3/52 of it: 9/52 GPU of a's 1 free, pressure 9/52.
// The 2-GPU class (held by b only: a has one GPU) asks 80/1040 = 1/13:
// 3/13 GPU of b's 2, pressure 3/26. Taking a's GPU costs
// ScarcityWeight·9/52 = 9/26 GPU, one of b's 2·3/26 = 3/13: a scores
// −0.04 + 9/26 ≈ 0.306, b −0.02 + 3/13 ≈ 0.211. The job goes to b, and
// the X job then fits on a.
//
// (Until issue 48 this test's mix was 50% / 20% / 30%; there the 2-GPU
// class carries 400/1200 = 1/3 of the GPU demand, a multi-GPU-heavy mix
// under which frag-aware drops the scarcity cost (ExtensionWeight 0) and,
// like FGD, takes a: checked at the end.)
func TestScarceModelKeptFree(t *testing.T) {
	st := state(t, pnode("a", 1).typ("X"), pnode("b", 2).typ("Y"))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, Weight: 0.9}, {GPUMilli: 2000, Weight: 0.04}, {GPUMilli: 1000, GPUTypes: []string{"X"}, Weight: 0.06}}}
	if sh := mix.MultiGPUShare(); math.Abs(sh-1.0/13) > 1e-12 || ExtensionWeight(sh) != 1 {
		t.Fatalf("multi-GPU share %g (weight %g), want 1/13 (1)", sh, ExtensionWeight(sh))
	}
	if got := st.Scarcity(*mix); len(got) != 2 || math.Abs(got["a"]-9.0/52) > 1e-12 || math.Abs(got["b"]-3.0/26) > 1e-12 {
		t.Fatalf("scarcity %v, want a 9/52, b 3/26", got)
	}
	p := mustPlace(t, st, gpus(1), FragAware, Options{Mix: mix, Explain: true})
	if p.NodeNames()[0] != "b" {
		t.Fatalf("unconstrained job on %v, want b: %+v", p.NodeNames(), p.Ranked)
	}
	byName := map[string]Candidate{}
	for _, c := range p.Ranked {
		byName[c.Node] = c
	}
	a, b := byName["a"], byName["b"]
	if math.Abs(a.FragDelta+0.04) > 1e-12 || math.Abs(b.FragDelta+0.02) > 1e-12 || math.Abs(a.Scarcity-9.0/26) > 1e-12 || math.Abs(b.Scarcity-3.0/13) > 1e-12 {
		t.Errorf("a %+v, b %+v; want ΔF −0.04 / −0.02, scarcity 9/26 / 3/13", a, b)
	}
	if want := "1 GPU on b by frag-aware among 2 candidate nodes (fragmentation -0.02 GPUs, scarcity +0.23 GPUs, 1 GPUs left free)"; p.Reason != want {
		t.Errorf("reason %q, want %q", p.Reason, want)
	}
	if bf := mustPlace(t, st, gpus(1), BestFit, Options{}); bf.NodeNames()[0] != "a" {
		t.Errorf("best-fit on %v, want a (the trap)", bf.NodeNames())
	}
	// The multi-GPU-heavy mix: 1 GPU 50%, 2 GPUs 20%, X 30%. a: ΔF =
	// −0.2·1000; b: 0.3·2000 before, 0.2·1000 + 0.3·1000 after, ΔF = −100;
	// no scarcity cost: a (−0.2 GPU) beats b (−0.1 GPU).
	heavy := &Mix{Classes: []MixClass{{GPUMilli: 1000, Weight: 0.5}, {GPUMilli: 2000, Weight: 0.2}, {GPUMilli: 1000, GPUTypes: []string{"X"}, Weight: 0.3}}}
	if sh := heavy.MultiGPUShare(); math.Abs(sh-1.0/3) > 1e-12 || ExtensionWeight(sh) != 0 {
		t.Errorf("heavy mix: multi-GPU share %g (weight %g), want 1/3 (0)", sh, ExtensionWeight(sh))
	}
	if h := mustPlace(t, st, gpus(1), FragAware, Options{Mix: heavy}); h.NodeNames()[0] != "a" || h.Chosen[0].Scarcity != 0 ||
		math.Abs(h.Chosen[0].FragDelta+0.2) > 1e-12 {
		t.Errorf("heavy mix: %s, want a with ΔF −0.2 and no scarcity cost", h.Reason)
	}
	st.Assign(p.Assignments[0])
	x := mustPlace(t, st, Demand{GPUMilli: 1000, GPUTypes: []string{"X"}}, FragAware, Options{Mix: mix})
	if !x.OK() || x.NodeNames()[0] != "a" {
		t.Errorf("the X job: %s", x.Reason)
	}
}

// The nodes big enough for the largest jobs kept for them. big has 8 GPUs
// and 128 CPUs, small 8 GPUs and 96 CPUs; the mix: 1 GPU with 8 CPUs 99%,
// 8 GPUs with 120 CPUs 1% (only big can ever hold those). A 1-GPU job
// with 8 CPUs arrives. By hand:
//
//	big: before, both classes fit (F = 0); after, 7 whole GPUs are left
//	     and the 8-GPU class no longer fits: F = 0.01·7000, ΔF = +0.07 GPU.
//	small: the 8-GPU class never fits (120 CPUs > 96): F = 0.01·8000
//	     before, 0.01·7000 after, ΔF = −0.01 GPU.
//
// Scarcity: the GPU demand per job is 0.99·1000 + 0.01·8000 = 1070
// thousandths; the 8-GPU class asks 80/1070 = 8/107 of it (7.5%, below
// ExtensionFullBelow), of 16 free GPUs: 128/107 GPUs, all on big's 8 —
// pressure 16/107, a cost of 2·16/107 GPU for big's GPU. big scores
// 0.07 + 32/107, small −0.01: the job goes to small and big stays whole
// (the gradient alone already prefers small here; the scarcity cost adds
// to it). With the 8-GPU class at 10% (until issue 48 this test's mix) it
// carries 800/1700 = 8/17 of the GPU demand: frag-aware charges no
// scarcity cost there (ExtensionWeight 0), and the gradient alone (big
// +0.7, small −0.1) still takes small.
func TestBigNodeKeptFree(t *testing.T) {
	st := state(t, pnode("big", 8).cpu(128000, 0), pnode("small", 8).cpu(96000, 0))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 8000, Weight: 0.99}, {GPUMilli: 8000, CPUMilli: 120000, Weight: 0.01}}}
	p := mustPlace(t, st, Demand{GPUMilli: 1000, CPUMilli: 8000}, FragAware, Options{Mix: mix, Explain: true})
	if p.NodeNames()[0] != "small" {
		t.Fatalf("1-GPU job on %v, want small: %+v", p.NodeNames(), p.Ranked)
	}
	byName := map[string]Candidate{}
	for _, c := range p.Ranked {
		byName[c.Node] = c
	}
	if big, small := byName["big"], byName["small"]; math.Abs(big.FragDelta-0.07) > 1e-12 || math.Abs(small.FragDelta+0.01) > 1e-12 ||
		math.Abs(big.Scarcity-2*16.0/107) > 1e-12 || small.Scarcity != 0 {
		t.Errorf("big %+v, small %+v", big, small)
	}
	heavy := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 8000, Weight: 0.9}, {GPUMilli: 8000, CPUMilli: 120000, Weight: 0.1}}}
	h := mustPlace(t, st, Demand{GPUMilli: 1000, CPUMilli: 8000}, FragAware, Options{Mix: heavy, Explain: true})
	if h.NodeNames()[0] != "small" {
		t.Fatalf("heavy mix: 1-GPU job on %v, want small", h.NodeNames())
	}
	for _, c := range h.Ranked {
		if want := map[string]float64{"big": 0.7, "small": -0.1}[c.Node]; math.Abs(c.FragDelta-want) > 1e-12 || c.Scarcity != 0 {
			t.Errorf("heavy mix: %+v, want ΔF %g and no scarcity cost", c, want)
		}
	}
}

// ExtensionWeight, worked by hand: 1 up to 10%, 0 from 20%, linear in
// between (15%: half). The CPU-capacity term falls with it: n has 4 GPUs
// and 16 CPUs, all free; the mix: 1 GPU with 8 CPUs 85%, 2 GPUs with 16
// CPUs 7.5% and 1 GPU with 8 CPUs of type Z 7.5% (n is not Z). The GPU
// demand per job is 850 + 150 + 75 = 1075 thousandths, the 2-GPU class's
// 150/1075 ≈ 14.0%: weight (0.2 − 150/1075)/0.1 = 52/86 = 26/43. A CPU-only
// job of 8 CPUs arrives:
//
//	before: the 1-GPU class fits; its GPUs hold 4 jobs, the CPU 2: 2 GPUs
//	starved, 0.85·2000 = 1700 in full. The 2-GPU class: 2 jobs, 1 fed: 1
//	job's 2000 starved, 0.075·2000 = 150 in full. Z: all free, 0.075·4000
//	= 300. F = 300 + (26/43)·1850.
//	after (8 CPUs left): 1-GPU: 3 starved, 0.85·3000 = 2550; 2-GPU: 2 jobs,
//	none fed (8 < 16 CPUs): the class cannot fit, 0.075·4000 = 300 (the
//	fragment, not the term); Z: 300. F = 600 + (26/43)·2550.
//
// ΔF = 300 + (26/43)·700 thousandths ≈ 0.723 GPU (1.0 GPU with the term
// in full, as the measure, Fragmentation, keeps it: 2150 before).
func TestExtensionWeight(t *testing.T) {
	for _, c := range []struct{ share, want float64 }{{0, 1}, {0.088, 1}, {0.1, 1}, {0.15, 0.5}, {0.2, 0}, {0.5, 0}, {14.0 / 15, 0}} {
		if got := ExtensionWeight(c.share); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ExtensionWeight(%g) = %g, want %g", c.share, got, c.want)
		}
	}
	st := state(t, pnode("n", 4).cpu(16000, 0))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 8000, Weight: 0.85}, {GPUMilli: 2000, CPUMilli: 16000, Weight: 0.075},
		{GPUMilli: 1000, CPUMilli: 8000, GPUTypes: []string{"Z"}, Weight: 0.075}}}
	w := ExtensionWeight(mix.MultiGPUShare())
	if math.Abs(w-26.0/43) > 1e-12 {
		t.Fatalf("weight %g, want 26/43", w)
	}
	p := mustPlace(t, st, Demand{CPUMilli: 8000}, FragAware, Options{Mix: mix})
	if want := (300 + 26.0/43*700) / 1000; math.Abs(p.Chosen[0].FragDelta-want) > 1e-12 {
		t.Errorf("ΔF %g, want %g", p.Chosen[0].FragDelta, want)
	}
	// The measure (Fragmentation) keeps the term whole: 300 + 1850 before.
	if frag, _, _ := st.Fragmentation(*mix); math.Abs(frag-2.15) > 1e-12 {
		t.Errorf("fragmentation %g, want 2.15", frag)
	}
}

// The CPU-capacity term. n1 has 4 GPUs and 16 CPUs, n2 4 GPUs and 64
// CPUs, all free; the mix is one class, 1 GPU with 8 CPUs. A CPU-only job
// of 8 CPUs arrives. By hand:
//
//	n1: the free GPUs hold 4 jobs, the free CPU 16/8 = 2: 2 GPUs are
//	    unusable, F = 2000; after the job 8 CPUs hold 1: F = 3000, ΔF = +1 GPU.
//	n2: the CPU holds 8 ≥ 4 jobs before and 7 ≥ 4 after: ΔF = 0.
//
// So frag-aware takes n2. The paper's measure (one job's CPU) sees ΔF = 0
// on both and best fit's tie on CPU would take n1, leaving 3 of its GPUs
// without CPU.
func TestFragCPUCapacity(t *testing.T) {
	st := state(t, pnode("n1", 4).cpu(16000, 0), pnode("n2", 4).cpu(64000, 0))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 8000, Weight: 1}}}
	p := mustPlace(t, st, Demand{CPUMilli: 8000}, FragAware, Options{Mix: mix, Explain: true})
	if p.NodeNames()[0] != "n2" {
		t.Fatalf("CPU job on %v, want n2", p.NodeNames())
	}
	if r := p.Ranked; r[0].FragDelta != 0 || r[1].Node != "n1" || math.Abs(r[1].FragDelta-1) > 1e-12 {
		t.Errorf("ranked %+v", r)
	}
	if frag, free, _ := st.Fragmentation(*mix); frag != 2 || free != 8 {
		t.Errorf("fragmentation %g of %g free, want 2 of 8", frag, free)
	}
	if bf := mustPlace(t, st, Demand{CPUMilli: 8000}, BestFit, Options{}); bf.NodeNames()[0] != "n1" {
		t.Errorf("best-fit on %v, want n1", bf.NodeNames())
	}
}

// Memory is part of the fit: a node without the free memory is rejected
// with its own reason, and assignments take and give back memory.
func TestPlaceMemory(t *testing.T) {
	small, big := pnode("small", 2), pnode("big", 2)
	small.MemMiB, big.MemMiB, big.MemUsed = 1024, 8192, 1024
	st := state(t, small, big)
	d := Demand{GPUMilli: 1000, MemMiB: 2048}
	p := mustPlace(t, st, d, BestFit, Options{})
	if p.NodeNames()[0] != "big" || p.Rejected[ReasonMemory] != 1 || p.Assignments[0].MemMiB != 2048 {
		t.Fatalf("placement %+v", p)
	}
	st.Assign(p.Assignments[0])
	if n := st.Node(1); n.MemUsed != 3072 {
		t.Errorf("big uses %d MiB, want 3072", n.MemUsed)
	}
	st.Release(p.Assignments[0])
	if n := st.Node(1); n.MemUsed != 1024 {
		t.Errorf("big uses %d MiB after release, want 1024", n.MemUsed)
	}
	if err := (Demand{MemMiB: -1}).Validate(); err == nil {
		t.Error("negative memory validated")
	}
}

// Memoize changes no decision: 400 jobs of the openb shapes placed one
// after another on the openb-sized cluster, with and without the memo,
// the mix changing half way, under frag-aware and under the FGD baseline.
func TestMemoizeSameDecisions(t *testing.T) {
	for _, pol := range []Policy{FragAware, FGD} {
		t.Run(string(pol), func(t *testing.T) { memoizeSameDecisions(t, pol) })
	}
}

func memoizeSameDecisions(t *testing.T, pol Policy) {
	plain, memo := openbLike(t, 3), openbLike(t, 3)
	memo.Memoize()
	mix, other := openbMix(), openbMix()
	other.Classes = other.Classes[:10]
	rng := rand.New(rand.NewPCG(5, 5))
	shapes := []Demand{{GPUMilli: 1000, CPUMilli: 8000}, {GPUMilli: 500, CPUMilli: 4000}, {GPUMilli: 250, CPUMilli: 2000},
		{CPUMilli: 4000}, {GPUMilli: 2000, CPUMilli: 16000}, {GPUMilli: 1000, CPUMilli: 4000, GPUTypes: []string{"T4"}}}
	for k := range 400 {
		d := shapes[rng.IntN(len(shapes))]
		m := mix
		if k >= 200 {
			m = other
		}
		a, err1 := Place(plain, d, pol, Options{Mix: m})
		b, err2 := Place(memo, d, pol, Options{Mix: m})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(a.NodeNames(), b.NodeNames()) || a.OK() && !slices.Equal(a.Assignments[0].GPUs, b.Assignments[0].GPUs) {
			t.Fatalf("job %d (%s): %v without the memo, %v with", k, d, a.NodeNames(), b.NodeNames())
		}
		for _, x := range a.Assignments {
			plain.Assign(x)
		}
		for _, x := range b.Assignments {
			memo.Assign(x)
		}
	}
}

// The extensions' weight reads the workload's own multi-GPU share, not the
// prior's. A prior of 20 pseudo-jobs of 1, 2, 4 and 8 GPUs (5 each) blended
// with 30 one-GPU jobs: the blended mix's GPU demand is 35·1 + 5·2 + 5·4 +
// 5·8 = 105, 70 of it multi-GPU (2/3: no extensions by the blended share);
// the 30 jobs' own share is 0, so the extensions count in full. Without
// any job the prior's share is what there is: (2 + 4 + 8)/15 = 14/15.
func TestWorkloadMultiGPUShare(t *testing.T) {
	prior := Mix{Classes: []MixClass{{GPUMilli: 1000, Weight: 0.25}, {GPUMilli: 2000, Weight: 0.25}, {GPUMilli: 4000, Weight: 0.25}, {GPUMilli: 8000, Weight: 0.25}}, Source: "prior"}
	var jobs []Demand
	for range 30 {
		jobs = append(jobs, Demand{GPUMilli: 1000})
	}
	m := LearnMix(jobs, prior, MixOptions{PriorJobs: 20})
	if got := m.MultiGPUShare(); math.Abs(got-70.0/105) > 1e-9 {
		t.Errorf("blended share %v, want 70/105", got)
	}
	if m.Observed != 30 || m.WorkloadMultiGPUShare() != 0 || ExtensionWeight(m.WorkloadMultiGPUShare()) != 1 {
		t.Errorf("observed %d, workload share %v: want 30 jobs, 0, the extensions in full", m.Observed, m.WorkloadMultiGPUShare())
	}
	// Ten of them 4-GPU instead: 40 of the jobs' 60 GPUs (2/3).
	for i := range 10 {
		jobs[i] = Demand{GPUMilli: 4000}
	}
	if got := LearnMix(jobs, prior, MixOptions{PriorJobs: 20}).WorkloadMultiGPUShare(); math.Abs(got-40.0/60) > 1e-9 {
		t.Errorf("workload share %v, want 40/60", got)
	}
	none := LearnMix(nil, prior, MixOptions{PriorJobs: 20})
	if none.Observed != 0 || math.Abs(none.WorkloadMultiGPUShare()-14.0/15) > 1e-9 {
		t.Errorf("no jobs: observed %d, share %v, want 0 and 14/15", none.Observed, none.WorkloadMultiGPUShare())
	}
}
