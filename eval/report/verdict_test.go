package report

import (
	"bytes"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The report opens with a verdict per experiment: the runnable policy with
// the lowest mean |gap| (never the oracle, even when it is lower), per load
// class, before any other table; provenance comes last; the verdict's
// numbers pass Verify like the rest. synthSamples makes xgb 0.4×
// reactive and average 0.7× on every hand-off, so xgb is the answer; an
// oracle at 0.1× is added here and must not be chosen.
func TestReportVerdict(t *testing.T) {
	samples := synthSamples(40, 9)
	var withOracle []metrics.Sample
	for _, s := range samples {
		withOracle = append(withOracle, s)
		if s.Policy == "reactive" {
			o := s
			o.Policy, o.Gap = "oracle", s.Gap/10
			withOracle = append(withOracle, o)
		}
	}
	r, err := New("Verdict", []string{"reactive", "average", "xgb", "oracle"}, metrics.Provenance{Mirage: "test"}, withOracle, Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.experiments() {
		if v := r.verdict(e); v.Policy != "xgb" || len(v.Table.Rows) < 2 || v.Table.Rows[0][2].Text != metrics.AllClasses {
			t.Errorf("%s ×%g: verdict %q with %d rows; want xgb, all classes first", e.Protocol, e.LoadScale, v.Policy, len(v.Table.Rows))
		}
	}
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(dir); err != nil || n == 0 {
		t.Fatalf("verify: %d numbers, %v", n, err)
	}
	for _, f := range []string{MarkdownFile, HTMLFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		verdict, headline, prov := strings.Index(s, "Verdict, pair protocol, load ×1"), strings.Index(s, "All hand-offs"), strings.LastIndex(s, "Provenance")
		if verdict < 0 || headline < verdict || prov < headline || !strings.Contains(s, "Use xgb:") {
			t.Errorf("%s: verdict at %d, first table at %d, provenance at %d; want verdict (\"Use xgb:\") first, provenance last", f, verdict, headline, prov)
		}
	}
	// Reactive best: the verdict says to keep it.
	var flat []metrics.Sample
	for _, s := range samples {
		if s.Policy == "xgb" {
			s.Gap = s.Gap*3 + 3600e9
		}
		flat = append(flat, s)
	}
	r2, err := New("Keep", []string{"reactive", "xgb"}, metrics.Provenance{Mirage: "test"}, onlyPolicies(flat, "reactive", "xgb"), Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := r2.verdict(r2.experiments()[0]); v.Policy != "reactive" || !strings.HasPrefix(v.Why, "Keep reactive") {
		t.Errorf("reactive best: verdict %q (%s)", v.Policy, v.Why)
	}
}

func onlyPolicies(in []metrics.Sample, names ...string) []metrics.Sample {
	var out []metrics.Sample
	for _, s := range in {
		for _, n := range names {
			if s.Policy == n {
				out = append(out, s)
			}
		}
	}
	return out
}

// handoffs makes one sample per gap of policy, on hand-offs h0, h1, … of
// the pair protocol at load ×1, all in the given class.
func handoffs(policy, class string, gaps ...time.Duration) []metrics.Sample {
	t0 := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	out := make([]metrics.Sample, len(gaps))
	for i, g := range gaps {
		out[i] = metrics.Sample{Cell: "synth/x1/pair", Protocol: "pair", ChainID: fmt.Sprintf("h%02d", i), Segment: 1, Inject: t0.Add(time.Duration(i) * time.Hour),
			Nodes: 1, GPUs: 4, LoadScale: 1, LoadClass: class, Policy: policy, Gap: g, Submits: 1}
	}
	return out
}

// TestVerdictTies (#51): a policy whose mean |gap| is within chance or
// under a minute of the lowest ties it, and of tied policies the simpler
// one is recommended, the tie said in words. Over 40 hand-offs (reactive
// 2 h each, so every one is medium load):
//   - margin: xgb-online-pin ±20 s (|gap| 20 s), pin +21 s: pin is 1 s
//     longer on every hand-off, an interval of [1s, 1s], within a minute:
//     pin (a baseline, no model) is recommended over the learned policy.
//   - chance: xgb-online-pin 20 s on even hand-offs and 2 h on odd ones,
//     pin 2 h on even and 21 s on odd: means 1h0m10s and 1h0m10.5s, the
//     differences +2h−20s and −2h+21s, so their mean (0.5 s) has an
//     interval of about ±2 h·1.96/√40 ≈ ±37 min around it: a tie by chance.
//   - clear: pin 30 min on every hand-off against 20 s: 29 min 40 s longer
//     on each, no tie; xgb-online-pin is recommended and no tie is named.
func TestVerdictTies(t *testing.T) {
	const n = 40
	reactive, learned, pinMargin, learnedChance, pinChance, pinClear := make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		reactive[i] = 2 * time.Hour
		learned[i], pinMargin[i], pinClear[i] = 20*time.Second, 21*time.Second, 30*time.Minute
		if i%2 == 1 {
			learned[i] = -20 * time.Second
		}
		learnedChance[i], pinChance[i] = 20*time.Second, 2*time.Hour
		if i%2 == 1 {
			learnedChance[i], pinChance[i] = 2*time.Hour, 21*time.Second
		}
	}
	for _, c := range []struct {
		name       string
		learned    []time.Duration
		pin        []time.Duration
		want, ties string
	}{
		{"margin", learned, pinMargin, "pin", "xgb-online-pin"},
		{"chance", learnedChance, pinChance, "pin", "xgb-online-pin"},
		{"clear", learned, pinClear, "xgb-online-pin", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s []metrics.Sample
			s = append(s, handoffs("reactive", metrics.LoadMedium, reactive...)...)
			s = append(s, handoffs("pin", metrics.LoadMedium, c.pin...)...)
			s = append(s, handoffs("xgb-online-pin", metrics.LoadMedium, c.learned...)...)
			r, err := New("Ties", []string{"reactive", "pin", "xgb-online-pin"}, metrics.Provenance{Mirage: "test"}, s, Bootstrap{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			v := r.verdict(r.experiments()[0])
			var ties []string
			for _, t := range v.Ties {
				ties = append(ties, t.Policy)
			}
			// The tie is listed under the policy that ties the best one:
			// pin when it is recommended over xgb-online-pin.
			wantTies := ""
			if c.ties != "" {
				wantTies = "pin"
			}
			if v.Policy != c.want || strings.Join(ties, ",") != wantTies {
				t.Errorf("verdict %q with ties %q, want %q with ties %q (%s)", v.Policy, ties, c.want, wantTies, v.Why)
			}
			if c.ties != "" && !strings.HasPrefix(v.Why, "Use pin: it ties xgb-online-pin") {
				t.Errorf("why %q does not say pin ties xgb-online-pin", v.Why)
			}
			if c.ties == "" && strings.Contains(v.Why, "ties") {
				t.Errorf("why %q names a tie where none is", v.Why)
			}
			// The verdict's table shows the recommended policy, the one it
			// ties and reactive.
			var shown []string
			for _, row := range v.Table.Rows {
				if !slices.Contains(shown, row[0].Text) {
					shown = append(shown, row[0].Text)
				}
			}
			want := []string{c.want, "reactive"}
			if c.ties != "" {
				want = []string{"pin", "xgb-online-pin", "reactive"}
			}
			if !slices.Equal(shown, want) {
				t.Errorf("verdict table shows %q, want %q", shown, want)
			}
		})
	}
}

// TestZeroTolerance (#51): with the scheduler's latency as tolerance, a
// gap up to it counts as zero interruption. Gaps −60 s, 0, 1 s, 5 s, 6 s:
// 2 of 5 are ≤ 0 (40%); with a 5 s tolerance 4 of 5 (80%). The report
// states the tolerance in its definitions and keeps it through JSON.
func TestZeroTolerance(t *testing.T) {
	s := handoffs("reactive", metrics.LoadLow, -time.Minute, 0, time.Second, 5*time.Second, 6*time.Second)
	r, err := New("Zero", []string{"reactive"}, metrics.Provenance{Mirage: "test"}, s, Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := r.experiments()[0]
	if g := r.group(e, "reactive", 0, metrics.AllClasses); g == nil || g.ZeroInterruption != 0.4 {
		t.Fatalf("without tolerance: %+v, want zero interruption 0.4", g)
	}
	r.SetZeroTolerance(5 * time.Second)
	if g := r.group(e, "reactive", 0, metrics.AllClasses); g == nil || g.ZeroInterruption != 0.8 {
		t.Errorf("with 5s: %+v, want zero interruption 0.8", g)
	}
	if d := r.definitions(); !strings.Contains(d, "gap ≤ 5s, the simulated scheduler's latency") {
		t.Errorf("definitions do not state the tolerance: %s", d)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf, "zero.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.ZeroTolerance() != 5*time.Second || back.group(e, "reactive", 0, metrics.AllClasses).ZeroInterruption != 0.8 {
		t.Errorf("read back: tolerance %v, zero interruption %v", back.ZeroTolerance(), back.group(e, "reactive", 0, metrics.AllClasses).ZeroInterruption)
	}
}

// TestVerdictNotes (#51): reactive's overlap is explained by its lead, and
// a class of few hand-offs is marked. Reactive on 12 low-load hand-offs
// (2 of them −60 s, with a lead of 1 min: a successor that found a node at
// once; 10 at +30 min) and 3 heavy ones (+13 h): the note counts 2 of 15
// hand-offs overlapping by about 1 min, 2 × 1/60 h × 4 GPUs = 0.1
// GPU-hours of 0.1; heavy (3 < 10) is marked †, low (12) is not.
func TestVerdictNotes(t *testing.T) {
	low := []time.Duration{-time.Minute, -time.Minute}
	for range 10 {
		low = append(low, 30*time.Minute)
	}
	s := handoffs("reactive", metrics.LoadLow, low...)
	for i, h := range handoffs("reactive", metrics.LoadHeavy, 13*time.Hour, 13*time.Hour, 13*time.Hour) {
		h.ChainID = fmt.Sprintf("heavy%d", i)
		s = append(s, h)
	}
	prov := metrics.Provenance{Mirage: "test", Cells: []metrics.CellInfo{{Name: "synth/x1/pair", Cell: "synth/x1/pair", Protocol: "pair", LoadScale: 1, Policies: []string{"reactive"}, Params: map[string]string{"lead": "1m0s"}}}}
	r, err := New("Notes", []string{"reactive"}, prov, s, Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := r.verdict(r.experiments()[0])
	notes := strings.Join(v.Notes, "\n")
	if !strings.Contains(notes, "Why reactive overlaps: 2 of its 15 hand-offs overlap by about 1 min") || !strings.Contains(notes, "0.1 of its 0.1 wasted GPU-hours") {
		t.Errorf("no note on reactive's overlap by its lead:\n%s", notes)
	}
	if !strings.Contains(notes, fewNote) {
		t.Errorf("no note on the mark of few hand-offs:\n%s", notes)
	}
	classes := map[string]bool{}
	for _, row := range v.Table.Rows {
		classes[row[2].Text] = true
	}
	if !classes["heavy †"] || !classes["low"] || classes["low †"] || classes["heavy"] {
		t.Errorf("verdict classes %v, want heavy marked (3 hand-offs) and low not (12)", classes)
	}
}
