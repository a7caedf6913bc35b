package protocol

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestWalkForwardRows(t *testing.T) {
	a := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	b := a.Add(4 * time.Hour)
	var outs []WFOutcome
	add := func(p string, in time.Time, nodes int, gap, react float64) {
		outs = append(outs, WFOutcome{Policy: p, Inject: in, Nodes: nodes, Gap: gap, Reactive: react})
	}
	// chain A: reactive 1 h late (low class); chain B: reactive 10 h late (medium)
	add(WFReactive, a, 1, 3600, 3600)
	add(WFReactive, b, 8, 36000, 36000)
	add(WFOracle, a, 1, -1800, 3600)
	add(WFOracle, b, 8, 3600, 36000)
	add("p", a, 1, 7200, 3600)
	add("p", b, 8, -7200, 36000)
	rows := WalkForwardRows(outs, 1, 200, 1)
	get := func(class, p string) WFRow {
		for _, r := range rows {
			if r.Class == class && r.Policy == p {
				return r
			}
		}
		t.Fatalf("no row %s %s", class, p)
		return WFRow{}
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", what, got, want)
		}
	}
	all := get("all", "p")
	near("all n", float64(all.N), 2)
	near("all mean |gap|", all.MeanAbsGap, 2)
	near("all overlap", all.MeanOverlap, 1)
	near("all interruption", all.MeanIntr, 1)
	near("all × reactive", all.VsReactive, 4.0/11)
	near("all × oracle", all.VsOracle, 4/1.5)
	near("all fold 0", all.PerFold[0], 4.0/11)
	if all.VsReactive95[0] < 0.2-1e-9 || all.VsReactive95[1] > 2+1e-9 || all.VsReactive95[0] > all.VsReactive95[1] {
		t.Errorf("interval %v outside the resampled extremes [0.2, 2]", all.VsReactive95)
	}
	low := get("low", "p")
	near("low × reactive", low.VsReactive, 2)
	near("low CI lo", low.VsReactive95[0], 2) // one hand-off: every resample is the same
	near("low CI hi", low.VsReactive95[1], 2)
	near("medium × reactive", get("medium", "p").VsReactive, 0.2)
	near("reactive × reactive", get("all", WFReactive).VsReactive, 1)
	var buf bytes.Buffer
	if err := WriteWalkForwardTable(&buf, rows, []string{"Jan"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| all | p | 2 | 2.00 | 1.00 | 1.00 | 0.36 |") {
		t.Errorf("table:\n%s", buf.String())
	}
}
