package eval

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Helpers of the LS6 results pages (whole-run.md, pin-november.md): the
// acceptance lines of issue 23, measured, in one wording.

// yes marks an acceptance line met or not.
func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// findRun is policy p's run group over every size in class.
func findRun(gs []RunStats, p, class string) *RunStats {
	for i := range gs {
		if gs[i].Policy == p && gs[i].Nodes == 0 && gs[i].LoadClass == class {
			return &gs[i]
		}
	}
	return nil
}

// findHandoffs is policy p's hand-off group over every size in class.
func findHandoffs(gs []GroupStats, p, class string) *GroupStats {
	for i := range gs {
		if gs[i].Policy == p && gs[i].Nodes == 0 && gs[i].LoadClass == class {
			return &gs[i]
		}
	}
	return nil
}

// writeTrainingLines writes issue 23's training lines for policy p: its
// overhead and GPU-hours against reactive's per class, and its overhead
// against the oracle's overall.
func writeTrainingLines(b *bytes.Buffer, groups []RunStats, p string) {
	for _, c := range []struct {
		class string
		limit float64
	}{{AllClasses, 0.3}, {LoadLow, 1.0}, {LoadMedium, 0.3}, {LoadHeavy, 0.3}} {
		g := findRun(groups, p, c.class)
		if g == nil || g.OverheadRatio == nil {
			fmt.Fprintf(b, "- %s: no %s runs\n", c.class, p)
			continue
		}
		fmt.Fprintf(b, "- %s class, %s's overhead ≤ %.1f× reactive's: %.2f× — %s\n", c.class, p, c.limit, *g.OverheadRatio, yes(*g.OverheadRatio <= c.limit))
	}
	for _, class := range []string{AllClasses, LoadLow, LoadMedium, LoadHeavy} {
		if g := findRun(groups, p, class); g != nil && g.ChargedRatio != nil {
			fmt.Fprintf(b, "- %s class, %s's GPU-hours charged ≤ 1.05× reactive's: %.3f× — %s\n", class, p, *g.ChargedRatio, yes(*g.ChargedRatio <= 1.05))
		}
	}
	if g, o := findRun(groups, p, AllClasses), findRun(groups, models.PolicyOracle, AllClasses); g != nil && o != nil && o.OverheadMean > 0 {
		fmt.Fprintf(b, "- overall, %s's overhead within 2.5× the oracle's: %.2f h against %.2f h, %.2f× — %s\n", p, g.OverheadMean, o.OverheadMean,
			g.OverheadMean/o.OverheadMean, yes(g.OverheadMean <= 2.5*o.OverheadMean))
	}
}

// writeServiceTable writes the service workload's table (per class and
// policy: hand-offs, zero-interruption share, mean overlap and
// interruption, the baselines that dominate it) and returns issue 23's
// service lines for each of defs: dominated by no baseline, and more
// hand-offs without downtime than lead at no more mean overlap.
func writeServiceTable(b *bytes.Buffer, svc []GroupStats, policies, baselines, defs []string) []string {
	b.WriteString("| class | policy | hand-offs | zero interruption | mean overlap (h) | mean interruption (h) | dominated by |\n|---|---|---|---|---|---|---|\n")
	var lines []string
	for _, class := range []string{AllClasses, LoadLow, LoadMedium, LoadHeavy} {
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
			if l := findHandoffs(svc, provisioner.PolicyLead, class); slices.Contains(defs, p) && l != nil {
				better := g.ZeroInterruption > l.ZeroInterruption && g.OverlapMean <= l.OverlapMean
				lines = append(lines, fmt.Sprintf("- %s, %s class: dominated by %s — %s; against lead, zero interruption %.1f%% vs %.1f%% (%d vs %d of %d) at mean overlap %.3f h vs %.3f h (mean interruption %.2f h vs %.2f h) — %s",
					p, class, orNone(by), yes(len(by) == 0), 100*g.ZeroInterruption, 100*l.ZeroInterruption, int(math.Round(g.ZeroInterruption*float64(g.N))), int(math.Round(l.ZeroInterruption*float64(l.N))), g.N,
					g.OverlapMean, l.OverlapMean, g.InterruptionMean, l.InterruptionMean, yes(better)))
			}
		}
	}
	return lines
}
