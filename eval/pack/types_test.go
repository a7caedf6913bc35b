package pack

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// typeNodes: model X 1 GPU, Y 4 GPUs on one node, Z 16 GPUs on two nodes
// of 8: square roots 1, 2 and 4, drawing weights 1/7, 2/7 and 4/7.
func typeNodes(t *testing.T) *placement.State {
	n := func(name, model string, g int) placement.Node {
		nd := pnode(name, g)
		nd.GPUType = model
		return nd
	}
	return state(t, n("x1", "X", 1), n("y1", "Y", 4), n("z1", "Z", 8), n("z2", "Z", 8))
}

func TestTypeModelWeights(t *testing.T) {
	ms := TypeModelWeights(typeNodes(t))
	want := []struct {
		model     string
		gpus, max int
		w         float64
	}{{"Z", 16, 8, 4.0 / 7}, {"Y", 4, 4, 2.0 / 7}, {"X", 1, 1, 1.0 / 7}}
	if len(ms) != len(want) {
		t.Fatalf("%+v", ms)
	}
	for i, w := range want {
		if m := ms[i]; m.Model != w.model || m.GPUs != w.gpus || m.MaxNode != w.max || math.Abs(m.Weight-w.w) > 1e-12 {
			t.Errorf("model %d: %+v, want %+v", i, m, w)
		}
	}
}

// The generator's documented rules, counted over 20,000 1-GPU pods, 2,000
// 8-GPU pods, 1,000 CPU-only pods and 10 pods already constrained, half
// of the GPU pods to be constrained.
func TestConstrainTypes(t *testing.T) {
	st := typeNodes(t)
	var pods []Pod
	add := func(n int, d placement.Demand) {
		for range n {
			pods = append(pods, Pod{Name: fmt.Sprint(len(pods)), Demand: d})
		}
	}
	add(20000, gpus(1))
	add(2000, gpus(8))
	add(1000, placement.Demand{CPUMilli: 1000})
	add(10, placement.Demand{GPUMilli: 1000, GPUTypes: []string{"X"}})
	out := ConstrainTypes(pods, st, 0.5, 3)
	if again := ConstrainTypes(pods, st, 0.5, 3); !slices.EqualFunc(out, again, func(a, b Pod) bool {
		return slices.Equal(a.Demand.GPUTypes, b.Demand.GPUTypes)
	}) {
		t.Error("the same seed drew different constraints")
	}
	constrained, sizes := 0, [4]int{}
	single := map[string]int{}
	pairs := map[string]int{}
	for i, p := range out {
		orig := pods[i].Demand
		types := p.Demand.GPUTypes
		switch {
		case orig.GPUMilli == 0:
			if len(types) > 0 {
				t.Fatalf("CPU-only pod constrained: %+v", p)
			}
			continue
		case len(orig.GPUTypes) > 0:
			if !slices.Equal(types, orig.GPUTypes) {
				t.Fatalf("a constrained pod's constraint changed: %+v", p)
			}
			continue
		case len(types) == 0:
			continue
		}
		if len(pods[i].Demand.GPUTypes) != 0 {
			t.Fatal("the input was changed")
		}
		constrained++
		if orig.WholeGPUs() == 8 {
			if !slices.Equal(types, []string{"Z"}) {
				t.Fatalf("8-GPU pod constrained to %v; only Z has 8-GPU nodes", types)
			}
			continue
		}
		sizes[len(types)]++
		switch len(types) {
		case 1:
			single[types[0]]++
		case 2:
			pairs[strings.Join(types, "|")]++
		}
	}
	// Exactly round(0.5 × 22,000) of the unconstrained GPU pods.
	if constrained != 11000 {
		t.Errorf("%d pods constrained, want 11000", constrained)
	}
	n1 := float64(sizes[1] + sizes[2] + sizes[3])
	for k, p := range TypeConstraintSizes {
		if got := float64(sizes[k+1]) / n1; math.Abs(got-p) > 0.03 {
			t.Errorf("constraints of %d models: %.3f, want %.1f", k+1, got, p)
		}
	}
	// Single models: the weights 4/7, 2/7, 1/7. Pairs (drawn without
	// replacement): Y|Z 4/7·2/3 + 2/7·4/5 = 64/105, X|Z 4/7·1/3 + 1/7·4/6 =
	// 30/105, X|Y 2/7·1/5 + 1/7·2/6 = 11/105.
	for m, p := range map[string]float64{"Z": 4.0 / 7, "Y": 2.0 / 7, "X": 1.0 / 7} {
		if got := float64(single[m]) / float64(sizes[1]); math.Abs(got-p) > 0.03 {
			t.Errorf("single constraints to %s: %.3f, want %.3f", m, got, p)
		}
	}
	for m, p := range map[string]float64{"Y|Z": 64.0 / 105, "X|Z": 30.0 / 105, "X|Y": 11.0 / 105} {
		if got := float64(pairs[m]) / float64(sizes[2]); math.Abs(got-p) > 0.04 {
			t.Errorf("pair constraints %s: %.3f, want %.3f", m, got, p)
		}
	}
	if none := ConstrainTypes(pods, st, 0, 3); !slices.EqualFunc(none, pods, func(a, b Pod) bool { return slices.Equal(a.Demand.GPUTypes, b.Demand.GPUTypes) }) {
		t.Error("share 0 constrained pods")
	}
}
