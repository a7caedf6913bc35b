package realslurm

import (
	"math"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// Issue 46's acceptance bounds, per release, setting and policy.
const (
	// MeanGapTolerance: the real and the simulated mean |gap| lie within
	// this share of the larger of them ...
	MeanGapTolerance = 0.25
	// ... or within MeanGapFloor of trace time, whichever is larger.
	MeanGapFloor = 10 * time.Minute
	MaxGapKS     = 0.2  // KS distance of the per-hand-off gaps, real against simulated
	MaxWaitKS    = 0.15 // KS distance of the background jobs' waits
	MinWaitRho   = 0.6  // Spearman correlation of the same, job by job
)

// Replays is how many times the benchmark replays each record, with the
// seeds 1, 2, … of the latency draws (the simulator's only randomness).
// One replay of 12 hand-offs differs from another by a KS distance of
// 0.08–0.33 (measured on the first records): the simulator's gap
// distribution is the replays' pooled, and how far the replays are from
// each other is reported beside it (Comparison.SelfKS).
const Replays = 8

// HandOffPair is one hand-off on the real cluster and in the simulator.
type HandOffPair struct {
	Chain     string
	Segment   int
	Nodes     int
	Real, Sim Gap
	More      []Gap // the same hand-off in the other replays (seeds 2, 3, …)
}

// Both reports whether the successor started on the real cluster and in
// every replay.
func (h HandOffPair) Both() bool {
	if !h.Real.OK || !h.Sim.OK {
		return false
	}
	for _, g := range h.More {
		if !g.OK {
			return false
		}
	}
	return true
}

// Comparison is one run beside its replay.
type Comparison struct {
	Record *Record
	Sim    *SimRun
	// ChainPolicy is the policy the chains ran ("default" resolves to what
	// mirage submit picked, e.g. xgb-online-pin).
	ChainPolicy string
	HandOffs    []HandOffPair
	// Waits compares the background jobs' waits (real against simulated,
	// start − submit, seconds) over the jobs that started in both;
	// Recorded the real waits against the trace's recorded waits, scaled.
	Waits, Recorded sim.Stats
	// SelfKS is the simulator against itself, per replay (selfKS);
	// ReplayMeans each replay's own mean |gap| (replayMeans).
	SelfKS      []float64
	ReplayMeans []time.Duration
	// RealUnstarted and SimUnstarted are background jobs submitted that
	// never started (the run ended first).
	RealUnstarted, SimUnstarted int
	// PinnedReal/Sim and UnpinnedReal/Sim count pinned submissions and
	// lifted node lists (the engine's unpin) over the run's chains.
	PinnedReal, PinnedSim, UnpinnedReal, UnpinnedSim int
	// ByBackfill and ByMain count the run's job starts by the pass that
	// made them (slurmctld's log).
	ByBackfill, ByMain int
	// CycleMedian and CycleP90 are the daemon cycles' durations; Cycles
	// how many ran; SubmitLagP90 the 90th percentile of the background
	// jobs' submission (sacct) after their planned time.
	CycleMedian, CycleP90, SubmitLagP90 time.Duration
	Cycles                              int
	// LatencyMedian and LatencyP90 are the real waits of the background
	// jobs the simulator started at once (simulated wait 0): what
	// slurmctld took to start a job it had room for. HeldBack counts the
	// jobs slurmctld started within a backfill pass (wait ≤ bf_interval)
	// that the simulator kept waiting longer than a minute;
	// HeldBackSubNode those of them that asked less than one node's GPUs
	// (what a backfill planned on a partition's summed GPU counts held
	// behind a wider job's reservation where slurmctld backfills them on
	// nodes outside it: 37 of 379 in the first 22.05 run, none since the
	// simulator plans shared nodes one by one).
	LatencyMedian, LatencyP90 time.Duration
	Immediate, HeldBack       int
	HeldBackSubNode           int
}

// Compare pairs a run with its replay.
func Compare(rec *Record, sr *SimRun, more ...*SimRun) *Comparison {
	c := &Comparison{Record: rec, Sim: sr, ChainPolicy: rec.Policy}
	gapsOf := func(r *SimRun, chain string) map[int]Gap {
		m := map[int]Gap{}
		for _, g := range r.Gaps[chain] {
			m[g.Segment] = g
		}
		return m
	}
	for i := range rec.Chains {
		ch := &rec.Chains[i]
		c.ChainPolicy = ch.Status.Policy
		simGaps := gapsOf(sr, ch.Status.ID)
		moreGaps := make([]map[int]Gap, len(more))
		for k, r := range more {
			moreGaps[k] = gapsOf(r, ch.Status.ID)
		}
		for _, g := range ch.RealGaps() {
			h := HandOffPair{Chain: ch.Status.ID, Segment: g.Segment, Nodes: ch.Status.Nodes, Real: g, Sim: simGaps[g.Segment]}
			for _, m := range moreGaps {
				h.More = append(h.More, m[g.Segment])
			}
			c.HandOffs = append(c.HandOffs, h)
		}
		for _, d := range ch.Decisions {
			switch provisioner.Action(d.Action) {
			case provisioner.SubmitPinned:
				c.PinnedReal++
			case provisioner.ActUnpin:
				c.UnpinnedReal++
			}
		}
		c.PinnedSim += sr.Pinned[ch.Status.ID]
		c.UnpinnedSim += sr.Unpinned[ch.Status.ID]
	}
	c.compareWaits(rec, sr)
	c.SelfKS = c.selfKS()
	c.ReplayMeans = c.replayMeans()
	for _, how := range rec.SchedLog {
		switch how {
		case StartedByBackfill:
			c.ByBackfill++
		case StartedByMain:
			c.ByMain++
		}
	}
	var ds []time.Duration
	for _, cy := range rec.Cycles {
		ds = append(ds, cy.Duration)
	}
	c.Cycles = len(ds)
	c.CycleMedian, c.CycleP90 = durQuantile(ds, 0.5), durQuantile(ds, 0.9)
	return c
}

func (c *Comparison) compareWaits(rec *Record, sr *SimRun) {
	var real, simW, recW, recReal []float64
	var nodes, nodesRec []int
	recorded := map[string]time.Duration{}
	planned := map[string]time.Duration{}
	for _, j := range rec.Plan {
		recorded[j.Name], planned[j.Name] = j.Wait, j.At
	}
	var lags, lat []time.Duration
	pass := sr.Config.BFInterval
	for _, j := range rec.Background {
		if at, ok := planned[j.Name]; ok && !j.Submit.IsZero() {
			lags = append(lags, j.Submit.Sub(rec.Start.Add(at)))
		}
		if j.Start.IsZero() {
			c.RealUnstarted++
			continue
		}
		w := j.Start.Sub(j.Submit).Seconds()
		if rw, ok := recorded[j.Name]; ok {
			recW = append(recW, rw.Seconds())
			recReal = append(recReal, w)
			nodesRec = append(nodesRec, j.Nodes)
		}
		st, ok := sr.Starts[j.Name]
		if !ok {
			continue
		}
		submit := j.Submit
		if j.Eligible.After(submit) {
			submit = j.Eligible
		}
		real = append(real, w)
		simW = append(simW, st.Sub(submit).Seconds())
		nodes = append(nodes, j.Nodes)
		if !st.After(submit) {
			lat = append(lat, j.Start.Sub(j.Submit))
		}
		if j.Start.Sub(j.Submit) <= pass && st.Sub(submit) > time.Minute {
			c.HeldBack++
			if j.Nodes <= 1 && j.GPUs < rec.Scale.GPUsPerNode {
				c.HeldBackSubNode++
			}
		}
	}
	c.Immediate = len(lat)
	c.LatencyMedian, c.LatencyP90 = durQuantile(lat, 0.5), durQuantile(lat, 0.9)
	c.SimUnstarted = sr.Unstarted
	c.Waits = sim.Compare(simW, real, nodes)[0]
	c.Recorded = sim.Compare(recW, recReal, nodesRec)[0]
	c.SubmitLagP90 = durQuantile(lags, 0.9)
}

// GapStats are a policy's hand-offs over the pairs measured in both.
type GapStats struct {
	Pairs, Censored   int           // hand-offs measured in both; those censored in either
	RealMean, SimMean time.Duration // mean |gap|
	RealSigned        time.Duration // mean gap (negative: overlap)
	SimSigned         time.Duration
	KS                float64 // KS distance of the real and simulated gaps
}

// Gaps summarises the comparison's hand-offs: the real gaps against the
// simulated ones of every replay, pooled (a hand-off censored on the real
// cluster or in any replay is left out and counted).
func (c *Comparison) Gaps() GapStats {
	var g GapStats
	var real, simG []float64
	for _, h := range c.HandOffs {
		if !h.Both() {
			g.Censored++
			continue
		}
		real = append(real, h.Real.Gap.Seconds())
		simG = append(simG, h.Sim.Gap.Seconds())
		for _, m := range h.More {
			simG = append(simG, m.Gap.Seconds())
		}
	}
	g.Pairs = len(real)
	if g.Pairs == 0 {
		return g
	}
	mean := func(xs []float64, f func(float64) float64) time.Duration {
		sum := 0.0
		for _, x := range xs {
			sum += f(x)
		}
		return time.Duration(sum / float64(len(xs)) * float64(time.Second))
	}
	id := func(x float64) float64 { return x }
	g.RealMean, g.SimMean = mean(real, math.Abs), mean(simG, math.Abs)
	g.RealSigned, g.SimSigned = mean(real, id), mean(simG, id)
	g.KS = sim.KS(simG, real)
	return g
}

// selfKS is the simulator against itself: for each replay, the KS
// distance of its gaps from the other replays' pooled, over the hand-offs
// measured everywhere (none with fewer than two replays). A real run
// could not be expected to come closer to the replays than they come to
// each other.
func (c *Comparison) selfKS() []float64 {
	byReplay := c.byReplay()
	if len(byReplay) < 2 {
		return nil
	}
	var out []float64
	for k := range byReplay {
		var others []float64
		for j := range byReplay {
			if j != k {
				others = append(others, byReplay[j]...)
			}
		}
		out = append(out, sim.KS(others, byReplay[k]))
	}
	return out
}

// byReplay lists each replay's gaps (seconds), first replay first, over
// the hand-offs measured everywhere (as Gaps counts them).
func (c *Comparison) byReplay() [][]float64 {
	var out [][]float64
	for _, h := range c.HandOffs {
		if !h.Both() {
			continue
		}
		all := append([]Gap{h.Sim}, h.More...)
		if out == nil {
			out = make([][]float64, len(all))
		}
		for k, x := range all {
			out[k] = append(out[k], x.Gap.Seconds())
		}
	}
	return out
}

// MeanGapsAgree reports issue 46's first line for g: the real and the
// simulated mean |gap| within MeanGapTolerance of the larger, or within
// MeanGapFloor of trace time at scale s.
func MeanGapsAgree(g GapStats, s Scale) bool {
	if g.Pairs == 0 {
		return false
	}
	diff := (g.RealMean - g.SimMean).Abs()
	tol := time.Duration(MeanGapTolerance * float64(max(g.RealMean, g.SimMean)))
	return diff <= max(tol, s.Real(MeanGapFloor))
}

// durQuantile is the q-quantile of ds (nearest rank below), 0 for none.
func durQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// replayMeans is each replay's mean |gap| over the hand-offs measured
// everywhere (as Gaps counts them): how far one replay's mean strays from
// another's.
func (c *Comparison) replayMeans() []time.Duration {
	byReplay := c.byReplay()
	out := make([]time.Duration, len(byReplay))
	for k, gaps := range byReplay {
		sum := 0.0
		for _, x := range gaps {
			sum += math.Abs(x)
		}
		out[k] = time.Duration(sum / float64(len(gaps)) * float64(time.Second))
	}
	return out
}
