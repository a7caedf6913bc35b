package pack

import (
	"math/rand/v2"
	"slices"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// Multi-GPU-heavy workloads. The openb lists in which pods asking for
// several whole GPUs carry a large share of the GPU demand (multigpu20–50)
// are kept back as an evaluation set, so pack-eval makes its own from any
// pod list: MultiGPU re-draws single-GPU pods as 2-, 4- and 8-GPU pods
// until they carry a stated share of the GPU demand. The rules, fixed and
// documented so that the tests and the results can check them:
//
//   - the GPU demand of a list is the sum over its pods of their GPUs (a
//     share of one GPU counts as that share); the multi-GPU share is the
//     part of it asked for by pods of 2 or more whole GPUs (MultiGPUShare);
//   - the pods re-drawn are pods asking for exactly one whole GPU and no
//     GPU type, taken in an order drawn uniformly at random (a shuffle);
//     pods sharing a GPU, CPU-only pods, type-constrained pods and the
//     list's own multi-GPU pods are never changed, and none is removed;
//   - each pod taken becomes a pod of k GPUs, k drawn as 2, 4 or 8 with
//     probabilities 0.2, 0.2 and 0.6 (MultiGPUSizes: the proportions of the
//     default list's own multi-GPU pods, 16, 15 and 44 of 75), and asks for
//     k times the CPU and memory of the pod it replaces (per GPU as that
//     pod); its name, arrival and runtime stay;
//   - only sizes that some node could hold are drawn (a node with at least
//     k GPUs, and CPU and memory capacity for the k-fold demand where the
//     node has them), the probabilities renormalised over those; a pod no
//     size fits is passed over and stays as it was;
//   - pods are re-drawn one after another until the multi-GPU share is at
//     least the share asked for (a list already there is returned as it
//     is), or no pod is left to take.

// MultiGPUSizes are the GPU counts of re-drawn pods with their
// probabilities.
var MultiGPUSizes = []struct {
	GPUs int
	P    float64
}{{2, 0.2}, {4, 0.2}, {8, 0.6}}

// MultiGPUShares are the shares of GPU demand docs/results/packing.md
// replays, as the held-out multigpu20–50 lists are named.
var MultiGPUShares = []float64{0.2, 0.3, 0.4, 0.5}

// MultiGPUShare is the share of the pods' GPU demand that pods asking for
// 2 or more whole GPUs carry (0 when no pod asks for a GPU).
func MultiGPUShare(pods []Pod) float64 {
	total, multi := multiGPUDemand(pods)
	if total == 0 {
		return 0
	}
	return float64(multi) / float64(total)
}

// multiGPUDemand is the pods' GPU demand and the multi-GPU pods' part of
// it, in thousandths of a GPU.
func multiGPUDemand(pods []Pod) (total, multi int) {
	for _, p := range pods {
		total += p.Demand.GPUMilli
		if p.Demand.WholeGPUs() >= 2 {
			multi += p.Demand.GPUMilli
		}
	}
	return total, multi
}

// MultiGPU returns a copy of the pods in which single-GPU pods are re-drawn
// as multi-GPU pods under the rules above until those carry at least share
// of the GPU demand, drawn with the seed; st is the cluster whose nodes
// decide which sizes a pod may take. The pods given are not changed.
func MultiGPU(pods []Pod, st *placement.State, share float64, seed uint64) []Pod {
	out := slices.Clone(pods)
	total, multi := multiGPUDemand(out)
	if share <= 0 || total == 0 || float64(multi) >= share*float64(total) {
		return out
	}
	type cap3 struct{ gpus, cpu, mem int }
	var caps []cap3
	for i := range st.Len() {
		n := st.Node(i)
		c := cap3{len(n.GPUFree), n.CPUMilli, n.MemMiB}
		if c.gpus >= 2 && !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	holds := func(d placement.Demand) bool {
		for _, c := range caps {
			if c.gpus*placement.MilliGPU >= d.GPUMilli && (c.cpu == 0 || c.cpu >= d.CPUMilli) && (c.mem == 0 || c.mem >= d.MemMiB) {
				return true
			}
		}
		return false
	}
	var single []int
	for i, p := range out {
		if p.Demand.GPUMilli == placement.MilliGPU && len(p.Demand.GPUTypes) == 0 {
			single = append(single, i)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d756c74))
	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	for _, i := range single {
		if float64(multi) >= share*float64(total) {
			break
		}
		d := out[i].Demand
		var sizes []placement.Demand
		var w []float64
		for _, s := range MultiGPUSizes {
			k := placement.Demand{GPUMilli: s.GPUs * placement.MilliGPU, CPUMilli: s.GPUs * d.CPUMilli, MemMiB: s.GPUs * d.MemMiB,
				Nodes: d.Nodes}
			if holds(k) {
				sizes = append(sizes, k)
				w = append(w, s.P)
			}
		}
		if len(sizes) == 0 {
			continue
		}
		k := sizes[drawIndex(rng, w)]
		total += k.GPUMilli - d.GPUMilli
		multi += k.GPUMilli
		out[i].Demand = k
	}
	return out
}
