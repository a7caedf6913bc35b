package placement

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A scarce GPU model kept free for the job that needs it. Nodes: a (model
// X, 1 GPU) and b (model Y, 2 GPUs); the mix: 1 GPU of any model 50%, 2
// GPUs of any model 20%, 1 GPU of X only 30%. An unconstrained 1-GPU job
// arrives. Worked by hand:
//
//	a: before, the 2-GPU class cannot fit (1 GPU): F = 0.2·1000 = 200;
//	   after, nothing is free: F = 0. ΔF = −200 (−0.2 GPU).
//	b: before, the X class is not allowed: F = 0.3·2000 = 600; after (one
//	   GPU left) the 2-GPU class cannot fit and X still not allowed:
//	   F = 0.2·1000 + 0.3·1000 = 500. ΔF = −100 (−0.1 GPU).
//
// FGD's gradient alone (and best-fit, which leaves a full) take a, and
// the X job that follows finds nothing. Scarcity: the GPU demand per job
// is 0.5·1000 + 0.2·2000 + 0.3·1000 = 1200 thousandths and 3 GPUs are
// free. The X class (held by a only) asks 300/1200 = ¼ of it: 0.75 GPU of
// a's 1 free, pressure 0.75. The 2-GPU class (held by b only: a has one
// GPU) asks 400/1200 = ⅓: 1 GPU of b's 2, pressure 0.5. Taking a's GPU
// costs ScarcityWeight·0.75 = 1.5 GPU, one of b's 2·0.5 = 1: a scores
// −0.2 + 1.5 = 1.3, b −0.1 + 1 = 0.9. The job goes to b, and the X job
// then fits on a.
func TestScarceModelKeptFree(t *testing.T) {
	st := state(t, pnode("a", 1).typ("X"), pnode("b", 2).typ("Y"))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, Weight: 0.5}, {GPUMilli: 2000, Weight: 0.2}, {GPUMilli: 1000, GPUTypes: []string{"X"}, Weight: 0.3}}}
	if got := st.Scarcity(*mix); len(got) != 2 || math.Abs(got["a"]-0.75) > 1e-12 || math.Abs(got["b"]-0.5) > 1e-12 {
		t.Fatalf("scarcity %v, want a 0.75, b 0.5", got)
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
	if math.Abs(a.FragDelta+0.2) > 1e-12 || math.Abs(b.FragDelta+0.1) > 1e-12 || math.Abs(a.Scarcity-1.5) > 1e-12 || math.Abs(b.Scarcity-1) > 1e-12 {
		t.Errorf("a %+v, b %+v; want ΔF −0.2 / −0.1, scarcity 1.5 / 1", a, b)
	}
	if want := "1 GPU on b by frag-aware among 2 candidate nodes (fragmentation -0.10 GPUs, scarcity +1.00 GPUs, 1 GPUs left free)"; p.Reason != want {
		t.Errorf("reason %q, want %q", p.Reason, want)
	}
	if bf := mustPlace(t, st, gpus(1), BestFit, Options{}); bf.NodeNames()[0] != "a" {
		t.Errorf("best-fit on %v, want a (the trap)", bf.NodeNames())
	}
	st.Assign(p.Assignments[0])
	x := mustPlace(t, st, Demand{GPUMilli: 1000, GPUTypes: []string{"X"}}, FragAware, Options{Mix: mix})
	if !x.OK() || x.NodeNames()[0] != "a" {
		t.Errorf("the X job: %s", x.Reason)
	}
}

// The nodes big enough for the largest jobs kept for them. big has 8 GPUs
// and 128 CPUs, small 8 GPUs and 96 CPUs; the mix: 1 GPU with 8 CPUs 90%,
// 8 GPUs with 120 CPUs 10% (only big can ever hold those). A 1-GPU job
// with 8 CPUs arrives. By hand:
//
//	big: before, both classes fit (F = 0); after, 7 whole GPUs are left
//	     and the 8-GPU class no longer fits: F = 0.1·7000, ΔF = +0.7 GPU.
//	small: the 8-GPU class never fits (120 CPUs > 96): F = 0.1·8000
//	     before, 0.1·7000 after, ΔF = −0.1 GPU.
//
// Scarcity: the GPU demand per job is 0.9·1000 + 0.1·8000 = 1700
// thousandths; the 8-GPU class asks 800/1700 = 8/17 of it, of 16 free
// GPUs: 128/17 GPUs, all on big's 8 — pressure 16/17, a cost of 2·16/17
// GPU for big's GPU. big scores 0.7 + 32/17, small −0.1: the job goes to
// small and big stays whole (the gradient alone already prefers small
// here; the scarcity cost adds to it).
func TestBigNodeKeptFree(t *testing.T) {
	st := state(t, pnode("big", 8).cpu(128000, 0), pnode("small", 8).cpu(96000, 0))
	mix := &Mix{Classes: []MixClass{{GPUMilli: 1000, CPUMilli: 8000, Weight: 0.9}, {GPUMilli: 8000, CPUMilli: 120000, Weight: 0.1}}}
	p := mustPlace(t, st, Demand{GPUMilli: 1000, CPUMilli: 8000}, FragAware, Options{Mix: mix, Explain: true})
	if p.NodeNames()[0] != "small" {
		t.Fatalf("1-GPU job on %v, want small: %+v", p.NodeNames(), p.Ranked)
	}
	byName := map[string]Candidate{}
	for _, c := range p.Ranked {
		byName[c.Node] = c
	}
	if big, small := byName["big"], byName["small"]; math.Abs(big.FragDelta-0.7) > 1e-12 || math.Abs(small.FragDelta+0.1) > 1e-12 ||
		math.Abs(big.Scarcity-2*16.0/17) > 1e-12 || small.Scarcity != 0 {
		t.Errorf("big %+v, small %+v", big, small)
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
