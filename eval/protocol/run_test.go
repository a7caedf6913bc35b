package protocol

import (
	"bytes"
	"context"
	"errors"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/report"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestWorkLedger: the books of three work-conserving chains, worked by hand
// (hours; W = 100, limit 48, C = R = 1):
//
//	no overlap: seg0 0–48 saves 47−1 = 46; seg1 starts 50, saves 97−51 = 46;
//	  seg2 starts 98, restarts until 99 and finishes the last 8 at 107.
//	early start, hand-off: seg1 starts at 40, seg0 checkpoints its work
//	  until 40 (39) and ends at 41; seg1 restores 41–42 and saves 87−42 = 45;
//	  seg2 starts at 88 and finishes the last 16 at 105.
//	early start, no hand-off: seg0 runs to 48 (46); seg1 idles 40–48,
//	  restores until 49 and saves 87−49 = 38; seg2 finishes the last 16 at 105.
func TestWorkLedger(t *testing.T) {
	h := func(x float64) time.Duration { return time.Duration(x * float64(time.Hour)) }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(x float64) time.Time { return t0.Add(h(x)) }
	for _, c := range []struct {
		name    string
		handOff bool
		starts  []float64
		signals []string // job signalled by each start
		finish  []float64
		works   []float64
		ends    []float64
		done    float64
	}{
		{"no overlap", true, []float64{0, 50, 98}, []string{"", "", ""}, []float64{-1, -1, 107}, []float64{46, 46, 8}, []float64{48, 98, 107}, 107},
		{"hand-off", true, []float64{0, 40, 88}, []string{"", "j0", ""}, []float64{-1, -1, 105}, []float64{39, 45, 16}, []float64{41, 88, 105}, 105},
		{"no hand-off", false, []float64{0, 40, 88}, []string{"", "", ""}, []float64{-1, -1, 105}, []float64{46, 38, 16}, []float64{48, 88, 105}, 105},
	} {
		l := newWorkLedger(h(100), h(1), h(1), h(48), c.handOff)
		for k, s := range c.starts {
			sig, fin := l.started(k, "j"+string(rune('0'+k)), at(s))
			wantFin := time.Time{}
			if c.finish[k] >= 0 {
				wantFin = at(c.finish[k])
			}
			if sig != c.signals[k] || !fin.Equal(wantFin) {
				t.Errorf("%s: segment %d starting at %v h: signal %q, finish %v; want %q, %v", c.name, k, s, sig, fin, c.signals[k], wantFin)
			}
			if k == 0 && !l.doneAt().IsZero() {
				t.Errorf("%s: done after one segment", c.name)
			}
		}
		var total time.Duration
		for k := range c.starts {
			s := l.segs[k]
			total += s.work
			if s.work != h(c.works[k]) || !s.end.Equal(at(c.ends[k])) {
				t.Errorf("%s: segment %d saved %v, ends %v h; want %v h, %v h", c.name, k, s.work, s.end.Sub(t0).Hours(), c.works[k], c.ends[k])
			}
		}
		if total != h(100) || !l.doneAt().Equal(at(c.done)) {
			t.Errorf("%s: work %v, done at %v; want 100 h done at %v h", c.name, total, l.doneAt().Sub(t0).Hours(), c.done)
		}
	}
}

func TestDowntime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(x int) time.Time { return t0.Add(time.Duration(x) * time.Minute) }
	spans := []interval{{m(60), m(115)}, {m(0), m(55)}, {m(50), m(58)}, {m(120), m(135)}}
	// uncovered: 58–60 and 115–120 → 7 min; and 135–140 when the window runs on.
	if d := downtime(m(0), m(135), spans); d != 7*time.Minute {
		t.Errorf("downtime %v, want 7m", d)
	}
	if d := downtime(m(0), m(140), spans); d != 12*time.Minute {
		t.Errorf("downtime %v, want 12m", d)
	}
	if d := downtime(m(10), m(10), spans); d != 0 {
		t.Errorf("empty window: %v", d)
	}
}

// TestRunWholeRunsEmptyCluster replays whole runs on an empty 4-node
// cluster (decisions every 10 min from the injection T; a job starts as it
// is submitted): W = 100 min, limit 55 min, C = R = 5 min. Worked by hand
// (minutes after T):
//
//	reactive: seg0 0–55 saves 45; seg1 60–115 restores until 65, saves
//	  110−65 = 45; seg2 starts 120 and finishes the last 10 at 135.
//	  Completion 135, downtime 10, charged 55+55+15 = 125 min × 4 GPUs.
//	lead 20 min, hand-off: seg1 due at 35, starts at the 40 cycle; seg0
//	  checkpoints its work until 40 (35) and ends at 45; seg1 restores
//	  45–50; seg2 due at 40+55−20 = 75, starts at 80; seg1 saves 80−50 = 30
//	  and ends at 85; seg2 restores 85–90 and finishes the last 35 at 125.
//	  The policy cannot know that: seg3 is due at 80+55−20 = 115, starts at
//	  120 (too late to hand off: seg2 ends at 120 + C) and exits at 125 with
//	  nothing to do. Completion 125, four segments, two hand-offs, gaps −5,
//	  −5, −5, no downtime, charged 45+45+45+5 = 140 min.
//	lead 20 min, no hand-off: seg0 runs to 55 (45); seg1 (40–95) restores
//	  55–60 and saves 90−60 = 30; seg2 (from 80) waits for 95, restores
//	  until 100 and finishes the last 25 at 125; seg3 as above. Completion
//	  125, gaps −15, −15, −5, charged 55+55+45+5 = 160 min.
//	dependency: seg1 (submitted at 10 with afterany) starts at 55, restores
//	  55–60 and saves 105−60 = 45 by its limit at 110; seg2 (submitted at
//	  the 60 cycle) starts at 110, restores until 115 and finishes the last
//	  10 at 125; seg3, submitted at the 120 cycle, is released at 125 as
//	  the work ends: it is charged (0 min) but is no segment and no hand-off
//	  of the run. Completion 125, three segments, gaps 0 and 0, charged
//	  55+55+15 min.
//
// Reactive and dependency never overlap: hand-off on or off, their runs
// are the same.
func TestRunWholeRunsEmptyCluster(t *testing.T) {
	T := chainT0.Add(time.Hour)
	factory := func(name string) (provisioner.Policy, error) {
		return provisioner.BaselinePolicy(name, provisioner.WithLead(20*time.Minute))
	}
	type want struct {
		completion, downtime, charged time.Duration
		segments, handoffs            int
		gaps                          []time.Duration
	}
	m := func(x int) time.Duration { return time.Duration(x) * time.Minute }
	for _, noHandOff := range []bool{false, true} {
		setup := ChainSetup{
			Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
			Cell:     "empty", LoadScale: 1,
			From: chainT0, Until: T.Add(time.Minute), Warmup: time.Hour, Interval: 2 * time.Hour,
			Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour,
			Work: 100 * time.Minute, NoHandOff: noHandOff,
			Policies: []string{provisioner.PolicyReactive, provisioner.PolicyLead, provisioner.PolicyDependency}, Factory: factory,
		}
		samples, runs, unmeasured, err := RunWholeRuns(context.Background(), setup)
		if err != nil {
			t.Fatal(err)
		}
		wants := map[string]want{
			provisioner.PolicyReactive:   {m(135), m(10), m(125), 3, 0, []time.Duration{m(5), m(5)}},
			provisioner.PolicyLead:       {m(125), 0, m(140), 4, 2, []time.Duration{m(-5), m(-5), m(-5)}},
			provisioner.PolicyDependency: {m(125), 0, m(125), 3, 0, []time.Duration{0, 0}},
		}
		if noHandOff {
			wants[provisioner.PolicyLead] = want{m(125), 0, m(160), 4, 0, []time.Duration{m(-15), m(-15), m(-5)}}
		}
		if len(runs) != 3 || unmeasured[metrics.Reference]+unmeasured[provisioner.PolicyLead]+unmeasured[provisioner.PolicyDependency] != 0 {
			t.Fatalf("no hand-off %v: runs %+v, unmeasured %v", noHandOff, runs, unmeasured)
		}
		for _, r := range runs {
			w := wants[r.Policy]
			if r.Completion != w.completion || r.Downtime != w.downtime || r.Segments != w.segments || r.HandOffs != w.handoffs ||
				r.Censored || r.Protocol != metrics.ProtocolRun || r.Work != 100*time.Minute || r.LoadClass != metrics.LoadLow || r.GPUs != 4 {
				t.Errorf("no hand-off %v: %s run %+v; want completion %v, downtime %v, %d segments, %d hand-offs", noHandOff, r.Policy, r, w.completion, w.downtime, w.segments, w.handoffs)
			}
			if wantCharged := 4 * w.charged.Hours(); !approx(r.ChargedGPU, wantCharged) || !approx(r.UsefulGPU, 4*100.0/60) {
				t.Errorf("no hand-off %v: %s charged %v, useful %v GPU-h; want %v, %v", noHandOff, r.Policy, r.ChargedGPU, r.UsefulGPU, wantCharged, 4*100.0/60)
			}
			if r.Overhead() != w.completion-100*time.Minute {
				t.Errorf("overhead %v", r.Overhead())
			}
		}
		gaps := map[string][]time.Duration{}
		for _, s := range samples {
			// lead's third hand-off has no reactive counterpart: its class is its run's
			if s.Protocol != metrics.ProtocolRun || s.LoadClass != metrics.LoadLow {
				t.Errorf("sample %+v: want protocol run, class low", s)
			}
			gaps[s.Policy] = append(gaps[s.Policy], s.Gap)
		}
		for p, w := range wants {
			if !slices.Equal(gaps[p], w.gaps) {
				t.Errorf("no hand-off %v: %s gaps %v, want %v", noHandOff, p, gaps[p], w.gaps)
			}
		}
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestRunReport: whole runs in the report. From the empty-cluster runs
// above (hand-off on): reactive overhead 35 min and 125 min × 4 GPUs
// charged, lead 25 min and 140 min × 4 GPUs, so lead's overhead is
// 25/35 = 0.71× reactive's and its charge 140/125 = 1.12×. Every number
// shown in report.md and report.html must equal report.json; a changed
// whole-run number or a missing row is caught; the JSON round-trips; a
// merge of the two policies' halves equals the whole.
func TestRunReport(t *testing.T) {
	T := chainT0.Add(time.Hour)
	setup := ChainSetup{
		Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
		Cell:     "empty", LoadScale: 1,
		From: chainT0, Until: T.Add(3 * time.Hour), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour, Work: 100 * time.Minute,
		Policies: []string{provisioner.PolicyReactive, provisioner.PolicyLead},
		Factory: func(name string) (provisioner.Policy, error) {
			return provisioner.BaselinePolicy(name, provisioner.WithLead(20*time.Minute))
		},
	}
	samples, runs, _, err := RunWholeRuns(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 { // injections at T and T+2h, two policies
		t.Fatalf("%d runs, want 4", len(runs))
	}
	prov := metrics.Provenance{Mirage: "test", Cells: []metrics.CellInfo{{Name: "empty/run", Cell: "empty", Protocol: metrics.ProtocolRun, LoadScale: 1}}}
	pols := []string{metrics.Reference, provisioner.PolicyLead}
	r, err := report.New("runs", pols, prov, samples, report.Bootstrap{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetRuns(runs); err != nil {
		t.Fatal(err)
	}
	var lead *metrics.RunStats
	for i := range r.RunGroups {
		if g := &r.RunGroups[i]; g.Policy == provisioner.PolicyLead && g.Nodes == 0 && g.LoadClass == metrics.AllClasses {
			lead = g
		}
	}
	if lead == nil || lead.N != 2 || lead.OverheadRatio == nil || math.Abs(*lead.OverheadRatio-25.0/35) > 1e-12 ||
		lead.ChargedRatio == nil || math.Abs(*lead.ChargedRatio-140.0/125) > 1e-12 || math.Abs(lead.OverheadMean-25.0/60) > 1e-12 ||
		lead.SegmentsMean != 4 || lead.HandOffsMean != 2 || math.Abs(lead.Goodput-100.0/140) > 1e-12 || lead.CI == nil ||
		lead.OthersDelta == nil || *lead.OthersDelta != 0 { // the trace's one job ended before the first injection

		t.Fatalf("lead's whole-run group: %+v", lead)
	}
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := report.Verify(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, report.MarkdownFile))
	if !strings.Contains(string(md), "| lead | 2 | 0 | ") || !strings.Contains(string(md), "0.71×") {
		t.Errorf("report.md lacks lead's whole-run row:\n%s", md)
	}
	// The verdict opens the report with the whole-run answer: lead (the
	// lower overhead), +12.0% GPU-hours (140/125); reactive and lead for all
	// sizes and one node, all classes and low: 8 rows under the table's
	// head and separator.
	verdict, _, _ := strings.Cut(string(md), "## run protocol")
	_, verdict, _ = strings.Cut(verdict, "## Verdict, run protocol, load ×1\n")
	rows := 0
	for _, l := range strings.Split(verdict, "\n") {
		if strings.HasPrefix(l, "|") {
			rows++
		}
	}
	if !strings.Contains(verdict, "Use "+provisioner.PolicyLead+":") ||
		!strings.Contains(verdict, "on 1 node with lead") || !strings.Contains(verdict, "+12.0% GPU-hours") || rows != 2+8 {
		t.Errorf("verdict (%d table lines):\n%s", rows, verdict)
	}
	for name, edit := range map[string]func(string) string{
		"changed ratio": func(s string) string { return strings.Replace(s, "0.71×", "0.70×", 1) },
		"missing row":   func(s string) string { return strings.Replace(s, "| lead | 2 | 0 | ", "| nobody | 2 | 0 | ", 1) },
	} {
		if err := os.WriteFile(filepath.Join(dir, report.MarkdownFile), []byte(edit(string(md))), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := report.Verify(dir); !errors.Is(err, report.ErrMismatch) {
			t.Errorf("%s: report.Verify = %v, want ErrMismatch", name, err)
		}
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(&buf, "report.json")
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %v", err)
	}
	// Merge: each half with the reference's runs, as two cells would have them.
	half := func(p string) *report.Report {
		var ss []metrics.Sample
		var rs []metrics.RunSample
		for _, s := range samples {
			if s.Policy == p || s.Policy == metrics.Reference {
				ss = append(ss, s)
			}
		}
		for _, x := range runs {
			if x.Policy == p || x.Policy == metrics.Reference {
				rs = append(rs, x)
			}
		}
		hp := prov
		hp.Cells = []metrics.CellInfo{{Name: "empty/" + p, Cell: "empty", Protocol: metrics.ProtocolRun, LoadScale: 1}}
		h, err := report.New("runs", pols, hp, ss, report.Bootstrap{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SetRuns(rs); err != nil {
			t.Fatal(err)
		}
		return h
	}
	m, err := report.Merge("runs", nil, half(metrics.Reference), half(provisioner.PolicyLead))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.RunGroups, r.RunGroups) || !reflect.DeepEqual(m.Runs, r.Runs) {
		t.Error("merged whole runs differ from the single report's")
	}
}

// TestRunOracle: the oracle of the training cost on the empty cluster of
// TestRunWholeRunsEmptyCluster (W = 100 min, limit 55, C = R = 5, the
// cycle every 10 min from T). Worked by hand: at the T+10 cycle it weighs
// submitting at T+10 … T+50 (gaps −45 … −5 min against seg0's end at
// T+55) and at T+60 (+5): an hour of interruption costs 60, of overlap
// 2.5, so −5 is the least costly; seg1 starts at T+50, restores after seg0
// ends (55–60) and saves 100−60 = 40 by its limit at T+105. At T+60 it
// plans T+100 (gap −5) for seg2, which restores 105–110 and finishes the
// last 15 at T+125. Knowing seg2 completes the work, it submits no seg3.
// Completion 125 min, three segments, no hand-off signal (each
// predecessor ends as its successor's checkpoint time runs out), charged
// 55+55+25 = 135 min × 4 GPUs.
func TestRunOracle(t *testing.T) {
	T := chainT0.Add(time.Hour)
	cost, _ := provisioner.WorkloadCost(provisioner.WorkloadTraining)
	setup := ChainSetup{
		Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
		Cell:     "empty", LoadScale: 1,
		From: chainT0, Until: T.Add(time.Minute), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour, Work: 100 * time.Minute, Workload: provisioner.WorkloadTraining,
		Policies: []string{models.PolicyOracle},
		ProbeFactory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			return models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: 10 * time.Minute,
				OracleCost: func(gap time.Duration) float64 { return cost.Cost(gap, 0) }})
		},
	}
	samples, runs, _, err := RunWholeRuns(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("runs %+v", runs)
	}
	r := runs[0]
	if r.Completion != 125*time.Minute || r.Segments != 3 || r.HandOffs != 0 || !approx(r.ChargedGPU, 4*135.0/60) || r.Censored {
		t.Errorf("oracle run %+v; want completion 125 min, 3 segments, 9 GPU-h", r)
	}
	var gaps []time.Duration
	for _, s := range samples {
		gaps = append(gaps, s.Gap)
	}
	if !slices.Equal(gaps, []time.Duration{-5 * time.Minute, -5 * time.Minute}) {
		t.Errorf("gaps %v, want −5 min twice", gaps)
	}
}

// TestRunReportWithoutHandOffs: when one segment does all the work (W =
// 40 min under a 55 min limit: seg0 restores 0–5 and finishes at 45), a
// run has no hand-off; the report still shows and verifies its runs.
func TestRunReportWithoutHandOffs(t *testing.T) {
	T := chainT0.Add(time.Hour)
	setup := ChainSetup{
		Scenario: chainScenario(t, 4, traceJob("1", chainT0, 0, time.Minute, 10*time.Minute, 1)),
		Cell:     "empty", LoadScale: 1,
		From: chainT0, Until: T.Add(time.Minute), Warmup: time.Hour, Interval: 2 * time.Hour,
		Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour, Work: 40 * time.Minute,
		Policies: []string{provisioner.PolicyReactive},
	}
	samples, runs, _, err := RunWholeRuns(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 0 || len(runs) != 1 || runs[0].Completion != 45*time.Minute || runs[0].Segments != 1 {
		t.Fatalf("samples %+v, runs %+v; want no hand-off and one run done at 45 min", samples, runs)
	}
	r, err := report.New("one segment", []string{metrics.Reference}, metrics.Provenance{Mirage: "test"}, samples, report.Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetRuns(runs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := report.Verify(dir); err != nil || n == 0 {
		t.Fatalf("report.Verify: %d, %v", n, err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, report.MarkdownFile)); !strings.Contains(string(md), "### Whole runs (") {
		t.Errorf("report.md without its whole runs:\n%s", md)
	}
}

// TestRunOthersDelta: the other jobs' queued GPU-hours against reactive's
// on the same run, worked by hand. Two runs (chains a, b): reactive's
// others queued 10 and 20 GPU-h, pin's 13 and 19: pin's mean difference is
// (3 − 1)/2 = 1 GPU-h; reactive's own is 0. A run reactive lacks (chain c)
// is left out of the pairs.
func TestRunOthersDelta(t *testing.T) {
	run := func(p, chain string, others float64) metrics.RunSample {
		return metrics.RunSample{Policy: p, Cell: "x", Protocol: metrics.ProtocolRun, ChainID: chain, Nodes: 1, GPUs: 4, LoadScale: 1,
			LoadClass: metrics.LoadLow, Work: time.Hour, Completion: 2 * time.Hour, ChargedGPU: 8, UsefulGPU: 4, OthersQueued: others}
	}
	runs := []metrics.RunSample{run(metrics.Reference, "a", 10), run(metrics.Reference, "b", 20),
		run(provisioner.PolicyPin, "a", 13), run(provisioner.PolicyPin, "b", 19), run(provisioner.PolicyPin, "c", 500)}
	want := map[string]float64{metrics.Reference: 0, provisioner.PolicyPin: 1}
	for _, g := range metrics.ComputeRuns(runs, metrics.Options{Policies: []string{metrics.Reference, provisioner.PolicyPin}, BootstrapBelow: 100, Seed: 1}) {
		if g.Nodes != 0 || g.LoadClass != metrics.AllClasses {
			continue
		}
		if g.OthersDelta == nil || math.Abs(*g.OthersDelta-want[g.Policy]) > 1e-12 {
			t.Errorf("%s: others' queue delta %v, want %v", g.Policy, g.OthersDelta, want[g.Policy])
		}
		if g.Policy == provisioner.PolicyPin && (g.CI == nil || g.CI.OthersDelta == nil || g.CI.OthersDelta.Lo < -1-1e-12 || g.CI.OthersDelta.Hi > 3+1e-12) {
			t.Errorf("pin's interval %+v: resampling differences of −1 and 3 stays within them", g.CI)
		}
	}
}
