package scenario

import (
	"math"
	"sort"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// GapCost prices a hand-off's gap (provisioner.GapCost, where chains
// record their workload's cost).
type GapCost = provisioner.GapCost

// DefaultGapCost is the published symmetric cost: 60 per hour either way.
var DefaultGapCost = provisioner.DefaultGapCost

// GapSummary summarises outcomes of one policy (gaps in hours).
type GapSummary struct {
	N                int     `json:"n"`                  // hand-offs
	MeanAbsGapH      float64 `json:"mean_abs_gap_h"`     // mean |gap|: the published symmetric cost / 60
	MeanCost         float64 `json:"mean_cost"`          // mean GapCost
	MeanInterruptH   float64 `json:"mean_interrupt_h"`   // mean of max(gap, 0)
	P90InterruptH    float64 `json:"p90_interrupt_h"`    // 90th percentile of max(gap, 0)
	MeanOverlapH     float64 `json:"mean_overlap_h"`     // mean of max(−gap, 0)
	P90OverlapH      float64 `json:"p90_overlap_h"`      // 90th percentile of max(−gap, 0)
	ZeroInterruption float64 `json:"zero_interruption"`  // share with gap ≤ 0
	WithinHour       float64 `json:"within_hour"`        // share with |gap| ≤ 1 h
	Censored         int     `json:"censored,omitempty"` // successors not started by the horizon (gap is a lower bound)
}

// Summarise computes a GapSummary of gaps (seconds) with per-hand-off GPUs for the cost.
func Summarise(gaps []float64, gpus []int, censored []bool, cost GapCost) GapSummary {
	s := GapSummary{N: len(gaps)}
	if len(gaps) == 0 {
		return s
	}
	intr := make([]float64, len(gaps))
	ovl := make([]float64, len(gaps))
	for i, g := range gaps {
		h := g / 3600
		s.MeanAbsGapH += math.Abs(h)
		s.MeanCost += cost.Cost(time.Duration(g*float64(time.Second)), gpus[i])
		intr[i], ovl[i] = math.Max(h, 0), math.Max(-h, 0)
		if g <= 0 {
			s.ZeroInterruption++
		}
		if math.Abs(g) <= 3600 {
			s.WithinHour++
		}
		if censored != nil && censored[i] {
			s.Censored++
		}
	}
	n := float64(len(gaps))
	s.MeanAbsGapH /= n
	s.MeanCost /= n
	s.ZeroInterruption /= n
	s.WithinHour /= n
	s.MeanInterruptH = mean(intr)
	s.MeanOverlapH = mean(ovl)
	sort.Float64s(intr)
	sort.Float64s(ovl)
	s.P90InterruptH = features.Percentile(intr, 0.9)
	s.P90OverlapH = features.Percentile(ovl, 0.9)
	return s
}

// mean is the arithmetic mean (NaN when empty), as models.Mean.
func mean(y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range y {
		s += v
	}
	return s / float64(len(y))
}
