package pack

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// mnode is a node with g free GPUs, cpu thousandths of CPU and mem MiB.
func mnode(name string, g, cpu, mem int) placement.Node {
	n := pnode(name, g)
	n.CPUMilli, n.MemMiB = cpu, mem
	return n
}

// addPods appends n pods of the demand, named by their index.
func addPods(pods []Pod, n int, d placement.Demand) []Pod {
	for range n {
		pods = append(pods, Pod{Name: fmt.Sprint(len(pods)), Demand: d})
	}
	return pods
}

// The share and the stopping rule, by hand. Ten 1-GPU pods (4 CPUs, 1,000
// MiB), one half-GPU pod, one CPU-only pod, one 1-GPU pod constrained to
// model X and one 4-GPU pod: GPU demand 10 + 0.5 + 1 + 4 = 15.5 GPUs, of
// which the 4-GPU pod's 4: 4/15.5 = 25.8%.
//
// The nodes have 2 GPUs each, so a re-drawn pod can only take 2 GPUs (4
// and 8 fit no node): each adds 1 GPU to the demand and 2 to the multi-GPU
// part. After n re-draws the share is (4 + 2n)/(15.5 + n): 8/17.5 = 45.7%
// for n = 2, 10/18.5 = 54.1% for n = 3. So a 50% share re-draws exactly
// 3 of the ten plain 1-GPU pods (never the shared, CPU-only, constrained
// or 4-GPU pod), as 2 GPUs with 8 CPUs and 2,000 MiB; 20% re-draws none.
func TestMultiGPUShareByHand(t *testing.T) {
	st := state(t, mnode("a", 2, 100000, 100000), mnode("b", 2, 100000, 100000))
	one := placement.Demand{GPUMilli: 1000, CPUMilli: 4000, MemMiB: 1000}
	pods := addPods(nil, 10, one)
	pods = addPods(pods, 1, placement.Demand{GPUMilli: 500, CPUMilli: 2000})
	pods = addPods(pods, 1, placement.Demand{CPUMilli: 1000})
	pods = addPods(pods, 1, placement.Demand{GPUMilli: 1000, GPUTypes: []string{"X"}})
	pods = addPods(pods, 1, placement.Demand{GPUMilli: 4000, CPUMilli: 32000})
	orig := slices.Clone(pods)
	if got := MultiGPUShare(pods); math.Abs(got-4/15.5) > 1e-12 {
		t.Errorf("share %g, want 4/15.5", got)
	}
	if out := MultiGPU(pods, st, 0.2, 1); !slices.EqualFunc(out, pods, samePod) {
		t.Error("a 20% share changed a list already at 25.8%")
	}
	two := placement.Demand{GPUMilli: 2000, CPUMilli: 8000, MemMiB: 2000}
	for seed := uint64(1); seed <= 20; seed++ {
		out := MultiGPU(pods, st, 0.5, seed)
		if !slices.EqualFunc(pods, orig, samePod) {
			t.Fatal("the input was changed")
		}
		redrawn := 0
		for i, p := range out {
			switch {
			case p.Name != pods[i].Name:
				t.Fatalf("seed %d: pod %d renamed %q", seed, i, p.Name)
			case samePod(p, pods[i]):
			case i < 10 && sameDemand(p.Demand, two):
				redrawn++
			default:
				t.Fatalf("seed %d: pod %d %v became %v", seed, i, pods[i].Demand, p.Demand)
			}
		}
		if redrawn != 3 || math.Abs(MultiGPUShare(out)-10/18.5) > 1e-12 {
			t.Errorf("seed %d: %d pods re-drawn, share %g; want 3, 10/18.5", seed, redrawn, MultiGPUShare(out))
		}
		if again := MultiGPU(pods, st, 0.5, seed); !slices.EqualFunc(out, again, samePod) {
			t.Errorf("seed %d drew differently twice", seed)
		}
	}
	if MultiGPUShare([]Pod{{Demand: placement.Demand{CPUMilli: 1000}}}) != 0 {
		t.Error("share of a list without GPUs")
	}
}

// The sizes a pod may take, by hand. Nodes: "big", 8 GPUs with 40 CPUs;
// "small", 2 GPUs with 100 CPUs (memory ample). A 1-GPU pod asking for
//
//	10 CPUs may take 2 (20 CPUs) or 4 (40 CPUs, on big), not 8 (80 > 40):
//	   probabilities 0.2 and 0.2 renormalised, ½ and ½;
//	30 CPUs may take 2 only (60 CPUs, on small; 4 would need 120);
//	60 CPUs may take none (2 would need 120): never re-drawn.
//
// A share of 1 re-draws every pod that may be re-drawn.
func TestMultiGPUSizesThatFit(t *testing.T) {
	st := state(t, mnode("big", 8, 40000, 1<<20), mnode("small", 2, 100000, 1<<20))
	pods := addPods(nil, 3000, placement.Demand{GPUMilli: 1000, CPUMilli: 10000, MemMiB: 100})
	pods = addPods(pods, 1000, placement.Demand{GPUMilli: 1000, CPUMilli: 30000, MemMiB: 100})
	pods = addPods(pods, 500, placement.Demand{GPUMilli: 1000, CPUMilli: 60000, MemMiB: 100})
	out := MultiGPU(pods, st, 1, 7)
	size := map[int]int{}
	for i, p := range out {
		k := p.Demand.GPUMilli / 1000
		switch {
		case i < 3000:
			if k != 2 && k != 4 || p.Demand.CPUMilli != k*10000 || p.Demand.MemMiB != k*100 {
				t.Fatalf("pod %d (10 CPUs) became %v", i, p.Demand)
			}
			size[k]++
		case i < 4000:
			if !sameDemand(p.Demand, placement.Demand{GPUMilli: 2000, CPUMilli: 60000, MemMiB: 200}) {
				t.Fatalf("pod %d (30 CPUs) became %v", i, p.Demand)
			}
		default:
			if !samePod(p, pods[i]) {
				t.Fatalf("pod %d (60 CPUs) became %v", i, p.Demand)
			}
		}
	}
	if f := float64(size[2]) / 3000; math.Abs(f-0.5) > 0.03 {
		t.Errorf("2-GPU share among the 10-CPU pods %.3f, want ½", f)
	}
}

// The split among sizes where every size fits: 0.2, 0.2, 0.6 over 20,000
// re-drawn pods (a share of 1 re-draws them all), each k times its pod's
// CPU and memory. A 50% share stops
// at the first re-draw that reaches it: with n pods re-drawn as k_i GPUs,
// multi = Σk_i and demand = 20,000 − n + Σk_i GPUs, so the share is at
// least ½ exactly when Σ(k_i + 1) ≥ 20,000, and one re-draw adds at most
// 9 to that sum.
func TestMultiGPUSplit(t *testing.T) {
	st := state(t, mnode("n", 8, 1<<30, 1<<30))
	pods := addPods(nil, 20000, placement.Demand{GPUMilli: 1000, CPUMilli: 3000, MemMiB: 500})
	out := MultiGPU(pods, st, 1, 11)
	count := map[int]int{}
	for _, p := range out {
		k := p.Demand.GPUMilli / 1000
		if p.Demand.CPUMilli != 3000*k || p.Demand.MemMiB != 500*k {
			t.Fatalf("%v", p.Demand)
		}
		count[k]++
	}
	if count[1] != 0 {
		t.Errorf("%d pods left as they were under a share of 1", count[1])
	}
	for _, s := range MultiGPUSizes {
		if f := float64(count[s.GPUs]) / 20000; math.Abs(f-s.P) > 0.015 {
			t.Errorf("%d GPUs: %.3f, want %.1f", s.GPUs, f, s.P)
		}
	}
	half := MultiGPU(pods, st, 0.5, 11)
	sum := 0
	for _, p := range half {
		if k := p.Demand.GPUMilli / 1000; k > 1 {
			sum += k + 1
		}
	}
	if sum < 20000 || sum >= 20000+9 || MultiGPUShare(half) < 0.5 {
		t.Errorf("Σ(k+1) = %d, share %g: want the first re-draw reaching 20,000", sum, MultiGPUShare(half))
	}
	if none := MultiGPU(pods, st, 0, 11); !slices.EqualFunc(none, pods, samePod) {
		t.Error("share 0 changed pods")
	}
}

// Evaluate re-draws per seed, reports the first seed's list, and takes the
// FGD baseline.
func TestEvaluateMultiGPU(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	for i := range 12 {
		fmt.Fprintf(&csv, "p%d,4000,1024,1,1000,,LS,Running,%d,100000,%d\n", i, i, i)
	}
	nodes := writeTemp(t, "nodes.csv", packNodesCSV)
	spec := Spec{Nodes: nodes, Pods: []string{writeTemp(t, "openb_pod_list_x.csv", csv.String())},
		Policies: []placement.Policy{placement.FragAware, placement.FGD}, Mode: Fill, Until: 1, Points: 2,
		Order: "shuffled", Seeds: 2, FirstSeed: 5, MultiGPU: 0.5}
	rep, err := Evaluate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := LoadNodes(nodes)
	if err != nil {
		t.Fatal(err)
	}
	pods, _, err := LoadPods(spec.Pods[0], false)
	if err != nil {
		t.Fatal(err)
	}
	want := MultiGPU(pods, st, 0.5, 5)
	pl := rep.Lists[0]
	if pl.MultiGPU != MultiGPUShare(want) || pl.MultiGPU < 0.5 || pl.Multi == 0 || rep.MultiGPU != 0.5 ||
		len(pl.Summary) != 2 || pl.Summary[1].Policy != placement.FGD {
		t.Fatalf("list %+v (want the share of seed 5's draw, %g)", pl, MultiGPUShare(want))
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%d with 2 or more GPUs: %.1f%% of the GPU demand)", pl.Multi, 100*pl.MultiGPU); !strings.Contains(text.String(), s) ||
		!strings.Contains(text.String(), "until those carry 50% of the GPU demand") {
		t.Errorf("text lacks %q:\n%s", s, text.String())
	}
}

func samePod(a, b Pod) bool {
	return a.Name == b.Name && a.Arrive == b.Arrive && a.Runtime == b.Runtime && sameDemand(a.Demand, b.Demand)
}

func sameDemand(a, b placement.Demand) bool {
	return a.GPUMilli == b.GPUMilli && a.CPUMilli == b.CPUMilli && a.MemMiB == b.MemMiB && a.Nodes == b.Nodes &&
		slices.Equal(a.GPUTypes, b.GPUTypes)
}
