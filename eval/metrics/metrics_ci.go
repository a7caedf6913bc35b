package metrics

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// GroupRand is the bootstrap generator of one group: seeded by the run's
// seed and the group key, so a group's intervals do not depend on which
// other groups exist (a merged report equals the single-process one).
func GroupRand(seed uint64, k GroupKey) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(k.String()))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// bootstrapAll computes percentile-bootstrap intervals of the group's
// headline figures. Per-hand-off figures are resampled together (one draw
// of indices per resample); the reduction resamples matched pairs.
func bootstrapAll(k GroupKey, intr, zero, within, abs []float64, pairs [][2]float64, opts Options) *Intervals {
	r := GroupRand(opts.Seed, k)
	n, b := len(intr), opts.Resamples
	mi, mz, mw, ma := make([]float64, b), make([]float64, b), make([]float64, b), make([]float64, b)
	for i := range b {
		var si, sz, sw, sa float64
		for range n {
			j := r.IntN(n)
			si += intr[j]
			sz += zero[j]
			sw += within[j]
			sa += abs[j]
		}
		fn := float64(n)
		mi[i], mz[i], mw[i], ma[i] = si/fn, sz/fn, sw/fn, sa/fn
	}
	ci := &Intervals{
		InterruptionMean: PercentileInterval(mi, opts.Level),
		ZeroInterruption: PercentileInterval(mz, opts.Level),
		WithinHour:       PercentileInterval(mw, opts.Level),
		MeanAbsGap:       PercentileInterval(ma, opts.Level),
	}
	if _, ok := reductionOf(pairs); ok && len(pairs) >= 2 {
		red := make([]float64, 0, b)
		res := make([][2]float64, len(pairs))
		for range b {
			for j := range res {
				res[j] = pairs[r.IntN(len(pairs))]
			}
			if v, ok := reductionOf(res); ok { // resamples where reactive had no interruption carry no ratio
				red = append(red, v)
			}
		}
		if len(red) > 0 {
			ci.Reduction = PercentileInterval(red, opts.Level)
		}
	}
	return ci
}

// PercentileInterval is the central level interval of the resampled statistic.
func PercentileInterval(xs []float64, level float64) *Interval {
	s := slices.Clone(xs)
	slices.Sort(s)
	a := (1 - level) / 2
	return &Interval{Lo: linQuantile(s, a), Hi: linQuantile(s, 1-a)}
}
