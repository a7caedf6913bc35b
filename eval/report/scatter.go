package report

import (
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math"
	"slices"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// scatterPoint is one policy's figures in one load class.
type scatterPoint struct {
	policy, class string
	x, y          float64 // symlog of its mean overlap and mean interruption
	style         policyStyle
}

// scatterSet draws the points of the interruption-against-overlap plot
// so that each can be seen and read: marks that would cover each other
// (at the same place, say three policies with no overlap and no
// interruption) are spread evenly on a small circle around their common
// place, and each such group gets one label of its load classes' letters,
// put where it covers no mark and no other label. Each mark is a part of
// its own (data-policy, data-class), each label too (data-label).
type scatterSet struct{ pts []scatterPoint }

func (s *scatterSet) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, p := range s.pts {
		xmax, ymax = max(xmax, p.x), max(ymax, p.y)
	}
	return 0, xmax, 0, ymax
}

// labelGap is the space between a group's marks and its label.
var labelGap = vg.Points(3)

func (s *scatterSet) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(s.pts)
	at := make([]vg.Point, n)
	radius := make([]vg.Length, n)
	for i, pt := range s.pts {
		at[i] = vg.Point{X: trX(pt.x), Y: trY(pt.y)}
		radius[i] = pt.style.glyphStyle().Radius
	}
	groups := overlapping(at, radius)
	// Spread each group of more than one mark on a circle around its
	// centre, adjacent marks just apart.
	type placed struct {
		centre vg.Point
		reach  vg.Length // from the centre to the outer edge of its marks
		idx    []int
	}
	var gs []placed
	for _, idx := range groups {
		var cx, cy vg.Length
		var r vg.Length
		for _, i := range idx {
			cx, cy = cx+at[i].X, cy+at[i].Y
			r = max(r, radius[i])
		}
		centre := vg.Point{X: cx / vg.Length(len(idx)), Y: cy / vg.Length(len(idx))}
		reach := r
		if k := len(idx); k > 1 {
			ring := 1.15 * r / vg.Length(math.Sin(math.Pi/float64(k)))
			for j, i := range idx {
				a := math.Pi/2 + 2*math.Pi*float64(j)/float64(k)
				at[i] = vg.Point{X: centre.X + ring*vg.Length(math.Cos(a)), Y: centre.Y + ring*vg.Length(math.Sin(a))}
			}
			reach = ring + r
		}
		gs = append(gs, placed{centre, reach, idx})
	}
	sp := partsOf(c.Canvas)
	var taken []vg.Rectangle // marks and labels placed so far
	for i, pt := range s.pts {
		if sp != nil {
			sp.use(part("data", "policy", pt.policy, "class", pt.class))
		}
		c.DrawGlyph(pt.style.glyphStyle(), at[i])
		taken = append(taken, vg.Rectangle{Min: vg.Point{X: at[i].X - radius[i], Y: at[i].Y - radius[i]}, Max: vg.Point{X: at[i].X + radius[i], Y: at[i].Y + radius[i]}})
	}
	style := textStyle(9, xfont.WeightNormal)
	for _, g := range gs {
		var letters []string
		for _, cl := range []string{metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy, metrics.AllClasses} {
			for _, i := range g.idx {
				if s.pts[i].class == cl && !slices.Contains(letters, classLetter(cl)) {
					letters = append(letters, classLetter(cl))
				}
			}
		}
		text := strings.Join(letters, ", ")
		w, h := style.Width(text), style.Height(text)
		box := labelPlace(g.centre, g.reach, w, h, c.Rectangle, taken)
		taken = append(taken, box)
		if sp != nil {
			sp.use(part("data", "label", text))
		}
		c.FillText(style, vg.Point{X: box.Min.X, Y: (box.Min.Y + box.Max.Y) / 2}, text)
	}
}

// overlapping groups the marks at at (with their radii) that touch,
// directly or through others, in order of their first mark.
func overlapping(at []vg.Point, radius []vg.Length) [][]int {
	parent := make([]int, len(at))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i := range at {
		for j := i + 1; j < len(at); j++ {
			dx, dy := float64(at[i].X-at[j].X), float64(at[i].Y-at[j].Y)
			if math.Hypot(dx, dy) < float64(radius[i]+radius[j]) {
				parent[find(j)] = find(i)
			}
		}
	}
	var out [][]int
	index := map[int]int{}
	for i := range at {
		r := find(i)
		k, ok := index[r]
		if !ok {
			k = len(out)
			index[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

// labelPlace is the box of a w × h label for the marks around centre
// (reach from it): the first of right, left, above, below and the four
// corners, at one, two then three times the gap, that lies within area
// and clear of every box in taken; the first place to the right when
// none is.
func labelPlace(centre vg.Point, reach, w, h vg.Length, area vg.Rectangle, taken []vg.Rectangle) vg.Rectangle {
	boxAt := func(dx, dy float64, gap vg.Length) vg.Rectangle {
		// (dx, dy) ∈ {−1, 0, 1}²: the side of the marks the label is on.
		x := centre.X + vg.Length(dx)*(reach+gap)
		y := centre.Y + vg.Length(dy)*(reach+gap)
		switch {
		case dx > 0:
		case dx < 0:
			x -= w
		default:
			x -= w / 2
		}
		switch {
		case dy > 0:
		case dy < 0:
			y -= h
		default:
			y -= h / 2
		}
		return vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + w, Y: y + h}}
	}
	sides := [][2]float64{{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1}}
	for step := 1; step <= 3; step++ {
		for _, sd := range sides {
			b := boxAt(sd[0], sd[1], labelGap*vg.Length(step))
			if !within(b, area) {
				continue
			}
			free := true
			for _, t := range taken {
				if b.Min.X < t.Max.X && t.Min.X < b.Max.X && b.Min.Y < t.Max.Y && t.Min.Y < b.Max.Y {
					free = false
					break
				}
			}
			if free {
				return b
			}
		}
	}
	return boxAt(1, 0, labelGap)
}

func within(b, area vg.Rectangle) bool {
	return b.Min.X >= area.Min.X && b.Max.X <= area.Max.X && b.Min.Y >= area.Min.Y && b.Max.Y <= area.Max.Y
}
