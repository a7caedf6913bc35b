package realslurm

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Page is docs/results/real-slurm.md: every run beside its replay.
type Page struct {
	Scale   Scale
	Design  Design
	Plan    *Plan     // the slice as planned (its first run's plan)
	Started time.Time // when the benchmark started
	Machine string    // cores and load when it started
	Trained string    // what the learned default was trained on
	Runs    []*Comparison
}

// cell is one release and setting.
type cell struct{ release, setting string }

// Write writes the page and returns the acceptance lines that fail (each
// named by its run): the caller fails after the page is written.
func (p *Page) Write(w io.Writer) (failed []string) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s := p.Scale
	h := func(d time.Duration) string { return fmt.Sprintf("%.2f h", s.Trace(d).Hours()) }
	pr("# The real scheduler in the loop (issue 46)\n\n")
	pr("Written by `TestBenchRealSlurm` (`eval/realslurm/bench_test.go`, `make bench-real-slurm`) on %s, never by hand. %s\n\n",
		p.Started.UTC().Format("2006-01-02 15:04 MST"), p.Machine)
	if l := p.runsLine(); l != "" {
		pr("%s\n\n", l)
	}
	p.writeSetup(w)

	pr("## Acceptance\n\n")
	pr("Per release, setting and policy, on the same jobs (issue 46): the mean |gap| of the real run and of the simulator within %.0f%% of the larger or %s of trace time; the KS distance of their per-hand-off gaps ≤ %.2g; the background jobs' waits real against simulated: KS ≤ %.2g and Spearman ≥ %.2g. Gaps in trace time (real seconds × S); a hand-off censored in either (the successor had not started when the run or a replay ended) is left out of the means and counted. The simulated gaps are those of %d replays of each run, pooled (each replay's own mean |gap|: *replays' means*): the replays differ only in the seed of the latency draws, and one replay of a run's hand-offs differs from the others by the KS distance in the column *replays among themselves* (each replay against the others pooled: median, largest), which is as close as a real run could be expected to come. The background waits are those of the first replay.\n\n",
		100*MeanGapTolerance, MeanGapFloor, MaxGapKS, MaxWaitKS, MinWaitRho, Replays)
	pr("| release | setting | policy | hand-offs (censored) | mean \\|gap\\| real | simulated | agree | mean gap real | simulated | replays' means | KS gaps | ≤ %.2g | replays among themselves | waits KS | Spearman | jobs | waits agree |\n", MaxGapKS)
	pr("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Runs {
		g := c.Gaps()
		r := c.Record
		agree := MeanGapsAgree(g, s)
		ksOK := g.Pairs > 0 && g.KS <= MaxGapKS
		waitOK := c.Waits.Jobs > 0 && c.Waits.KS <= MaxWaitKS && c.Waits.Spearman >= MinWaitRho
		pr("| %s | %s | %s | %d (%d) | %s | %s | %s | %s | %s | %s | %.3f | %s | %s | %.3f | %.3f | %d | %s |\n", r.Release, r.Setting.Name(), c.ChainPolicy,
			g.Pairs, g.Censored, h(g.RealMean), h(g.SimMean), yes(agree), h(g.RealSigned), h(g.SimSigned), meansRange(s, c.ReplayMeans), g.KS, yes(ksOK), selfKS(c.SelfKS),
			c.Waits.KS, c.Waits.Spearman, c.Waits.Jobs, yes(waitOK))
		if !agree {
			failed = append(failed, fmt.Sprintf("%s: mean |gap| real %s, simulated %s: not within %.0f%% or %s", r.Key(), h(g.RealMean), h(g.SimMean), 100*MeanGapTolerance, MeanGapFloor))
		}
		if !ksOK {
			failed = append(failed, fmt.Sprintf("%s: KS of the gaps %.3f over %d hand-offs > %.2g", r.Key(), g.KS, g.Pairs, MaxGapKS))
		}
		if !waitOK {
			failed = append(failed, fmt.Sprintf("%s: background waits KS %.3f (≤ %.2g), Spearman %.3f (≥ %.2g) over %d jobs", r.Key(), c.Waits.KS, MaxWaitKS, c.Waits.Spearman, MinWaitRho, c.Waits.Jobs))
		}
	}
	pr("\n%d of %d acceptance lines hold.\n\n", 3*len(p.Runs)-len(failed), 3*len(p.Runs))
	p.writeVerdicts(w)

	p.writeGains(w)
	p.writeDiffers(w)
	p.writeHandOffs(w)
	p.writeWaits(w)
	return failed
}

// runsLine says when the compared real runs ran and which mirage they
// ran (the runs may come from several sittings: MIRAGE_BENCH_RESUME).
func (p *Page) runsLine() string {
	if len(p.Runs) == 0 {
		return ""
	}
	var first, last time.Time
	n := map[string]int{}
	var commits []string
	for _, c := range p.Runs {
		r := c.Record
		if first.IsZero() || r.Start.Before(first) {
			first = r.Start
		}
		if r.Start.After(last) {
			last = r.Start
		}
		k := r.Commit
		if k == "" {
			k = "not kept"
		}
		if n[k] == 0 {
			commits = append(commits, k)
		}
		n[k]++
	}
	parts := make([]string, len(commits))
	for i, k := range commits {
		parts[i] = fmt.Sprintf("%s (%d runs)", k, n[k])
	}
	return fmt.Sprintf("Real runs: %d, started %s – %s; mirage at %s.", len(p.Runs),
		first.UTC().Format("2006-01-02 15:04"), last.UTC().Format("2006-01-02 15:04 MST"), strings.Join(parts, ", "))
}

// meansRange renders the replays' own mean |gap|s: smallest – largest,
// trace hours.
func meansRange(s Scale, ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f – %.2f h", s.Trace(slices.Min(ds)).Hours(), s.Trace(slices.Max(ds)).Hours())
}

// selfKS renders the replays' KS among themselves: median, largest.
func selfKS(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f, %.3f", median(xs), slices.Max(xs))
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func (p *Page) writeSetup(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s, d := p.Scale, p.Design
	pr("## Set-up\n\n")
	pr("- **Cluster**: the project's loopback Slurm (`scripts/slurm-up.sh`, `scripts/slurm-newer/up.sh`) with `MIRAGE_SLURM_NODES=%d`: %d `slurmd` on 127.0.0.1, %d fake GPUs each, partition `long`; the scheduling lines come from a simulator preset (`SchedulingConf`, `MIRAGE_SLURM_SCHED_CONF`), one per setting: priority/multifactor weighing the age factor only (age weight 1000 or 0), PriorityMaxAge the ls6 preset's 7 days scaled (%s), backfill every 2 s (bf_resolution 5 s, bf_window 15 min), a main pass every 10 s and on every event (sched_min_interval=0). The cluster is stopped and started again between runs.\n", s.Nodes, s.Nodes, s.GPUsPerNode, scaledMaxAge(s))
	if p.Plan != nil {
		tu, mu := p.Plan.Utilisation()
		pr("- **Background load**: LS6 (`tacc-ls6-a100`) jobs submitted %s – %s (%d jobs; %d that never ran left out), scaled by %s: submit times and run times divided by S, limits divided by S and rounded up to whole minutes, a job that used its whole limit stops %s before its scaled limit (Slurm kills late); sizes: a job of n LS6 nodes holds n·%d·%d/%d GPUs here (the same share of the cluster; whole GPUs below a node, whole nodes from one node up, rounding errors carried to the next job), so the slice's GPU utilisation %.0f%% on %d LS6 nodes becomes %.0f%% here. Submitted by the second Unix user with `sbatch --wrap 'sleep T'` at their scaled times.\n",
			p.Plan.From.Format("2006-01-02 15:04"), p.Plan.Until.Format("2006-01-02 15:04"), len(p.Plan.Jobs), p.Plan.Skipped, s,
			RunMargin, s.Nodes, s.GPUsPerNode, s.TraceNodes, 100*tu, s.TraceNodes, 100*mu)
	}
	pr("- **Chains**: %d per run, registered by `mirage submit` every %s (%s of trace time) after %s of background load alone, %d segments each of limit %s (%s), each segment sleeping %s; sizes %v whole nodes in turn. `mirage daemon --once` runs every %s (%s of trace time) in a cron-like loop (a cycle that overruns delays the next).\n",
		d.Chains, d.Every, fmtTrace(s, d.Every), d.Warmup, d.Segments, d.Limit, fmtTrace(s, d.Limit), d.Limit-d.Margin, d.Sizes, d.Cycle, fmtTrace(s, d.Cycle))
	pr("- **Policies**: reactive, pin, and the default learned policy as `mirage submit --models DIR` picks it (xgb-online-pin). %s\n", p.Trained)
	pr("- **Simulator**: `Simulate` reads the run's own slurm.conf (`sim.ParseSlurmConf` over `sim.Defaults()`) and sacct records: the background jobs at their recorded submit (eligible) times with their recorded limits, sizes and run times; the chains registered at the times `mirage submit` ran, decided by the same policies through `provisioner.Engine` every cycle, one store for all chains as the daemon keeps one; each segment runs the run's median segment run time. Scheduling latency comes from the run's own probe (20 jobs submitted to the idle cluster before the run, start − submit in sacct's whole seconds): each job reaches the scheduler a latency drawn from it after its submission, and an ended job's nodes stay held for a latency drawn from it (slurmctld's COMPLETING; `sim.Config.LatencyTable`, `EndLatencyTable`). Each run is replayed %d times, with seeds 1–%d of those draws.\n", Replays, Replays)
	pr("- **Time constants the product keeps in real time**: the daemon runs with `--lead %s` (its cycle), so lead and pin submit within one cycle of the limit as on a real site with a 10-minute cron; pin's begin margin (2 min) then never applies. Not scaled: the history window the policies look at (24 h) and the learned guard's low-load class (a wait under 2 h) are %s and %s of trace time here, so the learned default sees every job of the run as recent and every wait as low load. The simulator runs the same code on the same clock, so real and simulated runs compare with each other; the gains below are those of this scaled setting, not of LS6.\n\n",
		d.Cycle, fmtTrace(s, 24*time.Hour), fmtTrace(s, 2*time.Hour))
}

func scaledMaxAge(s Scale) string {
	return Setting{}.Config(s).PriorityMaxAge.String()
}

func fmtTrace(s Scale, d time.Duration) string {
	t := s.Trace(d)
	if t >= 48*time.Hour {
		return fmt.Sprintf("%.1f days", t.Hours()/24)
	}
	return t.Round(time.Minute).String()
}

// writeGains states pin's and the learned default's mean |gap| against
// reactive's, real and simulated, per release and setting.
func (p *Page) writeGains(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s := p.Scale
	pr("## Gains over reactive\n\n")
	pr("Mean |gap| of each policy's run over reactive's run (one run each; each run has its own realisation of the same background schedule), on the real slurmctld and in the simulator replaying those runs. Below 1: better than reactive.\n\n")
	pr("| release | setting | policy | real mean \\|gap\\| | ÷ reactive | simulated | ÷ reactive |\n|---|---|---|---|---|---|---|\n")
	ref := map[cell]GapStats{}
	for _, c := range p.Runs {
		if c.ChainPolicy == "reactive" {
			ref[cell{c.Record.Release, c.Record.Setting.Name()}] = c.Gaps()
		}
	}
	for _, c := range p.Runs {
		g := c.Gaps()
		r, ok := ref[cell{c.Record.Release, c.Record.Setting.Name()}]
		ratio := func(a, b time.Duration) string {
			if !ok || b == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f×", float64(a)/float64(b))
		}
		pr("| %s | %s | %s | %.2f h | %s | %.2f h | %s |\n", c.Record.Release, c.Record.Setting.Name(), c.ChainPolicy,
			s.Trace(g.RealMean).Hours(), ratio(g.RealMean, r.RealMean), s.Trace(g.SimMean).Hours(), ratio(g.SimMean, r.SimMean))
	}
	pr("\n")
}

// writeDiffers measures where the real scheduler differs from the
// simulator: scheduling latency of pinned successors, which pass starts
// jobs, reservations on required nodes, and the loop itself.
func (p *Page) writeDiffers(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pr("## Where the real scheduler differs\n\n")
	pr("Per run: which pass started the real run's jobs (slurmctld's log); the real wait of the background jobs the simulator started at once (scheduling latency: the replay draws each job's from the run's own probe of the idle cluster, and an ended job's nodes stay held for a latency drawn from the same probe, as slurmctld's COMPLETING nodes); the background jobs slurmctld started within a backfill pass that the simulator kept waiting over a minute (and how many of them asked less than one node's GPUs: a held-back job the simulator's node-by-node backfill should not leave); pinned submissions and lifted pins (the daemon lifts a pin when it sees the predecessor ended and the successor still pending: higher-priority jobs stood before it); hand-offs without interruption; the loop's own timing.\n\n")
	pr("| release | setting | policy | starts by backfill (main) | latency median, p90 (jobs) | held back by the simulator (below one node) | pinned submissions real (sim) | node lists lifted real (sim) | successor start − predecessor end ≤ 0 s real (sim), median real (sim) | daemon cycle median, p90 | background submit lag p90 |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Runs {
		var real, simG []float64
		zeroR, zeroS := 0, 0
		for _, h := range c.HandOffs {
			if !h.Both() {
				continue
			}
			real = append(real, h.Real.Gap.Seconds())
			simG = append(simG, h.Sim.Gap.Seconds())
			if h.Real.Gap <= 0 {
				zeroR++
			}
			if h.Sim.Gap <= 0 {
				zeroS++
			}
		}
		pr("| %s | %s | %s | %d (%d) | %s, %s (%d) | %d (%d) | %d (%d) | %d (%d) | %d (%d) of %d, %s (%s) | %s, %s | %s |\n", c.Record.Release, c.Record.Setting.Name(), c.ChainPolicy,
			c.ByBackfill, c.ByMain, c.LatencyMedian, c.LatencyP90, c.Immediate, c.HeldBack, c.HeldBackSubNode, c.PinnedReal, c.PinnedSim, c.UnpinnedReal, c.UnpinnedSim, zeroR, zeroS, len(real),
			secs(median(real)), secs(median(simG)), c.CycleMedian.Round(10*time.Millisecond), c.CycleP90.Round(10*time.Millisecond), c.SubmitLagP90.Round(10*time.Millisecond))
	}
	pr("\n")
	p.writePinned(w)
}

// writePinned counts, per run of a policy that submitted pinned, the
// pinned successors (the pin never lifted) that started within one
// scheduling pass of their predecessor's end, real and simulated.
func (p *Page) writePinned(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pr("**Pinned successors** (submitted pinned to their predecessor's nodes, the pin never lifted): how many started within one scheduling pass of their predecessor's end (0 ≤ gap ≤ bf_interval + 1 s; Slurm's times are whole seconds), on the real slurmctld and in the simulator.\n\n")
	pr("| release | setting | policy | pinned hand-offs real | within one pass | pinned in the replay | within one pass |\n|---|---|---|---|---|---|---|\n")
	for _, c := range p.Runs {
		pass := c.Sim.Config.BFInterval + time.Second
		var nr, wr, ns, ws int
		for _, h := range c.HandOffs {
			if h.Real.Pinned && h.Real.OK {
				nr++
				if h.Real.Gap >= 0 && h.Real.Gap <= pass {
					wr++
				}
			}
			if h.Sim.Pinned && h.Sim.OK {
				ns++
				if h.Sim.Gap >= 0 && h.Sim.Gap <= pass {
					ws++
				}
			}
		}
		if c.PinnedReal+c.PinnedSim == 0 {
			continue // a policy that never pins (reactive); one whose pins were all lifted keeps its row of zeros
		}
		pr("| %s | %s | %s | %d | %d | %d | %d |\n", c.Record.Release, c.Record.Setting.Name(), c.ChainPolicy, nr, wr, ns, ws)
	}
	pr("\n")
}

func secs(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.0f s", x)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// writeHandOffs lists every hand-off, real beside simulated.
func (p *Page) writeHandOffs(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s := p.Scale
	pr("## Every hand-off\n\n")
	pr("Gap = successor start − predecessor end, trace hours (real seconds), simulated in the first replay; \"–\": the successor had not started when the run (or its replay) ended.\n\n")
	pr("| release | setting | policy | chain | segment | nodes | real | simulated |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Runs {
		for _, hp := range c.HandOffs {
			g := func(x Gap) string {
				if !x.OK {
					return "–"
				}
				return fmt.Sprintf("%.2f h (%.0f s)", s.Trace(x.Gap).Hours(), x.Gap.Seconds())
			}
			pr("| %s | %s | %s | %s | %d | %d | %s | %s |\n", c.Record.Release, c.Record.Setting.Name(), c.ChainPolicy, hp.Chain, hp.Segment, hp.Nodes, g(hp.Real), g(hp.Sim))
		}
	}
	pr("\n")
}

// writeWaits compares the background jobs' waits per run.
func (p *Page) writeWaits(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s := p.Scale
	th := func(sec float64) string {
		return fmt.Sprintf("%.2f h", s.Trace(time.Duration(sec*float64(time.Second))).Hours())
	}
	pr("## Background waits\n\n")
	pr("Waits (start − submit) in trace hours of the background jobs that started in both, real against simulated; then the same real waits against LS6's recorded waits of those jobs, scaled (how far the small cluster is from the trace's).\n\n")
	pr("| release | setting | policy | jobs | median real | simulated | p90 real | simulated | KS | Spearman | never started real (sim) | recorded median | KS recorded | Spearman recorded |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Runs {
		ws := c.Waits
		pr("| %s | %s | %s | %d | %s | %s | %s | %s | %.3f | %.3f | %d (%d) | %s | %.3f | %.3f |\n", c.Record.Release, c.Record.Setting.Name(), c.ChainPolicy, ws.Jobs,
			th(ws.RecMedian), th(ws.SimMedian), th(ws.RecP90), th(ws.SimP90), ws.KS, ws.Spearman, c.RealUnstarted, c.SimUnstarted,
			th(c.Recorded.SimMedian), c.Recorded.KS, c.Recorded.Spearman)
	}
	pr("\n")
}

// writeVerdicts says, from the figures above, what the real scheduler
// confirmed of the simulator and what it contradicted, per criterion.
func (p *Page) writeVerdicts(w io.Writer) {
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	s := p.Scale
	var gapOK, ksOK, waitOK, n int
	var simShorter, simLonger int // runs whose simulated mean |gap| is below (above) the real one
	var realMed, simMed []float64
	var selfAll []float64 // every replay's KS against the other replays of its run
	selfN, selfOver := 0, 0
	pinned, pinnedPass, simPinned, simPinnedPass := 0, 0, 0, 0
	var subR, subS, liftR, liftS int // pinned submissions and lifted pins, real and simulated
	for _, c := range p.Runs {
		g := c.Gaps()
		n++
		if MeanGapsAgree(g, s) {
			gapOK++
		}
		if g.Pairs > 0 && g.KS <= MaxGapKS {
			ksOK++
		}
		if c.Waits.Jobs > 0 && c.Waits.KS <= MaxWaitKS && c.Waits.Spearman >= MinWaitRho {
			waitOK++
		}
		switch {
		case g.SimMean < g.RealMean:
			simShorter++
		case g.SimMean > g.RealMean:
			simLonger++
		}
		subR, subS, liftR, liftS = subR+c.PinnedReal, subS+c.PinnedSim, liftR+c.UnpinnedReal, liftS+c.UnpinnedSim
		for _, x := range c.SelfKS {
			selfN++
			selfAll = append(selfAll, x)
			if x > MaxGapKS {
				selfOver++
			}
		}
		realMed = append(realMed, c.Waits.RecMedian)
		simMed = append(simMed, c.Waits.SimMedian)
		pass := c.Sim.Config.BFInterval + time.Second
		for _, h := range c.HandOffs {
			if h.Real.Pinned && h.Real.OK {
				pinned++
				if h.Real.Gap >= 0 && h.Real.Gap <= pass {
					pinnedPass++
				}
			}
			if h.Sim.Pinned && h.Sim.OK {
				simPinned++
				if h.Sim.Gap >= 0 && h.Sim.Gap <= pass {
					simPinnedPass++
				}
			}
		}
	}
	if n == 0 {
		return
	}
	hrs := func(sec float64) string {
		return fmt.Sprintf("%.2f h", s.Trace(time.Duration(sec*float64(time.Second))).Hours())
	}
	pr("What the real scheduler confirmed and contradicted, over the %d runs above:\n\n", n)
	pr("- **Mean gap per policy**: the simulator's mean |gap| agreed with the real one in %d of %d runs (it was shorter in %d, longer in %d).\n", gapOK, n, simShorter, simLonger)
	pr("- **Gap distribution per hand-off**: KS ≤ %.2g in %d of %d runs.", MaxGapKS, ksOK, n)
	if selfN > 0 {
		pr(" The replays themselves: %d of %d replays lie further than %.2g from the other replays of their run (median %.3f)", selfOver, selfN, MaxGapKS, median(selfAll))
		if selfOver > 0 {
			pr(": with %s hand-offs a run, the bound is within the simulator's own variation.", handOffsPerRun(p.Runs))
		} else {
			pr(": with %s hand-offs a run, a real run beyond the bound differs from the simulator by more than the simulator differs from itself.", handOffsPerRun(p.Runs))
		}
	}
	pr("\n")
	pr("- **Background waits**: KS ≤ %.2g and Spearman ≥ %.2g in %d of %d runs; median wait over the runs' medians real %s, simulated %s.\n",
		MaxWaitKS, MinWaitRho, waitOK, n, hrs(median(realMed)), hrs(median(simMed)))
	if pinned+simPinned > 0 {
		pr("- **Pinned successors**: on the real slurmctld %d of %d started within one scheduling pass of their predecessor's end; in the simulator %d of %d.\n", pinnedPass, pinned, simPinnedPass, simPinned)
	}
	if subR+subS > 0 {
		pr("- **Pins lifted**: of the pinned submissions, the daemon lifted %d of %d on the real cluster and %d of %d in the simulator (the successor was still pending when the predecessor ended: queued behind jobs of higher priority). Whether a pinned successor is queued ahead of the jobs it competes with turns on when the daemon first sees no node free, to the second, and on the jobs submitted in those seconds.\n", liftR, subR, liftS, subS)
	}
	pr("\n")
}

// handOffsPerRun says how many hand-offs the runs had ("12", or "10–12").
func handOffsPerRun(runs []*Comparison) string {
	lo, hi := -1, 0
	for _, c := range runs {
		n := len(c.HandOffs)
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
