package dataset

import (
	"math"
	"sort"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
)

// Rows flattens episodes into a design matrix and per-row targets: target
// maps (episode, tick) to the row's label.
func Rows(eps []ChainEpisode, schema features.SchemaID, target func(ep *ChainEpisode, k int) float64) *models.Dataset {
	n := 0
	for i := range eps {
		n += len(eps[i].X)
	}
	ds := &models.Dataset{Schema: schema, X: make([][]float64, 0, n), Y: make([]float64, 0, n)}
	for i := range eps {
		ep := &eps[i]
		for k := range ep.X {
			ds.X = append(ds.X, ep.X[k])
			ds.Y = append(ds.Y, target(ep, k))
		}
	}
	return ds
}

// GapTarget labels a tick with the gap if submitted then (seconds).
func GapTarget(ep *ChainEpisode, k int) float64 { return ep.Gap[k] }

// WaitTarget labels a tick with the successor's wait if submitted then
// (seconds): gap + the predecessor's remaining time.
func WaitTarget(ep *ChainEpisode, k int) float64 { return ep.Gap[k] + ep.Left(k) }

// SafeTarget labels a tick 1 when submitting then is safe (gap ≥ SafeGapThreshold), else 0.
func SafeTarget(ep *ChainEpisode, k int) float64 {
	if ep.Gap[k] >= models.SafeGapThreshold.Seconds() {
		return 1
	}
	return 0
}

// TableOutcomes plays a decision rule on every episode exactly (the table
// holds the outcome of submitting at each tick): submitAt returns the tick
// the policy submits at, or −1 for never (the deadline submission).
func TableOutcomes(eps []ChainEpisode, submitAt func(ep *ChainEpisode) (int, error)) (gaps []float64, gpus []int, censored []bool, err error) {
	for i := range eps {
		ep := &eps[i]
		k, err := submitAt(ep)
		if err != nil {
			return nil, nil, nil, err
		}
		g, c := ep.Outcome(k)
		gaps, gpus, censored = append(gaps, g), append(gpus, ep.GPUs), append(censored, c)
	}
	return gaps, gpus, censored, nil
}

// ReactiveLoad returns each episode's load class by its reactive gap
// ("low" ≤ 2 h, "medium" ≤ 12 h, "heavy"), the published classes.
func ReactiveLoad(ep *ChainEpisode) string {
	switch h := ep.Reactive / 3600; {
	case h <= 2:
		return "low"
	case h <= 12:
		return "medium"
	}
	return "heavy"
}

// SplitByTime splits episodes (in injection order) into the earlier
// 1−share and the later share by injection time; ties stay together.
func SplitByTime(eps []ChainEpisode, share float64) (early, late []ChainEpisode) {
	if share <= 0 || len(eps) < 2 {
		return eps, nil
	}
	idx := make([]int, len(eps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return eps[idx[a]].Inject.Before(eps[idx[b]].Inject) })
	cut := int(math.Round(float64(len(eps)) * (1 - share)))
	cut = min(max(cut, 1), len(eps)-1)
	for cut < len(eps) && cut > 0 && eps[idx[cut]].Inject.Equal(eps[idx[cut-1]].Inject) {
		cut++
	}
	for k, i := range idx {
		if k < cut {
			early = append(early, eps[i])
		} else {
			late = append(late, eps[i])
		}
	}
	return early, late
}

// OracleTick is the oracle's choice on an episode: the tick whose gap is
// closest to zero, or −1 when the deadline submission is at least as close
// (the oracle then behaves as reactive). Ties go to the earliest tick.
// Censored outcomes are never chosen: their gap is only a lower bound.
func OracleTick(ep *ChainEpisode) int {
	best, bestAbs := -1, math.Inf(1)
	if !ep.ReactiveCensored {
		bestAbs = math.Abs(ep.Reactive)
	}
	for k, g := range ep.Gap {
		if ep.Censored[k] {
			continue
		}
		if a := math.Abs(g); a < bestAbs {
			best, bestAbs = k, a
		}
	}
	return best
}

// OracleTarget labels a tick 1 when the oracle would already have submitted
// by it (k ≥ OracleTick), else 0: the imitation target of a stopping rule
// that submits at the first tick it labels 1. An episode whose oracle is the
// deadline is all zeros.
func OracleTarget(ep *ChainEpisode, k int) float64 {
	if o := OracleTick(ep); o >= 0 && k >= o {
		return 1
	}
	return 0
}
