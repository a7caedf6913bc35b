package report

import "github.com/mirage-gpu/mirage/eval/metrics"

import "fmt"

// runColumn is a column of the whole-run tables (as tableColumn for hand-offs).
type runColumn struct {
	head  string
	key   string // JSON path inside a RunStats
	unit  figUnit
	get   func(*metrics.RunStats) (float64, bool)
	ci    func(*metrics.RunIntervals) *metrics.Interval
	ciKey string
}

func runAlways(f func(*metrics.RunStats) float64) func(*metrics.RunStats) (float64, bool) {
	return func(g *metrics.RunStats) (float64, bool) { return f(g), true }
}

func runOptional(f func(*metrics.RunStats) *float64) func(*metrics.RunStats) (float64, bool) {
	return func(g *metrics.RunStats) (float64, bool) {
		if v := f(g); v != nil {
			return *v, true
		}
		return 0, false
	}
}

// unitRatio formats "0.42×".
const unitRatio figUnit = 100

var runColumns = []runColumn{
	{head: "runs", key: "n", unit: unitCount, get: runAlways(func(g *metrics.RunStats) float64 { return float64(g.N) })},
	{head: "censored", key: "censored", unit: unitCount, get: runAlways(func(g *metrics.RunStats) float64 { return float64(g.Censored) })},
	{head: "completion mean (h)", key: "completion_mean_h", get: runAlways(func(g *metrics.RunStats) float64 { return g.CompletionMean })},
	{head: "overhead mean (h)", key: "overhead_mean_h", get: runAlways(func(g *metrics.RunStats) float64 { return g.OverheadMean }),
		ci: func(c *metrics.RunIntervals) *metrics.Interval { return c.OverheadMean }, ciKey: "ci.overhead_mean_h"},
	{head: "overhead p90 (h)", key: "overhead_p90_h", get: runAlways(func(g *metrics.RunStats) float64 { return g.OverheadP90 })},
	{head: "overhead × reactive", key: "overhead_ratio", unit: unitRatio, get: runOptional(func(g *metrics.RunStats) *float64 { return g.OverheadRatio }),
		ci: func(c *metrics.RunIntervals) *metrics.Interval { return c.OverheadRatio }, ciKey: "ci.overhead_ratio"},
	{head: "segments", key: "segments_mean", get: runAlways(func(g *metrics.RunStats) float64 { return g.SegmentsMean })},
	{head: "hand-offs", key: "handoffs_mean", get: runAlways(func(g *metrics.RunStats) float64 { return g.HandOffsMean })},
	{head: "downtime mean (h)", key: "downtime_mean_h", get: runAlways(func(g *metrics.RunStats) float64 { return g.DowntimeMean })},
	{head: "GPU-h charged", key: "charged_gpu_h_mean", unit: unitGPUh, get: runAlways(func(g *metrics.RunStats) float64 { return g.ChargedMean }),
		ci: func(c *metrics.RunIntervals) *metrics.Interval { return c.ChargedMean }, ciKey: "ci.charged_gpu_h_mean"},
	{head: "GPU-h × reactive", key: "charged_ratio", unit: unitRatio, get: runOptional(func(g *metrics.RunStats) *float64 { return g.ChargedRatio }),
		ci: func(c *metrics.RunIntervals) *metrics.Interval { return c.ChargedRatio }, ciKey: "ci.charged_ratio"},
	{head: "goodput", key: "goodput", unit: unitShare, get: runAlways(func(g *metrics.RunStats) float64 { return g.Goodput })},
	{head: "others' queue Δ (GPU-h)", key: "others_queued_delta_gpu_h", unit: unitGPUh, get: runOptional(func(g *metrics.RunStats) *float64 { return g.OthersDelta }),
		ci: func(c *metrics.RunIntervals) *metrics.Interval { return c.OthersDelta }, ciKey: "ci.others_queued_delta_gpu_h"},
}

// runTables are the whole-run tables of an experiment of the run protocol:
// all runs per policy, then by job size and load class.
func (r *Report) runTables(e metrics.GroupKey) []tableView {
	id := fmt.Sprintf("%s-x%g", e.Protocol, e.LoadScale)
	head := tableView{ID: "runs-" + id, Title: "Whole runs (means per run; completion from the first segment's start)", Heads: []string{"policy"}}
	detail := tableView{ID: "runs-detail-" + id, Title: "Whole runs by job size and load class", Heads: []string{"policy", "size", "load class"}}
	for _, c := range runColumns {
		head.Heads = append(head.Heads, c.head)
		detail.Heads = append(detail.Heads, c.head)
	}
	for i := range r.RunGroups {
		g := &r.RunGroups[i]
		if g.Protocol != e.Protocol || g.LoadScale != e.LoadScale {
			continue
		}
		cells := runRowCells(g, fmt.Sprintf("run_groups.%d.", i))
		if g.Nodes == 0 && g.LoadClass == metrics.AllClasses {
			head.Rows = append(head.Rows, append([]cellView{{Text: g.Policy}}, cells...))
			continue
		}
		detail.Rows = append(detail.Rows, append([]cellView{{Text: g.Policy}, {Text: sizeLabel(g.Nodes)}, {Text: g.LoadClass}}, cells...))
	}
	return []tableView{head, detail}
}

func runRowCells(g *metrics.RunStats, prefix string) []cellView {
	return runRowCellsOf(g, prefix, runColumns)
}

func runRowCellsOf(g *metrics.RunStats, prefix string, cols []runColumn) []cellView {
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
