package report

import (
	"testing"

	"github.com/mirage-gpu/mirage/eval/metrics"
)

// TestFigureAt: Verify finds a figure by the path report.json spells, in
// the typed report, and finds nothing where WriteJSON writes nothing.
func TestFigureAt(t *testing.T) {
	r := &Report{Groups: []metrics.GroupStats{{
		GroupKey:         metrics.GroupKey{Protocol: "pair", Nodes: 8, Policy: "xgb"},
		N:                12,
		InterruptionMean: 1.5,
		Gap:              metrics.Quantiles{P90: 2.25},
		CI:               &metrics.Intervals{InterruptionMean: &metrics.Interval{Lo: 1, Hi: 2}},
	}}}
	for path, want := range map[string]float64{
		"groups.0.nodes":                     8,    // a field of the embedded GroupKey, int
		"groups.0.n":                         12,   // int
		"groups.0.interruption_mean_h":       1.5,  // float64
		"groups.0.gap_h.p90":                 2.25, // nested struct
		"groups.0.ci.interruption_mean_h.lo": 1,    // through pointers
		"groups.0.ci.interruption_mean_h.hi": 2,
	} {
		v, ok := figureAt(r, path)
		if f, isNum := number(v); !ok || !isNum || f != want {
			t.Errorf("%s: %v (found %v, number %v), want %v", path, f, ok, isNum, want)
		}
	}
	for _, path := range []string{
		"groups.1.n",                      // index out of range
		"groups.x.n",                      // not an index
		"groups.0.bogus",                  // no such field
		"groups.0.ci.reduction.lo",        // nil pointer: null in the JSON
		"zero_tolerance_s",                // zero and omitempty: not in the JSON
		"run_groups.0.n",                  // empty and omitempty
		"groups.0.interruption_mean_h.lo", // below a number
	} {
		if v, ok := figureAt(r, path); ok {
			t.Errorf("%s: found %v, want nothing", path, v)
		}
	}
	if v, ok := figureAt(r, "groups.0.policy"); !ok {
		t.Error("groups.0.policy: not found")
	} else if _, isNum := number(v); isNum {
		t.Error("groups.0.policy: a number")
	}
}
