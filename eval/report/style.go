package report

import (
	"image/color"
	"math"
	"slices"
	"strings"

	"github.com/mirage-gpu/mirage/models"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// policyKind groups policies in the plots: each kind has its own line
// dashes, glyph shapes and bar fill, and its own part of the legend.
type policyKind int

const (
	kindBaseline policyKind = iota // reactive, dependency, lead, start-estimate, average, quantile, …
	kindLearned                    // rf, xgb, dqn, pg and their variants (rf-xgb, xgb-noharm, …)
	kindOracle                     // knows the future: the bound
)

var kindNames = [...]string{kindBaseline: "baselines", kindLearned: "learned", kindOracle: "oracle"}

// kindOf classes a policy by name: the oracle and its variants, the
// learned policies of the models registry and any name starting with one
// of them, and the rest (the baselines).
func kindOf(policy string) policyKind {
	if isOracle(policy) {
		return kindOracle
	}
	for _, l := range models.LearnedPolicies() {
		if strings.HasPrefix(policy, l) {
			return kindLearned
		}
	}
	return kindBaseline
}

func rgb(c uint32) color.RGBA { return color.RGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 0xff} }

// mutedPalette is Paul Tol's colour-blind-safe qualitative scheme "muted"
// (rose, indigo, sand, green, cyan, wine, teal, olive, purple), then the
// orange and the blue of his "vibrant" scheme, which none of those is
// near: the baselines and learned policies take its colours in turn, so
// that up to eleven of them (a report of every baseline and learned
// policy) each have a colour of their own.
var mutedPalette = []color.RGBA{
	rgb(0xCC6677), rgb(0x332288), rgb(0xDDCC77), rgb(0x117733), rgb(0x88CCEE),
	rgb(0x882255), rgb(0x44AA99), rgb(0x999933), rgb(0xAA4499),
	rgb(0xEE7733), rgb(0x0077BB),
}

// oraclePalette: black, then greys, for the oracle and its variants.
var oraclePalette = []color.RGBA{rgb(0x000000), rgb(0x777777)}

// policyStyle is how one policy is drawn: its kind's dashes, glyph and
// bar fill in its colour. variant counts the earlier policies of the same
// kind and colour (once the palette is used up) and changes the dashes,
// glyph and hatching, so that no two policies share colour and style.
type policyStyle struct {
	kind    policyKind
	color   color.RGBA
	variant int
}

// policyStyles gives each policy its style: baselines first, then the
// learned policies, in the given order, through the muted palette; the
// oracles black, then grey.
func policyStyles(policies []string) map[string]policyStyle {
	out := map[string]policyStyle{}
	used := map[policyStyle]bool{}
	muted, oracles := 0, 0 // colours handed out
	for _, pol := range byKind(policies) {
		s := policyStyle{kind: kindOf(pol)}
		if s.kind == kindOracle {
			s.color = oraclePalette[oracles%len(oraclePalette)]
			oracles++
		} else {
			s.color = mutedPalette[muted%len(mutedPalette)]
			muted++
		}
		for used[s] {
			s.variant++
		}
		used[s] = true
		out[pol] = s
	}
	return out
}

// byKind orders policies baselines, learned, oracle, keeping the given
// order within a kind.
func byKind(policies []string) []string {
	out := slices.Clone(policies)
	slices.SortStableFunc(out, func(a, b string) int { return int(kindOf(a)) - int(kindOf(b)) })
	return out
}

// lineStyle: baselines dashed, learned solid, the oracle dotted and
// heavier; a variant adds a dot to the pattern (a learned one starts from
// long dashes).
func (s policyStyle) lineStyle() draw.LineStyle {
	ls := draw.LineStyle{Color: s.color, Width: vg.Points(1.5)}
	var dashes []float64
	dot, dots := []float64{1.5, 3}, s.variant
	switch s.kind {
	case kindBaseline:
		dashes = []float64{5, 3}
	case kindLearned:
		if s.variant > 0 {
			dashes, dots = []float64{9, 3}, s.variant-1
		}
	case kindOracle:
		ls.Width = vg.Points(2)
		dashes, dot = []float64{1.5, 2}, []float64{5, 2}
	}
	for range dots {
		dashes = append(dashes, dot...)
	}
	for _, d := range dashes {
		ls.Dashes = append(ls.Dashes, vg.Points(d))
	}
	return ls
}

// glyphs per kind: learned round, baselines square, oracle a star.
var kindGlyphs = [...][]draw.GlyphDrawer{
	kindBaseline: {draw.BoxGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}},
	kindLearned:  {draw.CircleGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{}},
	kindOracle:   {starGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}},
}

func (s policyStyle) glyphStyle() draw.GlyphStyle {
	g := kindGlyphs[s.kind]
	r := vg.Points(4)
	if s.kind == kindOracle {
		r = vg.Points(5.5)
	}
	return draw.GlyphStyle{Color: s.color, Radius: r, Shape: g[s.variant%len(g)]}
}

// hatch is the white stripes over a bar: baselines "/", learned and the
// oracle plain; their variants "\" and crossed, and each further variant
// spaces the stripes wider.
func (s policyStyle) hatch() (dirs []float64, spacing vg.Length) {
	v := s.variant
	switch {
	case s.kind == kindBaseline:
		dirs = []float64{1}
	case v == 0:
		return nil, 0
	case s.kind == kindLearned:
		dirs, v = []float64{-1}, v-1
	default:
		dirs, v = []float64{1, -1}, v-1
	}
	return dirs, vg.Points(4 + 2*float64(v))
}

// fillBar fills a rectangle in the policy's colour and hatches it.
func (s policyStyle) fillBar(c *draw.Canvas, r vg.Rectangle) {
	if r.Max.Y < r.Min.Y {
		r.Min.Y, r.Max.Y = r.Max.Y, r.Min.Y
	}
	if r.Size().X <= 0 || r.Size().Y <= 0 {
		return
	}
	c.SetColor(s.color)
	c.Fill(r.Path())
	dirs, sp := s.hatch()
	ls := draw.LineStyle{Color: color.White, Width: vg.Points(1.2)}
	for _, d := range dirs {
		// lines y = d·(x − k) through the rectangle, k stepping by sp√2
		step := sp * math.Sqrt2
		w, h := r.Size().X, r.Size().Y
		for k := -h; k < w; k += step {
			x0, x1 := r.Min.X+k, r.Min.X+k+h // the line's x at the bottom and top (d = 1)
			y0, y1 := r.Min.Y, r.Max.Y
			if d < 0 {
				x0, x1 = r.Min.X+k+h, r.Min.X+k
			}
			pts := clipSegment(r, vg.Point{X: x0, Y: y0}, vg.Point{X: x1, Y: y1})
			if len(pts) == 2 {
				c.StrokeLine2(ls, pts[0].X, pts[0].Y, pts[1].X, pts[1].Y)
			}
		}
	}
}

// clipSegment clips the segment a–b to r (Liang–Barsky); nil when outside.
func clipSegment(r vg.Rectangle, a, b vg.Point) []vg.Point {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	for _, e := range [][2]float64{
		{-dx, float64(a.X - r.Min.X)}, {dx, float64(r.Max.X - a.X)},
		{-dy, float64(a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - a.Y)},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return nil
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = max(t0, t)
		} else {
			t1 = min(t1, t)
		}
	}
	if t0 >= t1 {
		return nil
	}
	at := func(t float64) vg.Point {
		return vg.Point{X: a.X + vg.Length(t*dx), Y: a.Y + vg.Length(t*dy)}
	}
	return []vg.Point{at(t0), at(t1)}
}

// starGlyph is a filled five-pointed star.
type starGlyph struct{}

func (starGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var p vg.Path
	for i := range 10 {
		r := float64(sty.Radius)
		if i%2 == 1 {
			r *= 0.45
		}
		a := math.Pi/2 + float64(i)*math.Pi/5
		q := vg.Point{X: pt.X + vg.Length(r*math.Cos(a)), Y: pt.Y + vg.Length(r*math.Sin(a))}
		if i == 0 {
			p.Move(q)
		} else {
			p.Line(q)
		}
	}
	p.Close()
	c.SetColor(sty.Color)
	c.Fill(p)
}

// barSet is one policy's bars, one per load class at x = 0, 1, …: the
// place of the policy (index of of) among each class's bars, 80% of the
// class's width shared among them. Each bar is a part of its own, marked
// with its policy, class and value (data-policy, data-class, data-value),
// so that a reader of the SVG, or a test, can tell which bar is which; a
// bar of value 0 is drawn as a flat mark (zeroMark) rather than nothing.
type barSet struct {
	policy    string
	classes   []string
	vals      []float64
	has       []bool // the policy has a group in the class
	index, of int
	style     policyStyle
}

// zeroMark is the height of the mark of a zero bar.
const zeroMark = 2.5 // points

func (b *barSet) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, float64(len(b.vals) - 1), min(0, slices.Min(b.vals)), max(0, slices.Max(b.vals))
}

func (b *barSet) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	slot := trX(1) - trX(0)
	w := slot * 0.8 / vg.Length(b.of)
	s := partsOf(c.Canvas)
	for i, v := range b.vals {
		if !b.has[i] {
			continue
		}
		if s != nil {
			s.use(part("data", "policy", b.policy, "class", b.classes[i], "value", fullFloat(v)))
		}
		x := trX(float64(i)) - slot*0.4 + w*vg.Length(b.index)
		r := vg.Rectangle{Min: vg.Point{X: x, Y: trY(0)}, Max: vg.Point{X: x + w, Y: trY(v)}}
		if r.Max.Y-r.Min.Y < vg.Points(zeroMark) {
			b.style.zeroBar(&c, r)
			continue
		}
		b.style.fillBar(&c, r)
	}
}

// zeroBar draws the mark of a bar too low to see: a flat bar zeroMark
// high in the policy's colour, outlined, standing on the axis.
func (s policyStyle) zeroBar(c *draw.Canvas, r vg.Rectangle) {
	r.Max.Y = r.Min.Y + vg.Points(zeroMark)
	c.SetColor(s.color)
	c.Fill(r.Path())
	c.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(0.6)}, []vg.Point{r.Min, {X: r.Min.X, Y: r.Max.Y}, r.Max, {X: r.Max.X, Y: r.Min.Y}, r.Min})
}

func (b *barSet) Thumbnail(c *draw.Canvas) { b.style.fillBar(c, c.Rectangle) }

// glyphThumb is a policy's scatter mark in a legend.
type glyphThumb policyStyle

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(policyStyle(g).glyphStyle(), c.Center())
}
