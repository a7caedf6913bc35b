package sim

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/acceptance"
	"github.com/mirage-gpu/mirage/traces"
)

// calibrationResults is the page TestCalibrateLS6 writes.
const calibrationResults = "../docs/results/calibration.md"

// TestCalibrateLS6 is issue 19's calibration on the shared LS6 cut: the
// ls6 preset's parameters are searched on the jobs submitted before
// February 2023 and the result is scored on February's, which the search
// never saw, next to the hand-made preset. A replay per candidate (about
// 150 of them) makes it minutes long: it runs with MIRAGE_CALIBRATE=1 or
// MIRAGE_UPDATE_RESULTS=1, which also writes docs/results/calibration.md.
//
// Its acceptance line is about the later span: on February, the
// calibrated preset's objective J (the fidelity it was fitted for,
// Objective, groups of 30 jobs or more) is at most the hand-made preset's.
// A search that only fitted its own span (overfitting the months before)
// fails it. Issue 19's per-group targets (KS ≤ 0.10, Pearson ≥ 0.4) are
// stated as targets, not asserted: out of the grid's reach on February
// when this line was written (calibration.md: not even the search fitted
// on February itself reaches them).
func TestCalibrateLS6(t *testing.T) {
	update := os.Getenv("MIRAGE_UPDATE_RESULTS") == "1"
	if os.Getenv("MIRAGE_CALIBRATE") == "" && !update {
		t.Skip("set MIRAGE_CALIBRATE=1 (or MIRAGE_UPDATE_RESULTS=1) to calibrate on the LS6 trace (minutes)") // opt-in, never in CI: writes docs/results/calibration.md
	}
	jobs := loadLS6(t)
	chi, _ := time.LoadLocation("America/Chicago")
	feb, mar := time.Date(2023, 2, 1, 0, 0, 0, 0, chi), time.Date(2023, 3, 1, 0, 0, 0, 0, chi)
	spec := CalibrateSpec{Jobs: jobs, Base: LS6(), Fit: Span{Until: feb}, Score: Span{From: feb, Until: mar}, Space: DefaultSpace(LS6())}
	start := time.Now()
	cal, err := Calibrate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	t.Logf("base %s J=%.3f; calibrated %s J=%.3f; %d replays in %s", cal.Base.Params, cal.Base.Objective, cal.Best.Params, cal.Best.Objective, cal.Replays, wall.Round(time.Second))
	if cal.Best.Objective > cal.Base.Objective {
		t.Errorf("calibrated objective %.3f above the preset's %.3f: the search starts from the preset and keeps only improvements", cal.Best.Objective, cal.Base.Objective)
	}
	acc := acceptance.New(calibrationResults)
	later := laterSpanLine(acc, cal)
	t.Log(later)
	if update {
		// Diagnostics of what limits February's fidelity (never a preset):
		// the same search fitted on February itself, and February's jobs
		// split by whether a shorter idle stretch than the hold detection's
		// hour marks them.
		onFeb := spec
		onFeb.Fit, onFeb.Score = spec.Score, Span{}
		bound, err := Calibrate(context.Background(), onFeb)
		if err != nil {
			t.Fatal(err)
		}
		limits := febBound(cal, bound) + shortHolds(t, jobs, cal, spec.Score)
		writeCalibrationResults(t, cal, wall, later, limits, largestMisses(t, jobs, cal, spec.Score, 12))
	}
	acc.Check(t) // after the page: it records the line, met or not
}

// laterSpanLine is the page's acceptance line on the scored span (after
// the one fitted on): the calibrated preset's objective there at most the
// hand-made preset's, both stated, with the calibrated one's on the fit
// span beside them.
func laterSpanLine(acc *acceptance.Lines, cal *Calibration) string {
	minGroup := 30 * cal.Replicas // Stats count each job once per replica
	base, best := Objective(cal.Base.Score, minGroup), Objective(cal.Best.Score, minGroup)
	line := fmt.Sprintf("objective J on February (not fitted on), calibrated ≤ hand-made: %.3f against %.3f (calibrated on the fit span: %.3f)", best, base, cal.Best.Objective)
	return fmt.Sprintf("- %s — %s\n", line, acc.Verdict(best <= base, line))
}

// febBound tabulates, per size group, the February fidelity of the preset
// calibrated before February against the search fitted on February itself
// (bound): how close any parameters of the grid come.
func febBound(cal, bound *Calibration) string {
	var b strings.Builder
	b.WriteString("**How close any parameters come.** The same search fitted on February itself (a diagnostic: parameters chosen while\n")
	b.WriteString("looking at February are never scored on it, and this preset is not used anywhere) finds ")
	fmt.Fprintf(&b, "%s (objective %.3f). February's\nfidelity with it, beside the calibrated preset's:\n\n", bound.Best.Params, bound.Best.Objective)
	b.WriteString("| group | jobs | KS calibrated | KS fitted on February | Pearson calibrated | Pearson fitted on February |\n|---|---|---|---|---|---|\n")
	for i, s := range cal.Best.Score {
		o := bound.Best.Fit[i]
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.2f | %.2f |\n", s.Group, s.Jobs/cal.Replicas, s.KS, o.KS, s.Pearson, o.Pearson)
	}
	worst, group := 0.0, ""
	for _, o := range bound.Best.Fit {
		if o.Jobs >= 30*bound.Replicas && o.KS > worst {
			worst, group = o.KS, o.Group
		}
	}
	fmt.Fprintf(&b, "\nEven fitted on February, the largest KS of a group the objective counts (30 jobs or more) is %.3f (%s): ", worst, group)
	if worst > 0.10 {
		b.WriteString("no parameters of the grid bring every group to 0.10, so the target is out of the calibration's reach on this month.\n")
	} else {
		b.WriteString("parameters of the grid exist that bring every group to 0.10.\n")
	}
	return b.String()
}

// shortHolds replays the calibrated preset (its replicas' seeds) and
// tabulates February's compared jobs by size group: those that waited
// while at least their size in nodes stood idle for 10 minutes or more
// (by the recorded timeline; the hold detection needs an hour) against
// the rest, with the KS distance of each part.
func shortHolds(t *testing.T, jobs []traces.Job, cal *Calibration, span Span) string {
	t.Helper()
	reason, elig := Holds(jobs, HoldOptions{Nodes: cal.HoldNodes})
	short, _ := Holds(jobs, HoldOptions{Nodes: cal.HoldNodes, IdleHold: 10 * time.Minute})
	specs, index, _ := FromTraces(jobs, elig)
	cfg, err := cal.Best.Params.Apply(LS6())
	if err != nil {
		t.Fatal(err)
	}
	type part struct {
		sw, rw []float64
		nodes  []int
	}
	var idle, rest part
	for k := 0; k < cal.Replicas; k++ {
		c := cfg
		c.Seed = cfg.Seed + uint64(k)
		start, err := ReplayStarts(c, specs)
		if err != nil {
			t.Fatal(err)
		}
		for sk, i := range index {
			j := &jobs[i]
			st := start[specs[sk].ID]
			if reason[i] != HoldNone || !span.holds(j.Submit) || st.IsZero() {
				continue
			}
			p := &rest
			if short[i] == HoldIdle {
				p = &idle
			}
			p.sw, p.rw, p.nodes = append(p.sw, st.Sub(j.Submit).Seconds()), append(p.rw, j.Wait().Seconds()), append(p.nodes, j.Nodes)
		}
	}
	si, sr := Compare(idle.sw, idle.rw, idle.nodes), Compare(rest.sw, rest.rw, rest.nodes)
	var b strings.Builder
	b.WriteString("\n**Waits no schedule explains.** February's compared jobs split by whether, while they waited, at least their size in\n")
	b.WriteString("nodes stood idle for 10 minutes or more by the recorded start and end times (the hold detection leaves a job out only\n")
	b.WriteString("after an hour). Such a wait came from something the trace does not record (a short hold, a reservation, a node\n")
	b.WriteString("draining, limits); the simulator starts those jobs on the idle nodes. Calibrated preset, its replicas pooled:\n\n")
	b.WriteString("| group | jobs | of them idle ≥ 10 min while waiting | KS of those | median wait of those, recorded | simulated | KS of the others | median wait of the others, recorded | simulated |\n|---|---|---|---|---|---|---|---|---|\n")
	for i := range si {
		n := (si[i].Jobs + sr[i].Jobs) / cal.Replicas
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d (%.0f %%) | %.3f | %s | %s | %.3f | %s | %s |\n", si[i].Group, n, si[i].Jobs/cal.Replicas, 100*float64(si[i].Jobs)/float64(si[i].Jobs+sr[i].Jobs),
			si[i].KS, fidelityDur(si[i].RecMedian), fidelityDur(si[i].SimMedian), sr[i].KS, fidelityDur(sr[i].RecMedian), fidelityDur(sr[i].SimMedian))
	}
	return b.String()
}

func writeCalibrationResults(t *testing.T, cal *Calibration, wall time.Duration, later, limits, misses string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# Simulator calibration on the LS6 trace\n\n")
	b.WriteString("<!-- Generated by TestCalibrateLS6 (sim/calibrate_ls6_test.go); do not edit. -->\n")
	b.WriteString("Regenerate: `MIRAGE_UPDATE_RESULTS=1 go test -tags \"libsqlite3 xgboost\" -run TestCalibrateLS6 -timeout 1h ./sim/`\n")
	b.WriteString("(needs the shared trace `tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz`). The same search from the command line:\n")
	b.WriteString("`mirage sim calibrate --trace ls6-a100-until-2023-03-01.log.gz --fit-until 2023-02-01 --out ls6-calibrated.yaml`.\n\n")
	fmt.Fprintf(&b, "Coordinate descent over `sim.DefaultSpace` from the hand-made `ls6` preset, fitted on the %d jobs submitted before\n", cal.Compared)
	fmt.Fprintf(&b, "2023-02-01 and scored on the %d jobs of February 2023, which the search never looked at (jobs with recorded holds\n", cal.Scored)
	fmt.Fprintf(&b, "left out, detected with %d usable nodes: %v). %d candidates, each replayed %d times (seeds 1–%d of the scheduling\n",
		cal.HoldNodes, cal.Excluded, cal.Replays, cal.Replicas, cal.Replicas)
	fmt.Fprintf(&b, "latency's draws; their waits pooled), %s on 2 cores. Objective (lower\n", wall.Round(time.Second))
	b.WriteString("is better): the largest KS distance over the size groups + 0.25 × (1 − Spearman's ρ of the jobs of ≥ 5 nodes),\n")
	b.WriteString("groups with fewer than 30 jobs not counted. Trace fields used: submit, start, end, nodes, time limit, user and account\n")
	b.WriteString("(fair-share), and the recorded priority (LS6's `Priority` at accounting time, scaled by the largest) as a factor\n")
	b.WriteString("of its own whose weight is searched too (`PriorityWeightRecorded`, 0 in the hand-made preset).\n\n")
	writeCalibrationTables(&b, cal, "ls6", "ls6 (hand-made)", "February 2023 (scored, not fitted on)", "Before February 2023 (fitted on)")
	b.WriteString("\n## Acceptance, measured on February (after the span fitted on)\n\n")
	b.WriteString("The calibration must not make the month after its fit span worse than the hand-made preset it started from\n")
	b.WriteString("(asserted by the test: a \"no\" fails it):\n\n")
	b.WriteString(later)
	b.WriteString("\nIssue 19's targets for the calibrated preset, stated, not asserted (how close any parameters of the grid come on\n")
	b.WriteString("February, even fitted on February itself, is below):\n\n")
	for _, s := range cal.Best.Score {
		if s.Group == GroupLarge {
			fmt.Fprintf(&b, "- Pearson ≥ 0.4 for jobs of ≥ 5 nodes: %.2f (%d jobs) — %s\n", s.Pearson, s.Jobs/cal.Replicas, acceptance.Target(s.Pearson >= 0.4))
			continue
		}
		fmt.Fprintf(&b, "- KS ≤ 0.10, %s: %.3f (%d jobs) — %s\n", s.Group, s.KS, s.Jobs/cal.Replicas, acceptance.Target(s.KS <= 0.10))
	}
	b.WriteString("\n## What limits February's fidelity\n\n")
	b.WriteString(limits)
	b.WriteString("\n## What limits the large jobs\n\n")
	b.WriteString("The February jobs of ≥ 5 nodes whose simulated wait (calibrated preset, seed 1) is furthest from the recorded one. A job\n")
	b.WriteString("that waited while at least its size in nodes stood idle (by the recorded start and end times) was held by something the\n")
	b.WriteString("trace does not record (a reservation, a dependency on an older job, a hold shorter than the 1 h the hold detection\n")
	b.WriteString("needs, maintenance); no schedule of the recorded jobs explains its wait.\n\n")
	b.WriteString(misses)
	if err := os.WriteFile(calibrationResults, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", calibrationResults)
}

// writeCalibrationTables writes the parameters of the base preset
// (baseRow) and the calibrated one, then the fidelity of both on the
// scored span and on the fit span, groups with jobs only.
func writeCalibrationTables(b *strings.Builder, cal *Calibration, baseName, baseRow, scoredTitle, fitTitle string) {
	b.WriteString("| preset | nodes | weight age | weight size | weight fair-share | weight recorded priority | latency | bf_interval | objective (fit) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range []struct {
		name string
		ev   Evaluation
	}{{baseRow, cal.Base}, {"calibrated", cal.Best}} {
		p := e.ev.Params
		lat := "uniform 0–" + p.SchedLatency.String()
		if p.EmpiricalLatency {
			lat = "empirical (per job)"
		}
		fmt.Fprintf(b, "| %s | %d | %g | %g | %g | %g | %s | %s | %.3f |\n", e.name, p.Nodes, p.AgeWeight, p.SizeWeight, p.FairshareWeight, p.RecordedWeight, lat, p.BFInterval, e.ev.Objective)
	}
	if len(cal.LatencyTable) > 0 {
		q := func(f float64) string {
			return cal.LatencyTable[min(len(cal.LatencyTable)-1, int(f*float64(len(cal.LatencyTable))))].String()
		}
		fmt.Fprintf(b, "\nThe empirical latency the search could choose instead of the uniform one: the recorded waits of the %d fit-span jobs that a\n", cal.LatencySamples)
		b.WriteString("replay without latency started the moment they were submitted (the cluster had room; what they waited is what the real\n")
		fmt.Fprintf(b, "scheduler took), as %d quantiles, each job drawing one: p50 %s, p90 %s, p99 %s. ", len(cal.LatencyTable), q(0.5), q(0.9), q(0.99))
		if cal.Best.Params.EmpiricalLatency {
			b.WriteString("It was chosen.\n")
		} else {
			b.WriteString("It was not chosen (the uniform latency fits better).\n")
		}
	}
	for _, part := range []struct {
		title      string
		base, best []Stats
	}{{scoredTitle, cal.Base.Score, cal.Best.Score}, {fitTitle, cal.Base.Fit, cal.Best.Fit}} {
		fmt.Fprintf(b, "\n## %s\n\n", part.title)
		fmt.Fprintf(b, "| group | jobs | KS %[1]s | KS calibrated | Pearson %[1]s | Pearson calibrated | Spearman %[1]s | Spearman calibrated | median abs. error %[1]s | calibrated | p90 abs. error %[1]s | calibrated |\n", baseName)
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for i, s := range part.best {
			if s.Jobs == 0 {
				continue
			}
			o := part.base[i]
			fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s |\n", s.Group, s.Jobs/cal.Replicas, o.KS, s.KS, o.Pearson, s.Pearson,
				o.Spearman, s.Spearman, fidelityDur(o.MedianAbsErr), fidelityDur(s.MedianAbsErr), fidelityDur(o.P90AbsErr), fidelityDur(s.P90AbsErr))
		}
	}
}

// largestMisses replays the trace once with the calibrated parameters and
// lists the jobs of ≥ 5 nodes in the scored span whose simulated wait is
// furthest from the recorded one, with what the recorded timeline says
// about their wait: the most nodes that stood idle at once while they
// waited (of holdNodes usable; ≥ the job's size means a schedule would
// have started them, so something not in the trace held them).
func largestMisses(t *testing.T, jobs []traces.Job, cal *Calibration, span Span, top int) string {
	t.Helper()
	reason, elig := Holds(jobs, HoldOptions{Nodes: cal.HoldNodes})
	specs, index, _ := FromTraces(jobs, elig)
	cfg, err := cal.Best.Params.Apply(LS6())
	if err != nil {
		t.Fatal(err)
	}
	start, err := ReplayStarts(cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	// recorded busy nodes as a step function
	type ev struct {
		t int64
		d int
	}
	var evs []ev
	for i := range jobs {
		if !jobs[i].Start.IsZero() && !jobs[i].End.IsZero() {
			evs = append(evs, ev{jobs[i].Start.Unix(), jobs[i].Nodes}, ev{jobs[i].End.Unix(), -jobs[i].Nodes})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	maxIdle := func(from, to int64) int {
		busy, idle := 0, 0
		for _, e := range evs {
			if e.t > to {
				break
			}
			busy += e.d
			if e.t >= from {
				idle = max(idle, cal.HoldNodes-busy)
			}
		}
		return idle
	}
	type miss struct {
		id                 string
		nodes, idle        int
		submit             time.Time
		rec, sim, absError time.Duration
	}
	var ms []miss
	for k, i := range index {
		j := &jobs[i]
		if reason[i] != HoldNone || j.Nodes < 5 || !span.holds(j.Submit) || start[specs[k].ID].IsZero() {
			continue
		}
		sw := start[specs[k].ID].Sub(j.Submit)
		ms = append(ms, miss{id: j.ID, nodes: j.Nodes, submit: j.Submit, rec: j.Wait(), sim: sw, absError: (sw - j.Wait()).Abs(),
			idle: maxIdle(j.Submit.Unix(), j.Start.Unix())})
	}
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Compare(b.absError, a.absError) })
	var b strings.Builder
	b.WriteString("| job | nodes | submitted | recorded wait | simulated wait | most nodes idle at once while it waited (recorded) |\n|---|---|---|---|---|---|\n")
	for _, m := range ms[:min(top, len(ms))] {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d of %d |\n", m.id, m.nodes, m.submit.Format("2006-01-02 15:04"), fidelityDur(m.rec.Seconds()), fidelityDur(m.sim.Seconds()), m.idle, cal.HoldNodes)
	}
	return b.String()
}
