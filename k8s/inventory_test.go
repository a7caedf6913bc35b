package k8s

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mirage-gpu/mirage/provisioner"
)

// nodeB builds a Node object.
type nodeB struct{ n corev1.Node }

func node(name string) *nodeB {
	b := &nodeB{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}}
	b.n.Status.Allocatable = corev1.ResourceList{}
	b.n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return b
}
func (b *nodeB) GPUs(n int) *nodeB {
	b.n.Status.Allocatable[ResourceGPU] = resource.MustParse(strconv.Itoa(n))
	return b
}
func (b *nodeB) Res(name string, n int) *nodeB {
	b.n.Status.Allocatable[corev1.ResourceName(name)] = resource.MustParse(strconv.Itoa(n))
	return b
}
func (b *nodeB) Product(p string) *nodeB { b.n.Labels[LabelGPUProduct] = p; return b }
func (b *nodeB) Cordoned() *nodeB        { b.n.Spec.Unschedulable = true; return b }
func (b *nodeB) NotReady() *nodeB {
	b.n.Status.Conditions[0].Status = corev1.ConditionFalse
	return b
}
func (b *nodeB) NoConditions() *nodeB { b.n.Status.Conditions = nil; return b }
func (b *nodeB) Obj() corev1.Node     { return b.n }

// podB builds a Pod object.
type podB struct{ p corev1.Pod }

func pod(ns, name string) *podB {
	return &podB{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}
func (b *podB) On(node string) *podB { b.p.Spec.NodeName = node; return b }
func (b *podB) GPUs(n int) *podB     { return b.Res(string(ResourceGPU), n) }
func (b *podB) Res(name string, n int) *podB {
	c := &b.p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(strconv.Itoa(n))
	return b
}
func (b *podB) Team(t string) *podB { b.p.Labels[DefaultTeamLabel] = t; return b }
func (b *podB) Borrowed() *podB {
	b.p.Labels[LabelBorrowed], b.p.Spec.PriorityClassName = "true", "mirage-borrowed"
	return b
}
func (b *podB) Phase(p corev1.PodPhase) *podB { b.p.Status.Phase = p; return b }
func (b *podB) Obj() corev1.Pod               { return b.p }

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// The cluster: 4 nodes × 10 GPUs, two teams; plus a cordoned and a
// not-ready node, MIG slices, a finished pod and an unbound one.
func testCluster() ([]corev1.Node, []corev1.Pod, Mapping) {
	nodes := []corev1.Node{
		node("n1").GPUs(10).Product("A100").Obj(),
		node("n2").GPUs(10).Product("A100").Obj(),
		node("n3").GPUs(10).Product("A100").Obj(),
		node("n4").GPUs(10).Product("A100").Res("nvidia.com/mig-1g.10gb", 7).Obj(),
		node("n5").GPUs(8).Product("H100").Cordoned().Obj(),
		node("n6").GPUs(8).Product("H100").NotReady().Obj(),
	}
	pods := []corev1.Pod{
		// team-a through the namespace mapping (its label says otherwise and loses)
		pod("ns-a", "a1").On("n1").GPUs(4).Team("team-b").Obj(),
		pod("ns-a", "a2").On("n1").GPUs(3).Obj(),
		pod("ns-a", "a3").On("n2").GPUs(3).Obj(),
		pod("ns-a", "a4").On("n3").GPUs(6).Borrowed().Obj(),
		pod("ns-a", "a5").On("n5").GPUs(2).Obj(), // cordoned node still counts its pods
		// team-b through the label
		pod("shared", "b1").On("n2").GPUs(5).Team("team-b").Phase(corev1.PodRunning).Obj(),
		pod("shared", "b2").On("n4").GPUs(2).Team("team-b").Res("nvidia.com/mig-1g.10gb", 3).Obj(),
		pod("shared", "b3").GPUs(2).Team("team-b").Obj(),                                     // unbound
		pod("shared", "b4").On("n4").GPUs(5).Team("team-b").Phase(corev1.PodSucceeded).Obj(), // finished
		// no team, no GPUs
		pod("shared", "x1").On("n4").Obj(),
	}
	return nodes, pods, Mapping{NamespaceTeams: map[string]string{"ns-a": "team-a"}}
}

func TestBuildInventory(t *testing.T) {
	nodes, pods, m := testCluster()
	inv := BuildInventory(t0, nodes, pods, m)

	type nodeWant struct {
		state                    provisioner.NodeState
		gpus, used, borrowed, fr int
		mig                      Count
	}
	want := map[string]nodeWant{
		"n1": {provisioner.NodeUp, 10, 7, 0, 3, Count{}},
		"n2": {provisioner.NodeUp, 10, 8, 0, 2, Count{}},
		"n3": {provisioner.NodeUp, 10, 6, 6, 4, Count{}},
		"n4": {provisioner.NodeUp, 10, 2, 0, 8, Count{Allocatable: 7, Used: 3}},
		"n5": {provisioner.NodeDrained, 8, 2, 0, 0, Count{}},
		"n6": {provisioner.NodeDown, 8, 0, 0, 0, Count{}},
	}
	if len(inv.Nodes) != len(want) {
		t.Fatalf("nodes = %d, want %d", len(inv.Nodes), len(want))
	}
	for name, w := range want {
		n := inv.Node(name)
		if n == nil {
			t.Fatalf("node %s missing", name)
		}
		if n.State != w.state || n.GPUs != w.gpus || n.Used != w.used || n.Borrowed != w.borrowed || n.Free != w.fr {
			t.Errorf("node %s = state %s gpus %d used %d borrowed %d free %d, want %+v", name, n.State, n.GPUs, n.Used, n.Borrowed, n.Free, w)
		}
		if w.mig != (Count{}) && n.MIG["nvidia.com/mig-1g.10gb"] != w.mig {
			t.Errorf("node %s MIG = %+v, want %+v", name, n.MIG, w.mig)
		}
	}
	if n1 := inv.Node("n1"); n1.ByTeam["team-a"] != 7 || n1.Pods != 2 || n1.GPUType != "A100" {
		t.Errorf("n1 = %+v", n1)
	}
	// 56 GPUs; used 7+8+6+2+2 = 25; borrowed 6; free 3+2+4+8 = 17 (n5, n6 not up).
	if inv.GPUs != 56 || inv.Used != 25 || inv.Borrowed != 6 || inv.Free != 17 {
		t.Errorf("totals gpus %d used %d borrowed %d free %d, want 56 25 6 17", inv.GPUs, inv.Used, inv.Borrowed, inv.Free)
	}
	a, b := inv.Team("team-a"), inv.Team("team-b")
	if a == nil || *a != (TeamInventory{Team: "team-a", Used: 18, Borrowed: 6, Pods: 5}) {
		t.Errorf("team-a = %+v", a)
	}
	if b == nil || *b != (TeamInventory{Team: "team-b", Used: 7, Pods: 2, Pending: 1}) {
		t.Errorf("team-b = %+v", b)
	}
	if inv.Team("") != nil {
		t.Errorf("pods without team or GPUs should not make a team row: %+v", inv.Team(""))
	}
}

func TestInventorySnapshot(t *testing.T) {
	nodes, pods, m := testCluster()
	s := BuildInventory(t0, nodes, pods, m).Snapshot()
	if !s.Time.Equal(t0) || len(s.Nodes) != 6 {
		t.Fatalf("snapshot time %v nodes %d", s.Time, len(s.Nodes))
	}
	if n := s.Nodes[0]; n.Name != "n1" || n.GPUs != 10 || n.GPUsUsed != 7 || n.GPUType != "A100" || n.FreeGPUs() != 3 {
		t.Errorf("node n1 = %+v", n)
	}
	if n := s.Nodes[4]; n.Name != "n5" || n.State != provisioner.NodeDrained || n.FreeGPUs() != 0 {
		t.Errorf("node n5 = %+v", n)
	}
	// 9 non-terminal pods (b4 finished).
	if len(s.Jobs) != 9 {
		t.Fatalf("jobs = %d, want 9", len(s.Jobs))
	}
	a1 := s.Job("pod/ns-a/a1")
	if a1 == nil || a1.Account != "team-a" || a1.GPUs != 4 || a1.State != provisioner.StateRunning || a1.Reason != "Bound" || len(a1.NodeList) != 1 || a1.NodeList[0] != "n1" {
		t.Errorf("a1 = %+v", a1)
	}
	b1 := s.Job("pod/shared/b1")
	if b1 == nil || b1.Account != "team-b" || b1.Reason != "" {
		t.Errorf("b1 = %+v", b1)
	}
	b3 := s.Job("pod/shared/b3")
	if b3 == nil || b3.State != provisioner.StatePending || b3.NodeList != nil {
		t.Errorf("b3 = %+v", b3)
	}
	if len(s.Running()) != 8 || len(s.Pending()) != 1 {
		t.Errorf("running %d pending %d, want 8 1", len(s.Running()), len(s.Pending()))
	}
}

func TestNodeWithoutReadyConditionIsDown(t *testing.T) {
	inv := BuildInventory(t0, []corev1.Node{node("n").GPUs(4).NoConditions().Obj()}, nil, Mapping{})
	if n := inv.Node("n"); n.State != provisioner.NodeDown || n.Free != 0 || n.GPUs != 4 {
		t.Errorf("node = %+v", n)
	}
}

func TestTeamMapping(t *testing.T) {
	m := Mapping{TeamLabel: "example.com/team", NamespaceTeams: map[string]string{"ml": "research"}}
	cases := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"namespace wins", func() corev1.Pod {
			p := pod("ml", "p").Obj()
			p.Labels["example.com/team"] = "other"
			return p
		}(), "research"},
		{"custom label", func() corev1.Pod {
			p := pod("x", "p").Obj()
			p.Labels["example.com/team"] = "infra"
			return p
		}(), "infra"},
		{"default label ignored when a custom key is set", pod("x", "p").Team("infra").Obj(), ""},
		{"nothing", pod("x", "p").Obj(), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := m.Team(&c.pod); got != c.want {
				t.Errorf("team = %q, want %q", got, c.want)
			}
		})
	}
	if got := (Mapping{}).Team(ptr(pod("x", "p").Team("t").Obj())); got != "t" {
		t.Errorf("default label: team = %q, want t", got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPodRequest(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	gpu := func(n int) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{ResourceGPU: resource.MustParse(strconv.Itoa(n))}}
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"two containers", corev1.PodSpec{Containers: []corev1.Container{{Resources: gpu(2)}, {Resources: gpu(3)}}}, 5},
		{"limits only", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{ResourceGPU: resource.MustParse("4")}}}}}, 4},
		{"init larger", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: gpu(6)}},
			Containers: []corev1.Container{{Resources: gpu(2)}}}, 6},
		{"sidecar adds", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: gpu(1), RestartPolicy: &always}},
			Containers: []corev1.Container{{Resources: gpu(2)}}}, 3},
		// sidecar 1 then init 4: max(1+4, 2+1) = 5
		{"init after sidecar", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: gpu(1), RestartPolicy: &always}, {Resources: gpu(4)}},
			Containers: []corev1.Container{{Resources: gpu(2)}}}, 5},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{{Resources: gpu(2)}},
			Overhead: corev1.ResourceList{ResourceGPU: resource.MustParse("1")}}, 3},
		{"none", corev1.PodSpec{Containers: []corev1.Container{{}}}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := corev1.Pod{Spec: c.spec}
			if got := podRequest(&p, ResourceGPU); got != c.want {
				t.Errorf("request = %d, want %d", got, c.want)
			}
		})
	}
}
