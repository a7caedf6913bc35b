package placement

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

var rt0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// node builds a Node with n entirely free GPUs.
type nodeB struct{ Node }

func pnode(name string, gpus int) *nodeB {
	n := &nodeB{Node{Name: name, Schedulable: true, GPUFree: make([]int, gpus)}}
	for i := range n.GPUFree {
		n.GPUFree[i] = MilliGPU
	}
	return n
}
func (n *nodeB) typ(t string) *nodeB        { n.GPUType = t; return n }
func (n *nodeB) down() *nodeB               { n.Schedulable = false; return n }
func (n *nodeB) free(f ...int) *nodeB       { n.GPUFree = f; return n }
func (n *nodeB) cpu(total, used int) *nodeB { n.CPUMilli, n.CPUUsed = total, used; return n }

func state(t testing.TB, nodes ...*nodeB) *State {
	t.Helper()
	ps := make([]Node, len(nodes))
	for i, n := range nodes {
		ps[i] = n.Node
	}
	st, err := NewState(ps)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func gpus(n int) Demand { return Demand{GPUMilli: n * MilliGPU} }

// four10 is the cluster: 4 nodes × 10 GPUs.
func four10(t testing.TB) *State {
	return state(t, pnode("n1", 10), pnode("n2", 10), pnode("n3", 10), pnode("n4", 10))
}

// used returns the GPUs in use per node (whole GPUs, rounded).
func used(st *State) []int {
	out := make([]int, st.Len())
	for i := range out {
		n := st.Node(i)
		u := 0
		for _, f := range n.GPUFree {
			u += MilliGPU - f
		}
		out[i] = u / MilliGPU
	}
	return out
}

func mustPlace(t testing.TB, st *State, d Demand, p Policy, o Options) *Result {
	t.Helper()
	pl, err := Place(st, d, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// The fragmentation scenario of issue 8, placement only. Team A's six 3-GPU
// jobs arrive one by one on 4 empty nodes × 10 GPUs.
//
// spread (most free GPUs left, ties by name): jobs 1-4 go to n1..n4 (each
// leaves 7, the others would leave 7 too / 10-3=7 vs 4 on a used node), job 5
// finds all at 7 free → n1 (4 left), job 6 → n2 (n1 would leave 1): 6/6/3/3,
// free 4+4+7+7 = 22, and no node has 8 free: B's 8-GPU job cannot start.
//
// best-fit (fewest left): n1 takes 3 jobs (10→7→4→1), then n2 three: 9/9/0/0.
// first-fit: the same, by node order.
// frag-aware, default mix {1,2,4,8 GPUs, ¼ each}: F(free f) on a node with only
// whole free GPUs is ¼·f per class size above f: F(10)=0, F(7)=¼·7 (8 does not
// fit) = 1.75, F(4)=¼·4 = 1 (8), F(1)=¼·1·3 = 0.75 (2,4,8). provisioner.Job 1: every node
// +1.75 → n1 by name. provisioner.Job 2: n1 7→4 is 1−1.75 = −0.75 < +1.75 → n1. provisioner.Job 3:
// n1 4→1 is 0.75−1 = −0.25 → n1. provisioner.Job 4: n1 cannot; n2..n4 tie at +1.75 → n2;
// then n2 as n1: 9/9/0/0. Then B's 8-GPU job fits n3 or n4 (tie → n3).
func TestPlaceFragmentationScenario(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		want   []int
		bNode  string // where B's 8-GPU job goes ("" = nowhere)
	}{
		{Spread, []int{6, 6, 3, 3}, ""},
		{BestFit, []int{9, 9, 0, 0}, "n3"},
		{FirstFit, []int{9, 9, 0, 0}, "n3"},
		{FragAware, []int{9, 9, 0, 0}, "n3"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			st := four10(t)
			for i := range 6 {
				p := mustPlace(t, st, gpus(3), tc.policy, Options{})
				if !p.OK() {
					t.Fatalf("job %d not placed: %s", i+1, p.Reason)
				}
				st.Assign(p.Assignments[0])
			}
			if got := used(st); !slices.Equal(got, tc.want) {
				t.Fatalf("used %v, want %v", got, tc.want)
			}
			p := mustPlace(t, st, gpus(8), tc.policy, Options{Explain: true})
			got := ""
			if p.OK() {
				got = p.Assignments[0].Name
			}
			if got != tc.bNode {
				t.Fatalf("B's 8-GPU job on %q, want %q (%s)", got, tc.bNode, p.Reason)
			}
			if !p.OK() {
				_, free := st.Totals()
				if free != 22*MilliGPU || p.Rejected[ReasonGPUs] != 4 || !strings.Contains(p.Reason, "22 GPUs free") {
					t.Errorf("free %d, rejected %v, reason %q; want 22 GPUs free and 4 nodes without enough", free, p.Rejected, p.Reason)
				}
				if len(p.Rejections) != 4 || p.Rejections[0] != (Rejection{"n1", ReasonGPUs}) {
					t.Errorf("rejections %+v", p.Rejections)
				}
			}
		})
	}
}

// F_n(m) worked by hand on a node whose GPUs have 1000, 1000, 500 and 0
// thousandths free (total 2.5 GPUs; two whole GPUs free; 0.5 partial).
func TestFragmentationMeasure(t *testing.T) {
	st := state(t, pnode("n", 4).typ("A100").free(1000, 1000, 500, 0).cpu(8000, 6000))
	for _, tc := range []struct {
		name string
		mix  []MixClass
		want float64 // GPUs
	}{
		// 1 GPU fits; fragments = the partly used GPU's 0.5.
		{"one whole GPU", []MixClass{{GPUMilli: 1000, Weight: 1}}, 0.5},
		// 0.6 GPU fits (a whole free GPU); fragments = GPUs with < 0.6 free: 0.5 + 0.
		{"0.6 share", []MixClass{{GPUMilli: 600, Weight: 1}}, 0.5},
		// 0.4 share: only the GPU with 0 free is below; it contributes 0.
		{"0.4 share", []MixClass{{GPUMilli: 400, Weight: 1}}, 0},
		// 4 GPUs: only 2 entirely free → cannot run → all 2.5 free GPUs are fragments.
		{"four GPUs", []MixClass{{GPUMilli: 4000, Weight: 1}}, 2.5},
		// wrong GPU type → all 2.5.
		{"type V100", []MixClass{{GPUMilli: 1000, GPUTypes: []string{"V100"}, Weight: 1}}, 2.5},
		// 3 CPUs asked, 2 free → all 2.5.
		{"CPU short", []MixClass{{GPUMilli: 1000, CPUMilli: 3000, Weight: 1}}, 2.5},
		// CPU-only class that fits leaves no GPU fragment.
		{"CPU only", []MixClass{{CPUMilli: 1000, Weight: 1}}, 0},
		// mix ½·0.5 + ½·2.5 = 1.5.
		{"mix", []MixClass{{GPUMilli: 1000, Weight: 0.5}, {GPUMilli: 4000, Weight: 0.5}}, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frag, free, per := st.Fragmentation(Mix{Classes: tc.mix})
			if math.Abs(frag-tc.want) > 1e-9 || free != 2.5 || per[0] != frag {
				t.Errorf("frag %v free %v per %v, want %v of 2.5", frag, free, per, tc.want)
			}
		})
	}
}

// GPU sharing: which device of a node a 0.25-GPU job takes. Node GPUs have
// 1.0, 0.3 and 0.7 free.
//
//	first-fit: GPU 0; best-fit: GPU 1 (least room that suffices); spread: GPU 0.
//	frag-aware, mix {0.5 share}: fragments are GPUs with < 0.5 free; before
//	0.3. On GPU 0 → 0.75,0.3,0.7: 0.3 (Δ 0); GPU 1 → 0.05: 0.05 (Δ −0.25);
//	GPU 2 → 0.45: 0.3+0.45 (Δ +0.45). → GPU 1.
//	frag-aware, mix {1 GPU}: fragments are the partial GPUs, before 0.3+0.7 = 1.0.
//	GPU 0 → 0.75+0.3+0.7 (Δ +0.75); GPU 1 → 0.05+0.7 (Δ −0.25); GPU 2 →
//	0.3+0.45 (Δ −0.25): tie, least room → GPU 1.
func TestPlaceFractional(t *testing.T) {
	d := Demand{GPUMilli: 250}
	for _, tc := range []struct {
		policy Policy
		mix    *Mix
		gpu    int
		delta  float64
	}{
		{FirstFit, nil, 0, 0},
		{BestFit, nil, 1, 0},
		{Spread, nil, 0, 0},
		{FragAware, &Mix{Classes: []MixClass{{GPUMilli: 500, Weight: 1}}}, 1, -0.25},
		{FragAware, &Mix{Classes: []MixClass{{GPUMilli: 1000, Weight: 1}}}, 1, -0.25},
	} {
		st := state(t, pnode("n", 3).free(1000, 300, 700))
		p := mustPlace(t, st, d, tc.policy, Options{Mix: tc.mix})
		if !p.OK() || !slices.Equal(p.Assignments[0].GPUs, []int{tc.gpu}) || p.Assignments[0].Milli != 250 {
			t.Errorf("%s: %+v, want GPU %d", tc.policy, p.Assignments, tc.gpu)
			continue
		}
		if math.Abs(p.Chosen[0].FragDelta-tc.delta) > 1e-9 {
			t.Errorf("%s: Δfrag %v, want %v", tc.policy, p.Chosen[0].FragDelta, tc.delta)
		}
		st.Assign(p.Assignments[0])
		if n := st.Node(0); n.GPUFree[tc.gpu] != []int{1000, 300, 700}[tc.gpu]-250 {
			t.Errorf("%s: after assign %v", tc.policy, n.GPUFree)
		}
		st.Release(p.Assignments[0])
		if n := st.Node(0); !slices.Equal(n.GPUFree, []int{1000, 300, 700}) {
			t.Errorf("%s: after release %v", tc.policy, n.GPUFree)
		}
	}
	// A 0.8 share fits no device of [0.3, 0.7]: not enough free GPUs.
	st := state(t, pnode("n", 2).free(300, 700))
	if p := mustPlace(t, st, Demand{GPUMilli: 800}, FragAware, Options{}); p.OK() || p.Rejected[ReasonGPUs] != 1 {
		t.Errorf("0.8 share on [0.3, 0.7]: %+v", p)
	}
}

// Every filter reason, in the documented order.
func TestPlaceFilterReasons(t *testing.T) {
	st := state(t,
		pnode("a-down", 8).typ("A100").down(),
		pnode("b-v100", 8).typ("V100"),
		pnode("c-small", 2).typ("A100"),
		pnode("d-busy", 8).typ("A100").free(1000, 1000, 0, 0, 0, 0, 0, 0),
		pnode("e-cpu", 8).typ("A100").cpu(16000, 15000),
		pnode("f-excluded", 8).typ("A100"),
		pnode("g-ok", 8).typ("A100").cpu(16000, 0),
	)
	d := Demand{GPUMilli: 4000, CPUMilli: 4000, GPUTypes: []string{"A100"}}
	p := mustPlace(t, st, d, BestFit, Options{Exclude: []string{"f-excluded"}, Explain: true})
	want := []Rejection{
		{"a-down", ReasonNotSchedulable}, {"b-v100", ReasonGPUType}, {"c-small", ReasonTooSmall},
		{"d-busy", ReasonGPUs}, {"e-cpu", ReasonCPUs}, {"f-excluded", ReasonExcluded},
	}
	if !slices.Equal(p.Rejections, want) {
		t.Errorf("rejections\n got %+v\nwant %+v", p.Rejections, want)
	}
	if !p.OK() || p.Assignments[0].Name != "g-ok" || p.Candidates != 1 || !slices.Equal(p.Assignments[0].GPUs, []int{0, 1, 2, 3}) {
		t.Errorf("placement %+v", p)
	}
	// A node list restricts; an unknown node is an error.
	p = mustPlace(t, st, gpus(1), FirstFit, Options{NodeList: []string{"d-busy"}})
	if !p.OK() || p.Assignments[0].Name != "d-busy" || p.Rejected[ReasonNotListed] != 6 {
		t.Errorf("node list: %+v", p)
	}
	if _, err := Place(st, gpus(1), FirstFit, Options{NodeList: []string{"zz"}}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := Place(st, gpus(1), "worst-fit", Options{}); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("bad policy: %v", err)
	}
	if _, err := Place(st, Demand{GPUMilli: 1500}, FirstFit, Options{}); !errors.Is(err, ErrBadDemand) {
		t.Errorf("1.5 GPUs: %v", err)
	}
}

// Ties are broken by node name whatever the input order, and best-fit's
// second criterion is free CPU.
func TestPlaceDeterministicTieBreak(t *testing.T) {
	a := state(t, pnode("n3", 8), pnode("n1", 8), pnode("n2", 8))
	for _, pol := range []Policy{BestFit, Spread, FragAware} {
		if p := mustPlace(t, a, gpus(2), pol, Options{}); p.Assignments[0].Name != "n1" {
			t.Errorf("%s: tie went to %s, want n1", pol, p.Assignments[0].Name)
		}
	}
	// first-fit follows the state's order instead.
	if p := mustPlace(t, a, gpus(2), FirstFit, Options{}); p.Assignments[0].Name != "n3" {
		t.Errorf("first-fit: %s, want n3 (first in order)", p.Assignments[0].Name)
	}
	// Same GPUs left: best-fit prefers the node with fewer CPUs left.
	b := state(t, pnode("n1", 8).cpu(32000, 0), pnode("n2", 8).cpu(32000, 16000))
	if p := mustPlace(t, b, gpus(2), BestFit, Options{}); p.Assignments[0].Name != "n2" {
		t.Errorf("best-fit CPU tie: %s, want n2", p.Assignments[0].Name)
	}
	if p := mustPlace(t, b, gpus(2), Spread, Options{}); p.Assignments[0].Name != "n1" {
		t.Errorf("spread CPU tie: %s, want n1", p.Assignments[0].Name)
	}
}

// A 2-node demand takes the two best distinct nodes. Nodes free 8, 4, 6, 2:
// 2×4 GPUs best-fit → n2 (0 left) then n3 (2 left); spread → n1 (4) then n3 (2).
func TestPlaceMultiNode(t *testing.T) {
	st := state(t, pnode("n1", 8), pnode("n2", 8).free(1000, 1000, 1000, 1000, 0, 0, 0, 0),
		pnode("n3", 8).free(1000, 1000, 1000, 1000, 1000, 1000, 0, 0), pnode("n4", 8).free(1000, 1000, 0, 0, 0, 0, 0, 0))
	d := Demand{GPUMilli: 4000, Nodes: 2}
	if p := mustPlace(t, st, d, BestFit, Options{}); !slices.Equal(p.NodeNames(), []string{"n2", "n3"}) {
		t.Errorf("best-fit: %v", p.NodeNames())
	}
	if p := mustPlace(t, st, d, Spread, Options{}); !slices.Equal(p.NodeNames(), []string{"n1", "n3"}) {
		t.Errorf("spread: %v", p.NodeNames())
	}
	if p := mustPlace(t, st, Demand{GPUMilli: 4000, Nodes: 4}, BestFit, Options{}); p.OK() || !strings.Contains(p.Reason, "3 nodes can take a share, 4 needed") {
		t.Errorf("4 nodes: %+v", p)
	}
}

func TestCheckFits(t *testing.T) {
	st := four10(t)
	err := st.CheckFits(gpus(12))
	if !errors.Is(err, ErrJobTooLarge) || !strings.Contains(err.Error(), "largest node (n1) has 10 GPUs") {
		t.Errorf("12 GPUs: %v", err)
	}
	if err := st.CheckFits(gpus(10)); err != nil {
		t.Errorf("10 GPUs: %v", err)
	}
	if err := st.CheckFits(Demand{GPUMilli: 1000, GPUTypes: []string{"H100"}}); !errors.Is(err, ErrJobTooLarge) || !strings.Contains(err.Error(), "no node has an allowed GPU type") {
		t.Errorf("H100: %v", err)
	}
	if err := st.CheckFits(Demand{GPUMilli: 8000, Nodes: 5}); !errors.Is(err, ErrJobTooLarge) {
		t.Errorf("5 nodes: %v", err)
	}
}

// LearnMix: one observed 3-GPU job against the default {1,2,4,8} prior of
// 20 pseudo-jobs: 3 GPUs 1/21, each default size 20·¼/21 = 5/21.
func TestLearnMix(t *testing.T) {
	st := four10(t)
	def := DefaultMix(st)
	if len(def.Classes) != 4 || def.Classes[3].GPUMilli != 8000 || def.Classes[0].Weight != 0.25 {
		t.Fatalf("default mix %v", def)
	}
	m := LearnMix([]Demand{gpus(3)}, def, MixOptions{})
	want := map[int]float64{1000: 5.0 / 21, 2000: 5.0 / 21, 3000: 1.0 / 21, 4000: 5.0 / 21, 8000: 5.0 / 21}
	if len(m.Classes) != 5 {
		t.Fatalf("mix %v", m)
	}
	for _, c := range m.Classes {
		if math.Abs(c.Weight-want[c.GPUMilli]) > 1e-12 {
			t.Errorf("class %d: %v, want %v", c.GPUMilli, c.Weight, want[c.GPUMilli])
		}
	}
	// Without prior classes only the observations count; CPU is the class mean.
	m = LearnMix([]Demand{{GPUMilli: 500, CPUMilli: 2000}, {GPUMilli: 500, CPUMilli: 4000}, gpus(1)}, Mix{}, MixOptions{})
	if len(m.Classes) != 2 || m.Classes[0].GPUMilli != 500 || m.Classes[0].CPUMilli != 3000 || math.Abs(m.Classes[0].Weight-2.0/3) > 1e-12 {
		t.Errorf("learned %+v", m)
	}
}

// MixFromJobs counts a job seen both in the history and in the snapshot
// once, and ignores history older than the window. History: job 1 (3 GPUs,
// started in the window), job 0 (8 GPUs, ended before it); snapshot: job 1
// again, running. One observation of 3 GPUs: weight 1/21 as in TestLearnMix.
func TestMixFromJobsDedup(t *testing.T) {
	st := four10(t)
	snap := &provisioner.Snapshot{Jobs: []provisioner.Job{{ID: "1", State: provisioner.StateRunning, GPUs: 3, Nodes: 1}}}
	hist := []provisioner.Job{
		{ID: "0", GPUs: 8, Nodes: 1, Start: rt0.Add(-10 * 24 * time.Hour), End: rt0.Add(-9 * 24 * time.Hour)},
		{ID: "1", GPUs: 3, Nodes: 1, Start: rt0.Add(-time.Hour)},
	}
	m := MixFromJobs(st, snap, hist, rt0.Add(-7*24*time.Hour), MixOptions{})
	for _, c := range m.Classes {
		want := 5.0 / 21
		if c.GPUMilli == 3000 {
			want = 1.0 / 21
		}
		if math.Abs(c.Weight-want) > 1e-12 {
			t.Errorf("class %d: %v, want %v (mix %v)", c.GPUMilli, c.Weight, want, m)
		}
	}
}

// Filter asks Place's filter node by node: Reason as Place records it, Holds
// ignoring only the GPUs in use.
func TestFilter(t *testing.T) {
	st := state(t, pnode("a-busy", 8).free(0, 0, 0, 0, 0, 0, 0, 0), pnode("b-down", 8).down(), pnode("c-ok", 8),
		pnode("d-small", 2), pnode("e-excluded", 8))
	f, err := st.Filter(gpus(4), nil, []string{"e-excluded"})
	if err != nil {
		t.Fatal(err)
	}
	wantReason := []string{ReasonGPUs, ReasonNotSchedulable, "", ReasonTooSmall, ReasonExcluded}
	wantHolds := []bool{true, false, true, false, false}
	for i := range st.Len() {
		if r, h := f.Reason(i), f.Holds(i); r != wantReason[i] || h != wantHolds[i] {
			t.Errorf("%s: reason %q holds %v, want %q %v", st.Name(i), r, h, wantReason[i], wantHolds[i])
		}
	}
	if st.WholeFree(0) != 0 || st.WholeFree(2) != 8 {
		t.Errorf("whole free %d, %d", st.WholeFree(0), st.WholeFree(2))
	}
	if _, err := st.Filter(gpus(1), []string{"zz"}, nil); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
}

// The reference-size measures behind the Kubernetes inventory: the most
// common running request (ties: the larger), and FRAG per node under one
// job size (free GPUs of the nodes where it does not fit).
func TestSizeMixAndCommonJobSize(t *testing.T) {
	jobs := []provisioner.Job{
		{State: provisioner.StateRunning, GPUs: 2}, {State: provisioner.StateRunning, GPUs: 4},
		{State: provisioner.StateRunning, GPUs: 2}, {State: provisioner.StateRunning, GPUs: 4},
		{State: provisioner.StatePending, GPUs: 8}, {State: provisioner.StateRunning},
	}
	if got := CommonJobSize(jobs); got != 4 {
		t.Errorf("common size %d, want 4 (tie of 2 and 4)", got)
	}
	if got := CommonJobSize(nil); got != 1 {
		t.Errorf("common size of nothing %d, want 1", got)
	}
	s := &provisioner.Snapshot{Nodes: []provisioner.Node{
		{Name: "n1", State: provisioner.NodeUp, GPUs: 8, GPUsUsed: 5},
		{Name: "n2", State: provisioner.NodeUp, GPUs: 8, GPUsUsed: 2},
		{Name: "n3", State: provisioner.NodeDrained, GPUs: 8},
	}}
	got := FragmentationByNode(s, SizeMix(4))
	if got["n1"] != 3 || got["n2"] != 0 || got["n3"] != 0 || len(got) != 3 {
		t.Errorf("fragmentation %v, want n1 3 (3 free < 4), n2 0, n3 0 (drained)", got)
	}
}
