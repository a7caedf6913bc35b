package sim

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

// A latency table delays each job's arrival by its draw: on an empty
// cluster a job submitted at t0 starts at t0 + the drawn latency (one
// value in the table, so the draw is known), and its submission stays t0.
func TestLatencyTableDelaysArrival(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		table []time.Duration
		want  time.Duration
	}{
		{nil, 0},                // SchedLatency 0, no table: at once
		{[]time.Duration{0}, 0}, // a zero draw: at once
		{[]time.Duration{40 * time.Second}, 40 * time.Second}, // every job waits 40 s
	} {
		cfg := Defaults()
		cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
		cfg.Partitions = []PartitionConfig{{Name: "gpu", Default: true}}
		cfg.LatencyTable = tc.table
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		jobs := []JobSpec{
			{ID: "a", Submit: t0, TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 1},
			{ID: "b", Submit: t0.Add(time.Hour), TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 4},
		}
		if err := s.Load(jobs); err != nil {
			t.Fatal(err)
		}
		s.Run(time.Time{})
		for i, r := range s.Results() {
			if !r.Submit.Equal(jobs[i].Submit) {
				t.Errorf("table %v: job %s submitted %s, want %s", tc.table, r.ID, r.Submit, jobs[i].Submit)
			}
			if got := r.Start.Sub(jobs[i].Submit); got != tc.want {
				t.Errorf("table %v: job %s waited %s, want %s", tc.table, r.ID, got, tc.want)
			}
		}
	}
	bad := Defaults()
	bad.Nodes = []NodeConfig{{Name: "n1", CPUs: 1}}
	bad.LatencyTable = []time.Duration{-time.Second}
	if _, err := New(bad); err == nil {
		t.Error("a negative latency was accepted")
	}
}

// openCluster is a trace on a cluster with room for every job at once
// (so every wait it records is the scheduler's latency): job i waits
// wait(i), runs 5 minutes on one node, one job every 10 minutes from t0.
// A first job 49 hours before t0 ends the hold detection's 48-hour
// warm-up, so all n are compared.
func openCluster(n int, t0 time.Time, wait func(i int) time.Duration) []traces.Job {
	first := t0.Add(-49 * time.Hour)
	jobs := []traces.Job{{ID: "0", User: "u", Submit: first, Start: first, End: first.Add(5 * time.Minute), TimeLimit: time.Hour, Nodes: 1, GPUs: 1}}
	for i := range n {
		sub := t0.Add(time.Duration(i) * 10 * time.Minute)
		jobs = append(jobs, traces.Job{ID: strconv.Itoa(i + 1), User: "u", Submit: sub, Start: sub.Add(wait(i)),
			End: sub.Add(wait(i) + 5*time.Minute), TimeLimit: time.Hour, Nodes: 1, GPUs: 1})
	}
	return jobs
}

// The calibration measures the latency on the fit span only and uses it
// when it explains the recorded waits better. Fit span: jobs alternately
// wait 0 and 40 s, so the table's 100 quantiles are 50 × 0 s and 50 × 40 s
// (quantile k takes the sample at (k + ½)/100 of the sorted waits). The
// scored span's jobs all wait 500 s: no entry may be 500 s.
func TestCalibrateFitsLatency(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 400
	mid := t0.Add(n / 2 * 10 * time.Minute)
	jobs := openCluster(n, t0, func(i int) time.Duration {
		switch {
		case i >= n/2:
			return 500 * time.Second
		case i%2 == 1:
			return 40 * time.Second
		}
		return 0
	})
	base := Defaults()
	for i := 1; i <= 4; i++ {
		base.Nodes = append(base.Nodes, NodeConfig{Name: "n" + strconv.Itoa(i), CPUs: 8, GPUs: 4})
	}
	base.Partitions = []PartitionConfig{{Name: "gpu", Default: true}}
	base.SchedLatency = 0
	spec := CalibrateSpec{Jobs: jobs, Base: base, Replicas: 1, Fit: Span{Until: mid}, Score: Span{From: mid},
		Space: Space{SchedLatency: []time.Duration{0, 10 * time.Second, 60 * time.Second}, EmpiricalLatency: []bool{false, true}}}
	cal, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if cal.LatencySamples != n/2 {
		t.Errorf("latency measured on %d jobs, want the fit span's %d", cal.LatencySamples, n/2)
	}
	want := make([]time.Duration, LatencyQuantiles)
	for k := LatencyQuantiles / 2; k < LatencyQuantiles; k++ {
		want[k] = 40 * time.Second
	}
	if !slices.Equal(cal.LatencyTable, want) {
		t.Errorf("latency table %v, want 50 × 0s then 50 × 40s", cal.LatencyTable)
	}
	if !cal.Best.Params.EmpiricalLatency {
		t.Errorf("calibrated %s: the empirical latency reproduces the fit span exactly, the uniform ones do not", cal.Best.Params)
	}
	// Half the replayed waits are 0 s and half 40 s, as recorded: KS 0
	// on the fit span (jobs arrive 10 min apart, so none shares a pass).
	if ks := cal.Best.Fit[0].KS; ks > 0.05 {
		t.Errorf("fit span KS %.3f with the empirical latency, want about 0", ks)
	}
	// The preset file carries the table; loading it gives the same cluster.
	dir := t.TempDir()
	pf, err := CalibratedPreset(Options{Preset: "default"}, "trace", cal)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pf.LatencyTable, want) {
		t.Fatalf("preset file table %v", pf.LatencyTable)
	}
	pf.Params.Nodes = 4
	path := filepath.Join(dir, "p.yaml")
	if err := WritePresetFile(path, pf); err != nil {
		t.Fatal(err)
	}
	// base "default" has no nodes: Apply extends it from the first one it
	// has, so give the file a node list instead.
	list := filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(list, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1024,4,T4\nn2,8000,1024,4,T4\nn3,8000,1024,4,T4\nn4,8000,1024,4,T4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pf.NodeList = list
	if err := WritePresetFile(path, pf); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPresetFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.LatencyTable, want) || len(got.Nodes) != 4 || got.Nodes[0].GPUType != "T4" {
		t.Errorf("loaded preset: table %v, %d nodes (%+v)", got.LatencyTable, len(got.Nodes), got.Nodes[0])
	}
}

// Without enough jobs that the replay starts at once the latency is not
// measured and not searched: every job needs the one node's 4 GPUs for
// 25 minutes and they come 10 minutes apart, so only the first starts at
// once in the zero-latency replay.
func TestCalibrateLatencyNeedsSamples(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := openCluster(60, t0, func(int) time.Duration { return 0 })
	for i := range jobs {
		jobs[i].GPUs, jobs[i].End = 4, jobs[i].Start.Add(25*time.Minute)
	}
	base := Defaults()
	base.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
	base.Partitions = []PartitionConfig{{Name: "gpu", Default: true}}
	spec := CalibrateSpec{Jobs: jobs, Base: base, Replicas: 1, HoldNodes: 1000, // no job counts as held
		Space: Space{EmpiricalLatency: []bool{false, true}}}
	cal, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if cal.LatencySamples != 1 || cal.LatencyTable != nil || cal.Best.Params.EmpiricalLatency || cal.Replays != 1 {
		t.Errorf("1 job started at once: want no table and only the base replayed; got %d samples, table %v, best %s, %d replays",
			cal.LatencySamples, cal.LatencyTable, cal.Best.Params, cal.Replays)
	}
}

// A node list becomes one shared partition of its machines: a 1-GPU pod
// and a 3-GPU pod share a 4-GPU node, a 2-GPU pod goes to the other node.
func TestWithNodeList(t *testing.T) {
	nodes := []traces.Node{{Name: "g1", CPUMilli: 16000, GPUs: 4, Model: "T4"}, {Name: "c1", CPUMilli: 32500}, {Name: "g2", CPUMilli: 8000, GPUs: 2, Model: "P100"}}
	cfg, err := WithNodeList(LS6(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeConfig{{Name: "g1", CPUs: 16, GPUs: 4, GPUType: "T4"}, {Name: "c1", CPUs: 33}, {Name: "g2", CPUs: 8, GPUs: 2, GPUType: "P100"}}
	if !slices.Equal(cfg.Nodes, want) {
		t.Errorf("nodes %+v, want %+v", cfg.Nodes, want)
	}
	if len(cfg.Partitions) != 1 || cfg.Partitions[0].Exclusive || len(cfg.Partitions[0].Nodes) != 0 {
		t.Errorf("partitions %+v, want one shared partition of all nodes", cfg.Partitions)
	}
	if cfg.PriorityWeightAge != LS6().PriorityWeightAge {
		t.Error("the scheduler's parameters must stay the base's")
	}
	cfg.SchedLatency = 0
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Load([]JobSpec{
		{ID: "one", Submit: t0, TimeLimit: time.Hour, Runtime: time.Hour, GPUs: 1},
		{ID: "three", Submit: t0, TimeLimit: time.Hour, Runtime: time.Hour, GPUs: 3},
		{ID: "two", Submit: t0, TimeLimit: time.Hour, Runtime: time.Hour, GPUs: 2},
	}); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Time{})
	for _, r := range s.Results() {
		if !r.Start.Equal(t0) {
			t.Errorf("%s started %s, want at once (1 + 3 GPUs share g1, 2 go to g2)", r.ID, r.Start)
		}
	}
	if _, err := WithNodeList(LS6(), nil); err == nil {
		t.Error("an empty node list was accepted")
	}
	if _, err := WithNodeList(LS6(), []traces.Node{{Name: "a"}, {Name: "a"}}); err == nil {
		t.Error("a repeated node name was accepted")
	}
}

// Apply grows a mixed cluster in its own proportions: copies of its nodes
// in order, not of the first one only.
func TestApplyGrowsMixedCluster(t *testing.T) {
	base := Defaults()
	base.Nodes = []NodeConfig{{Name: "a", GPUs: 4, GPUType: "T4"}, {Name: "b", GPUs: 8, GPUType: "G2"}}
	c, err := Params{Nodes: 5, BFInterval: time.Minute}.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, n := range c.Nodes {
		types = append(types, n.GPUType)
	}
	if want := []string{"T4", "G2", "T4", "G2", "T4"}; !slices.Equal(types, want) {
		t.Errorf("types %v, want %v", types, want)
	}
	if _, err := (Params{Nodes: 2, BFInterval: time.Minute, EmpiricalLatency: true}).Apply(base); err == nil {
		t.Error("an empirical latency without a table was accepted")
	}
}

// A job submitted through the seam is listed pending while its latency
// runs, as squeue lists a job sbatch just accepted: the engine's next
// cycle must not take it for lost. One node, every job's latency 40 s, a
// decision callback every 10 s (it keeps the clock going): submitted at
// t0, the snapshots of t0 and t0+20 s list it pending; at t0+40 s it runs;
// cancelled while latent, another leaves the listing.
func TestLatentJobListedPending(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
	cfg.LatencyTable = []time.Duration{40 * time.Second}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	ctx := context.Background()
	state := func(id string) provisioner.JobState {
		snap, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range snap.Jobs {
			if j.ID == id {
				return j.State
			}
		}
		return ""
	}
	s.OnTick(10*time.Second, func(time.Time, provisioner.Cluster) {})
	req := provisioner.SubmitRequest{Name: "x", Account: "a", TimeLimit: time.Hour, Nodes: 1, GPUs: 1}
	id, err := s.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		want provisioner.JobState
	}{{0, provisioner.StatePending}, {20 * time.Second, provisioner.StatePending}, {40 * time.Second, provisioner.StateRunning}} {
		s.Run(t0.Add(c.at))
		if got := state(id); got != c.want {
			t.Errorf("at t0+%s job %s is %q in the snapshot, want %q", c.at, id, got, c.want)
		}
	}
	other, err := s.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := state(other); got != "" {
		t.Errorf("a job cancelled during its latency is listed %q, want not listed", got)
	}
}

// An end latency table holds an ended job's nodes for its draw (one value,
// 30 s, so the draw is known). One 4-GPU node: job a holds it for 10 min
// from t0; b (4 GPUs, submitted at t0+1 min) waits for it. Without the
// table b starts at a's end, t0+10 min; with it, 30 s later, t0+10m30s,
// while a is recorded ending at t0+10 min. Neither another job's pass nor
// backfill can use the held node: with c (4 GPUs, 1 min) submitted at
// t0+10m10s and backfill on, b still starts at t0+10m30s; b ends at
// t0+20m30s and c starts once that end's 30 s are over, at t0+21m.
func TestEndLatencyTableHoldsTheNodes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		table  []time.Duration
		withC  bool
		startB time.Duration
	}{
		{"no table", nil, false, 10 * time.Minute},
		{"30 s", []time.Duration{30 * time.Second}, false, 10*time.Minute + 30*time.Second},
		{"30 s, a submission 10 s after the end, backfill on", []time.Duration{30 * time.Second}, true, 10*time.Minute + 30*time.Second},
	} {
		cfg := Defaults()
		cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
		cfg.Partitions = []PartitionConfig{{Name: "gpu", Default: true}}
		cfg.Backfill = tc.withC
		cfg.SchedLatency = 0
		cfg.EndLatencyTable = tc.table
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		jobs := []JobSpec{
			{ID: "a", Submit: t0, TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 4},
			{ID: "b", Submit: t0.Add(time.Minute), TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 4},
		}
		if tc.withC {
			jobs = append(jobs, JobSpec{ID: "c", Submit: t0.Add(10*time.Minute + 10*time.Second), TimeLimit: time.Hour, Runtime: time.Minute, GPUs: 4})
		}
		if err := s.Load(jobs); err != nil {
			t.Fatal(err)
		}
		s.Run(time.Time{})
		got := map[string]Result{}
		for _, r := range s.Results() {
			got[r.ID] = r
		}
		if e := got["a"].End; !e.Equal(t0.Add(10 * time.Minute)) {
			t.Errorf("%s: a ended at t0+%s, want t0+10m (the latency holds the node, not the job)", tc.name, e.Sub(t0))
		}
		if st := got["b"].Start.Sub(t0); st != tc.startB {
			t.Errorf("%s: b started at t0+%s, want t0+%s", tc.name, st, tc.startB)
		}
		if tc.withC {
			if st := got["c"].Start.Sub(t0); st != 21*time.Minute {
				t.Errorf("%s: c started at t0+%s, want t0+21m (30 s after b's end)", tc.name, st)
			}
		}
	}
	// What squeue and sinfo show while the node is held: a no longer
	// listed, the node's 4 GPUs still used, b pending.
	cfg := Defaults()
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
	cfg.SchedLatency = 0
	cfg.EndLatencyTable = []time.Duration{30 * time.Second}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load([]JobSpec{
		{ID: "a", Submit: t0, TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 4},
		{ID: "b", Submit: t0.Add(time.Minute), TimeLimit: time.Hour, Runtime: 10 * time.Minute, GPUs: 4},
	}); err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(10*time.Minute + 15*time.Second))
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, j := range snap.Jobs {
		listed = append(listed, j.ID+":"+string(j.State))
	}
	if len(listed) != 1 || listed[0] != "b:"+string(provisioner.StatePending) || snap.Nodes[0].GPUsUsed != 4 {
		t.Errorf("at t0+10m15s: jobs %v, GPUs used %d; want only b pending and the node's 4 GPUs held", listed, snap.Nodes[0].GPUsUsed)
	}
	bad := Defaults()
	bad.Nodes = []NodeConfig{{Name: "n1", CPUs: 1}}
	bad.EndLatencyTable = []time.Duration{-time.Second}
	if _, err := New(bad); err == nil {
		t.Error("a negative end latency was accepted")
	}
}
