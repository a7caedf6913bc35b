package eval

import (
	"bytes"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math"
	"slices"
	"strings"

	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/internal/acceptance"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Helpers of the LS6 results pages (whole-run.md, pin-november.md): the
// acceptance lines of issue 23, measured, in one wording. Their verdicts
// go through an acceptance.Lines: a line that reads "no" fails the test
// once the page is written.

// findRun is policy p's run group over every size in class.
func findRun(gs []metrics.RunStats, p, class string) *metrics.RunStats {
	for i := range gs {
		if gs[i].Policy == p && gs[i].Nodes == 0 && gs[i].LoadClass == class {
			return &gs[i]
		}
	}
	return nil
}

// findHandoffs is policy p's hand-off group over every size in class.
func findHandoffs(gs []metrics.GroupStats, p, class string) *metrics.GroupStats {
	for i := range gs {
		if gs[i].Policy == p && gs[i].Nodes == 0 && gs[i].LoadClass == class {
			return &gs[i]
		}
	}
	return nil
}

// writeTrainingLines writes issue 23's training lines for policy p: its
// overhead and GPU-hours against reactive's per class, and its overhead
// against the oracle's overall. A class without runs has no line (the
// month had no such load); the pooled class must have runs.
func writeTrainingLines(b *bytes.Buffer, acc *acceptance.Lines, groups []metrics.RunStats, p string) {
	line := func(ok bool, format string, args ...any) {
		text := fmt.Sprintf(format, args...)
		fmt.Fprintf(b, "- %s — %s\n", text, acc.Verdict(ok, text))
	}
	for _, c := range []struct {
		class string
		limit float64
	}{{metrics.AllClasses, 0.3}, {metrics.LoadLow, 1.0}, {metrics.LoadMedium, 0.3}, {metrics.LoadHeavy, 0.3}} {
		g := findRun(groups, p, c.class)
		if g == nil || g.OverheadRatio == nil {
			if c.class == metrics.AllClasses {
				line(false, "%s: no %s runs to measure", c.class, p)
				continue
			}
			fmt.Fprintf(b, "- %s: no %s runs\n", c.class, p)
			continue
		}
		line(*g.OverheadRatio <= c.limit, "%s class, %s's overhead ≤ %.1f× reactive's: %.2f×", c.class, p, c.limit, *g.OverheadRatio)
	}
	for _, class := range []string{metrics.AllClasses, metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
		if g := findRun(groups, p, class); g != nil && g.ChargedRatio != nil {
			line(*g.ChargedRatio <= 1.05, "%s class, %s's GPU-hours charged ≤ 1.05× reactive's: %.3f×", class, p, *g.ChargedRatio)
		}
	}
	if g, o := findRun(groups, p, metrics.AllClasses), findRun(groups, models.PolicyOracle, metrics.AllClasses); g != nil && o != nil && o.OverheadMean > 0 {
		line(g.OverheadMean <= 2.5*o.OverheadMean, "overall, %s's overhead within 2.5× the oracle's: %.2f h against %.2f h, %.2f×", p, g.OverheadMean, o.OverheadMean,
			g.OverheadMean/o.OverheadMean)
	}
}

// writeServiceTable writes the service workload's table (per class and
// policy: hand-offs, zero-interruption share, mean overlap and
// interruption, the baselines that dominate it) and returns issue 23's
// service lines for each of asserted (acceptance lines, through acc) and
// of compared (shown for comparison, not asserted): dominated by no
// baseline, and more hand-offs without downtime than lead at no more mean
// overlap.
func writeServiceTable(b *bytes.Buffer, acc *acceptance.Lines, svc []metrics.GroupStats, policies, baselines, asserted, compared []string) []string {
	b.WriteString("| class | policy | hand-offs | zero interruption | mean overlap (h) | mean interruption (h) | dominated by |\n|---|---|---|---|---|---|---|\n")
	var lines []string
	for _, class := range []string{metrics.AllClasses, metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
		for _, p := range policies {
			g := findHandoffs(svc, p, class)
			if g == nil {
				continue
			}
			var by []string
			for _, q := range baselines {
				if h := findHandoffs(svc, q, class); q != p && h != nil && h.ZeroInterruption > g.ZeroInterruption && h.OverlapMean < g.OverlapMean {
					by = append(by, q)
				}
			}
			fmt.Fprintf(b, "| %s | %s | %d | %.1f%% | %.2f | %.2f | %s |\n", class, p, g.N, 100*g.ZeroInterruption, g.OverlapMean, g.InterruptionMean, strings.Join(by, ", "))
			l := findHandoffs(svc, provisioner.PolicyLead, class)
			if l == nil || !slices.Contains(asserted, p) && !slices.Contains(compared, p) {
				continue
			}
			verdict := func(ok bool, text string) string {
				if slices.Contains(asserted, p) {
					return acc.Verdict(ok, text)
				}
				return acceptance.Compared(ok)
			}
			better := g.ZeroInterruption > l.ZeroInterruption && g.OverlapMean <= l.OverlapMean
			dominated := fmt.Sprintf("%s, %s class: dominated by %s", p, class, orNone(by))
			against := fmt.Sprintf("against lead, zero interruption %.1f%% vs %.1f%% (%d vs %d of %d) at mean overlap %.3f h vs %.3f h (mean interruption %.2f h vs %.2f h)",
				100*g.ZeroInterruption, 100*l.ZeroInterruption, int(math.Round(g.ZeroInterruption*float64(g.N))), int(math.Round(l.ZeroInterruption*float64(l.N))), g.N,
				g.OverlapMean, l.OverlapMean, g.InterruptionMean, l.InterruptionMean)
			lines = append(lines, fmt.Sprintf("- %s — %s; %s — %s", dominated, verdict(len(by) == 0, dominated), against, verdict(better, p+", "+class+" class, "+against)))
		}
	}
	return lines
}

// issue16Class is one policy's figures in one load class for issue 16's
// lines: hand-offs, mean |gap| against reactive's on the same hand-offs
// (with its paired 95% interval where measured) and against the oracle's,
// and the mean overlap in hours.
type issue16Class struct {
	n                    int
	vsReactive, vsOracle float64
	ci                   *[2]float64
	overlap              float64
}

// wfClass is a walk-forward row's figures (protocol.WFRow); ok is false when
// the table has no row of the class.
func wfClass(rows []protocol.WFRow, p, class string) (issue16Class, bool) {
	for _, r := range rows {
		if r.Policy == p && r.Class == class {
			return issue16Class{n: r.N, vsReactive: r.VsReactive, vsOracle: r.VsOracle, ci: &r.VsReactive95, overlap: r.MeanOverlap}, r.N > 0
		}
	}
	return issue16Class{}, false
}

// writeIssue16Lines writes issue 16's lines for policy p (walk-forward.md,
// pin-november.md, ls6-acceptance.md): per load class its mean |gap|
// against reactive's (low ≤ 1.0×, with the interval's upper bound ≤ 1.1×
// where measured; medium ≤ 0.6×; heavy and overall ≤ 0.4×), overall ≤ 2.5×
// the oracle's, and a mean overlap ≤ 1 h in the low class. A class without
// hand-offs has no line; no hand-off at all is a line not met.
func writeIssue16Lines(b *bytes.Buffer, acc *acceptance.Lines, p string, class func(string) (issue16Class, bool)) {
	check := func(what string, ok bool, got string) {
		fmt.Fprintf(b, "- %s: %s — %s\n", what, got, acc.Verdict(ok, p+", "+what+": "+got))
	}
	all, ok := class("all")
	if !ok {
		check("hand-offs scored", false, "none")
		return
	}
	if low, ok := class("low"); ok {
		if low.ci != nil {
			check("low class ≤ 1.0× reactive, 95% upper bound ≤ 1.1×", low.vsReactive <= 1 && low.ci[1] <= 1.1, fmt.Sprintf("%.2f× (%.2f–%.2f)", low.vsReactive, low.ci[0], low.ci[1]))
		} else {
			check("low class ≤ 1.0× reactive", low.vsReactive <= 1, fmt.Sprintf("%.2f×", low.vsReactive))
		}
	} else {
		b.WriteString("- low class: no hand-offs\n")
	}
	for _, c := range []struct {
		name  string
		limit float64
	}{{"medium", 0.6}, {"heavy", 0.4}} {
		if r, ok := class(c.name); ok {
			check(fmt.Sprintf("%s ≤ %.1f× reactive", c.name, c.limit), r.vsReactive <= c.limit, fmt.Sprintf("%.2f×", r.vsReactive))
		} else {
			fmt.Fprintf(b, "- %s class: no hand-offs\n", c.name)
		}
	}
	check("overall ≤ 0.4× reactive", all.vsReactive <= 0.4, fmt.Sprintf("%.2f×", all.vsReactive))
	check("overall ≤ 2.5× the oracle", all.vsOracle <= 2.5, fmt.Sprintf("%.2f×", all.vsOracle))
	if low, ok := class("low"); ok {
		check("mean overlap ≤ 1 h in the low class", low.overlap <= 1, fmt.Sprintf("%.2f h", low.overlap))
	}
}
