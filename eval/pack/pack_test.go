package pack

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// gpus is a demand of n whole GPUs on one node.
func gpus(n int) placement.Demand { return placement.Demand{GPUMilli: n * placement.MilliGPU} }

// pnode is a schedulable node with n entirely free GPUs.
func pnode(name string, n int) placement.Node {
	nd := placement.Node{Name: name, Schedulable: true, GPUFree: make([]int, n)}
	for i := range nd.GPUFree {
		nd.GPUFree[i] = placement.MilliGPU
	}
	return nd
}

// state builds a placement state from nodes.
func state(t testing.TB, nodes ...placement.Node) *placement.State {
	t.Helper()
	st, err := placement.NewState(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Fill mode on 2 nodes × 4 GPUs with pods of 2, 2 and 4 GPUs (8 GPUs arrive:
// 100% of capacity).
//
//	spread: 2 → n1, 2 → n2 (4 free vs 2), 4 → nowhere: the first failure comes
//	with 4 of 8 GPUs arrived (50%) and 4 of 8 unallocated (50%).
//	best-fit: 2 → n1, 2 → n1 (0 left), 4 → n2: all placed, 100% allocated.
//
// The evaluation mix is the pod list's: {2 GPUs ⅔, 4 GPUs ⅓}. At spread's
// failure both nodes have 2 free: each fits 2 (fragment 0) but not 4
// (fragment 2): F = ⅓·2 per node, ⅓·4 = 4/3 GPUs, 1/6 of capacity.
func TestPackEvalFill(t *testing.T) {
	pods := []Pod{
		{Name: "p1", Demand: gpus(2), Arrive: 1 * time.Second},
		{Name: "p2", Demand: gpus(2), Arrive: 2 * time.Second},
		{Name: "p3", Demand: gpus(4), Arrive: 3 * time.Second},
	}
	st := state(t, pnode("n1", 4), pnode("n2", 4))
	sp, err := Run(st, pods, placement.Spread, Options{Points: 4})
	if err != nil {
		t.Fatal(err)
	}
	ff := sp.FirstFailure
	if ff == nil || sp.Failed != 1 || sp.Placed != 2 || !near(ff.Arrived, 0.5) || !near(ff.Unallocated, 0.5) || !near(ff.Fragmented, 1.0/6) ||
		sp.FirstFailed != "p3 (4 GPUs)" {
		t.Errorf("spread: %+v first failure %+v", sp, ff)
	}
	if len(sp.Curve) != 4 || !near(sp.Curve[0].Arrived, 0.25) || !near(sp.End.Allocated, 0.5) || sp.End.FailedGPUs != 4 {
		t.Errorf("spread curve %+v end %+v", sp.Curve, sp.End)
	}
	// The headline: the third arrival brings the arrived demand to exactly
	// 100%, the only one in the 99.5–100.5% window.
	if !near(sp.Unalloc100, 0.5) || sp.AtFull == nil || sp.AtFull.Failed != 1 || !near(sp.AtFull.Fragmented, 1.0/6) {
		t.Errorf("spread at 100%%: %g, %+v", sp.Unalloc100, sp.AtFull)
	}
	bf, err := Run(st, pods, placement.BestFit, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bf.FirstFailure != nil || bf.Failed != 0 || !near(bf.End.Allocated, 1) || !near(bf.MaxAlloc, 1) || bf.Unalloc100 != 0 {
		t.Errorf("best-fit: %+v", bf)
	}
	// The initial state is untouched.
	if _, free := st.Totals(); free != 8000 {
		t.Errorf("state changed: %d free", free)
	}
	// Until 2: the list is cycled (6 arrivals, 16 GPUs asked of 8).
	bf2, _ := Run(st, pods, placement.BestFit, Options{Until: 2})
	if bf2.Arrivals != 6 || bf2.Placed != 3 || bf2.FirstFailed != "p1 (2 GPUs)" || !near(bf2.FirstFailure.Unallocated, 0) {
		t.Errorf("cycled: %+v", bf2)
	}
}

// Replay mode: pods leave after their runtime. On one 4-GPU node: p1 (4
// GPUs, 0..10 s), p2 (4 GPUs at 5 s) fails, p3 (4 GPUs at 10 s) fits again.
func TestPackEvalReplay(t *testing.T) {
	pods := []Pod{
		{Name: "p1", Demand: gpus(4), Arrive: 0, Runtime: 10 * time.Second},
		{Name: "p2", Demand: gpus(4), Arrive: 5 * time.Second, Runtime: time.Second},
		{Name: "p3", Demand: gpus(4), Arrive: 10 * time.Second},
	}
	r, err := Run(state(t, pnode("n1", 4)), pods, placement.FirstFit, Options{Mode: Replay})
	if err != nil {
		t.Fatal(err)
	}
	if r.Placed != 2 || r.Failed != 1 || r.FirstFailed != "p2 (4 GPUs)" || !near(r.FirstFailure.Unallocated, 0) || !near(r.End.Allocated, 1) {
		t.Errorf("replay %+v", r)
	}
}

// GPU sharing: four half-GPU pods on one 2-GPU node fill it exactly under
// best-fit (two per GPU); spread puts the first two on different GPUs, the
// third and fourth then fill them: also full. A whole-GPU pod fifth fails.
func TestPackEvalSharing(t *testing.T) {
	half := placement.Demand{GPUMilli: 500}
	pods := []Pod{{Name: "h1", Demand: half}, {Name: "h2", Demand: half, Arrive: 1}, {Name: "w", Demand: gpus(1), Arrive: 2},
		{Name: "h3", Demand: half, Arrive: 3}}
	// best-fit: h1 GPU0, h2 GPU0 (least room), w GPU1, h3 fails (none left).
	r, _ := Run(state(t, pnode("n1", 2)), pods, placement.BestFit, Options{Mode: Replay})
	if r.Placed != 3 || r.FirstFailed != "h3 (0.5 GPU)" {
		t.Errorf("best-fit sharing: %+v", r)
	}
	// spread: h1 GPU0, h2 GPU1 (most room), w fails (no whole GPU), h3 fits.
	r, _ = Run(state(t, pnode("n1", 2)), pods, placement.Spread, Options{Mode: Replay})
	if r.Placed != 3 || r.FirstFailed != "w (1 GPU)" || !near(r.FirstFailure.Unallocated, 0.5) {
		t.Errorf("spread sharing: %+v", r)
	}
}

// No arrival in the window: one 4-GPU node, pods of 3, 2 and 1 GPUs in
// trace order. Arrived 75% (3 placed), 125% (the 2-GPU pod fails: 1 free),
// 150% (the 1-GPU pod fills the node), then the 3-GPU pod again at 225%
// (fails; past --until 2). Nothing arrives at 99.5–100.5%, so the headline
// is the state when the demand first reached the capacity: after the
// second arrival, 1 of 4 GPUs free (25%).
func TestPackUnalloc100Fallback(t *testing.T) {
	pods := []Pod{{Name: "a", Demand: gpus(3)}, {Name: "b", Demand: gpus(2), Arrive: 1}, {Name: "c", Demand: gpus(1), Arrive: 2}}
	r, err := Run(state(t, pnode("n1", 4)), pods, placement.BestFit, Options{Until: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Arrivals != 4 || r.AtFull == nil || r.AtFull.Arrivals != 2 || !near(r.Unalloc100, 0.25) || !near(r.End.Unallocated, 0) {
		t.Errorf("%+v at full %+v", r, r.AtFull)
	}
}

// The seeded arrivals (the ATC'23 workload tuning): the list shuffled, then
// pods drawn with replacement while the demand stays within Inflate ×
// capacity; a list asking for more loses pods at random instead.
func TestArrivalOrder(t *testing.T) {
	pods := []Pod{{Name: "p1", Demand: gpus(1)}, {Name: "p2", Demand: gpus(2)}, {Name: "p3", Demand: placement.Demand{GPUMilli: 500}},
		{Name: "c", Demand: placement.Demand{CPUMilli: 1000}}}
	demand := func(order []int) (sum int) {
		for _, i := range order {
			sum += pods[i].Demand.GPUMilli
		}
		return sum
	}
	// Capacity 4 GPUs, inflate 1.3: 3.5 GPUs listed, drawn up to 5.2.
	o := Options{Mode: Fill, Seed: 9, Inflate: 1.3}
	up := arrivalOrder(pods, o, 4000)
	first := slices.Clone(up[:4])
	slices.Sort(first)
	if !slices.Equal(first, []int{0, 1, 2, 3}) || len(up) == 4 || demand(up) > 5200 || demand(up) <= 5200-2000 {
		t.Errorf("inflated: %v (demand %d)", up, demand(up))
	}
	if again := arrivalOrder(pods, o, 4000); !slices.Equal(again, up) {
		t.Errorf("seed 9 twice: %v, %v", up, again)
	}
	o.Seed = 10
	if other := arrivalOrder(pods, o, 4000); slices.Equal(other, up) {
		t.Errorf("seeds 9 and 10 drew the same %v", up)
	}
	// Capacity 1 GPU: 3.5 GPUs listed, cut to at most 1.3 by dropping pods.
	down := arrivalOrder(pods, o, 1000)
	seen := map[int]bool{}
	for _, i := range down {
		if seen[i] {
			t.Errorf("pod %d twice in %v", i, down)
		}
		seen[i] = true
	}
	if demand(down) > 1300 || demand(down) <= 1300-2000 {
		t.Errorf("tuned down: %v (demand %d)", down, demand(down))
	}
	// No seed: trace order.
	o.Seed = 0
	if tr := arrivalOrder(pods, o, 4000); !slices.Equal(tr, []int{0, 1, 2, 3}) {
		t.Errorf("trace order %v", tr)
	}
}

func TestPackSpecValidate(t *testing.T) {
	good := Spec{Mode: Fill, Until: 1, Points: 2, Policies: []placement.Policy{"best-fit", "frag-aware", "fgd"}, MultiGPU: 0.5}
	if err := good.Validate(); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	for _, tt := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Until = 0 }, "--until and --points must be positive"},
		{func(s *Spec) { s.Points = -1 }, "--until and --points must be positive"},
		{func(s *Spec) { s.Mode = "later" }, `--mode "later": want fill or replay`},
		{func(s *Spec) { s.Policies = append(s.Policies, "worst-fit") }, `--policies: unknown placement policy "worst-fit" (want first-fit, best-fit, spread or frag-aware)`},
		{func(s *Spec) { s.Order = "random" }, `--order "random": want shuffled or trace`},
		{func(s *Spec) { s.Order, s.FirstSeed = "shuffled", 0 }, "--seeds must not be negative, --first-seed must be positive, --inflate must not be negative"},
		{func(s *Spec) { s.Mix = "all" }, `--mix "all": want list or recent`},
		{func(s *Spec) { s.Types = 1.5 }, "--types must be a share between 0 and 1"},
		{func(s *Spec) { s.MultiGPU = 1 }, "--multi-gpu must be a share at least 0 and below 1"},
	} {
		s := good
		s.Policies = slices.Clone(good.Policies)
		tt.edit(&s)
		if err := s.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}
