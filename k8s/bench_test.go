package k8s

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// benchCluster is 1,213 nodes (the size of the openb trace's cluster) with 8
// GPUs each and 8,000 GPU pods of 10 teams, 7,000 bound and 1,000 pending.
func benchCluster() ([]corev1.Node, []corev1.Pod) {
	rng := rand.New(rand.NewPCG(1, 2))
	nodes := make([]corev1.Node, 1213)
	for i := range nodes {
		b := node(fmt.Sprintf("node-%04d", i)).GPUs(8).Product("NVIDIA-A100-SXM4-80GB")
		if i%100 == 0 {
			b.Cordoned()
		}
		nodes[i] = b.Obj()
	}
	pods := make([]corev1.Pod, 8000)
	for i := range pods {
		b := pod(fmt.Sprintf("team-%d", i%10), fmt.Sprintf("pod-%05d", i)).GPUs(1 << rng.IntN(4)).Team(fmt.Sprintf("team-%d", i%10))
		if i < 7000 {
			b.On(nodes[rng.IntN(len(nodes))].Name)
		}
		if i%7 == 0 {
			b.Borrowed()
		}
		pods[i] = b.Obj()
	}
	return nodes, pods
}

// BenchmarkBuildInventory: the inventory of 1,213 nodes and 8,000 pods from
// in-memory objects (what one list of each gives), plus the Snapshot conversion.
func BenchmarkBuildInventory(b *testing.B) {
	nodes, pods := benchCluster()
	m := Mapping{NamespaceTeams: map[string]string{"team-0": "team-0"}}
	b.ReportAllocs()
	for b.Loop() {
		inv := BuildInventory(t0, nodes, pods, m)
		if s := inv.Snapshot(); len(s.Nodes) != 1213 || len(s.Jobs) != 8000 {
			b.Fatalf("snapshot %d nodes %d jobs", len(s.Nodes), len(s.Jobs))
		}
	}
}
