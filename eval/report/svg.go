package report

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// svgParts is a vg.Canvas that sends what is drawn to one of several SVG
// canvases of the same size, the parts of a figure (background, axes, data,
// legend entries). Each part becomes a group of the figure's SVG marked
// data-part="…", so that a reader, or a test in a browser, can tell the
// legend from the data. Parts change only between whole drawing
// operations (no Push pending).
type svgParts struct {
	w, h  vg.Length
	attrs []string // each part's group attributes
	parts []*vgsvg.Canvas
	cur   int
	depth int // Push calls not yet popped on the current part
}

func newSVGParts(w, h vg.Length) *svgParts { return &svgParts{w: w, h: h, cur: -1} }

// use makes the part with these group attributes (`data-part="axes"`)
// current, creating it on first use; parts keep their order of creation.
func (s *svgParts) use(attrs string) {
	if s.depth != 0 {
		panic("svgParts: part changed inside Push")
	}
	for i, a := range s.attrs {
		if a == attrs {
			s.cur = i
			return
		}
	}
	s.attrs = append(s.attrs, attrs)
	s.parts = append(s.parts, vgsvg.New(s.w, s.h))
	s.cur = len(s.parts) - 1
}

// part is the group attributes of a part: data-part="name", then
// data-key="value" for each pair of kv.
func part(name string, kv ...string) string {
	a := `data-part="` + name + `"`
	for i := 0; i+1 < len(kv); i += 2 {
		a += ` data-` + kv[i] + `="` + html.EscapeString(kv[i+1]) + `"`
	}
	return a
}

func (s *svgParts) c() *vgsvg.Canvas {
	if s.cur < 0 {
		s.use(part("figure"))
	}
	return s.parts[s.cur]
}

func (s *svgParts) Size() (w, h vg.Length) { return s.w, s.h }

// Line style and colour apply to every part: they are state, not drawing.
func (s *svgParts) SetLineWidth(w vg.Length) {
	for _, p := range s.parts {
		p.SetLineWidth(w)
	}
}

func (s *svgParts) SetLineDash(pattern []vg.Length, offset vg.Length) {
	for _, p := range s.parts {
		p.SetLineDash(pattern, offset)
	}
}

func (s *svgParts) SetColor(c color.Color) {
	for _, p := range s.parts {
		p.SetColor(c)
	}
}

func (s *svgParts) Rotate(rad float64)    { s.c().Rotate(rad) }
func (s *svgParts) Translate(pt vg.Point) { s.c().Translate(pt) }
func (s *svgParts) Scale(x, y float64)    { s.c().Scale(x, y) }
func (s *svgParts) Push()                 { s.c().Push(); s.depth++ }
func (s *svgParts) Pop()                  { s.c().Pop(); s.depth-- }
func (s *svgParts) Stroke(p vg.Path)      { s.c().Stroke(p) }
func (s *svgParts) Fill(p vg.Path)        { s.c().Fill(p) }
func (s *svgParts) DrawImage(r vg.Rectangle, img image.Image) {
	s.c().DrawImage(r, img)
}

func (s *svgParts) FillString(f font.Face, pt vg.Point, text string) {
	s.c().FillString(f, pt, text)
}

// fontFallback names, after the Liberation font gonum measures text with,
// the fonts of the same metrics most systems have.
var fontFallback = []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")

// svg writes the figure: one SVG document whose groups are the parts, with
// a viewBox so that it scales to the width it is given.
func (s *svgParts) svg(label string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.5gpt" height="%.5gpt" viewBox="0 0 %.5g %.5g" role="img" aria-label="%s">`+"\n",
		s.w.Points(), s.h.Points(), s.w.Points(), s.h.Points(), html.EscapeString(label))
	for i, p := range s.parts {
		var one bytes.Buffer
		if _, err := p.WriteTo(&one); err != nil {
			return nil, err
		}
		// Keep what is inside vgsvg's <svg …> element.
		doc := one.Bytes()
		start := bytes.Index(doc, []byte("<svg"))
		end := bytes.LastIndex(doc, []byte("</svg>"))
		if start < 0 || end < 0 {
			return nil, fmt.Errorf("svg: unexpected vgsvg output")
		}
		start += bytes.IndexByte(doc[start:], '>') + 1
		inner := bytes.ReplaceAll(bytes.TrimSpace(doc[start:end]), []byte("font-family:Liberation Sans;"), fontFallback)
		fmt.Fprintf(&b, "<g %s>\n%s\n</g>\n", s.attrs[i], inner)
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// partsOf finds the svgParts under a draw.Canvas (plotters get canvases
// that wrap the one the plot was drawn on).
func partsOf(c vg.Canvas) *svgParts {
	for {
		switch v := c.(type) {
		case *svgParts:
			return v
		case draw.Canvas:
			c = v.Canvas
		case *draw.Canvas:
			c = v.Canvas
		default:
			return nil
		}
	}
}

// partMark is a plotter that draws nothing: added to a plot before the
// others, it makes what follows (the data) a part of its own.
type partMark string

func (m partMark) Plot(c draw.Canvas, _ *plot.Plot) {
	if s := partsOf(c.Canvas); s != nil {
		s.use(string(m))
	}
}
