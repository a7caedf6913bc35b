package realslurm

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// benchScale is the experiment's: S = 300, LS6's 72 × 3 GPUs onto 32 × 4.
var benchScale = Scale{Factor: 300, TraceNodes: 72, TraceGPUsPerNode: 3, Nodes: 32, GPUsPerNode: 4}

// TestNewPlan maps five trace jobs by hand. A job of n LS6 nodes holds
// n·3 of 216 GPUs; here the same share is g* = n·128/72 = 1.7778·n GPUs.
// Sizes: whole GPUs below a node (1 or 2 for one LS6 node), whole nodes
// from one up; the rounding error, in GPU-seconds of scaled run time, is
// carried to the next job (submit order):
//
//	job  run(trace) → run   g*      want = g* + carry/run   size  carry after
//	j1   3000 s     → 10 s  1.7778  1.7778                  2     −2.222
//	j2   6000 s     → 20 s  1.7778  1.7778 − 0.1111=1.6667  2     −6.667
//	j3   3000 s     → 10 s  1.7778  1.7778 − 0.6667=1.1111  1     +1.111
//	j4   30000 s    → 100 s 14.222  14.222 + 0.0111=14.233  16    −176.67 (4 nodes: 12 or 16, midpoint 14)
//	j5   36050 s    → 118 s 1.7778  1.7778 − 1.4972=0.2806  1     −84.89  (min 1 GPU)
//
// j5 ran over its 10 h limit: 2 min here, and it stops 2 s before it
// (RunMargin), not at 120.17 s. Limits: 2 h → 24 s → 1 min; 48 h → 576 s
// → 10 min; 10 h → 120 s → 2 min. Jobs without a start, submitted
// before the slice or at its end are out (one counted as skipped).
func TestNewPlan(t *testing.T) {
	from := time.Date(2023, 2, 8, 0, 0, 0, 0, time.UTC)
	until := from.Add(10 * time.Hour)
	job := func(id string, submit, wait, run, limit time.Duration, nodes int) traces.Job {
		s := from.Add(submit)
		return traces.Job{ID: id, User: "u" + id, Submit: s, Start: s.Add(wait), End: s.Add(wait + run), TimeLimit: limit, Nodes: nodes}
	}
	jobs := []traces.Job{
		job("j1", 0, 600*time.Second, 3000*time.Second, 2*time.Hour, 1),
		job("j2", 600*time.Second, 0, 6000*time.Second, 48*time.Hour, 1),
		job("j3", 1200*time.Second, 0, 3000*time.Second, 2*time.Hour, 1),
		job("j4", 1800*time.Second, 0, 30000*time.Second, 10*time.Hour, 8),
		job("j5", 2400*time.Second, 0, 36050*time.Second, 10*time.Hour, 1),
		{ID: "j6", Submit: from.Add(time.Hour), TimeLimit: time.Hour, Nodes: 1}, // never started
		job("j7", -time.Second, 0, time.Hour, 2*time.Hour, 1),                   // before the slice
		job("j8", 10*time.Hour, 0, time.Hour, 2*time.Hour, 1),                   // at its end
	}
	p, err := NewPlan(jobs, from, until, benchScale)
	if err != nil {
		t.Fatal(err)
	}
	want := []BackgroundJob{
		{TraceID: "j1", Name: "bg-j1", User: "uj1", At: 0, Limit: time.Minute, Run: 10 * time.Second, Wait: 2 * time.Second, Nodes: 1, GPUs: 2},
		{TraceID: "j2", Name: "bg-j2", User: "uj2", At: 2 * time.Second, Limit: 10 * time.Minute, Run: 20 * time.Second, Nodes: 1, GPUs: 2},
		{TraceID: "j3", Name: "bg-j3", User: "uj3", At: 4 * time.Second, Limit: time.Minute, Run: 10 * time.Second, Nodes: 1, GPUs: 1},
		{TraceID: "j4", Name: "bg-j4", User: "uj4", At: 6 * time.Second, Limit: 2 * time.Minute, Run: 100 * time.Second, Nodes: 4, GPUs: 16},
		{TraceID: "j5", Name: "bg-j5", User: "uj5", At: 8 * time.Second, Limit: 2 * time.Minute, Run: 118 * time.Second, Nodes: 1, GPUs: 1},
	}
	if len(p.Jobs) != len(want) {
		t.Fatalf("%d jobs, want %d: %+v", len(p.Jobs), len(want), p.Jobs)
	}
	for i := range want {
		if p.Jobs[i] != want[i] {
			t.Errorf("job %d: %+v\nwant %+v", i, p.Jobs[i], want[i])
		}
	}
	if p.Skipped != 1 {
		t.Errorf("skipped %d, want 1 (j6)", p.Skipped)
	}
	// GPU-seconds: trace 3·3000 + 3·6000 + 3·3000 + 24·30000 + 3·36050 =
	// 864150 over 10 h of 216 GPUs: 0.11113; here 2·10 + 2·20 + 1·10 +
	// 16·100 + 1·118 = 1788 over 120 s of 128 GPUs: 0.11641.
	tu, mu := p.Utilisation()
	if math.Abs(tu-864150.0/(36000*216)) > 1e-9 || math.Abs(mu-1788.0/(120*128)) > 1e-9 {
		t.Errorf("utilisation %.5f → %.5f, want 0.11113 → 0.11641", tu, mu)
	}
	if got := p.Jobs[3].GPUsPerNode(); got != 4 {
		t.Errorf("j4 asks %d GPUs per node, want 4", got)
	}
	// As a trace for mirage train: submit at the origin + At, start after
	// the scaled wait, end after the run.
	origin := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tj := p.TraceJobs(origin)[0]
	if !tj.Submit.Equal(origin) || !tj.Start.Equal(origin.Add(2*time.Second)) || !tj.End.Equal(origin.Add(12*time.Second)) || tj.GPUs != 2 || tj.TimeLimit != time.Minute {
		t.Errorf("trace job %+v", tj)
	}
}

func TestNewPlanErrors(t *testing.T) {
	from := time.Date(2023, 2, 8, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		scale Scale
		until time.Time
	}{
		{"no time scale", Scale{TraceNodes: 72, TraceGPUsPerNode: 3, Nodes: 32, GPUsPerNode: 4}, from.Add(time.Hour)},
		{"no nodes", Scale{Factor: 300, TraceNodes: 72, TraceGPUsPerNode: 3, GPUsPerNode: 4}, from.Add(time.Hour)},
		{"empty slice", benchScale, from},
		{"no job in the slice", benchScale, from.Add(time.Hour)},
	} {
		_, err := NewPlan(nil, from, tc.until, tc.scale)
		if !errors.Is(err, ErrPlan) {
			t.Errorf("%s: %v, want ErrPlan", tc.name, err)
		}
	}
}

// TestSchedulingConfRoundTrip: the lines SchedulingConf writes for a
// setting read back, through sim.ParseSlurmConf, into the same settings.
// PriorityMaxAge: the ls6 preset's 7 days / 300 = 33.6 min → 34 min.
func TestSchedulingConfRoundTrip(t *testing.T) {
	for _, set := range []Setting{{AgeWeight: 1000}, {AgeWeight: 0}} {
		cfg := set.Config(benchScale)
		lines, err := SchedulingConf(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(lines, "PriorityMaxAge=34\n") || !strings.Contains(lines, "SchedulerParameters=bf_interval=2,bf_resolution=5,bf_window=15,sched_interval=10,bf_max_job_test=500,sched_min_interval=0\n") {
			t.Errorf("%s:\n%s", set.Name(), lines)
		}
		got, err := sim.ParseSlurmConf(strings.NewReader(lines), sim.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if got.PriorityType != sim.PriorityMultifactor || got.PriorityWeightAge != set.AgeWeight || got.PriorityMaxAge != 34*time.Minute || got.PriorityCalcPeriod != time.Minute ||
			got.PriorityDecayHalfLife != cfg.PriorityDecayHalfLife || got.PriorityWeightFairshare != 0 || got.PriorityWeightJobSize != 0 ||
			got.PriorityWeightQOS != 0 || got.PriorityWeightPartition != 0 || !got.Backfill || got.BFInterval != 2*time.Second ||
			got.BFResolution != 5*time.Second || got.BFWindow != 15*time.Minute || got.SchedInterval != 10*time.Second || got.BFMaxJobTest != 500 {
			t.Errorf("%s: read back %+v", set.Name(), got)
		}
	}
	bad := Setting{AgeWeight: 1000}.Config(benchScale)
	bad.BFWindow = 90 * time.Second
	if _, err := SchedulingConf(bad); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "bf_window") {
		t.Errorf("bf_window 90s: %v, want an error naming it", err)
	}
	bad = Setting{AgeWeight: 0.5}.Config(benchScale)
	if _, err := SchedulingConf(bad); !errors.Is(err, ErrPlan) {
		t.Errorf("age weight 0.5: %v, want an error", err)
	}
	bad = Setting{AgeWeight: 1000}.Config(benchScale)
	bad.MaxJobsAccrue = 2
	if _, err := SchedulingConf(bad); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "sacctmgr") {
		t.Errorf("MaxJobsAccrue 2: %v, want an error naming sacctmgr", err)
	}
	// The other site settings the simulator models round-trip too.
	site := Setting{AgeWeight: 1000}.Config(benchScale)
	site.PriorityAccrueAlways, site.BFMaxJobUser, site.BFMinAgeReserve = true, 3, 30*time.Second
	lines, err := SchedulingConf(site)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sim.ParseSlurmConf(strings.NewReader(lines), sim.Defaults())
	if err != nil || !got.PriorityAccrueAlways || got.BFMaxJobUser != 3 || got.BFMinAgeReserve != 30*time.Second {
		t.Errorf("site settings read back %+v (%v) from\n%s", got, err, lines)
	}
}

func TestDesign(t *testing.T) {
	d := Design{Cycle: 2 * time.Second, Warmup: time.Minute, Chains: 3, Every: 10 * time.Second, Sizes: []int{1, 2}, Segments: 3, Limit: 2 * time.Minute, Margin: 2 * time.Second, Deadline: 5 * time.Minute}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	cps := d.ChainPlans()
	// Registered at 60, 70, 80 s; sizes 1, 2, 1; each segment sleeps 118 s.
	want := []ChainPlan{{At: time.Minute, Nodes: 1, Segments: 3, Limit: 2 * time.Minute, Work: 118 * time.Second},
		{At: 70 * time.Second, Nodes: 2, Segments: 3, Limit: 2 * time.Minute, Work: 118 * time.Second},
		{At: 80 * time.Second, Nodes: 1, Segments: 3, Limit: 2 * time.Minute, Work: 118 * time.Second}}
	for i := range want {
		if cps[i] != want[i] {
			t.Errorf("chain %d: %+v, want %+v", i, cps[i], want[i])
		}
	}
	if l := d.Length(); l != 80*time.Second+5*time.Minute {
		t.Errorf("length %s, want 6m20s", l)
	}
	d.Limit = 90 * time.Second
	if err := d.Validate(); !errors.Is(err, ErrPlan) {
		t.Errorf("a 90 s limit: %v, want ErrPlan", err)
	}
}
