package report

import (
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"strconv"
	"strings"
)

// The tables of a report, shared by the Markdown and HTML renderers: every
// number cell carries the JSON path of the figure it shows ("groups.3.
// interruption_mean_h") and its full-precision value, so a test can check
// the rendered numbers against report.json.

// unit says how a figure is formatted.
type figUnit int

const (
	unitHours figUnit = iota // "1.23"
	unitShare                // "45.6%"
	unitCount                // "12"
	unitGPUh                 // "123.4"
)

func (u figUnit) format(v float64) string {
	switch u {
	case unitShare:
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	case unitCount:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case unitGPUh:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case unitRatio:
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// tableColumn of a metrics table.
type tableColumn struct {
	head  string
	key   string // JSON path inside a GroupStats ("" for label columns)
	unit  figUnit
	get   func(*metrics.GroupStats) (float64, bool)
	ci    func(*metrics.Intervals) *metrics.Interval
	ciKey string // JSON path of the interval inside a GroupStats
	chain bool   // only for chain protocols
}

func alwaysOK(f func(*metrics.GroupStats) float64) func(*metrics.GroupStats) (float64, bool) {
	return func(g *metrics.GroupStats) (float64, bool) { return f(g), true }
}

var metricColumns = []tableColumn{
	{head: "n", key: "n", unit: unitCount, get: alwaysOK(func(g *metrics.GroupStats) float64 { return float64(g.N) })},
	{head: "censored", key: "censored", unit: unitCount, get: alwaysOK(func(g *metrics.GroupStats) float64 { return float64(g.Censored) })},
	{head: "interruption mean (h)", key: "interruption_mean_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.InterruptionMean }),
		ci: func(c *metrics.Intervals) *metrics.Interval { return c.InterruptionMean }, ciKey: "ci.interruption_mean_h"},
	{head: "median (h)", key: "interruption_median_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.InterruptionMedian })},
	{head: "p90 (h)", key: "interruption_p90_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.InterruptionP90 })},
	{head: "overlap mean (h)", key: "overlap_mean_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.OverlapMean })},
	{head: "overlap p90 (h)", key: "overlap_p90_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.OverlapP90 })},
	{head: "wasted GPU-h", key: "wasted_gpu_h", unit: unitGPUh, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.WastedGPUHours })},
	{head: "zero interruption", key: "zero_interruption", unit: unitShare, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.ZeroInterruption }),
		ci: func(c *metrics.Intervals) *metrics.Interval { return c.ZeroInterruption }, ciKey: "ci.zero_interruption"},
	{head: "within 1 h", key: "within_hour", unit: unitShare, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.WithinHour }),
		ci: func(c *metrics.Intervals) *metrics.Interval { return c.WithinHour }, ciKey: "ci.within_hour"},
	{head: "mean |gap| (h)", key: "mean_abs_gap_h", get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.MeanAbsGap }),
		ci: func(c *metrics.Intervals) *metrics.Interval { return c.MeanAbsGap }, ciKey: "ci.mean_abs_gap_h"},
	{head: "reduction vs reactive", key: "reduction", unit: unitShare, get: func(g *metrics.GroupStats) (float64, bool) {
		if g.Reduction == nil {
			return 0, false
		}
		return *g.Reduction, true
	}, ci: func(c *metrics.Intervals) *metrics.Interval { return c.Reduction }, ciKey: "ci.reduction"},
	{head: "sbatch calls", key: "submits", unit: unitCount, get: alwaysOK(func(g *metrics.GroupStats) float64 { return float64(g.Submits) })},
	{head: "chains", key: "chains", unit: unitCount, chain: true, get: alwaysOK(func(g *metrics.GroupStats) float64 { return float64(g.Chains) })},
	{head: "chain interruption mean (h)", key: "chain_interruption_mean_h", chain: true, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.ChainInterruptionMean })},
	{head: "chain median (h)", key: "chain_interruption_median_h", chain: true, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.ChainInterruptionMedian })},
	{head: "chain p90 (h)", key: "chain_interruption_p90_h", chain: true, get: alwaysOK(func(g *metrics.GroupStats) float64 { return g.ChainInterruptionP90 })},
}

var gapColumns = func() []tableColumn {
	var cs []tableColumn
	for _, q := range []struct {
		name string
		get  func(*metrics.Quantiles) float64
	}{
		{"min", func(q *metrics.Quantiles) float64 { return q.Min }}, {"p5", func(q *metrics.Quantiles) float64 { return q.P5 }},
		{"p10", func(q *metrics.Quantiles) float64 { return q.P10 }}, {"p25", func(q *metrics.Quantiles) float64 { return q.P25 }},
		{"p50", func(q *metrics.Quantiles) float64 { return q.P50 }}, {"p75", func(q *metrics.Quantiles) float64 { return q.P75 }},
		{"p90", func(q *metrics.Quantiles) float64 { return q.P90 }}, {"p95", func(q *metrics.Quantiles) float64 { return q.P95 }},
		{"max", func(q *metrics.Quantiles) float64 { return q.Max }},
	} {
		cs = append(cs, tableColumn{head: q.name + " (h)", key: "gap_h." + q.name, get: alwaysOK(func(g *metrics.GroupStats) float64 { return q.get(&g.Gap) })})
	}
	return cs
}()

// cellView is one table cell.
type cellView struct {
	Text  string // as displayed
	Key   string // JSON path of the figure, "" for labels
	Value string // full-precision value (strconv 'g', -1)
	CI    *ciView
}

// ciView is a confidence interval shown in a cell.
type ciView struct {
	LoKey, HiKey, Lo, Hi, LoText, HiText string
}

// String is the cell as plain text ("1.23 [0.90–1.60]").
func (c cellView) String() string {
	if c.CI == nil {
		return c.Text
	}
	return c.Text + " [" + c.CI.LoText + "–" + c.CI.HiText + "]"
}

// tableView is one rendered table.
type tableView struct {
	ID    string
	Title string
	Heads []string
	Rows  [][]cellView
	Note  string // said under the table (fewNote when a row is marked)
}

func fullFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func sizeLabel(n int) string {
	if n == 0 {
		return "all"
	}
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// tables builds the tables of one experiment: headline (all sizes, all
// classes), the gap distribution, and the breakdown by size and load class.
func (r *Report) tables(e metrics.GroupKey) []tableView {
	chain := strings.HasPrefix(e.Protocol, "chain") || e.Protocol == metrics.ProtocolRun
	var cols []tableColumn
	for _, c := range metricColumns {
		if !c.chain || chain {
			cols = append(cols, c)
		}
	}
	id := fmt.Sprintf("%s-x%g", e.Protocol, e.LoadScale)
	head := tableView{ID: "headline-" + id, Title: "All hand-offs", Heads: []string{"policy"}}
	gap := tableView{ID: "gap-" + id, Title: "Signed gap distribution (h; negative = overlap)", Heads: []string{"policy"}}
	detail := tableView{ID: "detail-" + id, Title: "By job size and load class", Heads: []string{"policy", "size", "load class"}}
	for _, c := range cols {
		head.Heads = append(head.Heads, c.head)
		detail.Heads = append(detail.Heads, c.head)
	}
	for _, c := range gapColumns {
		gap.Heads = append(gap.Heads, c.head)
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Protocol != e.Protocol || g.LoadScale != e.LoadScale {
			continue
		}
		prefix := fmt.Sprintf("groups.%d.", i)
		if g.Nodes == 0 && g.LoadClass == metrics.AllClasses {
			head.Rows = append(head.Rows, append([]cellView{{Text: g.Policy}}, rowCells(g, prefix, cols)...))
			gap.Rows = append(gap.Rows, append([]cellView{{Text: g.Policy}}, rowCells(g, prefix, gapColumns)...))
			continue
		}
		labels := []cellView{{Text: g.Policy}, {Text: sizeLabel(g.Nodes)}, {Text: classLabel(g)}}
		detail.Rows = append(detail.Rows, append(labels, rowCells(g, prefix, cols)...))
		if g.N < FewHandOffs {
			detail.Note = fewNote
		}
	}
	return append(r.runTables(e), head, gap, detail)
}

func rowCells(g *metrics.GroupStats, prefix string, cols []tableColumn) []cellView {
	out := make([]cellView, len(cols))
	for i, c := range cols {
		v, ok := c.get(g)
		var iv *metrics.Interval
		if ok && c.ci != nil && g.CI != nil {
			iv = c.ci(g.CI)
		}
		out[i] = figureCell(v, ok, prefix, c.key, c.unit, iv, c.ciKey)
	}
	return out
}

// figureCell is the cell of one figure: its text in the unit, its JSON
// path under prefix and full value, and its interval when it has one ("–"
// when there is no figure).
func figureCell(v float64, ok bool, prefix, key string, unit figUnit, iv *metrics.Interval, ciKey string) cellView {
	if !ok {
		return cellView{Text: "–"}
	}
	cv := cellView{Text: unit.format(v), Key: prefix + key, Value: fullFloat(v)}
	if iv != nil {
		cv.CI = &ciView{
			LoKey: prefix + ciKey + ".lo", HiKey: prefix + ciKey + ".hi",
			Lo: fullFloat(iv.Lo), Hi: fullFloat(iv.Hi), LoText: unit.format(iv.Lo), HiText: unit.format(iv.Hi),
		}
	}
	return cv
}

// provenanceView is the provenance as label/value lines.
type provenanceView struct {
	Label, Value string
}

func (r *Report) provenanceLines() []provenanceView {
	p := &r.Provenance
	lines := []provenanceView{{"mirage version", p.Mirage}}
	if len(p.Command) > 0 {
		lines = append(lines, provenanceView{"command", shellQuoteAll(p.Command)})
	}
	for _, t := range p.Traces {
		v := t.Path + " (sha256 " + t.SHA256
		if t.Jobs > 0 {
			v += fmt.Sprintf(", %d jobs", t.Jobs)
		}
		if t.Skipped > 0 {
			v += fmt.Sprintf(", %d malformed rows skipped", t.Skipped)
		}
		lines = append(lines, provenanceView{"trace", v + ")"})
	}
	for _, w := range p.Windows {
		lines = append(lines, provenanceView{"window " + w.Name, w.From.Format("2006-01-02T15:04Z07:00") + " … " + w.Until.Format("2006-01-02T15:04Z07:00")})
	}
	lines = append(lines, provenanceView{"seeds", strings.Join(r.seedsSummary(), ", ")})
	b := r.Bootstrap
	lines = append(lines, provenanceView{"confidence intervals", fmt.Sprintf("%g%% percentile bootstrap, %d resamples, seed %d, shown [in brackets] for groups with fewer than %d hand-offs", 100*b.Level, b.Resamples, b.Seed, b.Below)})
	return lines
}

// cellLines describes each cell on one line.
func (r *Report) cellLines() []string {
	var out []string
	for _, c := range r.Provenance.Cells {
		var params []string
		for _, k := range sortedMapKeys(c.Params) {
			params = append(params, k+"="+c.Params[k])
		}
		var seeds []string
		for _, k := range sortedMapKeys(c.Seeds) {
			seeds = append(seeds, fmt.Sprintf("%s=%d", k, c.Seeds[k]))
		}
		line := fmt.Sprintf("%s: trace %s, protocol %s, load ×%g, policies %s", c.Name, c.Trace, c.Protocol, c.LoadScale, strings.Join(c.Policies, ","))
		if len(params) > 0 {
			line += "; " + strings.Join(params, " ")
		}
		if len(seeds) > 0 {
			line += "; seeds " + strings.Join(seeds, " ")
		}
		out = append(out, line)
	}
	return out
}

// shellQuoteAll renders an argument list for display as a shell command.
func shellQuoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell: unchanged when it contains only
// safe characters, otherwise in single quotes with embedded quotes escaped.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
