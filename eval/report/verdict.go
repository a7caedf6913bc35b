package report

import (
	"cmp"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math"
	"slices"
	"strings"
	"time"
)

// verdictView is the answer a report opens with, for one experiment: the
// policy a site should run and how it fares against reactive, per load
// class, as a table whose numbers are the groups' own, with the policies
// that tie it and the notes a reader needs to read the figures right.
type verdictView struct {
	Title  string // "Verdict, pair protocol, load ×1"
	Policy string // the recommended policy ("" when no runnable policy has hand-offs)
	Why    string
	Ties   []tie // the policies that tie the lowest mean |gap|, the recommended one aside
	Table  tableView
	Notes  []string // what the figures need said: the zero tolerance, who overlaps and why, classes of few hand-offs
}

// isOracle reports whether a policy knows the future (the oracle and its
// variants): a bound to compare with, never a recommendation.
func isOracle(policy string) bool { return strings.HasPrefix(policy, "oracle") }

// verdictColumns are the figures the verdict shows: those of the bar
// charts among them (mean interruption, zero interruption), so that the
// verdict and the charts can be read against each other.
var verdictColumns = func() []tableColumn {
	var out []tableColumn
	for _, key := range []string{"mean_abs_gap_h", "interruption_mean_h", "reduction", "zero_interruption", "overlap_mean_h", "wasted_gpu_h", "n"} {
		for _, c := range metricColumns {
			if c.key == key {
				out = append(out, c)
			}
		}
	}
	return out
}()

// tie is a policy whose mean |gap| differs from the lowest only within
// chance or by less than tieMargin: over the hand-offs both ran, the mean
// of its |gap| less the best's (an interruption within the zero tolerance
// counting as none), with the bootstrap interval of that mean holding 0
// or lying within ±tieMargin.
type tie struct {
	Policy  string
	Of      string  // the policy with the lowest mean |gap|
	Diff    float64 // mean |gap| difference (this − Of) over the matched hand-offs, hours
	Lo, Hi  float64 // its interval at the report's bootstrap level
	Matched int     // hand-offs both ran
}

// simplicity ranks what running a policy takes: reactive changes nothing,
// another baseline needs no model, a learned policy a trained one.
func simplicity(policy string) int {
	switch {
	case policy == metrics.Reference:
		return 0
	case kindOf(policy) == kindBaseline:
		return 1
	}
	return 2
}

// verdict recommends, for experiment e, among the policies a site can run
// (not an oracle), the one with the lowest mean |gap| over all its
// hand-offs, unless a simpler one ties it (ties): then the simplest of
// those (reactive, then the other baselines, then learned policies). Its
// table gives, per load class, the recommended policy, those that tie and
// reactive on the figures the charts show too.
func (r *Report) verdict(e metrics.GroupKey) verdictView {
	if e.Protocol == metrics.ProtocolRun && len(r.RunGroups) > 0 {
		return r.verdictRuns(e)
	}
	v := verdictView{Title: "Verdict, " + e.Protocol + " protocol, load ×" + fullFloat(e.LoadScale),
		Table: tableView{ID: fmt.Sprintf("verdict-%s-x%g", e.Protocol, e.LoadScale), Heads: []string{"policy", "size", "load class"}}}
	for _, c := range verdictColumns {
		v.Table.Heads = append(v.Table.Heads, c.head)
	}
	var best *metrics.GroupStats
	var runnable []*metrics.GroupStats
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Protocol != e.Protocol || g.LoadScale != e.LoadScale || g.Nodes != 0 || g.LoadClass != metrics.AllClasses || isOracle(g.Policy) || g.N == 0 {
			continue
		}
		runnable = append(runnable, g)
		if best == nil || g.MeanAbsGap < best.MeanAbsGap {
			best = g
		}
	}
	if best == nil {
		v.Why = "No policy a site can run has hand-offs here."
		return v
	}
	chosen := best
	for _, g := range runnable {
		if g == best {
			continue
		}
		if t, ok := r.tieWith(e, g.Policy, best.Policy); ok {
			v.Ties = append(v.Ties, t)
			if simplicity(g.Policy) < simplicity(chosen.Policy) || simplicity(g.Policy) == simplicity(chosen.Policy) && g.MeanAbsGap < chosen.MeanAbsGap {
				chosen = g
			}
		}
	}
	v.Policy = chosen.Policy
	v.Why = r.why(chosen, best, v.Ties)
	shown := []string{v.Policy}
	if best.Policy != v.Policy {
		shown = append(shown, best.Policy)
	}
	for _, t := range v.Ties {
		if !slices.Contains(shown, t.Policy) {
			shown = append(shown, t.Policy)
		}
	}
	if !slices.Contains(shown, metrics.Reference) {
		shown = append(shown, metrics.Reference)
	}
	few := false
	for _, class := range []string{metrics.AllClasses, metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
		for _, p := range shown {
			for i := range r.Groups {
				g := &r.Groups[i]
				if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.Policy == p && g.Nodes == 0 && g.LoadClass == class {
					labels := []cellView{{Text: g.Policy}, {Text: sizeLabel(0)}, {Text: classLabel(g)}}
					v.Table.Rows = append(v.Table.Rows, append(labels, rowCells(g, fmt.Sprintf("groups.%d.", i), verdictColumns)...))
					few = few || g.N < FewHandOffs
				}
			}
		}
	}
	v.Notes = r.verdictNotes(e, few)
	return v
}

// why is the verdict's sentence: the policy to run, and why that one.
func (r *Report) why(chosen, best *metrics.GroupStats, ties []tie) string {
	const oracleNote = " (The oracle, which knows the future, is not a choice; it only picks when to submit, on any node, so a policy that pins may beat it.)"
	var b strings.Builder
	switch {
	case chosen == best && chosen.Policy == metrics.Reference:
		fmt.Fprintf(&b, "Keep %s: no other policy a site can run has a lower mean |gap| over all hand-offs here (%s h).", metrics.Reference, fmtH(best.MeanAbsGap))
	case chosen == best:
		fmt.Fprintf(&b, "Use %s: the lowest mean |gap| over all hand-offs of the policies a site can run (%s h, against %s h with %s).", chosen.Policy, fmtH(best.MeanAbsGap), fmtH(r.meanAbsGapOf(best, metrics.Reference)), metrics.Reference)
	default:
		verb := "Use"
		if chosen.Policy == metrics.Reference {
			verb = "Keep"
		}
		t := tieOf(ties, chosen.Policy)
		fmt.Fprintf(&b, "%s %s: it ties %s, whose mean |gap| over all hand-offs is the lowest (%s h against %s h; over the %d hand-offs both ran, %s's |gap| is longer by %s on average [%s to %s], within chance or under a minute), and %s, so the simpler one is preferred.",
			verb, chosen.Policy, best.Policy, fmtH(best.MeanAbsGap), fmtH(chosen.MeanAbsGap), t.Matched, chosen.Policy, fmtSpan(t.Diff), fmtSpan(t.Lo), fmtSpan(t.Hi), simplerBecause(chosen.Policy))
	}
	var others []string
	for _, t := range ties {
		if t.Policy != chosen.Policy {
			others = append(others, t.Policy)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, " Also within chance of %s: %s.", best.Policy, strings.Join(others, ", "))
	}
	b.WriteString(oracleNote)
	b.WriteString(" Per load class (by reactive's gap on the same hand-off), with ")
	b.WriteString(metrics.Reference)
	b.WriteString(":")
	return b.String()
}

// simplerBecause says what a policy spares a site.
func simplerBecause(policy string) string {
	switch simplicity(policy) {
	case 0:
		return "it changes nothing"
	case 1:
		return "it needs no trained model"
	}
	return "it is no harder to run"
}

func tieOf(ties []tie, policy string) tie {
	for _, t := range ties {
		if t.Policy == policy {
			return t
		}
	}
	return tie{}
}

// meanAbsGapOf is the all-sizes, all-classes mean |gap| of policy in g's experiment.
func (r *Report) meanAbsGapOf(g *metrics.GroupStats, policy string) float64 {
	if o := r.group(metrics.GroupKey{Protocol: g.Protocol, LoadScale: g.LoadScale}, policy, 0, metrics.AllClasses); o != nil {
		return o.MeanAbsGap
	}
	return math.NaN()
}

// fmtH writes hours as the tables do (2 decimals), with a true minus.
func fmtH(h float64) string {
	if math.IsNaN(h) {
		return "–"
	}
	s := fmt.Sprintf("%.2f", h)
	if strings.HasPrefix(s, "-") {
		if s == "-0.00" {
			return "0.00"
		}
		return "−" + s[1:]
	}
	return s
}

// tieMargin is a difference of mean |gap| too small to choose by: a
// minute, a tenth of the decision cycle and under the tables' precision.
const tieMargin = 1.0 / 60 // hours

// fmtSpan writes hours as a duration to the second ("4s", "1h2m0s"), with
// a true minus: a difference of seconds reads as such, not as 0.00 h.
func fmtSpan(h float64) string {
	d := time.Duration(h * float64(time.Hour)).Round(time.Second)
	if d < 0 {
		return "−" + (-d).String()
	}
	return d.String()
}

// tieWith compares policy a with b on the hand-offs both ran in
// experiment e: the mean of |gap(a)| − |gap(b)| in hours (an interruption
// within the zero tolerance counted as none) and its percentile-bootstrap
// interval (the report's resamples and level, seeded by its seed and the
// pair). They tie when the interval holds 0 or lies within ±tieMargin.
func (r *Report) tieWith(e metrics.GroupKey, a, b string) (tie, bool) {
	gaps := map[metrics.HandoffKey][2]time.Duration{}
	have := map[metrics.HandoffKey]int{}
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.Protocol != e.Protocol || s.LoadScale != e.LoadScale || s.Policy != a && s.Policy != b {
			continue
		}
		k := metrics.HandoffOf(s)
		g := gaps[k]
		if s.Policy == a {
			g[0] = s.Gap
			have[k] |= 1
		} else {
			g[1] = s.Gap
			have[k] |= 2
		}
		gaps[k] = g
	}
	keys := make([]metrics.HandoffKey, 0, len(gaps))
	for k := range gaps {
		if have[k] == 3 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return tie{}, false
	}
	slices.SortFunc(keys, func(x, y metrics.HandoffKey) int {
		return cmp.Or(strings.Compare(x.Cell, y.Cell), strings.Compare(x.Chain, y.Chain), cmp.Compare(x.Nodes, y.Nodes), cmp.Compare(x.Segment, y.Segment))
	})
	tol := r.ZeroTolerance()
	abs := func(gap time.Duration) float64 {
		if gap > 0 && gap <= tol {
			return 0
		}
		return math.Abs(metrics.GapHours(gap))
	}
	d := make([]float64, len(keys))
	for i, k := range keys {
		g := gaps[k]
		d[i] = abs(g[0]) - abs(g[1])
	}
	opts := r.metricsOptions().WithDefaults()
	rng := metrics.GroupRand(opts.Seed, metrics.GroupKey{Protocol: "tie/" + e.Protocol, LoadScale: e.LoadScale, Policy: a + "|" + b})
	means := make([]float64, opts.Resamples)
	for i := range means {
		var sum float64
		for range d {
			sum += d[rng.IntN(len(d))]
		}
		means[i] = sum / float64(len(d))
	}
	iv := metrics.PercentileInterval(means, opts.Level)
	t := tie{Policy: a, Of: b, Diff: metrics.Mean(d), Lo: iv.Lo, Hi: iv.Hi, Matched: len(d)}
	return t, iv.Lo <= 0 && 0 <= iv.Hi || -tieMargin <= iv.Lo && iv.Hi <= tieMargin
}

// FewHandOffs is the number of hand-offs under which a group's figures are
// marked: a share or a mean of so few is an anecdote, not an estimate.
const FewHandOffs = 10

// fewMark follows the load class of a group of fewer than FewHandOffs
// hand-offs in the tables; fewNote explains it.
const fewMark = " †"

var fewNote = fmt.Sprintf("†: fewer than %d hand-offs; a share or a mean of so few is an anecdote, not an estimate (one hand-off makes any share 0%% or 100%%).", FewHandOffs)

// classLabel is a group's load class as the tables show it: marked when
// the group has few hand-offs.
func classLabel(g *metrics.GroupStats) string {
	if g.N < FewHandOffs {
		return g.LoadClass + fewMark
	}
	return g.LoadClass
}

// verdictNotes are what a reader needs to read the verdict's figures
// right: what counts as zero interruption, why a policy that does not
// choose to overlap (reactive) or the oracle shows overlap, and the mark
// of classes with few hand-offs (few: the table has one).
func (r *Report) verdictNotes(e metrics.GroupKey, few bool) []string {
	var notes []string
	if tol := r.ZeroTolerance(); tol > 0 {
		notes = append(notes, fmt.Sprintf("Zero interruption counts every hand-off whose successor started at most %s after its predecessor ended: "+
			"the simulated scheduler starts a job up to %s after the event that frees its nodes, whatever the policy did.", tol, tol))
	}
	if n := r.overlapNote(e, metrics.Reference); n != "" {
		notes = append(notes, n)
	}
	for _, p := range r.policiesIn(e) {
		if isOracle(p) {
			if n := r.overlapNote(e, p); n != "" {
				notes = append(notes, n)
			}
		}
	}
	if few {
		notes = append(notes, fewNote)
	}
	return notes
}

// overlapNote explains the overlap of reactive or of an oracle in e (""
// when it has none). Reactive submits its successor the protocol's lead
// before the predecessor's end: one that finds a free node starts at
// once, that lead early. The oracle may submit no later than that either;
// its other overlaps are where, knowing what follows, every later instant
// would have left a longer interruption.
func (r *Report) overlapNote(e metrics.GroupKey, policy string) string {
	var n, over, atLead int
	var wasted, leadWasted, most float64
	lead := r.lead(e)
	tol := r.ZeroTolerance()
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.Protocol != e.Protocol || s.LoadScale != e.LoadScale || s.Policy != policy {
			continue
		}
		n++
		if s.Gap >= 0 {
			continue
		}
		over++
		w := metrics.OverlapH(s.Gap) * float64(s.GPUs)
		wasted += w
		if lead > 0 && s.Gap >= -lead && s.Gap <= -lead+tol+time.Second {
			atLead++
			leadWasted += w
		} else {
			most = max(most, metrics.OverlapH(s.Gap))
		}
	}
	leadText := plainDuration(lead.String())
	switch {
	case over == 0:
		return ""
	case policy == metrics.Reference && atLead == 0:
		return ""
	case policy == metrics.Reference:
		return fmt.Sprintf("Why %s overlaps: %d of its %d hand-offs overlap by about %s, because it submits the successor %s before the predecessor's end (as the published baseline does) "+
			"and a successor that finds a free node starts at once; that accounts for %.1f of its %.1f wasted GPU-hours. It does not choose to overlap: the lead is there so that the successor is queued by the time its predecessor ends.",
			metrics.Reference, atLead, n, leadText, leadText, leadWasted, wasted)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Why %s overlaps: %d of its %d hand-offs overlap.", policy, over, n)
	if atLead > 0 {
		fmt.Fprintf(&b, " %d by about %s: it may submit no later than %s before the predecessor's end, as reactive, and with a node free the successor starts then.", atLead, leadText, leadText)
	}
	if rest := over - atLead; rest > 0 {
		fmt.Fprintf(&b, " %d by more (up to %s h): knowing what follows, it submitted early where every later instant would have left a longer interruption than that overlap.", rest, fmtH(most))
	}
	return b.String()
}

// lead is the protocol's forced submission before the predecessor's end
// (the cells' "lead" parameter; 0 when not recorded).
func (r *Report) lead(e metrics.GroupKey) time.Duration {
	for _, c := range r.Provenance.Cells {
		if c.Protocol == e.Protocol && c.LoadScale == e.LoadScale {
			if d, err := time.ParseDuration(c.Params["lead"]); err == nil {
				return d
			}
		}
	}
	return 0
}
