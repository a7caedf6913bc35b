package report

import (
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math"
	"strings"
)

// verdictRunColumns are the whole-run figures the run protocol's verdict shows.
var verdictRunColumns = func() []runColumn {
	var out []runColumn
	for _, key := range []string{"n", "completion_mean_h", "overhead_mean_h", "overhead_ratio", "charged_ratio", "goodput"} {
		for _, c := range runColumns {
			if c.key == key {
				out = append(out, c)
			}
		}
	}
	return out
}()

// runVerdictTitle is the verdict table's heading in Markdown: it starts as
// the whole-run tables' do (runTable), which tells Verify its kind.
const runVerdictTitle = "Whole runs: the verdict's figures"

// verdictRuns is the run protocol's verdict: the whole-run answer a user
// reads. The recommended policy is the one a site can run with the lowest
// mean overhead over all runs; per job size, one sentence compares its
// completion time and GPU-hours with reactive's and the oracle's, and the
// table gives them per size and load class.
func (r *Report) verdictRuns(e metrics.GroupKey) verdictView {
	v := verdictView{Title: "Verdict, " + e.Protocol + " protocol, load ×" + fullFloat(e.LoadScale),
		Table: tableView{ID: fmt.Sprintf("verdict-%s-x%g", e.Protocol, e.LoadScale), Title: runVerdictTitle, Heads: []string{"policy", "size", "load class"}}}
	for _, c := range verdictRunColumns {
		v.Table.Heads = append(v.Table.Heads, c.head)
	}
	find := func(policy string, nodes int, class string) (int, *metrics.RunStats) {
		for i := range r.RunGroups {
			g := &r.RunGroups[i]
			if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.Policy == policy && g.Nodes == nodes && g.LoadClass == class {
				return i, g
			}
		}
		return -1, nil
	}
	var best *metrics.RunStats
	var sizes []int
	var work float64
	for i := range r.RunGroups {
		g := &r.RunGroups[i]
		if g.Protocol != e.Protocol || g.LoadScale != e.LoadScale || g.LoadClass != metrics.AllClasses {
			continue
		}
		if g.Nodes != 0 && g.Policy == metrics.Reference {
			sizes = append(sizes, g.Nodes)
		}
		if g.Nodes == 0 && !isOracle(g.Policy) && g.N > 0 && (best == nil || g.OverheadMean < best.OverheadMean) {
			best = g
		}
	}
	for i := range r.Runs {
		if x := &r.Runs[i]; x.Protocol == e.Protocol && x.LoadScale == e.LoadScale {
			work = x.Work.Hours()
		}
	}
	if best == nil {
		v.Why = "No policy a site can run has whole runs here."
		return v
	}
	v.Policy = best.Policy
	var b strings.Builder
	fmt.Fprintf(&b, "Use %s: the lowest mean overhead (completion time beyond the work itself) over all runs of the policies a site can run; the oracle, which knows the future, is not a choice (it plans submission times only, on any node).", v.Policy)
	for _, n := range sizes {
		_, p := find(v.Policy, n, metrics.AllClasses)
		_, re := find(metrics.Reference, n, metrics.AllClasses)
		if p == nil || re == nil {
			continue
		}
		fmt.Fprintf(&b, " A %s run on %s with %s: %.1f days against %.1f with reactive", days(work), sizeLabel(n), v.Policy, p.CompletionMean/24, re.CompletionMean/24)
		for i := range r.RunGroups {
			if o := &r.RunGroups[i]; isOracle(o.Policy) && o.Protocol == e.Protocol && o.LoadScale == e.LoadScale && o.Nodes == n && o.LoadClass == metrics.AllClasses {
				fmt.Fprintf(&b, " and %.1f with %s", o.CompletionMean/24, o.Policy)
			}
		}
		if p.ChargedRatio != nil {
			fmt.Fprintf(&b, ", %s GPU-hours", signedPercent(*p.ChargedRatio-1))
		}
		b.WriteString(".")
	}
	b.WriteString(" Per job size and load class (by reactive's mean gap on the same run):")
	v.Why = b.String()
	var pols []string
	for _, p := range r.Policies {
		if p == v.Policy || p == metrics.Reference || isOracle(p) {
			pols = append(pols, p)
		}
	}
	for _, n := range append([]int{0}, sizes...) {
		for _, class := range []string{metrics.AllClasses, metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
			for _, p := range pols {
				if i, g := find(p, n, class); g != nil {
					cells := []cellView{{Text: p}, {Text: sizeLabel(n)}, {Text: class}}
					v.Table.Rows = append(v.Table.Rows, append(cells, runRowCellsOf(g, fmt.Sprintf("run_groups.%d.", i), verdictRunColumns)...))
				}
			}
		}
	}
	return v
}

// days writes a duration in hours as days ("7-day") or hours.
func days(h float64) string {
	if d := h / 24; d == math.Trunc(d) && d >= 1 {
		return fmt.Sprintf("%g-day", d)
	}
	return fmt.Sprintf("%.1f-hour", h)
}

func signedPercent(x float64) string {
	if x >= 0 {
		return fmt.Sprintf("+%.1f%%", 100*x)
	}
	return fmt.Sprintf("−%.1f%%", -100*x)
}
