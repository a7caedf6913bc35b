package eval

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/sim"
)

// gridOutcomes makes the ranking period's outcomes of 20 low-load
// hand-offs (reactive's gap 1 h) and 20 heavy ones (20 h): each policy's
// gap in hours on the low ones, then on the heavy ones.
func gridOutcomes(gaps map[string][2]float64) []protocol.WFOutcome {
	t0 := time.Date(2022, 11, 15, 0, 0, 0, 0, time.UTC)
	var out []protocol.WFOutcome
	for i := range 40 {
		react := 1.0
		if i >= 20 {
			react = 20
		}
		for p, g := range gaps {
			gap := g[0]
			if i >= 20 {
				gap = g[1]
			}
			out = append(out, protocol.WFOutcome{Policy: p, Fold: 0, Inject: t0.Add(time.Duration(i) * 4 * time.Hour), Nodes: 1, Gap: gap * 3600, Reactive: react * 3600})
		}
	}
	return out
}

// RankSite's tiers, worked out by hand. Reactive: Σ|gap| = 20×1 + 20×20 =
// 420 h. pin 20×0.5 + 20×10 = 210 h (0.50×, low 0.50×); dependency as reactive
// (1.00×: no harm, not above 1); xgb-online 20×2 + 20×1 = 60 h (0.14×) but
// 2× reactive in the low class: harm, last; xgb-online-pin 20×0.4 + 20×5 =
// 108 h, below pin on every hand-off, so every resample's ratio is below
// 1: it earned its place above pin. Means: 2.7, 5.25, 10.5, then 1.5 h.
func TestRankSite(t *testing.T) {
	r := &GridCellResult{Cell: "x", Class: sim.SiteNoAge, RankOutcomes: gridOutcomes(map[string][2]float64{
		protocol.WFReactive: {1, 20}, protocol.WFOracle: {0.1, 1}, "pin": {0.5, 10}, "dependency": {1, 20}, "xgb-online": {2, 1}, models.DefaultPinned: {0.4, 5}})}
	r.rows()
	got := RankSite(r)
	var names []string
	for _, p := range got {
		names = append(names, p.Policy)
	}
	if want := []string{models.DefaultPinned, "pin", "dependency", "xgb-online"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("ranking %v, want %v", names, want)
	}
	if got[0].MeanAbsGap != 2.7 || got[1].MeanAbsGap != 5.25 || got[3].VsReactive != 60.0/420 || got[3].LowVs == nil || *got[3].LowVs != 2 {
		t.Errorf("figures %+v", got)
	}
	if !strings.Contains(got[0].Why, "better than pin") || !strings.Contains(got[3].Why, "worse than reactive") {
		t.Errorf("reasons %q, %q", got[0].Why, got[3].Why)
	}

	// The pinned form no better than pin on all but one hand-off (4.9 h
	// instead of 5 on the last): most resamples miss it and tie at 1, so
	// the upper bound is 1, not below: it did not earn its place, and
	// comes after the candidates without a model (pin, dependency).
	outs := gridOutcomes(map[string][2]float64{protocol.WFReactive: {1, 20}, protocol.WFOracle: {0.1, 1}, "pin": {0.5, 10}, "dependency": {1, 20}, models.DefaultPinned: {0.5, 10}})
	for i := range outs {
		if outs[i].Policy == models.DefaultPinned && outs[i].Inject.Equal(time.Date(2022, 11, 15, 0, 0, 0, 0, time.UTC).Add(39*4*time.Hour)) {
			outs[i].Gap = 9.9 * 3600
		}
	}
	r = &GridCellResult{Cell: "x", Class: sim.SiteNoAge, RankOutcomes: outs}
	r.rows()
	names = nil
	for _, p := range RankSite(r) {
		names = append(names, p.Policy)
	}
	if want := []string{"pin", "dependency", models.DefaultPinned}; !reflect.DeepEqual(names, want) {
		t.Errorf("ranking %v, want %v", names, want)
	}
	// The ranking file: one class per cell named for it; the calibrated
	// cell ranks nothing; it reads back through models.
	cal := *r
	cal.Cell = sim.GridCalibrated
	rk := GridRanking([]*GridCellResult{r, &cal}, "test")
	if len(rk.Classes) != 1 || len(rk.Classes[string(sim.SiteNoAge)]) != 3 || rk.Rule == "" {
		t.Errorf("ranking file %+v", rk)
	}
	path := filepath.Join(t.TempDir(), "x.json")
	if err := WriteGridCell(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadGridCell(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(RankSite(back), RankSite(r)) {
		t.Error("a cell read back ranks differently")
	}
}
