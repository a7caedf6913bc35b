package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// twelvePolicies is an LS6-like line-up, in a display order that mixes
// the kinds: six baselines, five learned policies, the oracle.
var twelvePolicies = []synthPolicy{
	{"reactive", 1}, {"xgb", 0.4}, {"dependency", 0.9}, {"rf", 0.5}, {"lead", 0.95}, {"oracle", 0.1},
	{"dqn", 0.55}, {"start-estimate", 0.8}, {"pg", 0.65}, {"average", 0.7}, {"rf-xgb", 0.45}, {"quantile", 0.6},
}

// twelveLegend is what every legend of that report must read, top to
// bottom: the kinds in order, each with its policies in display order.
var twelveLegend = []string{
	"baselines", "reactive", "dependency", "lead", "start-estimate", "average", "quantile",
	"learned", "xgb", "rf", "dqn", "pg", "rf-xgb",
	"oracle", "oracle",
}

var (
	twelveBaselines = []string{"reactive", "dependency", "lead", "start-estimate", "average", "quantile"}
	twelveLearned   = []string{"xgb", "rf", "dqn", "pg", "rf-xgb"}
)

// policiesReport is a report of 40 hand-offs per size at load ×1 and ×1.2
// of the given policies.
func policiesReport(t testing.TB, pols []synthPolicy) *Report {
	t.Helper()
	var names []string
	for _, p := range pols {
		names = append(names, p.name)
	}
	r, err := New("Twelve policies", names, metrics.Provenance{Mirage: "test"}, synthSamplesOf(40, 3, []float64{1, 1.2}, pols), Bootstrap{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlotPolicyKinds(t *testing.T) {
	for kind, names := range map[policyKind][]string{
		kindBaseline: {"reactive", "dependency", "lead", "start-estimate", "average", "quantile"},
		kindLearned:  {"rf", "rf-golearn", "rf-xgb", "xgb", "dqn", "pg", "xgb-noharm", "xgb-online"},
		kindOracle:   {"oracle", "oracle-tick"},
	} {
		for _, n := range names {
			if got := kindOf(n); got != kind {
				t.Errorf("kindOf(%q) = %s, want %s", n, kindNames[got], kindNames[kind])
			}
		}
	}
}

// styleKey is what a reader sees of a policy in each kind of plot.
func styleKeys(s policyStyle) (line, glyph, bar string) {
	ls := s.lineStyle()
	g := s.glyphStyle()
	dirs, sp := s.hatch()
	return fmt.Sprint(s.color, ls.Width, ls.Dashes), fmt.Sprint(s.color, reflect.TypeOf(g.Shape), g.Radius), fmt.Sprint(s.color, dirs, sp)
}

// TestPlotPolicyStyles checks that no two policies look alike in any plot,
// with the twelve policies and with far more than the palette has colours,
// and that each kind has its look.
func TestPlotPolicyStyles(t *testing.T) {
	many := []string{"oracle", "oracle-a", "oracle-b", "oracle-c"}
	for i := range 25 {
		many = append(many, fmt.Sprintf("base%02d", i), fmt.Sprintf("xgb-%02d", i))
	}
	var twelve []string
	for _, p := range twelvePolicies {
		twelve = append(twelve, p.name)
	}
	for _, pols := range [][]string{twelve, many} {
		st := policyStyles(pols)
		if len(st) != len(pols) {
			t.Fatalf("%d styles for %d policies", len(st), len(pols))
		}
		seen := [3]map[string]string{{}, {}, {}}
		for _, p := range pols {
			line, glyph, bar := styleKeys(st[p])
			for i, k := range []string{line, glyph, bar} {
				if q, dup := seen[i][k]; dup {
					t.Errorf("%s and %s look alike in %s plots: %s", p, q, []string{"line", "scatter", "bar"}[i], k)
				}
				seen[i][k] = p
			}
		}
	}
	st := policyStyles(twelve)
	black := rgb(0)
	for _, p := range twelve {
		s := st[p]
		ls, g := s.lineStyle(), s.glyphStyle()
		dirs, _ := s.hatch()
		switch {
		case slices.Contains(twelveBaselines, p):
			if len(ls.Dashes) == 0 || reflect.TypeOf(g.Shape).Name() != "BoxGlyph" || len(dirs) != 1 || s.color == black {
				t.Errorf("baseline %s: dashes %v, glyph %T, hatch %v, colour %v; want dashed, square, hatched, not black", p, ls.Dashes, g.Shape, dirs, s.color)
			}
		case slices.Contains(twelveLearned, p):
			if len(ls.Dashes) != 0 || reflect.TypeOf(g.Shape).Name() != "CircleGlyph" || len(dirs) != 0 || s.color == black {
				t.Errorf("learned %s: dashes %v, glyph %T, hatch %v, colour %v; want solid, round, plain, not black", p, ls.Dashes, g.Shape, dirs, s.color)
			}
		default:
			if len(ls.Dashes) == 0 || g.Shape != (starGlyph{}) || s.color != black {
				t.Errorf("oracle %s: dashes %v, glyph %T, colour %v; want dotted black star", p, ls.Dashes, g.Shape, s.color)
			}
		}
	}
	// Eleven policies that are not the oracle, eleven colours (#51:
	// reactive and xgb shared one): each policy its own.
	byColour := map[string][]string{}
	for _, p := range twelve {
		if p != "oracle" {
			c := fmt.Sprint(st[p].color)
			byColour[c] = append(byColour[c], p)
		}
	}
	if len(byColour) != 11 {
		t.Errorf("%d colours for 11 policies, want one each: %v", len(byColour), byColour)
	}
}

// TestPlotSVGWellFormed parses every figure as XML: its parts are there and
// a policy name with markup in it comes back as text, escaped.
func TestPlotSVGWellFormed(t *testing.T) {
	pols := append(slices.Clone(twelvePolicies[:3]), synthPolicy{`a"<b>&c`, 0.5})
	r := policiesReport(t, pols)
	figs, err := r.Figures()
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 8 {
		t.Fatalf("%d figures, want 8", len(figs))
	}
	for _, f := range figs {
		d := xml.NewDecoder(bytes.NewReader(f.SVG))
		parts := map[string]int{}
		var policies, texts []string
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f.ID, err)
			}
			switch e := tok.(type) {
			case xml.StartElement:
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "data-part":
						parts[a.Value]++
					case "data-policy":
						policies = append(policies, a.Value)
					}
				}
			case xml.CharData:
				texts = append(texts, string(e))
			}
		}
		// The data: one part, and in the bar and scatter plots one more
		// per mark (4 policies × the classes; a label per group of marks).
		data := parts["data"]
		delete(parts, "data")
		want := map[string]int{"background": 1, "axes": 1, "legend-heading": 2, "legend-entry": 4}
		if !reflect.DeepEqual(parts, want) || data < 1 || !strings.HasPrefix(f.ID, "cdf-") && data < 1+4*2 {
			t.Errorf("%s: parts %v and %d of data, want %v and the data", f.ID, parts, data, want)
		}
		if !slices.Contains(policies, `a"<b>&c`) || !slices.Contains(texts, `a"<b>&c`) {
			t.Errorf("%s: policy with markup not read back: %q", f.ID, policies)
		}
	}
}

// rect is a box in CSS pixels, as getBoundingClientRect reports it.
type rect struct {
	L float64 `json:"l"`
	T float64 `json:"t"`
	R float64 `json:"r"`
	B float64 `json:"b"`
}

func (a rect) overlaps(b rect) bool { return a.L < b.R && b.L < a.R && a.T < b.B && b.T < a.B }

func (a rect) inside(b rect) bool {
	const tol = 0.5
	return a.L >= b.L-tol && a.R <= b.R+tol && a.T >= b.T-tol && a.B <= b.B+tol
}

func (a rect) union(b rect) rect {
	return rect{min(a.L, b.L), min(a.T, b.T), max(a.R, b.R), max(a.B, b.B)}
}

func (a rect) String() string { return fmt.Sprintf("[%.0f,%.0f–%.0f,%.0f]", a.L, a.T, a.R, a.B) }

// svgMark is one drawn element of a figure, as the browser renders it.
type svgMark struct {
	Tag    string `json:"tag"`
	Text   string `json:"text"`
	Box    rect   `json:"box"`
	Fill   string `json:"fill"`
	Stroke string `json:"stroke"`
	Dash   string `json:"dash"`
	Shape  string `json:"shape"` // the path's commands, without numbers
}

// figureLayout is a figure on the page: its SVG's box and the marks of
// its parts.
type figureLayout struct {
	ID      string     `json:"id"`
	Title   string     `json:"title"`
	SVG     rect       `json:"svg"`
	ViewBox [2]float64 `json:"viewBox"`
	Axes    []svgMark  `json:"axes"`
	Data    []svgMark  `json:"data"`
	Legend  []struct {
		Part   string    `json:"part"`
		Policy string    `json:"policy"`
		Marks  []svgMark `json:"marks"`
	} `json:"legend"`
}

// figureLayoutJS reports every figure's layout (figureLayout).
const figureLayoutJS = `(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const marks = root => Array.from(root.querySelectorAll('path, text, rect, circle, ellipse, line, polyline, polygon, image')).map(e => {
    const cs = getComputedStyle(e), tag = e.tagName.toLowerCase();
    return {tag, text: tag === 'text' ? e.textContent : '', box: box(e), fill: cs.fill, stroke: cs.stroke,
            dash: cs.strokeDasharray, shape: (e.getAttribute('d') || '').replace(/[^A-Za-z]/g, '')};
  });
  const within = (svg, sel) => Array.from(svg.querySelectorAll(sel)).flatMap(marks);
  return Array.from(document.querySelectorAll('figure')).map(fig => {
    const svg = fig.querySelector('svg'), vb = svg.viewBox.baseVal, b = fig.querySelector('figcaption b');
    return {id: fig.id, title: b ? b.textContent.replace(/\.$/, '') : '', svg: box(svg), viewBox: [vb.width, vb.height],
      axes: within(svg, '[data-part="axes"]'), data: within(svg, '[data-part="data"]'),
      legend: Array.from(svg.querySelectorAll('[data-part^="legend"]')).map(g => ({part: g.dataset.part, policy: g.dataset.policy || '', marks: marks(g)}))};
  });
})()`

// unitTickRE is a tick label of a log scale, which carries its unit;
// classTickRE a load class under its bars, with its hand-offs and the
// mark of few.
var (
	unitTickRE  = regexp.MustCompile(`^−?\d+ (min|h)$`)
	classTickRE = regexp.MustCompile(`^(low|medium|heavy|all)( \(n = \d+\))?( †)?$`)
)

// isNumber reports whether a label reads as a number.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.ReplaceAll(s, "−", "-"), 64)
	return err == nil
}

// figureProblems checks one figure as laid out in the browser: the data
// area (the extent of what the "data" part draws) is not empty; every
// legend mark is inside the figure and clear of the data area and of the
// axes' marks; the legend reads wantLegend (when given), and no two entries
// look alike; every axis label other than a nominal "load class" names
// its unit; and for a share plot the y-axis labels read 0 to 100 from the
// bottom of the data area to its top.
func figureProblems(f figureLayout, wantLegend []string, share bool) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, f.ID+": "+fmt.Sprintf(format, a...)) }
	if len(f.Data) == 0 {
		bad("no data marks")
		return out
	}
	data := f.Data[0].Box
	for _, m := range f.Data[1:] {
		data = data.union(m.Box)
	}
	var legend []string
	looks := map[string]string{}
	for _, g := range f.Legend {
		var sig []string
		for _, m := range g.Marks {
			what := g.Policy + " " + m.Tag
			if m.Tag == "text" {
				legend = append(legend, m.Text)
				what = fmt.Sprintf("%q", m.Text)
			} else {
				sig = append(sig, fmt.Sprint(m.Tag, m.Fill, m.Stroke, m.Dash, m.Shape))
			}
			if !m.Box.inside(f.SVG) {
				bad("legend %s %v outside the figure %v", what, m.Box, f.SVG)
			}
			if m.Box.overlaps(data) {
				bad("legend %s %v over the data area %v", what, m.Box, data)
			}
			for _, a := range f.Axes {
				if m.Box.overlaps(a.Box) {
					bad("legend %s %v over the axes' %s %q %v", what, m.Box, a.Tag, a.Text, a.Box)
				}
			}
		}
		if g.Part == "legend-entry" {
			k := strings.Join(sig, "; ")
			if q, dup := looks[k]; dup {
				bad("legend entries %s and %s look alike (%s)", q, g.Policy, k)
			}
			looks[k] = g.Policy
		}
	}
	if wantLegend != nil && !slices.Equal(legend, wantLegend) {
		bad("legend reads %q, want %q", legend, wantLegend)
	}
	var labels []string
	type tick struct {
		text string
		y, h float64
	}
	var yTicks []tick
	for _, a := range f.Axes {
		switch {
		case a.Tag != "text" || a.Text == f.Title || classTickRE.MatchString(a.Text) || unitTickRE.MatchString(a.Text):
		case isNumber(a.Text):
			if a.Box.R <= data.L+0.5 {
				yTicks = append(yTicks, tick{a.Text, (a.Box.T + a.Box.B) / 2, a.Box.B - a.Box.T})
			}
		default:
			labels = append(labels, a.Text)
		}
	}
	if len(labels) != 2 {
		bad("axis labels %q, want two", labels)
	}
	for _, l := range labels {
		if !strings.Contains(l, "(h)") && !strings.Contains(l, "(%)") && !strings.Contains(l, "(log scale, min and h)") && l != "load class" {
			bad("axis label %q has no unit", l)
		}
	}
	if share {
		slices.SortFunc(yTicks, func(a, b tick) int { return int(math.Copysign(1, b.y-a.y)) }) // bottom first
		var texts []string
		for _, tk := range yTicks {
			texts = append(texts, tk.text)
		}
		if want := []string{"0", "20", "40", "60", "80", "100"}; !slices.Equal(texts, want) {
			bad("share axis reads %q, want %q", texts, want)
		} else if lo, hi := yTicks[0], yTicks[len(yTicks)-1]; math.Abs(lo.y-data.B) > lo.h/4 || math.Abs(hi.y-data.T) > hi.h/4 {
			bad("share axis: 0 at y %.1f and 100 at %.1f, the data area spans %.1f–%.1f", lo.y, hi.y, data.B, data.T)
		}
		if !slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, "(%)") }) {
			bad("share axis label not in %%: %q", labels)
		}
	}
	return out
}

// firstScreen is the top of the page in a 1400×900 viewport.
type firstScreen struct {
	W        float64 `json:"w"`
	H        float64 `json:"h"`
	Content  rect    `json:"content"` // the introduction paragraph: the page's content width
	Verdicts []rect  `json:"verdicts"`
}

const firstScreenJS = `(() => {
  scrollTo(0, 0);
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  return {w: innerWidth, h: innerHeight, content: box(document.querySelector('body > p')),
          verdicts: Array.from(document.querySelectorAll('section.verdict')).map(box)};
})()`

// TestReportFiguresInChromium lays the twelve-policy report out in
// headless Chromium at 1400×900 and checks what a reader sees: the first
// screen shows the introduction and the first verdict whole (also in a
// screenshot), the plots come after the verdicts; every figure is the full width of the page, its legend
// beside the data and inside the figure, grouped by kind and with no two
// entries alike, each kind drawn its own way; share axes read 0–100 %;
// the verdicts' figures are the bar charts' values, each bar drawn to
// scale and a zero bar visible (chartAgreement).
func TestReportFiguresInChromium(t *testing.T) {
	chromiumPath(t)
	r := policiesReport(t, twelvePolicies)
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startChromium(t, ctx)
	abs, _ := filepath.Abs(filepath.Join(dir, HTMLFile))
	session, problems := c.openPage(t, ctx, "file://"+abs)
	if _, err := c.call(ctx, session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		t.Fatal(err)
	}
	var screen firstScreen
	if err := c.eval(ctx, session, firstScreenJS, &screen); err != nil {
		t.Fatal(err)
	}
	var figs []figureLayout
	if err := c.eval(ctx, session, figureLayoutJS, &figs); err != nil {
		t.Fatal(err)
	}
	if screen.W != 1400 || screen.H != 900 {
		t.Fatalf("viewport %v×%v, want 1400×900", screen.W, screen.H)
	}
	// 2 load scales × 4 plots (synthSamplesOf)
	if len(figs) != 8 {
		t.Fatalf("%d figures on the page, want 8", len(figs))
	}

	// The first screen: the introduction and the first verdict whole; the
	// plots follow the verdicts (each verdict, with its ties, reactive and
	// its notes, is too tall for two and a plot on one screen).
	if len(screen.Verdicts) != 2 {
		t.Errorf("%d verdicts, want 2", len(screen.Verdicts))
	}
	if v := screen.Verdicts[0]; v.T < 0 || v.B > screen.H {
		t.Errorf("verdict 0 at %v, not within the first %v px", v, screen.H)
	}
	if len(figs[0].Data) == 0 {
		t.Fatalf("%s draws no data", figs[0].ID)
	}
	t.Logf("first screen: verdicts %v, first plot %v", screen.Verdicts, figs[0].SVG)
	if figs[0].SVG.T < screen.Verdicts[len(screen.Verdicts)-1].B {
		t.Errorf("first plot %v not below the verdicts %v", figs[0].SVG, screen.Verdicts)
	}

	for _, f := range figs {
		// Full width, in proportion.
		if w := f.SVG.R - f.SVG.L; w < screen.Content.R-screen.Content.L-1 {
			t.Errorf("%s: %.0f px wide, the page's content %.0f", f.ID, w, screen.Content.R-screen.Content.L)
		} else if ratio := (f.SVG.B - f.SVG.T) / w; math.Abs(ratio-f.ViewBox[1]/f.ViewBox[0]) > 0.01 {
			t.Errorf("%s: drawn %.3f as high as wide, its viewBox %.3f", f.ID, ratio, f.ViewBox[1]/f.ViewBox[0])
		}
		share := strings.HasPrefix(f.ID, "cdf-") || strings.HasPrefix(f.ID, "bars-zero-")
		for _, p := range figureProblems(f, twelveLegend, share) {
			t.Error(p)
		}
		// Each kind its look: in the CDF baselines dashed, learned solid, the
		// oracle black and dotted; among the bars baselines hatched; in the
		// scatter plot baselines square, learned round, the oracle a star.
		for _, g := range f.Legend {
			if g.Part != "legend-entry" {
				continue
			}
			var m []svgMark
			for _, x := range g.Marks {
				if x.Tag != "text" {
					m = append(m, x)
				}
			}
			if len(m) == 0 {
				t.Errorf("%s: %s has no thumbnail", f.ID, g.Policy)
				continue
			}
			baseline, learned := slices.Contains(twelveBaselines, g.Policy), slices.Contains(twelveLearned, g.Policy)
			const black = "rgb(0, 0, 0)"
			var ok bool
			switch kind := strings.SplitN(f.ID, "-", 2)[0]; {
			case kind == "cdf" && baseline:
				ok = m[0].Dash != "none" && m[0].Stroke != black
			case kind == "cdf" && learned:
				ok = m[0].Dash == "none" && m[0].Stroke != black
			case kind == "cdf":
				ok = m[0].Dash != "none" && m[0].Stroke == black
			case kind == "bars" && baseline:
				ok = len(m) > 1 && m[0].Fill != black
			case kind == "bars" && learned:
				ok = len(m) == 1 && m[0].Fill != black
			case kind == "bars":
				ok = len(m) == 1 && m[0].Fill == black
			case baseline:
				ok = m[0].Shape == "MLLLZ" && m[0].Fill != black
			case learned:
				ok = strings.Contains(m[0].Shape, "A") && m[0].Fill != black
			default:
				ok = m[0].Shape == "M"+strings.Repeat("L", 9)+"Z" && m[0].Fill == black
			}
			if !ok {
				t.Errorf("%s: %s drawn %+v", f.ID, g.Policy, m)
			}
		}
	}

	// The verdicts and the bar charts agree: each verdict row's mean
	// interruption and zero-interruption share are the values of its
	// policy's bar in its class, and every bar is drawn that tall.
	var agree chartAgreement
	if err := c.eval(ctx, session, chartAgreementJS, &agree); err != nil {
		t.Fatal(err)
	}
	for _, p := range agree.problems() {
		t.Error(p)
	}

	// A real screenshot of the first screen: text in the first verdict, ink
	// in the visible part of the first plot.
	res, err := c.call(ctx, session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "first-screen.png")
	_ = os.WriteFile(path, raw, 0o644)
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	t.Logf("screenshot %s: %d bytes, %d×%d", path, len(raw), b.Dx(), b.Dy())
	if b.Dx() != 1400 || b.Dy() != 900 {
		t.Fatalf("screenshot %d×%d, want 1400×900", b.Dx(), b.Dy())
	}
	ink := func(area rect, dark uint32) (n, of int) {
		for y := max(int(area.T), 0); y < min(int(area.B), b.Dy()); y++ {
			for x := max(int(area.L), 0); x < min(int(area.R), b.Dx()); x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if (r+g+bl)/3>>8 < dark {
					n++
				}
				of++
			}
		}
		return n, of
	}
	if n, of := ink(screen.Verdicts[0], 100); n*100 < of { // text is well over 1% of a verdict
		t.Errorf("first verdict %v: %d of %d pixels dark", screen.Verdicts[0], n, of)
	}
	if n, of := ink(screen.Content, 100); n*200 < of { // the introduction: text
		t.Errorf("introduction %v: %d of %d pixels dark", screen.Content, n, of)
	}
	time.Sleep(300 * time.Millisecond)
	if p := problems.all(); len(p) > 0 {
		t.Errorf("page problems:\n%s", strings.Join(p, "\n"))
	}
}

// TestFigureCheckCatchesOverlap shows figureProblems can fail: a
// hand-made figure with a legend entry over the data, one running out of
// the figure, two entries alike, a share axis in fractions and an axis
// label without a unit.
func TestFigureCheckCatchesOverlap(t *testing.T) {
	chromiumPath(t)
	page := `<!DOCTYPE html><html><head><title>bad</title></head><body>
<figure id="bars-zero-bad"><svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200">
<g data-part="axes">
<text x="2" y="184" font-size="10">0</text><text x="2" y="104" font-size="10">0.5</text><text x="2" y="24" font-size="10">1</text>
<text x="100" y="198" font-size="10">share</text><text x="0" y="12" font-size="10" transform="rotate(-90 0 12)">y</text>
</g>
<g data-part="data"><path d="M30,20L300,20L300,180L30,180Z" fill="none" stroke="#ccc"/></g>
<g data-part="legend-entry" data-policy="reactive"><path d="M200,50L220,50" stroke="red"/><text x="225" y="54" font-size="10">reactive</text></g>
<g data-part="legend-entry" data-policy="xgb"><path d="M320,70L340,70" stroke="red"/><text x="345" y="74" font-size="10">a name far too long</text></g>
</svg><figcaption><b>Bad.</b></figcaption></figure></body></html>`
	path := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startChromium(t, ctx)
	session, _ := c.openPage(t, ctx, "file://"+path)
	var figs []figureLayout
	if err := c.eval(ctx, session, figureLayoutJS, &figs); err != nil {
		t.Fatal(err)
	}
	if len(figs) != 1 {
		t.Fatalf("figures: %+v", figs)
	}
	got := strings.Join(figureProblems(figs[0], []string{"reactive", "xgb"}, true), "\n")
	t.Log(got)
	for _, want := range []string{
		`legend "reactive"`, "over the data area", // the entry over the data
		`legend "a name far too long"`, "outside the figure",
		"look alike",
		`legend reads ["reactive" "a name far too long"]`,
		`share axis reads ["0" "0.5" "1"]`,
		`axis label "share" has no unit`, `axis label "y" has no unit`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not mention %q", want)
		}
	}
}

// chartAgreement is what a reader compares between the verdicts and the
// bar charts: each verdict's rows (policy, class, the figures by JSON key)
// and each bar chart's bars (policy, class, value and drawn box), in page
// order.
type chartAgreement struct {
	Verdicts [][]struct {
		Policy string             `json:"policy"`
		Class  string             `json:"cls"`
		Values map[string]float64 `json:"values"`
	} `json:"verdicts"`
	Charts []struct {
		ID   string `json:"id"`
		Bars []struct {
			Policy string  `json:"policy"`
			Class  string  `json:"cls"`
			Value  float64 `json:"value"`
			Box    rect    `json:"box"`
		} `json:"bars"`
	} `json:"charts"`
}

// chartAgreementJS reports the page's chartAgreement.
const chartAgreementJS = `(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const verdicts = Array.from(document.querySelectorAll('section.verdict')).map(sec =>
    Array.from(sec.querySelectorAll('tbody tr')).map(tr => {
      const labels = Array.from(tr.querySelectorAll('td.label')).map(td => td.textContent);
      const values = {};
      tr.querySelectorAll('td[data-k]').forEach(td => { values[td.dataset.k.replace(/^.*\./, '')] = parseFloat(td.dataset.v); });
      return {policy: labels[0], cls: labels[2], values};
    }));
  const charts = Array.from(document.querySelectorAll('figure[id^="bars-"]')).map(fig => ({id: fig.id,
    bars: Array.from(fig.querySelectorAll('[data-part="data"][data-value]')).map(g =>
      ({policy: g.dataset.policy, cls: g.dataset.class, value: parseFloat(g.dataset.value), box: box(g)}))}));
  return {verdicts, charts};
})()`

// problems lists where the verdicts and the charts disagree. The i-th
// verdict goes with the i-th bars-interruption and bars-zero charts (both
// follow the experiments' order). A verdict row's mean interruption must
// be its bar's value in bars-interruption, 100 × its zero-interruption
// share its bar's value in bars-zero (a class marked † is the same
// class). Within a chart every bar stands on one baseline and is drawn
// value × (the tallest bar's height per unit) tall, to within 1.5 px; a
// bar that would be under 4 px is drawn as a visible flat mark (0–5 px).
func (a chartAgreement) problems() []string {
	var out []string
	bad := func(format string, v ...any) { out = append(out, fmt.Sprintf(format, v...)) }
	byKind := map[string][]int{}
	for i, c := range a.Charts {
		kind := "zero"
		if strings.HasPrefix(c.ID, "bars-interruption-") {
			kind = "interruption"
		}
		byKind[kind] = append(byKind[kind], i)
	}
	if len(byKind["interruption"]) != len(a.Verdicts) || len(byKind["zero"]) != len(a.Verdicts) {
		bad("%d verdicts, %d interruption and %d zero-interruption charts", len(a.Verdicts), len(byKind["interruption"]), len(byKind["zero"]))
		return out
	}
	checked := 0
	for vi, rows := range a.Verdicts {
		for _, kind := range []struct {
			name, key string
			scale     float64
		}{{"interruption", "interruption_mean_h", 1}, {"zero", "zero_interruption", 100}} {
			chart := a.Charts[byKind[kind.name][vi]]
			for _, row := range rows {
				class := strings.TrimSuffix(row.Class, fewMark)
				want, ok := row.Values[kind.key]
				if !ok {
					bad("verdict %d: %s %s has no %s", vi, row.Policy, row.Class, kind.key)
					continue
				}
				if class == metrics.AllClasses {
					continue // the charts show the classes
				}
				found := false
				for _, b := range chart.Bars {
					if b.Policy == row.Policy && b.Class == class {
						found = true
						if math.Abs(b.Value-want*kind.scale) > 1e-9*max(1, math.Abs(b.Value)) {
							bad("%s: %s %s bar %g, verdict %g", chart.ID, row.Policy, class, b.Value, want*kind.scale)
						}
						checked++
					}
				}
				if !found {
					bad("%s: no bar of %s in %s, which verdict %d shows", chart.ID, row.Policy, class, vi)
				}
			}
		}
	}
	if checked == 0 {
		bad("no verdict figure compared with a bar")
	}
	for _, c := range a.Charts {
		if len(c.Bars) == 0 {
			bad("%s: no bars", c.ID)
			continue
		}
		top := c.Bars[0]
		for _, b := range c.Bars {
			if b.Value > top.Value {
				top = b
			}
		}
		perUnit := 0.0
		if top.Value > 0 {
			perUnit = (top.Box.B - top.Box.T) / top.Value
		}
		for _, b := range c.Bars {
			h, want := b.Box.B-b.Box.T, b.Value*perUnit
			switch {
			case math.Abs(b.Box.B-top.Box.B) > 1:
				bad("%s: %s %s bar ends at y %.1f, the tallest at %.1f", c.ID, b.Policy, b.Class, b.Box.B, top.Box.B)
			case want >= 4 && math.Abs(h-want) > 1.5:
				bad("%s: %s %s bar (%g) %.1f px tall, want %.1f", c.ID, b.Policy, b.Class, b.Value, h, want)
			case want < 4 && (h <= 0 || h > 5):
				bad("%s: %s %s bar (%g) %.1f px tall, want a visible flat mark", c.ID, b.Policy, b.Class, b.Value, h)
			}
		}
	}
	return out
}

// TestChartAgreementCatches shows chartAgreement.problems can fail: one
// verdict of reactive in the low class (mean interruption 2 h, zero
// interruption 0.5), with charts whose reactive bar reads 3 h (not 2) and
// 50 (right), a second bar of 1 h drawn 40 px where the tallest (3 h,
// 90 px) makes 30 px right, and a zero-interruption bar of 0 drawn 0 px
// high (invisible): three problems, one each.
func TestChartAgreementCatches(t *testing.T) {
	var a chartAgreement
	if err := json.Unmarshal([]byte(`{
	  "verdicts": [[{"policy": "reactive", "cls": "low", "values": {"interruption_mean_h": 2, "zero_interruption": 0.5}}]],
	  "charts": [
	    {"id": "bars-interruption-pair-x1", "bars": [
	      {"policy": "reactive", "cls": "low", "value": 3, "box": {"l": 0, "t": 10, "r": 10, "b": 100}},
	      {"policy": "xgb", "cls": "low", "value": 1, "box": {"l": 10, "t": 60, "r": 20, "b": 100}}]},
	    {"id": "bars-zero-pair-x1", "bars": [
	      {"policy": "reactive", "cls": "low", "value": 50, "box": {"l": 0, "t": 50, "r": 10, "b": 100}},
	      {"policy": "xgb", "cls": "low", "value": 0, "box": {"l": 10, "t": 100, "r": 20, "b": 100}}]}]}`), &a); err != nil {
		t.Fatal(err)
	}
	p := a.problems()
	want := []string{"reactive low bar 3, verdict 2", "xgb low bar (1) 40.0 px tall, want 30.0", "xgb low bar (0) 0.0 px tall, want a visible flat mark"}
	if len(p) != len(want) {
		t.Fatalf("problems %q, want %d", p, len(want))
	}
	for i, w := range want {
		if !strings.Contains(p[i], w) {
			t.Errorf("problem %d %q, want one about %q", i, p[i], w)
		}
	}
}

// TestPlotDataAreaFillsFigure: the plots on log scales keep the data area
// as tall as a linear plot's. (With the scale as a plot.Normalizer, gonum
// reserved room for the axis label at the scale's image of the range's
// midpoint, near the top: the scatter plot of the demo lost 27% of its
// height.) The room above the data area is the title's, under a tenth of
// the figure (a 10 pt title and its padding in 300 pt).
func TestPlotDataAreaFillsFigure(t *testing.T) {
	r := policiesReport(t, twelvePolicies)
	e := r.experiments()[0]
	pols := r.policiesIn(e)
	st := policyStyles(pols)
	classes := []string{metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy}
	for name, build := range map[string]func() (*plot.Plot, []legendEntry, error){
		"cdf":     func() (*plot.Plot, []legendEntry, error) { return r.cdfPlot(e, pols, st) },
		"scatter": func() (*plot.Plot, []legendEntry, error) { return r.scatterPlot(e, pols, classes, st) },
	} {
		p, _, err := build()
		if err != nil {
			t.Fatal(err)
		}
		c := draw.New(vgimg.New(vg.Points(600), vg.Points(300)))
		if above := c.Max.Y - p.DataCanvas(c).Max.Y; above > 30 {
			t.Errorf("%s: %.0f pt of 300 above the data area", name, above)
		}
	}
}
