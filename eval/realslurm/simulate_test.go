package realslurm

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// tinyRecord is a run on two nodes of 4 GPUs (age weight 0):
//
//	T0     bg-1 (a whole node, runs 100 s) starts on one node
//	T0+5   bg-2 (a whole node, 30 s) starts on the other
//	T0+10  mirage submit registers a reactive chain of 2 segments of one
//	       whole node (limit 1 min); segment 0 queues: no node is free
//	T0+35  bg-2 ends: segment 0 starts
//	T0+40  bg-3 (a whole node, 10 s) queues: no node is free
//	T0+85  segment 0 ends (it runs the run's segment run time, 50 s):
//	       bg-3, the only job queued, starts
//	T0+86  the daemon's cycle (every 2 s from T0) sees segment 0 ended:
//	       reactive submits segment 1, which queues
//	T0+95  bg-3 ends: segment 1 starts. The hand-off's gap: 95 − 85 = 10 s.
func tinyRecord(t0 time.Time) *Record {
	set := Setting{AgeWeight: 0}
	lines, err := SchedulingConf(set.Config(benchScale))
	if err != nil {
		panic(err)
	}
	conf := lines + "GresTypes=gpu\n" +
		"NodeName=node1 NodeHostname=localhost Port=1 CPUs=8 RealMemory=16000 Gres=gpu:tesla:4 State=UNKNOWN\n" +
		"NodeName=node2 NodeHostname=localhost Port=2 CPUs=8 RealMemory=16000 Gres=gpu:tesla:4 State=UNKNOWN\n" +
		"PartitionName=long Nodes=node[1-2] MaxTime=60 DefaultTime=10 Default=YES State=UP\n"
	bg := func(name string, submit, run time.Duration) provisioner.Job {
		return provisioner.Job{ID: name, Name: name, User: "mirageb", Account: "teama", Partition: "long", Submit: t0.Add(submit),
			TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 4, State: provisioner.StateCompleted, Start: t0.Add(submit), End: t0.Add(submit + run)}
	}
	return &Record{Release: "22.05", Setting: set, Policy: provisioner.PolicyReactive, Scale: benchScale, Cycle: 2 * time.Second, SlurmConf: conf,
		Start: t0, End: t0.Add(200 * time.Second),
		Plan:       []BackgroundJob{{Name: "bg-1", Run: 100 * time.Second}, {Name: "bg-2", Run: 30 * time.Second}, {Name: "bg-3", Run: 10 * time.Second}},
		Background: []provisioner.Job{bg("bg-1", 0, 100*time.Second), bg("bg-2", 5*time.Second, 30*time.Second), bg("bg-3", 40*time.Second, 10*time.Second)},
		Chains: []ChainRun{{
			Registered: t0.Add(10 * time.Second), Work: 48 * time.Second,
			Status: chainops.ChainJSON{ID: "c-20300101-aaaaaa", Name: "chain0", Policy: provisioner.PolicyReactive, Segments: 2, MaxRetries: 2,
				Account: "teama", Partition: "long", TimeLimitS: 60, Nodes: 1, GPUs: 4, State: "done"},
			// The segments' run time on the real cluster: 50 s (the median).
			Jobs: []provisioner.Job{{ID: "11", State: provisioner.StateCompleted, Start: t0, End: t0.Add(50 * time.Second)}},
		}},
	}
}

func TestSimulateByHand(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := tinyRecord(t0)
	sr, err := Simulate(context.Background(), rec, func(name string) (provisioner.Policy, error) { return provisioner.BaselinePolicy(name) })
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"bg-1": 0, "bg-2": 5 * time.Second, "bg-3": 85 * time.Second} {
		if got, ok := sr.Starts[name]; !ok || !got.Equal(t0.Add(want)) {
			t.Errorf("%s started at T0+%s (ok %v), want T0+%s", name, got.Sub(t0), ok, want)
		}
	}
	gaps := sr.Gaps["c-20300101-aaaaaa"]
	if len(gaps) != 1 || gaps[0] != (Gap{Segment: 1, Gap: 10 * time.Second, OK: true}) {
		t.Errorf("gaps %+v, want segment 1 starting 10 s after segment 0 ended", gaps)
	}
	if sr.Unstarted != 0 || sr.Pinned["c-20300101-aaaaaa"] != 0 {
		t.Errorf("unstarted %d, pinned %d: want 0, 0", sr.Unstarted, sr.Pinned["c-20300101-aaaaaa"])
	}
}

// TestComparePooledByHand: two hand-offs, real gaps 0 s and 10 s; replay
// 1 simulates 2 s and 10 s, replay 2 0 s and 10 s; a third hand-off
// started in replay 1 but not in replay 2 is censored.
//
//	pooled simulated gaps {0, 2, 10, 10}: mean |gap| 22/4 = 5.5 s; real 5 s.
//	KS: at x = 0 the real CDF is 1/2, the pooled 1/4: 0.25; at x = 2 both
//	1/2; from 10 both 1: 0.25.
//	Replays among themselves: {2, 10} against {0, 10}: at x = 0, 0 against
//	1/2: 0.5; and {0, 10} against {2, 10} the same: [0.5 0.5].
func TestComparePooledByHand(t *testing.T) {
	ok := func(seg int, sec float64) Gap {
		return Gap{Segment: seg, Gap: time.Duration(sec * float64(time.Second)), OK: true}
	}
	c := &Comparison{HandOffs: []HandOffPair{
		{Segment: 1, Real: ok(1, 0), Sim: ok(1, 2), More: []Gap{ok(1, 0)}},
		{Segment: 2, Real: ok(2, 10), Sim: ok(2, 10), More: []Gap{ok(2, 10)}},
		{Segment: 3, Real: ok(3, 4), Sim: ok(3, 4), More: []Gap{{Segment: 3}}},
	}}
	g := c.Gaps()
	if g.Pairs != 2 || g.Censored != 1 || g.RealMean != 5*time.Second || g.SimMean != 5500*time.Millisecond || g.KS != 0.25 {
		t.Errorf("%+v", g)
	}
	if got := c.replayMeans(); !slices.Equal(got, []time.Duration{6 * time.Second, 5 * time.Second}) {
		t.Errorf("replays' means %v, want [6s 5s] ((2 + 10)/2, (0 + 10)/2)", got)
	}
	if got := c.selfKS(); !slices.Equal(got, []float64{0.5, 0.5}) {
		t.Errorf("replays among themselves %v, want [0.5 0.5]", got)
	}
	if got := (&Comparison{HandOffs: c.HandOffs[:2:2]}).selfKS(); len(got) != 2 {
		t.Errorf("selfKS of two replays: %v", got)
	}
	one := &Comparison{HandOffs: []HandOffPair{{Segment: 1, Real: ok(1, 0), Sim: ok(1, 2)}}}
	if got := one.selfKS(); got != nil {
		t.Errorf("one replay: %v, want none", got)
	}
}

// TestCompareByHand: two hand-offs, real gaps 10 s and 0 s, simulated 10 s
// and 2 s; a third censored in the replay.
//
//	mean |gap| real (10 + 0)/2 = 5 s, simulated (10 + 2)/2 = 6 s;
//	they agree: |5 − 6| = 1 s ≤ max(25% of 6 s = 1.5 s, 10 min / 300 = 2 s).
//	KS: real {0, 10}, simulated {2, 10}: at x = 0 the real CDF is 1/2, the
//	simulated 0: 0.5.
func TestCompareByHand(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Comparison{HandOffs: []HandOffPair{
		{Segment: 1, Real: Gap{Segment: 1, Gap: 10 * time.Second, OK: true}, Sim: Gap{Segment: 1, Gap: 10 * time.Second, OK: true}},
		{Segment: 2, Real: Gap{Segment: 2, Gap: 0, OK: true}, Sim: Gap{Segment: 2, Gap: 2 * time.Second, OK: true}},
		{Segment: 3, Real: Gap{Segment: 3, Gap: 4 * time.Second, OK: true}, Sim: Gap{Segment: 3, Gap: 0, OK: false}},
	}}
	g := c.Gaps()
	if g.Pairs != 2 || g.Censored != 1 || g.RealMean != 5*time.Second || g.SimMean != 6*time.Second || g.KS != 0.5 {
		t.Errorf("%+v", g)
	}
	if !MeanGapsAgree(g, benchScale) {
		t.Error("5 s and 6 s do not agree; want agreement (1 s ≤ 2 s)")
	}
	// 5 s against 9 s: |4 s| > max(25% of 9 s = 2.25 s, 2 s).
	if MeanGapsAgree(GapStats{Pairs: 2, RealMean: 5 * time.Second, SimMean: 9 * time.Second}, benchScale) {
		t.Error("5 s and 9 s agree; want not")
	}
	// 100 s against 130 s: |30 s| ≤ 25% of 130 s = 32.5 s.
	if !MeanGapsAgree(GapStats{Pairs: 2, RealMean: 100 * time.Second, SimMean: 130 * time.Second}, benchScale) {
		t.Error("100 s and 130 s do not agree; want agreement")
	}
	if MeanGapsAgree(GapStats{}, benchScale) {
		t.Error("no hand-off agrees; want not")
	}

	// A record's own gaps: sacct's times of each segment's last attempt.
	rec := tinyRecord(t0)
	ch := &rec.Chains[0]
	ch.Status.SegmentList = []chainops.SegmentJSON{{Index: 0, JobID: "11"}, {Index: 1, Attempt: 0, JobID: "12"}, {Index: 1, Attempt: 1, JobID: "13"}}
	ch.Jobs = []provisioner.Job{
		{ID: "11", State: provisioner.StateCompleted, Start: t0, End: t0.Add(50 * time.Second)},
		{ID: "12", State: provisioner.StateFailed, Start: t0.Add(51 * time.Second), End: t0.Add(52 * time.Second)},
		{ID: "13", State: provisioner.StateCompleted, Start: t0.Add(57 * time.Second), End: t0.Add(90 * time.Second)},
	}
	if g := ch.RealGaps(); len(g) != 1 || g[0] != (Gap{Segment: 1, Gap: 7 * time.Second, OK: true}) {
		t.Errorf("real gaps %+v, want segment 1 (its last attempt) 7 s after segment 0", g)
	}
}

// TestSchedLogLines: slurmctld's lines for a job started by the main pass
// and by backfill, as 22.05 and 24.11 wrote them on the loopback cluster.
func TestSchedLogLines(t *testing.T) {
	for line, want := range map[string][]string{
		"[2026-12-07T01:32:40.001] sched: Allocate JobId=1 NodeList=node1 #CPUs=1 Partition=long":                     {"2026-12-07T01:32:40.001", "sched: Allocate", "1"},
		"[2026-12-07T00:58:12.345] sched/backfill: _start_job: Started JobId=120 in long on node3":                    {"2026-12-07T00:58:12.345", "", "120"},
		"[2026-12-07T00:58:12.345] _job_complete: JobId=120 done":                                                     nil,
		"[2026-12-07T00:58:12.345] _slurm_rpc_submit_batch_job: JobId=121 InitPrio=4294901759 usec=1048":              nil,
		"[2026-12-07T00:58:12.345] sched: _release_job_rec: release hold on JobId=7 by uid 0 (Allocate JobId=8 made)": nil,
	} {
		m := schedLogRe.FindStringSubmatch(line)
		if want == nil {
			if m != nil {
				t.Errorf("%q matched %q", line, m)
			}
			continue
		}
		if m == nil || m[1] != want[0] || m[2] != want[1] || m[3] != want[2] {
			t.Errorf("%q: %q, want %q", line, m, want)
		}
	}
}

// TestMarkPinned: a successor submitted pinned counts as pinned unless a
// later decision lifted its node list.
func TestMarkPinned(t *testing.T) {
	gaps := []Gap{{Segment: 1, OK: true}, {Segment: 2, OK: true}, {Segment: 3, OK: true}}
	acts := []provisioner.Action{provisioner.Wait, provisioner.SubmitPinned, provisioner.ActUnpin, provisioner.SubmitPinned, provisioner.SubmitNow}
	segs := []int{1, 1, 1, 2, 3}
	got := markPinned(gaps, acts, segs)
	if got[0].Pinned || !got[1].Pinned || got[2].Pinned {
		t.Errorf("pinned %v %v %v, want false (lifted), true, false (submitted unpinned)", got[0].Pinned, got[1].Pinned, got[2].Pinned)
	}
}

// TestCompareWaitsByHand: five background jobs submitted at T on nodes
// of 4 GPUs, each of 1 GPU but e (a whole node); backfill every 3 s in
// the replay's configuration.
//
//	a: real start T+1,  simulated T     → the simulator started it at once:
//	   a scheduling latency of 1 s;
//	b: real start T+2,  simulated T+90  → slurmctld started it within a
//	   backfill pass, the simulator held it back over a minute (below one
//	   node);
//	c: real start T+30, simulated T+30  → neither;
//	d: never started on the real cluster;
//	e: real start T+3,  simulated T+120 → held back (a whole node).
func TestCompareWaitsByHand(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(name string, start time.Duration) provisioner.Job {
		j := provisioner.Job{ID: name, Name: name, Submit: t0, Nodes: 1, GPUs: 1}
		if start >= 0 {
			j.Start = t0.Add(start)
		}
		return j
	}
	whole := job("e", 3*time.Second)
	whole.GPUs = 4 // a whole node of 4 GPUs
	rec := &Record{Start: t0, Scale: Scale{GPUsPerNode: 4}, Background: []provisioner.Job{job("a", time.Second), job("b", 2*time.Second), job("c", 30*time.Second), job("d", -1), whole}}
	sr := &SimRun{Starts: map[string]time.Time{"a": t0, "b": t0.Add(90 * time.Second), "c": t0.Add(30 * time.Second), "e": t0.Add(120 * time.Second)}}
	sr.Config.BFInterval = 3 * time.Second
	c := &Comparison{}
	c.compareWaits(rec, sr)
	// Held back (real ≤ 3 s, simulated > 1 min): b (1 GPU) and e (a whole node).
	if c.Immediate != 1 || c.LatencyMedian != time.Second || c.HeldBack != 2 || c.HeldBackSubNode != 1 || c.RealUnstarted != 1 || c.Waits.Jobs != 4 {
		t.Errorf("immediate %d latency %s held back %d (below a node %d) unstarted %d jobs %d; want 1, 1s, 2 (1), 1, 4",
			c.Immediate, c.LatencyMedian, c.HeldBack, c.HeldBackSubNode, c.RealUnstarted, c.Waits.Jobs)
	}
	// Real waits a,b,c,e {1, 2, 30, 3} against simulated {0, 90, 30, 120}:
	// ranks 1 2 4 3 against 1 3 2 4, Spearman 1 − 6·(0+1+4+1)/(4·15) = 0.4.
	if math.Abs(c.Waits.Spearman-0.4) > 1e-9 {
		t.Errorf("Spearman %.3f, want 0.4", c.Waits.Spearman)
	}
}

// TestWritePinned: a policy that never pins has no row; one that pinned
// 12 times with every pin lifted keeps a row of zeros; one pinned
// successor 3 s after its predecessor's end is within one pass
// (bf_interval 2 s + 1 s = 3 s), one 4 s after is not, and a lifted pin
// (Pinned false) is not counted.
func TestWritePinned(t *testing.T) {
	cfg := func() *SimRun { r := &SimRun{}; r.Config.BFInterval = 2 * time.Second; return r }
	run := func(pol string, pinned int, h ...HandOffPair) *Comparison {
		return &Comparison{Record: &Record{Release: "22.05", Setting: Setting{AgeWeight: 1000}}, Sim: cfg(), ChainPolicy: pol, PinnedReal: pinned, PinnedSim: pinned, HandOffs: h}
	}
	gap := func(s int, pinned bool) Gap {
		return Gap{Segment: 1, Gap: time.Duration(s) * time.Second, OK: true, Pinned: pinned}
	}
	p := &Page{Runs: []*Comparison{
		run("reactive", 0, HandOffPair{Real: gap(10, false), Sim: gap(10, false)}),
		run("pin", 12, HandOffPair{Real: gap(60, false), Sim: gap(40, false)}),
		run("xgb-online-pin", 3,
			HandOffPair{Real: gap(3, true), Sim: gap(0, true)},
			HandOffPair{Real: gap(4, true), Sim: gap(5, false)},
			HandOffPair{Real: gap(1, false), Sim: gap(1, true)}),
	}}
	var buf strings.Builder
	p.writePinned(&buf)
	out := buf.String()
	if strings.Contains(out, "| reactive |") {
		t.Errorf("a row for reactive, which never pins:\n%s", out)
	}
	// real: 2 pinned (3 s within, 4 s not); simulated: 2 pinned (0 s and 1 s, both within).
	for _, row := range []string{"| 22.05 | age1000 | pin | 0 | 0 | 0 | 0 |", "| 22.05 | age1000 | xgb-online-pin | 2 | 1 | 2 | 2 |"} {
		if !strings.Contains(out, row) {
			t.Errorf("no row %q in\n%s", row, out)
		}
	}
}

// TestSimulateProbeLatency: tinyRecord with a latency probe that measured
// 3 s for every job, so that each job reaches the scheduler 3 s after its
// submission (sim.Config.LatencyTable) and an ended job's node stays held
// 3 s (sim.Config.EndLatencyTable):
//
//	T0+3   bg-1 starts on one node (ends T0+103, its node free at T0+106)
//	T0+8   bg-2 starts on the other (ends T0+38)
//	T0+10  segment 0 is submitted; at T0+13 it queues: no node is free
//	T0+38  bg-2 ends; its node is free at T0+41: segment 0 starts (ends T0+91)
//	T0+40  bg-3 is submitted; at T0+43 it queues
//	T0+91  segment 0 ends; its node is free at T0+94 and bg-3 starts there
//	       (ends T0+104, free at T0+107); the daemon's next cycle submits
//	       segment 1, which reaches the scheduler 3 s later and queues
//	T0+106 bg-1's node is free: segment 1 starts. The gap: 106 − 91 = 15 s.
func TestSimulateProbeLatency(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := tinyRecord(t0)
	rec.Probe = []time.Duration{3 * time.Second}
	sr, err := Simulate(context.Background(), rec, func(name string) (provisioner.Policy, error) { return provisioner.BaselinePolicy(name) })
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"bg-1": 3 * time.Second, "bg-2": 8 * time.Second, "bg-3": 94 * time.Second} {
		if got, ok := sr.Starts[name]; !ok || !got.Equal(t0.Add(want)) {
			t.Errorf("%s started at T0+%s (ok %v), want T0+%s", name, got.Sub(t0), ok, want)
		}
	}
	gaps := sr.Gaps["c-20300101-aaaaaa"]
	if len(gaps) != 1 || gaps[0] != (Gap{Segment: 1, Gap: 15 * time.Second, OK: true}) {
		t.Errorf("gaps %+v, want segment 1 starting 15 s after segment 0 ended", gaps)
	}
}

// A replay whose policy cannot decide (here: every policy fails to load,
// as a learned one does when the program has not registered its model
// kind) is an error, not a replay of a chain that never decided.
func TestSimulateFailsWhenThePolicyCannotDecide(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := tinyRecord(t0)
	_, err := Simulate(context.Background(), rec, func(name string) (provisioner.Policy, error) {
		return nil, errors.New(`unknown model kind "xgb"`)
	})
	if err == nil || !strings.Contains(err.Error(), "could not decide") || !strings.Contains(err.Error(), `unknown model kind "xgb"`) {
		t.Fatalf("Simulate: %v, want an error saying the replay could not decide, with the policy's error", err)
	}
}
