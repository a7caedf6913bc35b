package eval

import (
	"math"

	"gonum.org/v1/plot"
)

// symlogUnit is where the report's log scales turn linear: one minute,
// in hours. Gaps within it (the scheduler's latency, a lead of a minute)
// stay apart from 0; hours and days keep their room.
const symlogUnit = 1.0 / 60

// symlog is a signed logarithmic axis scale (gonum's plot.Normalizer):
// x ↦ sign(x)·ln(1 + |x|/unit), so it is linear near 0 and logarithmic
// beyond unit, either side of 0. The plots of gaps use it: what decides
// between policies lies within minutes of 0, their tails run to days.
type symlog struct{ unit float64 }

func (s symlog) f(x float64) float64 { return math.Copysign(math.Log1p(math.Abs(x)/s.unit), x) }

// Normalize implements plot.Normalizer.
func (s symlog) Normalize(min, max, x float64) float64 {
	a, b := s.f(min), s.f(max)
	if b == a {
		return 0.5
	}
	return (s.f(x) - a) / (b - a)
}

// symlogTicks labels a symlog axis of hours at 0, 1 and 10 minutes, 1, 10
// and 100 hours either side of 0 (those within the axis), with unlabelled
// ticks at 2 and 5 of each; labels carry their unit ("10 min", "−1 h").
type symlogTicks struct{}

// Ticks implements plot.Ticker.
func (symlogTicks) Ticks(min, max float64) []plot.Tick {
	major := []struct {
		h     float64
		label string
	}{{1.0 / 60, "1 min"}, {10.0 / 60, "10 min"}, {1, "1 h"}, {10, "10 h"}, {100, "100 h"}}
	var out []plot.Tick
	add := func(v float64, label string) {
		if v >= min-1e-12 && v <= max+1e-12 {
			out = append(out, plot.Tick{Value: v, Label: label})
		}
	}
	add(0, "0")
	for _, m := range major {
		add(m.h, m.label)
		add(-m.h, "−"+m.label)
		for _, k := range []float64{2, 5} {
			add(k*m.h, "")
			add(-k*m.h, "")
		}
	}
	return out
}

// logAxis makes a an axis of hours on the symlog scale: its range holds
// [lo, hi] and at least a minute either way of 0 that the data reach.
func logAxis(a *plot.Axis, label string, lo, hi float64) {
	a.Label.Text = label + " (log scale, min and h)"
	a.Scale = symlog{unit: symlogUnit}
	a.Tick.Marker = symlogTicks{}
	a.Min, a.Max = min(lo, 0), max(hi, symlogUnit)
	if lo < 0 {
		a.Min = min(lo, -symlogUnit)
	}
}
