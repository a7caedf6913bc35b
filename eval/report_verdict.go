package eval

import (
	"fmt"
	"strings"
)

// verdictView is the answer a report opens with, for one experiment: the
// policy a site should run and how it fares against reactive, per load
// class, as a table whose numbers are the groups' own.
type verdictView struct {
	Title  string // "Verdict, pair protocol, load ×1"
	Policy string // the recommended policy ("" when no runnable policy has hand-offs)
	Why    string
	Table  tableView
}

// isOracle reports whether a policy knows the future (the oracle and its
// variants): a bound to compare with, never a recommendation.
func isOracle(policy string) bool { return strings.HasPrefix(policy, "oracle") }

// verdictColumns are the figures the verdict shows.
var verdictColumns = func() []tableColumn {
	var out []tableColumn
	for _, key := range []string{"mean_abs_gap_h", "reduction", "zero_interruption", "overlap_mean_h", "wasted_gpu_h", "n"} {
		for _, c := range metricColumns {
			if c.key == key {
				out = append(out, c)
			}
		}
	}
	return out
}()

// verdict recommends, for experiment e, the policy with the lowest mean
// |gap| over all its hand-offs among those a site can run (not an oracle),
// and tabulates it per load class: its mean |gap|, interruption reduction
// and zero-interruption share against reactive, and its overlap cost.
func (r *Report) verdict(e GroupKey) verdictView {
	if e.Protocol == ProtocolRun && len(r.RunGroups) > 0 {
		return r.verdictRuns(e)
	}
	v := verdictView{Title: "Verdict, " + e.Protocol + " protocol, load ×" + fullFloat(e.LoadScale),
		Table: tableView{ID: fmt.Sprintf("verdict-%s-x%g", e.Protocol, e.LoadScale), Heads: []string{"policy", "size", "load class"}}}
	for _, c := range verdictColumns {
		v.Table.Heads = append(v.Table.Heads, c.head)
	}
	best := -1
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Protocol != e.Protocol || g.LoadScale != e.LoadScale || g.Nodes != 0 || g.LoadClass != AllClasses || isOracle(g.Policy) || g.N == 0 {
			continue
		}
		if best < 0 || g.MeanAbsGap < r.Groups[best].MeanAbsGap {
			best = i
		}
	}
	if best < 0 {
		v.Why = "No policy a site can run has hand-offs here."
		return v
	}
	v.Policy = r.Groups[best].Policy
	v.Why = fmt.Sprintf("Use %s: the lowest mean |gap| over all hand-offs of the policies a site can run (the oracle, which knows the future, is not a choice; it only picks when to submit, on any node, so a policy that pins may beat it). "+
		"Per load class (by reactive's gap on the same hand-off), against reactive:", v.Policy)
	if v.Policy == Reference {
		v.Why = fmt.Sprintf("Keep %s: no other policy a site can run has a lower mean |gap| over all hand-offs here. Per load class:", Reference)
	}
	for _, class := range []string{AllClasses, LoadLow, LoadMedium, LoadHeavy} {
		for i := range r.Groups {
			g := &r.Groups[i]
			if g.Protocol == e.Protocol && g.LoadScale == e.LoadScale && g.Policy == v.Policy && g.Nodes == 0 && g.LoadClass == class {
				labels := []cellView{{Text: g.Policy}, {Text: sizeLabel(0)}, {Text: class}}
				v.Table.Rows = append(v.Table.Rows, append(labels, rowCells(g, fmt.Sprintf("groups.%d.", i), verdictColumns)...))
			}
		}
	}
	return v
}
