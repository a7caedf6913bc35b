package protocol

import (
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"io"
	"strconv"

	"github.com/mirage-gpu/mirage/models/scenario"
)

// PairRow summarises one policy's pair samples in one group.
type PairRow struct {
	Policy  string              // policy name
	Group   string              // "all", "1 node", "8 nodes", "low", "medium", "heavy"
	Summary scenario.GapSummary // outcomes
}

// PairRows groups samples by policy (in first-seen order) and by "all",
// each chain size and each load class, and summarises each group with cost
// for scenario.GapSummary.MeanCost.
func PairRows(samples []metrics.Sample, cost scenario.GapCost) []PairRow {
	var policies []string
	seen := map[string]bool{}
	sizes := map[int]bool{}
	for _, s := range samples {
		if !seen[s.Policy] {
			seen[s.Policy] = true
			policies = append(policies, s.Policy)
		}
		sizes[s.Nodes] = true
	}
	var sizeList []int
	for n := range sizes {
		sizeList = append(sizeList, n)
	}
	for i := range sizeList {
		for j := i + 1; j < len(sizeList); j++ {
			if sizeList[j] < sizeList[i] {
				sizeList[i], sizeList[j] = sizeList[j], sizeList[i]
			}
		}
	}
	type grp struct {
		name string
		in   func(metrics.Sample) bool
	}
	groups := []grp{{"all", func(metrics.Sample) bool { return true }}}
	for _, n := range sizeList {
		name := strconv.Itoa(n) + " nodes"
		if n == 1 {
			name = "1 node"
		}
		groups = append(groups, grp{name, func(s metrics.Sample) bool { return s.Nodes == n }})
	}
	for _, c := range []string{metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
		groups = append(groups, grp{c, func(s metrics.Sample) bool { return s.LoadClass == c }})
	}
	var rows []PairRow
	for _, g := range groups {
		for _, p := range policies {
			var gaps []float64
			var gpus []int
			var cens []bool
			for _, s := range samples {
				if s.Policy == p && g.in(s) {
					gaps, gpus, cens = append(gaps, s.Gap.Seconds()), append(gpus, s.GPUs), append(cens, s.Censored)
				}
			}
			if len(gaps) > 0 {
				rows = append(rows, PairRow{Policy: p, Group: g.name, Summary: scenario.Summarise(gaps, gpus, cens, cost)})
			}
		}
	}
	return rows
}

// WritePairTable writes rows as the acceptance table (Markdown): per group
// and policy, mean and p90 interruption, mean and p90 overlap (hours), the
// share with zero interruption (gap ≤ 0), the share within one hour either
// way, and mean |gap| (hours).
func WritePairTable(w io.Writer, rows []PairRow) error {
	if _, err := fmt.Fprintln(w, "| group | policy | n | mean int. (h) | p90 int. (h) | mean overlap (h) | p90 overlap (h) | zero int. | within 1 h | mean \\|gap\\| (h) |"); err != nil {
		return err
	}
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		s := r.Summary
		cens := ""
		if s.Censored > 0 {
			cens = fmt.Sprintf(" (%d censored)", s.Censored)
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d%s | %.2f | %.2f | %.2f | %.2f | %.0f%% | %.0f%% | %.2f |\n", r.Group, r.Policy, s.N, cens,
			s.MeanInterruptH, s.P90InterruptH, s.MeanOverlapH, s.P90OverlapH, 100*s.ZeroInterruption, 100*s.WithinHour, s.MeanAbsGapH); err != nil {
			return err
		}
	}
	return nil
}
