package metrics

import (
	"cmp"
	"slices"
	"strings"
)

// RunStats are the whole-run figures of one group of runs (same key as the
// hand-off groups: protocol, load scale, policy, size with 0 = all, load
// class with "all"). Hours and GPU-hours; means over the group's runs.
type RunStats struct {
	GroupKey
	N        int `json:"n"`        // runs
	Censored int `json:"censored"` // runs whose work was not done at the cut-off (completion is a lower bound)

	CompletionMean float64 `json:"completion_mean_h"` // first start → work done
	OverheadMean   float64 `json:"overhead_mean_h"`   // completion − work
	OverheadMedian float64 `json:"overhead_median_h"`
	OverheadP90    float64 `json:"overhead_p90_h"`
	SegmentsMean   float64 `json:"segments_mean"`
	HandOffsMean   float64 `json:"handoffs_mean"`   // segments ended early by a successor's hand-off
	DowntimeMean   float64 `json:"downtime_mean_h"` // no segment running
	ChargedMean    float64 `json:"charged_gpu_h_mean"`
	Goodput        float64 `json:"goodput"` // Σ useful GPU-h / Σ charged GPU-h

	// Against reactive on the same runs (same cell, chain and size):
	// Σ overhead / Σ reactive overhead and Σ charged / Σ reactive charged;
	// nil without reactive runs (or, for the overhead, none with overhead).
	OverheadRatio *float64 `json:"overhead_ratio,omitempty"`
	ChargedRatio  *float64 `json:"charged_ratio,omitempty"`
	RatioPairs    int      `json:"ratio_pairs"`
	// OthersDelta is the mean, over the same runs, of the other jobs'
	// queued GPU-hours minus those under reactive (RunSample.OthersQueued):
	// > 0 when the policy made everyone else wait longer. Nil without
	// reactive runs.
	OthersDelta *float64 `json:"others_queued_delta_gpu_h,omitempty"`

	CI *RunIntervals `json:"ci,omitempty"` // bootstrap CIs when N < the bootstrap threshold
}

// RunIntervals are the bootstrap intervals of a run group's headline figures.
type RunIntervals struct {
	OverheadMean  *Interval `json:"overhead_mean_h,omitempty"`
	ChargedMean   *Interval `json:"charged_gpu_h_mean,omitempty"`
	OverheadRatio *Interval `json:"overhead_ratio,omitempty"` // paired resampling
	ChargedRatio  *Interval `json:"charged_ratio,omitempty"`  // paired resampling
	OthersDelta   *Interval `json:"others_queued_delta_gpu_h,omitempty"`
}

// ComputeRuns groups runs as Compute groups hand-offs and computes each
// group's whole-run figures; pure and deterministic like Compute.
func ComputeRuns(runs []RunSample, opts Options) []RunStats {
	opts = opts.WithDefaults()
	groups := map[GroupKey][]*RunSample{}
	ref := map[RunKey]*RunSample{}
	var policies []Sample // for policyOrder
	for i := range runs {
		r := &runs[i]
		for _, nodes := range withMarginal(0, r.Nodes) {
			for _, class := range withMarginal(AllClasses, r.LoadClass) {
				k := GroupKey{r.Protocol, r.LoadScale, r.Policy, nodes, class}
				groups[k] = append(groups[k], r)
			}
		}
		if r.Policy == Reference {
			ref[RunKeyOf(r)] = r
		}
		policies = append(policies, Sample{Policy: r.Policy})
	}
	keys := make([]GroupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	order := policyOrder(opts.Policies, policies)
	slices.SortFunc(keys, func(a, b GroupKey) int {
		return cmp.Or(strings.Compare(a.Protocol, b.Protocol), cmp.Compare(a.LoadScale, b.LoadScale),
			cmp.Compare(order[a.Policy], order[b.Policy]), cmp.Compare(a.Nodes, b.Nodes),
			cmp.Compare(classRank(a.LoadClass), classRank(b.LoadClass)), strings.Compare(a.LoadClass, b.LoadClass))
	})
	out := make([]RunStats, 0, len(keys))
	for _, k := range keys {
		out = append(out, runStats(k, groups[k], ref, opts))
	}
	return out
}

func RunKeyOf(r *RunSample) RunKey {
	return RunKey{r.Cell, r.Protocol, r.LoadScale, r.ChainID, r.Nodes}
}

// runPair is one run's (overhead, charged, others queued) with reactive's
// on the same run.
type runPair struct{ over, refOver, charged, refCharged, others, refOthers float64 }

func ratios(pairs []runPair) (over float64, overOK bool, charged float64, chargedOK bool) {
	var o, ro, c, rc float64
	for _, p := range pairs {
		o, ro, c, rc = o+p.over, ro+p.refOver, c+p.charged, rc+p.refCharged
	}
	return o / ro, ro > 0, c / rc, rc > 0
}

// othersDelta is the mean of the pairs' others-queued differences.
func othersDelta(pairs []runPair) float64 {
	var d float64
	for _, p := range pairs {
		d += p.others - p.refOthers
	}
	return d / float64(len(pairs))
}

func runStats(k GroupKey, g []*RunSample, ref map[RunKey]*RunSample, opts Options) RunStats {
	st := RunStats{GroupKey: k, N: len(g)}
	over := make([]float64, len(g))
	charged := make([]float64, len(g))
	var useful, chargedSum float64
	var pairs []runPair
	for i, r := range g {
		over[i] = r.Overhead().Hours()
		charged[i] = r.ChargedGPU
		if r.Censored {
			st.Censored++
		}
		st.CompletionMean += r.Completion.Hours()
		st.SegmentsMean += float64(r.Segments)
		st.HandOffsMean += float64(r.HandOffs)
		st.DowntimeMean += r.Downtime.Hours()
		useful += r.UsefulGPU
		chargedSum += r.ChargedGPU
		if b, ok := ref[RunKeyOf(r)]; ok {
			pairs = append(pairs, runPair{over[i], b.Overhead().Hours(), r.ChargedGPU, b.ChargedGPU, r.OthersQueued, b.OthersQueued})
		}
	}
	n := float64(len(g))
	st.CompletionMean /= n
	st.SegmentsMean /= n
	st.HandOffsMean /= n
	st.DowntimeMean /= n
	st.OverheadMean = Mean(over)
	st.ChargedMean = Mean(charged)
	so := sortedFloats(over)
	st.OverheadMedian, st.OverheadP90 = linQuantile(so, 0.5), linQuantile(so, 0.9)
	if chargedSum > 0 {
		st.Goodput = useful / chargedSum
	}
	st.RatioPairs = len(pairs)
	if o, ok, c, cok := ratios(pairs); len(pairs) > 0 {
		if ok {
			st.OverheadRatio = &o
		}
		if cok {
			st.ChargedRatio = &c
		}
		d := othersDelta(pairs)
		st.OthersDelta = &d
	}
	if opts.BootstrapBelow > 0 && st.N < opts.BootstrapBelow && st.N >= 2 {
		st.CI = bootstrapRuns(k, over, charged, pairs, opts)
	}
	return st
}

// bootstrapRuns: percentile intervals of the mean overhead and charge, and
// of the ratios against reactive by resampling matched runs.
func bootstrapRuns(k GroupKey, over, charged []float64, pairs []runPair, opts Options) *RunIntervals {
	rng := GroupRand(opts.Seed, GroupKey{"runs/" + k.Protocol, k.LoadScale, k.Policy, k.Nodes, k.LoadClass})
	n, b := len(over), opts.Resamples
	mo, mc := make([]float64, b), make([]float64, b)
	for i := range b {
		var so, sc float64
		for range n {
			j := rng.IntN(n)
			so += over[j]
			sc += charged[j]
		}
		mo[i], mc[i] = so/float64(n), sc/float64(n)
	}
	ci := &RunIntervals{OverheadMean: PercentileInterval(mo, opts.Level), ChargedMean: PercentileInterval(mc, opts.Level)}
	if len(pairs) >= 2 {
		var ro, rc []float64
		rd := make([]float64, b)
		res := make([]runPair, len(pairs))
		for i := range b {
			for j := range res {
				res[j] = pairs[rng.IntN(len(pairs))]
			}
			rd[i] = othersDelta(res)
			o, ok, c, cok := ratios(res)
			if ok {
				ro = append(ro, o)
			}
			if cok {
				rc = append(rc, c)
			}
		}
		if len(ro) > 0 {
			ci.OverheadRatio = PercentileInterval(ro, opts.Level)
		}
		if len(rc) > 0 {
			ci.ChargedRatio = PercentileInterval(rc, opts.Level)
		}
		ci.OthersDelta = PercentileInterval(rd, opts.Level)
	}
	return ci
}
