package pack

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// Type-constrained workloads. The openb lists whose pods name the GPU
// models they accept (gpuspec) are kept back as an evaluation set, so
// pack-eval makes its own from any pod list: ConstrainTypes gives a share
// of the GPU pods a constraint to one or a few of the GPU models of the
// node list. The rules, fixed and documented so that the tests and the
// results can check them:
//
//   - exactly round(share × GPU pods) GPU pods, drawn uniformly without
//     replacement, get a constraint; CPU-only pods never do, and a pod that
//     already has one keeps it;
//   - a constraint names 1 model with probability 0.6, 2 with 0.3, 3 with
//     0.1 (TypeConstraintSizes; fewer when fewer models can hold the pod);
//   - a model can hold a pod when one of its nodes has at least the pod's
//     GPUs; models are drawn without replacement with weight proportional
//     to the square root of their GPU capacity in the node list
//     (TypeModelWeights). In proportion to capacity, 71% of openb's
//     constraints would name G2, which holds most of the GPUs, and bind
//     nothing; uniformly, the 2 A10 GPUs would be asked for as often as the
//     4,392 G2s and nothing could satisfy that. The square root asks for the
//     scarce models beyond their share — the case a placement must keep
//     them free for — while the common ones still get most constraints.

// DefaultTypeShare is the share of GPU pods ConstrainTypes constrains by
// default: between the held-out gpuspec20 and gpuspec25 lists' 17.7% and
// 21.6% of all pods (their share of GPU pods is higher), and at the upper
// end of what the publishers sampled.
const DefaultTypeShare = 0.25

// TypeConstraintSizes are the probabilities that a constraint names 1, 2
// or 3 models.
var TypeConstraintSizes = []float64{0.6, 0.3, 0.1}

// TypeModel is one GPU model of a node list as ConstrainTypes sees it.
type TypeModel struct {
	Model    string  // GPU model
	GPUs     int     // GPUs of that model in all
	MaxNode  int     // most GPUs of that model on one node
	Weight   float64 // chance of being drawn first: √GPUs / Σ √GPUs
	Eligible func(placement.Demand) bool
}

// TypeModelWeights lists the GPU models of a state with their capacity and
// drawing weight (see ConstrainTypes), heaviest first.
func TypeModelWeights(st *placement.State) []TypeModel {
	byModel := map[string]*TypeModel{}
	var order []string
	for i := range st.Len() {
		n := st.Node(i)
		if len(n.GPUFree) == 0 || n.GPUType == "" {
			continue
		}
		m := byModel[n.GPUType]
		if m == nil {
			m = &TypeModel{Model: n.GPUType}
			byModel[n.GPUType] = m
			order = append(order, n.GPUType)
		}
		m.GPUs += len(n.GPUFree)
		m.MaxNode = max(m.MaxNode, len(n.GPUFree))
	}
	sum := 0.0
	for _, m := range byModel {
		sum += math.Sqrt(float64(m.GPUs))
	}
	out := make([]TypeModel, 0, len(order))
	for _, name := range order {
		m := *byModel[name]
		m.Weight = math.Sqrt(float64(m.GPUs)) / sum
		maxNode := m.MaxNode
		m.Eligible = func(d placement.Demand) bool { return d.WholeGPUs() <= maxNode }
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b TypeModel) int {
		switch {
		case a.Weight > b.Weight:
			return -1
		case a.Weight < b.Weight:
			return 1
		}
		return 0
	})
	return out
}

// ConstrainTypes returns a copy of the pods with GPU-type constraints
// added to a share of the GPU pods under the rules above, drawn with the
// seed. The pods given are not changed.
func ConstrainTypes(pods []Pod, st *placement.State, share float64, seed uint64) []Pod {
	out := slices.Clone(pods)
	models := TypeModelWeights(st)
	if share <= 0 || len(models) == 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 0x74797065))
	var gpuPods []int
	for i, p := range out {
		if p.Demand.GPUMilli > 0 && len(p.Demand.GPUTypes) == 0 {
			gpuPods = append(gpuPods, i)
		}
	}
	k := int(math.Round(min(share, 1) * float64(len(gpuPods))))
	rng.Shuffle(len(gpuPods), func(i, j int) { gpuPods[i], gpuPods[j] = gpuPods[j], gpuPods[i] })
	for _, i := range gpuPods[:k] {
		d := out[i].Demand
		var cand []TypeModel
		for _, m := range models {
			if m.Eligible(d) {
				cand = append(cand, m)
			}
		}
		size := drawIndex(rng, TypeConstraintSizes) + 1
		var types []string
		for len(types) < size && len(cand) > 0 {
			w := make([]float64, len(cand))
			for j, m := range cand {
				w[j] = m.Weight
			}
			j := drawIndex(rng, w)
			types = append(types, cand[j].Model)
			cand = slices.Delete(cand, j, j+1)
		}
		slices.Sort(types)
		d.GPUTypes = types
		out[i].Demand = d
	}
	return out
}

// drawIndex draws an index with probability proportional to its weight.
func drawIndex(rng *rand.Rand, w []float64) int {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	r := rng.Float64() * sum
	for i, x := range w {
		if r < x {
			return i
		}
		r -= x
	}
	return len(w) - 1
}
