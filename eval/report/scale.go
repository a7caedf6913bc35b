package report

import (
	"math"

	"gonum.org/v1/plot"
)

// symlogUnit is where the report's log scales turn linear: ten seconds,
// in hours. A minute (reactive's lead) then lies as far from 0 as ten
// minutes from it, so their tick labels stay apart, and hours and days
// keep their room.
const symlogUnit = 10.0 / 3600

// symlog maps hours to the report's signed logarithmic scale,
// sign(x)·ln(1 + |x|/symlogUnit): linear near 0 and logarithmic beyond
// ten seconds, either side of 0. The plots of gaps draw their data through it
// on a linear axis (logAxis), whose ticks name the hours: what decides
// between policies lies within minutes of 0, the tails run to days.
//
// The data are mapped, not the axis given a plot.Normalizer, because
// gonum places an axis label's glyph box at the Normalizer's image of the
// range's midpoint (its label is drawn at the centre): with a log scale
// that box falls near one end and shrinks the data area.
func symlog(h float64) float64 { return math.Copysign(math.Log1p(math.Abs(h)/symlogUnit), h) }

// symlogTicks labels an axis of symlog values at 0, 1 and 10 minutes, 1,
// 10 and 100 hours either side of 0 (those within the axis), with
// unlabelled ticks at 2 and 5 of each; labels carry their unit ("10 min",
// "−1 h").
type symlogTicks struct{}

// Ticks implements plot.Ticker.
func (symlogTicks) Ticks(min, max float64) []plot.Tick {
	major := []struct {
		h     float64
		label string
	}{{1.0 / 60, "1 min"}, {10.0 / 60, "10 min"}, {1, "1 h"}, {10, "10 h"}, {100, "100 h"}}
	var out []plot.Tick
	add := func(h float64, label string) {
		if v := symlog(h); v >= min-1e-12 && v <= max+1e-12 {
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

// logAxis makes a a linear axis of symlog values (the data drawn on it
// go through symlog) for hours in [lo, hi]: its range holds them, 0, and
// at least a minute either way of 0 that the data reach.
func logAxis(a *plot.Axis, label string, lo, hi float64) {
	a.Label.Text = label + " (log scale, min and h)"
	a.Tick.Marker = symlogTicks{}
	const minute = 1.0 / 60
	a.Min, a.Max = symlog(min(lo, 0)), symlog(max(hi, minute))
	if lo < 0 {
		a.Min = symlog(min(lo, -minute))
	}
}
