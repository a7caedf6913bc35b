package sim

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

func TestRanksAndSpearman(t *testing.T) {
	// Worked by hand: 10 < 20 = 20 < 40 take ranks 1, 2.5, 2.5, 4.
	got := ranks([]float64{20, 10, 40, 20})
	want := []float64{2.5, 1, 4, 2.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ranks = %v, want %v", got, want)
		}
	}
	// Monotone but not linear: Spearman 1 where Pearson is below 1.
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{1, 10, 100, 1000, 10000}
	s := stats("x", a, b)
	if s.Spearman != 1 || s.Pearson >= 0.99 {
		t.Errorf("spearman %v pearson %v, want 1 and < 0.99", s.Spearman, s.Pearson)
	}
	rev := stats("x", a, []float64{5, 4, 3, 2, 1})
	if rev.Spearman != -1 {
		t.Errorf("reversed: spearman %v, want -1", rev.Spearman)
	}
}

func TestCompareGroups(t *testing.T) {
	// One job per size: each group holds exactly the sizes its name says.
	nodes := []int{1, 2, 4, 5, 8, 9, 16}
	w := make([]float64, len(nodes))
	got := map[string]int{}
	for _, s := range Compare(w, w, nodes) {
		got[s.Group] = s.Jobs
	}
	want := map[string]int{"all": 7, "1 node": 1, "2-4 nodes": 2, "5-8 nodes": 2, ">8 nodes": 2, ">=5 nodes": 4}
	for g, n := range want {
		if got[g] != n {
			t.Errorf("group %s: %d jobs, want %d", g, got[g], n)
		}
	}
}

func TestObjective(t *testing.T) {
	st := []Stats{
		{Group: "all", Jobs: 100, KS: 0.05},
		{Group: "1 node", Jobs: 80, KS: 0.04},
		{Group: "5-8 nodes", Jobs: 10, KS: 0.9}, // too few: does not count
		{Group: ">=5 nodes", Jobs: 40, KS: 0.12, Spearman: 0.6},
	}
	// max KS among counted groups 0.12, plus 0.25 × (1 − 0.6) = 0.1.
	if got := Objective(st, 30); math.Abs(got-0.22) > 1e-12 {
		t.Errorf("objective %v, want 0.22", got)
	}
}

// TestCalibrateRecoversKnownParameters: a trace the simulator itself
// wrote, with known parameters (60 usable nodes, job-size weight 2000),
// is calibrated from a preset that differs in both (72 nodes, weight 100).
// Tolerance: the node count within ±2 of 60 and the size weight back on
// the grid value 2000 or its neighbour 5000 (both put large jobs ahead of
// age alike on this trace).
func TestCalibrateRecoversKnownParameters(t *testing.T) {
	truth := LS6()
	truth.SchedLatency = 0
	truth.PriorityWeightJobSize = 2000
	truth.Nodes = truth.Nodes[:60]
	specs := synthJobs(3000, 3)
	s, err := New(truth)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(specs); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Time{})
	var jobs []traces.Job
	var waited int
	for i, r := range s.Results() {
		if r.Start.IsZero() || r.End.IsZero() {
			continue
		}
		sp := specs[i]
		jobs = append(jobs, traces.Job{ID: sp.ID, User: sp.User, Account: sp.User, Submit: sp.Submit, Start: r.Start, End: r.End,
			TimeLimit: sp.TimeLimit, Nodes: sp.Nodes, GPUs: sp.GPUs})
		if r.Start.Sub(sp.Submit) > time.Hour {
			waited++
		}
	}
	if waited < 100 {
		t.Fatalf("only %d jobs waited over an hour: the trace does not constrain the parameters", waited)
	}
	base := LS6()
	base.SchedLatency = 0
	base.PriorityWeightJobSize = 100
	mid := jobs[len(jobs)/2].Submit
	spec := CalibrateSpec{Jobs: jobs, Base: base, HoldNodes: 60, Replicas: 1, Fit: Span{Until: mid}, Score: Span{From: mid}, // no latency: one replay says it all
		Space: Space{Nodes: []int{52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72}, SizeWeight: []float64{0, 100, 500, 2000, 5000}}}
	cal, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base %+v J=%.3f; best %+v J=%.3f after %d replays; scored span KS %.3f → %.3f",
		cal.Base.Params, cal.Base.Objective, cal.Best.Params, cal.Best.Objective, cal.Replays, cal.Base.Score[0].KS, cal.Best.Score[0].KS)
	if n := cal.Best.Params.Nodes; n < 58 || n > 62 {
		t.Errorf("nodes %d, want 60 ± 2", n)
	}
	if w := cal.Best.Params.SizeWeight; w != 2000 && w != 5000 {
		t.Errorf("size weight %v, want 2000 (or 5000)", w)
	}
	if cal.Best.Objective >= cal.Base.Objective {
		t.Errorf("objective %.3f not below the base's %.3f", cal.Best.Objective, cal.Base.Objective)
	}
	// The scored span was never searched on, but the true parameters
	// explain it too.
	if cal.Best.Score[0].KS >= cal.Base.Score[0].KS {
		t.Errorf("scored span: KS %.3f not below the base's %.3f", cal.Best.Score[0].KS, cal.Base.Score[0].KS)
	}
	// Deterministic: the same search gives the same answer.
	again, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.Best.Params != cal.Best.Params || again.Best.Objective != cal.Best.Objective {
		t.Errorf("second search %+v (%.4f), first %+v (%.4f)", again.Best.Params, again.Best.Objective, cal.Best.Params, cal.Best.Objective)
	}
}

func TestCalibrateRefusesEmptySpan(t *testing.T) {
	jobs := []traces.Job{{ID: "1", Submit: time.Unix(1000, 0), Start: time.Unix(1000, 0), End: time.Unix(2000, 0), Nodes: 1}}
	_, err := Calibrate(context.Background(), CalibrateSpec{Jobs: jobs, Base: LS6()})
	if err == nil {
		t.Fatal("calibrated on one job")
	}
}

func TestPresetFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/site.yaml"
	want := Params{Nodes: 70, AgeWeight: 2000, MaxAge: 3 * 24 * time.Hour, SizeWeight: 500, FairshareWeight: 0, SchedLatency: 10 * time.Second, BFInterval: time.Minute}
	if err := WritePresetFile(path, PresetFile{Base: "ls6", Params: want, Trace: "x.log", Objective: 0.1}); err != nil {
		t.Fatal(err)
	}
	c, err := Preset(path) // what every --preset flag calls
	if err != nil {
		t.Fatal(err)
	}
	if got := ParamsOf(c); got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	// Everything else is the base preset's.
	if c.BFWindow != LS6().BFWindow || c.Partitions[0].Name != "gpu-a100" || c.Nodes[69].GPUs != 3 {
		t.Errorf("base values lost: %+v", c)
	}
	for name, body := range map[string]string{
		"typo.yaml":    "base: ls6\nnodez: 3\n",
		"nobase.yaml":  "nodes: 3\nbf_interval: 30s\n",
		"badbase.yaml": "base: ./other.yaml\nnodes: 3\nbf_interval: 30s\n",
		"range.yaml":   "base: ls6\nnodes: 0\nbf_interval: 30s\n",
	} {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Preset(p); err == nil || !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
	if _, err := Preset(dir + "/missing.yaml"); err == nil {
		t.Error("a missing preset file was accepted")
	}
}

// TestRecordedPriorityOrders: one node, busy until 100 s; B (recorded
// priority 0.2) is submitted before C (0.9). Without the recorded factor
// they start in submit order, B at 100 s; with it C goes first.
func TestRecordedPriorityOrders(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	jobs := []JobSpec{
		{ID: "A", User: "a", Submit: t0, TimeLimit: time.Hour, Runtime: 100 * time.Second, Nodes: 1},
		{ID: "B", User: "b", Submit: t0.Add(time.Second), TimeLimit: time.Hour, Runtime: 50 * time.Second, Nodes: 1, RecordedPriority: 0.2},
		{ID: "C", User: "c", Submit: t0.Add(2 * time.Second), TimeLimit: time.Hour, Runtime: 50 * time.Second, Nodes: 1, RecordedPriority: 0.9},
	}
	first := func(weight float64) string {
		c := Defaults()
		c.Nodes = []NodeConfig{{Name: "n1", CPUs: 8}}
		c.PriorityType = PriorityMultifactor
		c.PriorityWeightRecorded = weight
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Load(slices.Clone(jobs)); err != nil {
			t.Fatal(err)
		}
		s.Run(time.Time{})
		for _, r := range s.Results() {
			if r.Start.Equal(t0.Add(100 * time.Second)) {
				return r.ID
			}
		}
		t.Fatalf("nobody started at 100 s: %+v", s.Results())
		return ""
	}
	if got := first(0); got != "B" {
		t.Errorf("weight 0: %s started first, want B (submit order)", got)
	}
	if got := first(1000); got != "C" {
		t.Errorf("weight 1000: %s started first, want C (higher recorded priority)", got)
	}
}

func TestFromTracesScalesRecordedPriority(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	jobs := []traces.Job{
		{ID: "1", Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 1, Priority: 1000},
		{ID: "2", Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 1, Priority: 5000},
		{ID: "3", Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 1},
	}
	specs, _, _ := FromTraces(jobs, nil)
	for i, want := range []float64{0.2, 1, 0} {
		if specs[i].RecordedPriority != want {
			t.Errorf("job %d: recorded priority %v, want %v", i+1, specs[i].RecordedPriority, want)
		}
	}
}

// A recorded eligible time (sacct) is when the replay submits the job.
func TestFromTracesUsesRecordedEligible(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	jobs := []traces.Job{
		{ID: "1", Submit: t0, Eligible: t0.Add(time.Hour), Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), Nodes: 1},
		{ID: "2", Submit: t0, Eligible: t0.Add(5 * time.Hour), Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), Nodes: 1}, // after its start: ignored
	}
	specs, _, _ := FromTraces(jobs, nil)
	if !specs[0].Submit.Equal(t0.Add(time.Hour)) || !specs[1].Submit.Equal(t0) {
		t.Errorf("submits %v, %v; want eligible %v, then %v", specs[0].Submit, specs[1].Submit, t0.Add(time.Hour), t0)
	}
}

// TestCalibrateFindsMaxAge: PriorityMaxAge is searched like the weights.
// Forty days of synthetic LS6 submissions (traces.Synth) are replayed on 64
// nodes with known parameters — age weight 5000 reached after one day,
// size weight 1000 — and the starts of that replay are the trace (a
// quarter of its jobs wait over 2 h). The search starts from the same
// preset with a 14-day max age. What separates them: with one day, age
// grows by 208 an hour and soon outweighs any size (1000 for the whole
// cluster, 16 a node), so the queue is nearly first come, first served;
// with 14 days it grows by 15 an hour and a 16-node job jumps some 16
// hours of queue. The search must find 1 day (or its grid neighbour 2
// days, which orders the queue nearly alike), fitted on the first 30 days,
// and do better than the base on the last 10, which it never saw. (Not
// every draw is this clear: hold detection leaves a third of the jobs out,
// and on 56 nodes with seed 8 the search settles on 7 days.)
func TestCalibrateFindsMaxAge(t *testing.T) {
	synth, err := traces.Synth("ls6", 40, 7)
	if err != nil {
		t.Fatal(err)
	}
	specs, _, _ := FromTraces(synth, nil)
	truth := LS6()
	truth.SchedLatency = 0
	truth.Nodes = truth.Nodes[:64]
	truth.PriorityWeightAge, truth.PriorityMaxAge = 5000, 24*time.Hour
	truth.PriorityWeightJobSize, truth.PriorityWeightFairshare = 1000, 0
	start, err := ReplayStarts(truth, specs)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []traces.Job
	waited := 0
	for _, sp := range specs {
		st := start[sp.ID]
		if st.IsZero() {
			continue
		}
		jobs = append(jobs, traces.Job{ID: sp.ID, User: sp.User, Account: sp.Account, Submit: sp.Submit, Start: st,
			End: st.Add(min(sp.Runtime, sp.TimeLimit)), TimeLimit: sp.TimeLimit, Nodes: sp.Nodes, GPUs: sp.GPUs})
		if st.Sub(sp.Submit) > 2*time.Hour {
			waited++
		}
	}
	if waited < len(jobs)/5 {
		t.Fatalf("only %d jobs waited over 2 h: the trace does not constrain the queue order", waited)
	}
	base := truth
	base.PriorityMaxAge = 14 * 24 * time.Hour
	split := traces.SynthEpoch.AddDate(0, 0, 30)
	day := 24 * time.Hour
	spec := CalibrateSpec{Jobs: jobs, Base: base, HoldNodes: 64, Replicas: 1, Fit: Span{Until: split}, Score: Span{From: split},
		Space: Space{MaxAge: []time.Duration{day, 2 * day, 7 * day, 14 * day}}}
	cal, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	baseScore, bestScore := Objective(cal.Base.Score, 30), Objective(cal.Best.Score, 30)
	t.Logf("base %s J=%.3f; best %s J=%.3f after %d replays; on the scored span J %.3f → %.3f",
		cal.Base.Params, cal.Base.Objective, cal.Best.Params, cal.Best.Objective, cal.Replays, baseScore, bestScore)
	if m := cal.Best.Params.MaxAge; m != day && m != 2*day {
		t.Errorf("max age %s, want 24h (or 48h)", m)
	}
	if cal.Best.Objective >= cal.Base.Objective || bestScore >= baseScore {
		t.Errorf("objective %.3f (base %.3f), on the scored span %.3f (base %.3f): want both below the base's",
			cal.Best.Objective, cal.Base.Objective, bestScore, baseScore)
	}
	// The preset written keeps it.
	path := t.TempDir() + "/cal.yaml"
	if err := WritePresetFile(path, PresetFile{Base: "ls6", Params: cal.Best.Params}); err != nil {
		t.Fatal(err)
	}
	if c, err := Preset(path); err != nil || c.PriorityMaxAge != cal.Best.Params.MaxAge {
		t.Errorf("preset file: max age %s (%v), want %s", c.PriorityMaxAge, err, cal.Best.Params.MaxAge)
	}
	// A scored span that overlaps the fit span is refused.
	spec.Score = Span{From: split.Add(-time.Hour)}
	if _, err := Calibrate(context.Background(), spec); !errors.Is(err, ErrCalibrate) {
		t.Errorf("overlapping spans: %v, want ErrCalibrate", err)
	}
}
