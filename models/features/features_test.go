package features

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/provisioner"
)

// waitOnlyFields are the wait schema's fields that the chain schema lacks, in order.
var waitOnlyFields = []string{"plan_wait_mid_h", "plan_wait_own_h", "hist_runtime_frac", "plan_exp_first_h", "plan_exp_mid_h", "plan_exp_own_h", "plan_exp_last_h"}

func TestFeaturesHandComputed(t *testing.T) {
	want := handFeatures()
	for _, tc := range []struct {
		name   string
		schema SchemaID
		f      func(*provisioner.Observation) ([]float64, error)
	}{{"chain", Schema(), Features}, {"wait", WaitSchema(), WaitFeatures}} {
		got, err := tc.f(testobs.Observation())
		if err != nil {
			t.Fatal(err)
		}
		fields := tc.schema.Fields
		if len(got) != len(fields) {
			t.Fatalf("%s: got %d values for %d fields", tc.name, len(got), len(fields))
		}
		covered := 0
		for i, f := range fields {
			w, ok := want[f]
			if !ok {
				t.Errorf("%s: field %s not covered by the test", tc.name, f)
				continue
			}
			covered++
			if math.Abs(got[i]-w) > 1e-9 {
				t.Errorf("%s: %s = %v, want %v", tc.name, f, got[i], w)
			}
		}
		if tc.name == "wait" && covered != len(want) {
			t.Errorf("wait schema has %d of the test's %d fields", covered, len(want))
		}
	}
}

// handFeatures is every field's value for testObservation, worked out by
// hand in its comments (hours).
func handFeatures() map[string]float64 {
	return map[string]float64{
		"pending_count": 3, "pending_nodes": 4, "pending_gpus": 12,
		// limits sorted [2 4 10]: p25 at rank 0.5 → 3, p75 at rank 1.5 → 7
		"pending_limit_h_p0": 2, "pending_limit_h_p25": 3, "pending_limit_h_p50": 4, "pending_limit_h_p75": 7, "pending_limit_h_p100": 10,
		"pending_wait_h_p0": 1, "pending_wait_h_p25": 1.5, "pending_wait_h_p50": 2, "pending_wait_h_p75": 2.5, "pending_wait_h_p100": 3,
		"running_count": 2, "running_nodes": 3, "running_gpus": 12,
		"running_limit_h_p0": 6, "running_limit_h_p25": 16.5, "running_limit_h_p50": 27, "running_limit_h_p75": 37.5, "running_limit_h_p100": 48,
		"running_wait_h_p0": 1, "running_wait_h_p25": 2.75, "running_wait_h_p50": 4.5, "running_wait_h_p75": 6.25, "running_wait_h_p100": 8,
		"running_run_h_p0": 2, "running_run_h_p25": 2.5, "running_run_h_p50": 3, "running_run_h_p75": 3.5, "running_run_h_p100": 4,
		"running_left_h_p0": 2, "running_left_h_p25": 13, "running_left_h_p50": 24, "running_left_h_p75": 35, "running_left_h_p100": 46,
		"nodes_up": 3, "gpus_up": 20, "gpus_free": 8, "nodes_idle": 1, "gpu_demand_ratio": 0.6,
		"pred_present": 1, "pred_limit_h": 6, "pred_nodes": 1, "pred_gpus": 4, "pred_wait_h": 1, "pred_elapsed_h": 4, "pred_left_h": 2, "pred_running": 1,
		"succ_limit_h": 6, "succ_nodes": 1, "succ_gpus": 4,
		// account A: 4 of 12 running GPUs; 3 of 5 jobs (p1, p3, r1); 2 pending
		"acct_gpu_share": 1.0 / 3, "acct_job_share": 0.6, "acct_standing": 1.0/3 - 0.6, "acct_pending": 2,
		// FNV-1a-32("gpu") mod 4 = 1 (computed with a separate Python implementation)
		"partition_hash_0": 0, "partition_hash_1": 1, "partition_hash_2": 0, "partition_hash_3": 0,
		"partition_pending_share": 2.0 / 3,
		// started within 24 h: h2 (wait 1) and h3 (0.5); h1 started 28 h ago is out of the horizon.
		// mean 0.75; sorted [0.5 1]: p50 0.75, p90 at rank 0.9 → 0.95
		"hist_wait_mean_h": 0.75, "hist_wait_p50_h": 0.75, "hist_wait_p90_h": 0.95, "hist_starts_24h": 2,
		// Plan over partition "gpu" (nodes list no partitions: all count): 20 GPUs, r1 (4) and r2 (8) run → 8 free;
		// r1 frees 4 at +2 h, r2 8 at +46 h. The successor (4 GPUs for the chain's 6 h) fits now ahead of the queue.
		// Behind it: p2 (8 GPUs, 4 h, older) takes [0, 4 h), p1 (4 GPUs, 2 h) [2 h, 4 h); 12 free from 4 h → waits 4 h.
		// The predecessor r1 has 2 h left.
		"plan_wait_first_h": 0, "plan_wait_last_h": 4, "plan_gap_first_h": -2, "plan_gap_last_h": 2,
		// Behind the upper half (p2 only): 0 GPUs free until r1 frees 4 at +2 h, then 4 then 12 → waits 2 h.
		// Own place: no account has two pending jobs (no age slope), so account A's estimate is p1's
		// priority (0); both pending jobs (priority 0, older) rank ahead → behind both: 4 h.
		"plan_wait_mid_h": 2, "plan_wait_own_h": 4,
		// No history job has ended: the share is unknown (0) and the expected-runtime plan is the limit plan.
		"hist_runtime_frac": 0, "plan_exp_first_h": 0, "plan_exp_mid_h": 2, "plan_exp_own_h": 4, "plan_exp_last_h": 4,
		// 2 of 3 pending jobs have estimates; of the successor's shape (1 node, partition gpu) only p1 (1.5 h); latest p2 (3 h).
		"est_pending_share": 2.0 / 3, "est_shape_latest_h": 1.5, "est_latest_h": 3,
	}
}

func TestFeaturesEmptyAndErrors(t *testing.T) {
	if _, err := Features(&provisioner.Observation{}); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("err = %v, want ErrNoSnapshot", err)
	}
	if _, err := WaitFeatures(nil); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("wait: err = %v, want ErrNoSnapshot", err)
	}
	empty := &provisioner.Observation{Snapshot: &provisioner.Snapshot{Time: testobs.T0}}
	got, err := Features(empty)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 0 {
			t.Errorf("empty observation: %s = %v, want 0", Schema().Fields[i], v)
		}
	}
	got, err = WaitFeatures(empty)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 0 {
			t.Errorf("empty observation, wait: %s = %v, want 0", WaitSchema().Fields[i], v)
		}
	}
}

func TestFeaturesPure(t *testing.T) {
	obs := testobs.Observation()
	a, _ := Features(obs)
	b, _ := Features(obs)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("two calls differ")
	}
	// The snapshot is not reordered or modified.
	if obs.Snapshot.Jobs[0].ID != "p1" || obs.History[0].ID != "h1" {
		t.Fatal("input modified")
	}
}

func TestSchemaNamesUnique(t *testing.T) {
	for _, tc := range []struct {
		s       SchemaID
		name    string
		version int
		width   int
	}{{Schema(), FeatureSchemaName, FeatureSchemaVersion, 72}, {WaitSchema(), WaitSchemaName, WaitSchemaVersion, 79}} {
		s := tc.s
		if s.Name != tc.name || s.Version != tc.version {
			t.Fatalf("schema id %s v%d, want %s v%d", s.Name, s.Version, tc.name, tc.version)
		}
		seen := map[string]bool{}
		for _, f := range s.Fields {
			if seen[f] || strings.TrimSpace(f) == "" {
				t.Errorf("%s: field %q duplicated or empty", s.Name, f)
			}
			seen[f] = true
		}
		if len(s.Fields) != tc.width {
			t.Errorf("%s v%d has %d fields, want %d (bump its version when this changes)", s.Name, s.Version, len(s.Fields), tc.width)
		}
		if cur, ok := CurrentSchema(s.Name); !ok || CheckSchema(cur, s) != nil {
			t.Errorf("CurrentSchema(%q) = %v, %v", s.Name, cur.Version, ok)
		}
	}
	if _, ok := CurrentSchema("mirage-other"); ok {
		t.Error("CurrentSchema knows an unknown family")
	}
	// The wait schema is the chain schema with the wait-only fields
	// inserted after plan_gap_last_h, in that order.
	chain, wait := Schema().Fields, WaitSchema().Fields
	k := slices.Index(chain, "plan_gap_last_h") + 1
	if k == 0 {
		t.Fatal("chain schema lacks plan_gap_last_h")
	}
	want := slices.Concat(chain[:k], waitOnlyFields, chain[k:])
	if !slices.Equal(wait, want) {
		t.Errorf("wait fields %v,\nwant %v", wait, want)
	}
}

func TestWaitFeaturesExtendChainFeatures(t *testing.T) {
	// On a busy snapshot, every chain field has the same value in the wait vector.
	obs := testBigObservation()
	c, err := Features(obs)
	if err != nil {
		t.Fatal(err)
	}
	w, err := WaitFeatures(obs)
	if err != nil {
		t.Fatal(err)
	}
	wf := WaitSchema().Fields
	for i, f := range Schema().Fields {
		if j := slices.Index(wf, f); j < 0 || w[j] != c[i] {
			t.Errorf("%s: chain %v, wait %v", f, c[i], w[max(j, 0)])
		}
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		in   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.9, 7},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{0, 10}, 0.25, 2.5},
	}
	for _, tt := range tests {
		if got := Percentile(tt.in, tt.q); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tt.in, tt.q, got, tt.want)
		}
	}
}

// testBigObservation is a snapshot the size of a busy cluster (2000 jobs, 500 nodes, 1000 history records).
func testBigObservation() *provisioner.Observation {
	snap := &provisioner.Snapshot{Time: testobs.T0}
	for i := 0; i < 500; i++ {
		snap.Nodes = append(snap.Nodes, testobs.Node(fmt.Sprint("n", i), provisioner.NodeUp, 4, i%5, 0))
	}
	for i := 0; i < 2000; i++ {
		b := testobs.Job(fmt.Sprint(i)).Limit(time.Duration(1+i%48)*testobs.Hour).Nodes(1+i%8, 4*(1+i%8)).Acct(fmt.Sprint("a", i%20), "gpu")
		if i%2 == 0 {
			b.Pending(time.Duration(i) * time.Minute)
		} else {
			b.Running(time.Duration(i)*time.Minute, time.Duration(i/2)*time.Minute)
		}
		snap.Jobs = append(snap.Jobs, b.Build())
	}
	var hist []provisioner.Job
	for i := 0; i < 1000; i++ {
		hist = append(hist, testobs.Job(fmt.Sprint("h", i)).Running(time.Duration(i+60)*time.Minute, time.Duration(i)*time.Minute).Build())
	}
	return &provisioner.Observation{Now: testobs.T0, Snapshot: snap, History: hist, Chain: &provisioner.Chain{Account: "a3", Partition: "gpu", TimeLimit: 48 * testobs.Hour},
		Predecessor: &snap.Jobs[1], Successor: provisioner.SubmitRequest{Nodes: 1, GPUs: 4, TimeLimit: 48 * testobs.Hour}}
}

func BenchmarkFeatures(b *testing.B) {
	benchFeatures(b, AppendFeatures)
}

func BenchmarkWaitFeatures(b *testing.B) {
	benchFeatures(b, AppendWaitFeatures)
}

func benchFeatures(b *testing.B, f func([]float64, *provisioner.Observation) ([]float64, error)) {
	obs := testBigObservation()
	dst := make([]float64, 0, NumWaitFeatures())
	b.ReportAllocs()
	for b.Loop() {
		var err error
		dst, err = f(dst[:0], obs)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// planWaits is one plan of shape s on snap (the planner's own entry point
// for a single plan).
func planWaits(snap *provisioner.Snapshot, now time.Time, s planShape, frac func(*provisioner.Job) float64) planResult {
	return newPlanner(snap, now, s, true).plan(frac)
}

// TestOwnPlace: priorities grow 100 per hour of age within accounts A
// (ages 10, 6, 2 h: 1100, 700, 300) and B (4, 1 h: 1200, 900); C has one
// job (5 h: 1000). At age zero A's jobs would have 100, B's 800, C's 500.
// A new job ranks behind every pending job with a priority at least its
// estimate.
func TestOwnPlace(t *testing.T) {
	mk := func(id, acct string, ageH float64, prio int64) *provisioner.Job {
		j := testobs.Job(id).Pending(time.Duration(ageH*float64(time.Hour))).Acct(acct, "gpu").Build()
		j.Priority = prio
		return &j
	}
	pend := []*provisioner.Job{
		mk("b1", "B", 4, 1200), mk("a1", "A", 10, 1100), mk("c1", "C", 5, 1000),
		mk("b2", "B", 1, 900), mk("a3", "A", 6, 700), mk("a2", "A", 2, 300),
	}
	for _, tt := range []struct {
		acct string
		want int
	}{
		{"A", 6}, // 100: behind all
		{"B", 4}, // 800: behind 1200, 1100, 1000, 900
		{"C", 5}, // 500: ahead of 300 only
		// No pending job: the median of the age-zero priorities
		// [100 100 100 500 800 800] is 300 (rank 2.5), behind all six.
		{"D", 6},
		{"", 6},
	} {
		if got := ownPlace(pend, testobs.T0, tt.acct); got != tt.want {
			t.Errorf("ownPlace(%q) = %d, want %d", tt.acct, got, tt.want)
		}
	}
	if got := ownPlace(nil, testobs.T0, "A"); got != 0 {
		t.Errorf("no pending jobs: %d, want 0", got)
	}
}

// TestPlanWaitsExpectedRuntime: one 8-GPU node; r runs 8 GPUs, started 1 h
// ago with a 10 h limit; p (8 GPUs, 4 h) is pending. The successor needs
// the node for 2 h.
func TestPlanWaitsExpectedRuntime(t *testing.T) {
	snap := &provisioner.Snapshot{Time: testobs.T0,
		Nodes: []provisioner.Node{testobs.Node("n1", provisioner.NodeUp, 8, 8, 0)},
		Jobs: []provisioner.Job{
			testobs.Job("r").Running(2*testobs.Hour, 1*testobs.Hour).Limit(10*testobs.Hour).Nodes(1, 8).Build(),
			testobs.Job("p").Pending(1*testobs.Hour).Limit(4*testobs.Hour).Nodes(1, 8).Build(),
		}}
	shape := planShape{nodes: 1, gpus: 8, limit: 2 * testobs.Hour}
	half := func(*provisioner.Job) float64 { return 0.5 }
	h := func(x float64) float64 { return x * 3600 }
	// To the limits: r ends at +9 h; p takes [9, 13) h.
	if got, want := planWaits(snap, testobs.T0, shape, nil), (planResult{first: h(9), mid: h(9), own: h(13), last: h(13)}); got != want {
		t.Errorf("limits: %+v, want %+v", got, want)
	}
	// Half the limits: r ends at −1 h + 5 h = +4 h; p runs 2 h: [4, 6) h.
	if got, want := planWaits(snap, testobs.T0, shape, half), (planResult{first: h(4), mid: h(4), own: h(6), last: h(6)}); got != want {
		t.Errorf("half: %+v, want %+v", got, want)
	}
	// r started 6 h ago: at half its limit it is overdue and ends a minute from now.
	snap.Jobs[0].Start = testobs.T0.Add(-6 * testobs.Hour)
	if got, want := planWaits(snap, testobs.T0, shape, half), (planResult{first: 60, mid: 60, own: 60 + h(2), last: 60 + h(2)}); got != want {
		t.Errorf("overdue: %+v, want %+v", got, want)
	}
}

// TestRuntimeFractions: median share of the limit among jobs that ended in
// the last 24 hours, overall (≥ 10 jobs) and per user (≥ 3), in [0.05, 1].
func TestRuntimeFractions(t *testing.T) {
	ended := func(user string, frac float64, endAgo time.Duration) provisioner.Job {
		start := testobs.T0.Add(-endAgo - time.Duration(frac*10*float64(time.Hour)))
		return provisioner.Job{User: user, Start: start, End: testobs.T0.Add(-endAgo), TimeLimit: 10 * testobs.Hour}
	}
	var hist []provisioner.Job
	for _, f := range []float64{0.2, 0.4, 0.6} {
		hist = append(hist, ended("u1", f, testobs.Hour))
	}
	for _, f := range []float64{1, 1, 1, 0.5, 0.5, 0.1, 0.3} {
		hist = append(hist, ended("u3", f, 2*testobs.Hour))
	}
	for _, f := range []float64{0.01, 0.01, 0.02} {
		hist = append(hist, ended("u4", f, 3*testobs.Hour))
	}
	hist = append(hist,
		ended("u2", 0.9, testobs.Hour),     // one job: no per-user share
		ended("u1", 0.05, 25*testobs.Hour), // ended over 24 h ago: ignored
		testobs.Job("run").Running(2*testobs.Hour, testobs.Hour).Limit(testobs.Hour).Build(), // still running: ignored
	)
	// 14 shares: sorted .01 .01 .02 .1 .2 .3 .4 .5 .5 .6 .9 1 1 1 → median (.4+.5)/2.
	// The snapshot's users: u4 has no job in it, u5 no ended job.
	jobs := []provisioner.Job{{User: "u1"}, {User: "u2"}, {User: "u3"}, {User: "u3"}, {User: "u5"}}
	all, users := runtimeFractions(hist, jobs, testobs.T0)
	if math.Abs(all-0.45) > 1e-9 {
		t.Errorf("overall %v, want 0.45", all)
	}
	want := map[string]float64{"u1": 0.4, "u3": 0.5}
	if len(users) != len(want) {
		t.Errorf("users %v, want %v", users, want)
	}
	for u, w := range want {
		if math.Abs(users[u]-w) > 1e-9 {
			t.Errorf("user %s: %v, want %v", u, users[u], w)
		}
	}
	if _, users := runtimeFractions(hist, append(jobs, provisioner.Job{User: "u4"}), testobs.T0); math.Abs(users["u4"]-0.05) > 1e-9 {
		t.Errorf("user u4: %v, want 0.05 (0.02 raised to the floor)", users["u4"])
	}
	if all, _ := runtimeFractions(hist[:9], jobs, testobs.T0); all != 0 {
		t.Errorf("9 ended jobs: %v, want 0 (unknown)", all)
	}
}

func TestFeaturesAfterBiggerObservation(t *testing.T) {
	// Vectors reuse their working memory: a small observation right after a
	// big one (more jobs, more history) still gets its hand-computed values.
	want := handFeatures()
	for k := 0; k < 3; k++ {
		if _, err := WaitFeatures(testBigObservation()); err != nil {
			t.Fatal(err)
		}
		got, err := Features(testobs.Observation())
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range Schema().Fields {
			if math.Abs(got[i]-want[f]) > 1e-9 {
				t.Fatalf("round %d: %s = %v, want %v", k, f, got[i], want[f])
			}
		}
	}
}
