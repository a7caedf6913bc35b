package eval

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one rendered plot of a report.
type Figure struct {
	ID      string // stable id ("cdf-pair-1", ...)
	Title   string // heading
	Caption string // what it shows
	SVG     []byte // the image, a standalone SVG document
}

// palette: ten distinguishable colours (Tableau 10); policies beyond ten
// reuse them with dashed lines.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

func policyColor(i int) color.Color { return palette[i%len(palette)] }

// figure size
const (
	figW = 7 * vg.Inch
	figH = 4.2 * vg.Inch
)

// policiesIn lists the report's policies (display order) that have groups
// in the experiment.
func (r *Report) policiesIn(e GroupKey) []string {
	var out []string
	for _, g := range r.Groups {
		if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && !slices.Contains(out, g.Policy) {
			out = append(out, g.Policy)
		}
	}
	return out
}

// group finds the group of an experiment, or nil.
func (r *Report) group(e GroupKey, policy string, nodes int, class string) *GroupStats {
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.Policy == policy && g.Nodes == nodes && g.LoadClass == class {
			return g
		}
	}
	return nil
}

// classesIn lists the load classes present in an experiment, in order.
func (r *Report) classesIn(e GroupKey) []string {
	var out []string
	for _, c := range []string{LoadLow, LoadMedium, LoadHeavy} {
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
func (r *Report) figuresOf(e GroupKey) ([]Figure, error) {
	var figs []Figure
	{
		id := fmt.Sprintf("%s-x%g", e.Protocol, e.LoadScale)
		exp := fmt.Sprintf("%s protocol, load ×%g", e.Protocol, e.LoadScale)
		pols := r.policiesIn(e)
		classes := r.classesIn(e)
		mk := []struct {
			id, title, caption string
			build              func() (*plot.Plot, error)
		}{
			{"cdf-" + id, "Gap CDF — " + exp,
				"Cumulative share of hand-offs whose signed gap (successor start − predecessor end, hours) is at most x; left of 0 is overlap, right of 0 interruption.",
				func() (*plot.Plot, error) { return r.cdfPlot(e, pols) }},
			{"bars-interruption-" + id, "Mean interruption by load class — " + exp,
				"Mean interruption (hours, zeros included) per load class (by the reactive gap: low ≤ 2 h, medium 2–12 h, heavy > 12 h), all job sizes.",
				func() (*plot.Plot, error) {
					return r.barPlot(e, pols, classes, "mean interruption (h)", func(g *GroupStats) float64 { return g.InterruptionMean })
				}},
			{"bars-zero-" + id, "Share with zero interruption by load class — " + exp,
				"Share of hand-offs with gap ≤ 0 (the successor was running when the predecessor ended) per load class, all job sizes.",
				func() (*plot.Plot, error) {
					return r.barPlot(e, pols, classes, "share with zero interruption", func(g *GroupStats) float64 { return g.ZeroInterruption })
				}},
			{"scatter-" + id, "Interruption against overlap — " + exp,
				"Mean interruption against mean overlap (hours), one point per policy and load class (L, M, H), all job sizes; lower left is better.",
				func() (*plot.Plot, error) { return r.scatterPlot(e, pols, classes) }},
		}
		for _, m := range mk {
			p, err := m.build()
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", m.id, err)
			}
			p.Title.Text = m.title
			svg, err := renderSVG(p)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", m.id, err)
			}
			figs = append(figs, Figure{ID: m.id, Title: m.title, Caption: m.caption, SVG: svg})
		}
	}
	return figs, nil
}

func renderSVG(p *plot.Plot) ([]byte, error) {
	wt, err := p.WriterTo(figW, figH, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func newPlot() *plot.Plot {
	p := plot.New()
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return p
}

func (r *Report) cdfPlot(e GroupKey, pols []string) (*plot.Plot, error) {
	p := newPlot()
	p.X.Label.Text = "gap (h): successor start − predecessor end"
	p.Y.Label.Text = "share of hand-offs"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false
	for i, pol := range pols {
		var gaps []float64
		for _, s := range r.Samples {
			if s.Protocol == e.Protocol && s.LoadScale == e.LoadScale && s.Policy == pol {
				gaps = append(gaps, gapHours(s.Gap))
			}
		}
		if len(gaps) == 0 {
			continue
		}
		slices.Sort(gaps)
		n := float64(len(gaps))
		xys := make(plotter.XYs, 0, 2*len(gaps))
		for j, x := range gaps { // a step function: up by 1/n at each gap
			xys = append(xys, plotter.XY{X: x, Y: float64(j) / n}, plotter.XY{X: x, Y: float64(j+1) / n})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = policyColor(i)
		l.Width = vg.Points(1.5)
		if i >= len(palette) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(pol, l)
	}
	return p, nil
}

func (r *Report) barPlot(e GroupKey, pols, classes []string, ylabel string, v func(*GroupStats) float64) (*plot.Plot, error) {
	p := newPlot()
	p.Y.Label.Text = ylabel
	p.X.Label.Text = "load class"
	if len(classes) == 0 {
		classes = []string{AllClasses}
	}
	w := vg.Points(min(18, 300/float64(max(len(pols), 1))))
	for i, pol := range pols {
		vals := make(plotter.Values, len(classes))
		for j, c := range classes {
			if g := r.group(e, pol, 0, c); g != nil {
				vals[j] = v(g)
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = policyColor(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(pols)-1)/2)
		p.Add(b)
		p.Legend.Add(pol, b)
	}
	p.NominalX(classes...)
	p.X.Min, p.X.Max = -0.5, float64(len(classes))-0.5 // room for the outer groups' bars
	p.Y.Min = 0
	headroom(p)
	return p, nil
}

func (r *Report) scatterPlot(e GroupKey, pols, classes []string) (*plot.Plot, error) {
	p := newPlot()
	p.X.Label.Text = "mean overlap (h)"
	p.Y.Label.Text = "mean interruption (h)"
	if len(classes) == 0 {
		classes = []string{AllClasses}
	}
	var all plotter.XYs
	var labels []string
	for i, pol := range pols {
		var xys plotter.XYs
		for _, c := range classes {
			if g := r.group(e, pol, 0, c); g != nil {
				xys = append(xys, plotter.XY{X: g.OverlapMean, Y: g.InterruptionMean})
				labels = append(labels, classLetter(c))
			}
		}
		if len(xys) == 0 {
			continue
		}
		all = append(all, xys...)
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Color = policyColor(i)
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add(pol, s)
	}
	if len(all) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: all, Labels: labels})
		if err != nil {
			return nil, err
		}
		lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(2)}
		p.Add(lb)
	}
	p.X.Min, p.Y.Min = 0, 0
	headroom(p)
	return p, nil
}

// headroom leaves the top quarter of the plot to the legend.
func headroom(p *plot.Plot) {
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.35
}

func classLetter(c string) string {
	switch c {
	case LoadLow:
		return "L"
	case LoadMedium:
		return "M"
	case LoadHeavy:
		return "H"
	}
	return "all"
}
