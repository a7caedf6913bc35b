package report

import (
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"image/color"
	"math"
	"slices"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one rendered plot of a report.
type Figure struct {
	ID      string // stable id ("cdf-pair-x1", ...)
	Title   string // heading
	Caption string // what it shows
	// SVG is the image, a standalone SVG document with a viewBox. Its
	// groups are marked data-part: "background", "axes" (title, axes,
	// ticks and their labels), "data" (grid and marks), and to the right
	// of the plot "legend-heading" (data-kind) and "legend-entry"
	// (data-policy), one per policy.
	SVG []byte
}

// figure size; a figure is taller when its legend needs it.
const (
	figW = 10 * vg.Inch
	figH = 4.4 * vg.Inch
)

// sansFont is the plots' typeface (gonum's Liberation Sans, whose metrics
// Arial and Helvetica share).
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length, weight xfont.Weight) text.Style {
	f := font.From(sansFont, size)
	f.Weight = weight
	return text.Style{Color: color.Black, Font: f, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
}

// policiesIn lists the report's policies that have groups in the
// experiment, baselines, learned, oracle, each in display order.
func (r *Report) policiesIn(e metrics.GroupKey) []string {
	var out []string
	for _, g := range r.Groups {
		if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && !slices.Contains(out, g.Policy) {
			out = append(out, g.Policy)
		}
	}
	return byKind(out)
}

// styles gives every policy of the report its style, the same in every
// figure.
func (r *Report) styles() map[string]policyStyle {
	var pols []string
	for _, g := range r.Groups {
		if !slices.Contains(pols, g.Policy) {
			pols = append(pols, g.Policy)
		}
	}
	return policyStyles(pols)
}

// group finds the group of an experiment, or nil.
func (r *Report) group(e metrics.GroupKey, policy string, nodes int, class string) *metrics.GroupStats {
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.Policy == policy && g.Nodes == nodes && g.LoadClass == class {
			return g
		}
	}
	return nil
}

// classesIn lists the load classes present in an experiment, in order.
func (r *Report) classesIn(e metrics.GroupKey) []string {
	var out []string
	for _, c := range []string{metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
		for _, g := range r.Groups {
			if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.LoadClass == c {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Figures renders the report's plots: per experiment (protocol, load
// scale) the signed-gap CDF per policy, mean interruption and
// zero-interruption share per load class as bars, and mean interruption
// against mean overlap per policy and load class. They depend only on the
// report's samples and groups.
func (r *Report) Figures() ([]Figure, error) {
	var figs []Figure
	for _, e := range r.experiments() {
		f, err := r.figuresOf(e)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f...)
	}
	return figs, nil
}

// figuresOf renders the four plots of one experiment.
func (r *Report) figuresOf(e metrics.GroupKey) ([]Figure, error) {
	id := fmt.Sprintf("%s-x%g", e.Protocol, e.LoadScale)
	exp := fmt.Sprintf("%s protocol, load ×%g", e.Protocol, e.LoadScale)
	pols := r.policiesIn(e)
	classes := r.classesIn(e)
	if len(classes) == 0 {
		classes = []string{metrics.AllClasses}
	}
	st := r.styles()
	mk := []struct {
		id, title, caption string
		build              func() (*plot.Plot, []legendEntry, error)
	}{
		{"cdf-" + id, "Gap CDF — " + exp,
			"Cumulative share of hand-offs whose signed gap (successor start − predecessor end) is at most x, on a log scale either side of 0 (linear within 10 s of it, so that the scheduler's latency and reactive's one-minute lead stay apart from 0); left of 0 is overlap, right of 0 interruption.",
			func() (*plot.Plot, []legendEntry, error) { return r.cdfPlot(e, pols, st) }},
		{"bars-interruption-" + id, "Mean interruption by load class — " + exp,
			"Mean interruption (hours, zeros included) per load class (by the reactive gap: low ≤ 2 h, medium 2–12 h, heavy > 12 h; n hand-offs each, † fewer than 10), all job sizes; a zero bar is drawn as a flat mark.",
			func() (*plot.Plot, []legendEntry, error) {
				p, l := r.barPlot(e, pols, classes, st, func(g *metrics.GroupStats) float64 { return g.InterruptionMean })
				p.Y.Label.Text = "mean interruption (h)"
				return p, l, nil
			}},
		{"bars-zero-" + id, "Share with zero interruption by load class — " + exp,
			"Share of hand-offs without interruption (the successor started by the time the predecessor ended, give or take the scheduler's latency; see the verdict) per load class, all job sizes; a zero bar is drawn as a flat mark.",
			func() (*plot.Plot, []legendEntry, error) {
				p, l := r.barPlot(e, pols, classes, st, func(g *metrics.GroupStats) float64 { return 100 * g.ZeroInterruption })
				shareAxis(&p.Y, "share with zero interruption")
				return p, l, nil
			}},
		{"scatter-" + id, "Interruption against overlap — " + exp,
			"Mean interruption against mean overlap (log scales, linear within 10 s of 0), one point per policy and load class (L, M, H), all job sizes; lower left is better. Marks that would cover each other are spread around their place.",
			func() (*plot.Plot, []legendEntry, error) { return r.scatterPlot(e, pols, classes, st) }},
	}
	var figs []Figure
	for _, m := range mk {
		p, legend, err := m.build()
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", m.id, err)
		}
		p.Title.Text = m.title
		svg, err := renderFigure(p, legend)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", m.id, err)
		}
		figs = append(figs, Figure{ID: m.id, Title: m.title, Caption: m.caption, SVG: svg})
	}
	return figs, nil
}

// legendEntry is one policy's line in a legend.
type legendEntry struct {
	policy string
	thumb  plot.Thumbnailer
}

// renderFigure draws the plot with its legend to the right of it, outside
// the plot: a heading per kind, then its policies (in the order given,
// which byKind sorted), each with a thumbnail of its style. It returns the
// figure's SVG.
func renderFigure(p *plot.Plot, legend []legendEntry) ([]byte, error) {
	type row struct {
		part, text string
		style      text.Style
		thumb      plot.Thumbnailer // nil for a heading
	}
	entry, heading := textStyle(10, xfont.WeightNormal), textStyle(10, xfont.WeightBold)
	var rows []row
	for i, e := range legend {
		if k := kindOf(e.policy); i == 0 || k != kindOf(legend[i-1].policy) {
			rows = append(rows, row{part("legend-heading", "kind", kindNames[k]), kindNames[k], heading, nil})
		}
		rows = append(rows, row{part("legend-entry", "policy", e.policy), e.policy, entry, e.thumb})
	}
	rowH, thumbW, pad, gap := vg.Points(15), vg.Points(22), vg.Points(12), vg.Points(5)
	var textW vg.Length
	for _, r := range rows {
		textW = max(textW, r.style.Width(r.text))
	}
	// A fifth more than gonum measures, for browsers that substitute a
	// wider font.
	strip := pad + thumbW + gap + textW*1.2 + pad/2
	h := max(figH, vg.Length(len(rows))*rowH+vg.Points(60))

	s := newSVGParts(figW, h)
	c := draw.New(s)
	s.use(part("background"))
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	s.use(part("axes"))
	area := draw.Crop(c, 0, -strip, 0, 0)
	p.BackgroundColor = nil
	p.Draw(area)

	// The legend starts level with the top of the data area.
	x, y := area.Max.X+pad, p.DataCanvas(area).Max.Y
	for _, r := range rows {
		s.use(r.part)
		textX := x
		if r.thumb != nil {
			icon := draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - rowH + vg.Points(3)}, Max: vg.Point{X: x + thumbW, Y: y - vg.Points(3)}}}
			r.thumb.Thumbnail(&icon)
			textX += thumbW + gap
		}
		c.FillText(r.style, vg.Point{X: textX, Y: y - rowH/2}, r.text)
		y -= rowH
	}
	return s.svg(p.Title.Text)
}

// newPlot is a plot in the report's typeface whose plotters (the grid
// first) draw into the figure's "data" part.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sansFont, 12)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, 11)
		a.Tick.Label.Font = font.From(sansFont, 10)
	}
	p.Add(partMark(part("data")), plotter.NewGrid())
	return p
}

// shareAxis makes a an axis of shares in percent: exactly 0–100, ticks
// every 20.
func shareAxis(a *plot.Axis, label string) {
	a.Label.Text = label + " (%)"
	a.Min, a.Max = 0, 100
	var ticks []plot.Tick
	for v := 0; v <= 100; v += 10 {
		t := plot.Tick{Value: float64(v)}
		if v%20 == 0 {
			t.Label = strconv.Itoa(v)
		}
		ticks = append(ticks, t)
	}
	a.Tick.Marker = plot.ConstantTicks(ticks)
}

func (r *Report) cdfPlot(e metrics.GroupKey, pols []string, st map[string]policyStyle) (*plot.Plot, []legendEntry, error) {
	p := newPlot()
	var legend []legendEntry
	lo, hi := 0.0, 0.0
	for _, pol := range pols {
		var gaps []float64
		for _, s := range r.Samples {
			if s.Protocol == e.Protocol && s.LoadScale == e.LoadScale && s.Policy == pol {
				gaps = append(gaps, metrics.GapHours(s.Gap))
			}
		}
		if len(gaps) == 0 {
			continue
		}
		slices.Sort(gaps)
		lo, hi = min(lo, gaps[0]), max(hi, gaps[len(gaps)-1])
		n := float64(len(gaps))
		xys := make(plotter.XYs, 0, 2*len(gaps))
		for j, x := range gaps { // a step function: up by 1/n at each gap
			xys = append(xys, plotter.XY{X: symlog(x), Y: 100 * float64(j) / n}, plotter.XY{X: symlog(x), Y: 100 * float64(j+1) / n})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, nil, err
		}
		l.LineStyle = st[pol].lineStyle()
		p.Add(l)
		legend = append(legend, legendEntry{pol, l})
	}
	logAxis(&p.X, "gap: successor start − predecessor end", lo, hi)
	shareAxis(&p.Y, "share of hand-offs")
	return p, legend, nil
}

// classTicks labels the load classes of a bar chart with their hand-offs
// ("heavy (n = 3)"), marked when few (classLabel).
func (r *Report) classTicks(e metrics.GroupKey, classes []string) []string {
	out := make([]string, len(classes))
	for i, c := range classes {
		out[i] = c
		var g *metrics.GroupStats
		for _, p := range append([]string{metrics.Reference}, r.policiesIn(e)...) {
			if g = r.group(e, p, 0, c); g != nil {
				break
			}
		}
		if g != nil {
			out[i] = fmt.Sprintf("%s (n = %d)", c, g.N)
			if g.N < FewHandOffs {
				out[i] += fewMark
			}
		}
	}
	return out
}

// barPlot has a group of bars per load class, one bar per policy; the
// axis runs from 0 to a round value above the tallest bar.
func (r *Report) barPlot(e metrics.GroupKey, pols, classes []string, st map[string]policyStyle, v func(*metrics.GroupStats) float64) (*plot.Plot, []legendEntry) {
	p := newPlot()
	p.X.Label.Text = "load class"
	var legend []legendEntry
	top := 0.0
	for i, pol := range pols {
		b := &barSet{policy: pol, classes: classes, vals: make([]float64, len(classes)), has: make([]bool, len(classes)), index: i, of: len(pols), style: st[pol]}
		for j, c := range classes {
			if g := r.group(e, pol, 0, c); g != nil {
				b.vals[j], b.has[j] = v(g), true
				top = max(top, b.vals[j])
			}
		}
		p.Add(b)
		legend = append(legend, legendEntry{pol, b})
	}
	p.NominalX(r.classTicks(e, classes)...)
	p.X.Min, p.X.Max = -0.5, float64(len(classes))-0.5 // room for the outer groups' bars
	p.Y.Min, p.Y.Max = 0, niceCeil(top*1.05)
	return p, legend
}

// niceCeil is the least of 1, 2, 2.5, 5 × 10^k at or above x (1 for x ≤ 0).
func niceCeil(x float64) float64 {
	if x <= 0 || math.IsNaN(x) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= x*(1-1e-12) {
			return m * e
		}
	}
	return 10 * e
}

// scatterPlot puts each policy's mean overlap against its mean
// interruption per load class (both on the symlog scale, where minutes
// and days both have room), as scatterSet draws them: coinciding marks
// spread around their place, class letters placed clear of each other.
func (r *Report) scatterPlot(e metrics.GroupKey, pols, classes []string, st map[string]policyStyle) (*plot.Plot, []legendEntry, error) {
	p := newPlot()
	set := &scatterSet{}
	var legend []legendEntry
	hiX, hiY := 0.0, 0.0
	for _, pol := range pols {
		n := 0
		for _, c := range classes {
			if g := r.group(e, pol, 0, c); g != nil {
				set.pts = append(set.pts, scatterPoint{policy: pol, class: c, x: symlog(g.OverlapMean), y: symlog(g.InterruptionMean), style: st[pol]})
				hiX, hiY = max(hiX, g.OverlapMean), max(hiY, g.InterruptionMean)
				n++
			}
		}
		if n > 0 {
			legend = append(legend, legendEntry{pol, glyphThumb(st[pol])})
		}
	}
	p.Add(set)
	logAxis(&p.X, "mean overlap", 0, hiX)
	logAxis(&p.Y, "mean interruption", 0, hiY)
	// A margin of a twentieth of each axis all round: marks spread around
	// their place at either end (at (0, 0), say) stay inside the frame.
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		m := (a.Max - a.Min) / 20
		a.Min, a.Max = a.Min-m, a.Max+m
	}
	return p, legend, nil
}

func classLetter(c string) string {
	switch c {
	case metrics.LoadLow:
		return "L"
	case metrics.LoadMedium:
		return "M"
	case metrics.LoadHeavy:
		return "H"
	}
	return "all"
}
