package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// openbLike builds a 1,213-node cluster with the openb GPU node mix (README
// of the shared trace: G2×8 on 549 nodes, T4×2 on 387, P100×2 on 131, G3×8
// on 39, V100M16×4 on 28, V100M32×8 on 21, V100M16×1 on 19, T4×4 on 17,
// V100M32×4 on 9, V100M16×8 on 8, P100×1 on 3, A10×1 on 2), about half of
// its GPU capacity in use, partly by GPU-sharing pods (seeded).
func openbLike(tb testing.TB, seed uint64) *State {
	groups := []struct {
		model string
		gpus  int
		nodes int
	}{{"G2", 8, 549}, {"T4", 2, 387}, {"P100", 2, 131}, {"G3", 8, 39}, {"V100M16", 4, 28}, {"V100M32", 8, 21},
		{"V100M16", 1, 19}, {"T4", 4, 17}, {"V100M32", 4, 9}, {"V100M16", 8, 8}, {"P100", 1, 3}, {"A10", 1, 2}}
	rng := rand.New(rand.NewPCG(seed, 8))
	var nodes []Node
	for _, g := range groups {
		for range g.nodes {
			n := Node{Name: fmt.Sprintf("node-%04d", len(nodes)), GPUType: g.model, Schedulable: true,
				CPUMilli: 96000, CPUUsed: rng.IntN(48) * 1000, GPUFree: make([]int, g.gpus)}
			for i := range n.GPUFree {
				switch r := rng.Float64(); {
				case r < 0.4:
					n.GPUFree[i] = 0
				case r < 0.55:
					n.GPUFree[i] = 1000 - 250*(1+rng.IntN(3))
				default:
					n.GPUFree[i] = 1000
				}
			}
			nodes = append(nodes, n)
		}
	}
	st, err := NewState(nodes)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// openbMix is a 20-class mix shaped like openb's: mostly one GPU or a share of one.
func openbMix() *Mix {
	m := &Mix{Source: "bench"}
	add := func(milli, cpu int, w float64, types ...string) {
		m.Classes = append(m.Classes, MixClass{GPUMilli: milli, CPUMilli: cpu, GPUTypes: types, Weight: w})
	}
	add(1000, 8000, 0.30)
	add(500, 4000, 0.12)
	add(250, 2000, 0.08)
	add(100, 1000, 0.06)
	add(750, 6000, 0.04)
	add(0, 4000, 0.12)
	add(2000, 16000, 0.02)
	add(4000, 32000, 0.02)
	add(8000, 64000, 0.02)
	for i, t := range []string{"G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10"} {
		add(1000, 4000, 0.02, t)
		add(500*(1+i%2), 2000, 0.01, t)
	}
	add(1000, 12000, 0.05)
	sum := 0.0
	for _, c := range m.Classes {
		sum += c.Weight
	}
	for i := range m.Classes {
		m.Classes[i].Weight /= sum
	}
	return m
}

// BenchmarkPlace1213 is one placement decision on the openb-sized cluster
// (1,213 nodes, 6,212 GPUs): a 1-GPU, a half-GPU, a CPU-only and a
// type-constrained job, each policy, without the memo of replays (the mix
// has type-constrained classes, so frag-aware measures the scarcity too).
func BenchmarkPlace1213(b *testing.B) {
	st := openbLike(b, 1)
	mix := openbMix()
	for _, pol := range Policies {
		for _, d := range []Demand{{GPUMilli: 1000, CPUMilli: 8000}, {GPUMilli: 500, CPUMilli: 4000}, {CPUMilli: 4000},
			{GPUMilli: 1000, CPUMilli: 4000, GPUTypes: []string{"T4", "P100"}}} {
			b.Run(fmt.Sprintf("%s/%s", pol, d), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p, err := Place(st, d, pol, Options{Mix: mix})
					if err != nil || !p.OK() {
						b.Fatal(err, p.Reason)
					}
				}
			})
		}
	}
}
