package train

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
)

// EpisodeScores returns the decision score of m under rule at every tick of ep.
func EpisodeScores(m models.Model, rule models.DecisionRule, ep *dataset.ChainEpisode) ([]float64, error) {
	out := make([]float64, len(ep.X))
	if err := m.PredictBatch(ep.X, out); err != nil {
		return nil, err
	}
	task := m.Meta().Task
	for k := range out {
		out[k] = unlessHeld(rule, ep.X[k], rule.Score(task, out[k], ep.Left(k)))
	}
	return out, nil
}

// unlessHeld is score, or −Inf (it never reaches a threshold) where the
// rule's hold keeps the policy from submitting at features x.
func unlessHeld(rule models.DecisionRule, x []float64, score float64) float64 {
	if rule.Held(x) {
		return math.Inf(-1)
	}
	return score
}

// FirstAtLeast returns the first tick whose score reaches th, or −1 (the
// policy never submits: the deadline submission applies).
func FirstAtLeast(scores []float64, th float64) int {
	for k, s := range scores {
		if s >= th {
			return k
		}
	}
	return -1
}

// TuneThreshold picks, among candidates, the threshold whose first-reach
// submissions minimise the mean cost over episodes (scores[i] for eps[i]);
// ties go to the smaller threshold. It returns the threshold and its mean cost.
func TuneThreshold(eps []dataset.ChainEpisode, scores [][]float64, candidates []float64, cost scenario.GapCost) (float64, float64) {
	return tuneThreshold(eps, scores, candidates, cost, false)
}

// TuneThresholdNoHarm is TuneThreshold under the do-no-harm constraint:
// only thresholds whose submissions on the episodes of the low load class
// (LowLoadTarget: the deadline submission starts within 2 h) have a mean
// |gap| no larger than the deadline submission's are candidates. Raising the
// threshold only delays submissions, so the largest candidate is reactive
// at worst; when even it harms (it cannot submit later than the deadline),
// the largest candidate is returned.
func TuneThresholdNoHarm(eps []dataset.ChainEpisode, scores [][]float64, candidates []float64, cost scenario.GapCost) (float64, float64) {
	return tuneThreshold(eps, scores, candidates, cost, true)
}

func tuneThreshold(eps []dataset.ChainEpisode, scores [][]float64, candidates []float64, cost scenario.GapCost, noHarm bool) (float64, float64) {
	// Running maxima make "first tick reaching th" a binary search.
	pm := make([][]float64, len(scores))
	for i, s := range scores {
		pm[i] = make([]float64, len(s))
		m := math.Inf(-1)
		for k, v := range s {
			m = math.Max(m, v)
			pm[i][k] = m
		}
	}
	best, bestCost := math.NaN(), math.Inf(1)
	cands := slices.Clone(candidates)
	slices.Sort(cands)
	var lowReactive float64
	for i := range eps {
		if LowLoadTarget(&eps[i], 0) == 1 {
			lowReactive += math.Abs(eps[i].Reactive)
		}
	}
	for _, th := range cands {
		total, low := 0.0, 0.0
		for i := range eps {
			k, found := sort.Find(len(pm[i]), func(j int) int {
				if pm[i][j] >= th {
					return 0
				}
				return 1
			})
			if !found {
				k = -1
			}
			g, _ := eps[i].Outcome(k)
			total += cost.Cost(time.Duration(g*float64(time.Second)), eps[i].GPUs)
			if noHarm && LowLoadTarget(&eps[i], 0) == 1 {
				low += math.Abs(g)
			}
		}
		if noHarm && low > lowReactive+1e-9 {
			continue
		}
		if c := total / float64(len(eps)); c < bestCost {
			best, bestCost = th, c
		}
	}
	if math.IsNaN(best) && len(cands) > 0 { // every candidate harms: the latest one
		return tuneThreshold(eps, scores, cands[len(cands)-1:], cost, false)
	}
	return best, bestCost
}

// thresholdGrid returns candidates from lo to hi in steps of step.
func thresholdGrid(lo, hi, step float64) []float64 {
	var out []float64
	for v := lo; v <= hi+step/2; v += step {
		out = append(out, v)
	}
	return out
}
