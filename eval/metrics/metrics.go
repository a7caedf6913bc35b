package metrics

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// AllClasses is the LoadClass of a group that spans every load class; a
// group with Nodes 0 spans every job size.
const AllClasses = "all"

// Reference is the policy every other policy's reduction is measured against.
const Reference = "reactive"

// Quantiles of a distribution in hours (linear interpolation between order
// statistics: the p-quantile of sorted x[0..n-1] is at position p·(n−1)).
type Quantiles struct {
	Min float64 `json:"min"`
	P5  float64 `json:"p5"`
	P10 float64 `json:"p10"`
	P25 float64 `json:"p25"`
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// Interval is a two-sided bootstrap confidence interval.
type Interval struct {
	Lo float64 `json:"lo"` // lower bound
	Hi float64 `json:"hi"` // upper bound
}

// Intervals are the bootstrap confidence intervals of a group's headline
// figures (nil when the group has enough samples not to need them).
type Intervals struct {
	InterruptionMean *Interval `json:"interruption_mean_h,omitempty"` // mean interruption, hours
	ZeroInterruption *Interval `json:"zero_interruption,omitempty"`   // share with gap ≤ the zero tolerance
	WithinHour       *Interval `json:"within_hour,omitempty"`         // share with |gap| ≤ 1 h
	MeanAbsGap       *Interval `json:"mean_abs_gap_h,omitempty"`      // mean |gap|, hours
	Reduction        *Interval `json:"reduction,omitempty"`           // reduction against reactive (paired resampling)
}

// GroupKey identifies one row of the metrics: an experiment (protocol, load
// scale), a policy, a job size (0 = all sizes) and a load class ("all" = every class).
type GroupKey struct {
	Protocol  string  `json:"protocol"`   // "pair" or "chain-K"
	LoadScale float64 `json:"load_scale"` // arrival scaling
	Policy    string  `json:"policy"`     // policy name
	Nodes     int     `json:"nodes"`      // nodes per segment; 0 = all sizes
	LoadClass string  `json:"load_class"` // low, medium, heavy or all
}

// String renders the key for messages and plot labels.
func (k GroupKey) String() string {
	size := "all sizes"
	if k.Nodes > 0 {
		size = fmt.Sprintf("%d-node", k.Nodes)
	}
	return fmt.Sprintf("%s ×%g %s %s %s", k.Protocol, k.LoadScale, k.Policy, size, k.LoadClass)
}

// GroupStats are the figures of one group of hand-offs. Durations are in
// hours. Interruption of a hand-off is max(gap, 0), overlap max(−gap, 0);
// both are averaged over all hand-offs of the group (zeros included).
type GroupStats struct {
	GroupKey
	N        int `json:"n"`        // hand-offs
	Censored int `json:"censored"` // hand-offs whose successor never started (gap is a lower bound)

	Gap                Quantiles `json:"gap_h"`               // signed gap distribution
	InterruptionMean   float64   `json:"interruption_mean_h"` // mean of max(gap,0)
	InterruptionMedian float64   `json:"interruption_median_h"`
	InterruptionP90    float64   `json:"interruption_p90_h"`
	OverlapMean        float64   `json:"overlap_mean_h"` // mean of max(−gap,0)
	OverlapP90         float64   `json:"overlap_p90_h"`
	WastedGPUHours     float64   `json:"wasted_gpu_h"`      // Σ overlap × GPUs of the segment
	ZeroInterruption   float64   `json:"zero_interruption"` // share with gap ≤ the zero tolerance (Options.ZeroTolerance)
	WithinHour         float64   `json:"within_hour"`       // share with |gap| ≤ 1 h
	MeanAbsGap         float64   `json:"mean_abs_gap_h"`    // mean |gap|

	// Reduction is 1 − Σ interruption(policy) / Σ interruption(reactive)
	// over the hand-offs both ran (same cell, chain, segment and size); nil
	// when reactive was not run or had no interruption on them.
	Reduction      *float64 `json:"reduction,omitempty"`
	ReductionPairs int      `json:"reduction_pairs"` // matched hand-offs behind Reduction

	Submits           int     `json:"submits"`             // sbatch calls in total
	SubmitsPerHandoff float64 `json:"submits_per_handoff"` // Submits / N

	// Chain figures (chain-K protocols): total interruption of a chain's
	// hand-offs within the group, hours.
	Chains                  int     `json:"chains"`
	ChainInterruptionMean   float64 `json:"chain_interruption_mean_h"`
	ChainInterruptionMedian float64 `json:"chain_interruption_median_h"`
	ChainInterruptionP90    float64 `json:"chain_interruption_p90_h"`

	CI *Intervals `json:"ci,omitempty"` // bootstrap CIs when N < Options.BootstrapBelow
}

// Options configure Compute.
type Options struct {
	Policies       []string // order of policies in the output (others follow, sorted); reactive first when empty
	BootstrapBelow int      // groups with fewer hand-offs get bootstrap CIs (0: DefaultBootstrapBelow; <0: never)
	Resamples      int      // bootstrap resamples (0: DefaultResamples)
	Level          float64  // confidence level (0: 0.95)
	Seed           uint64   // bootstrap seed (recorded in the report)
	// ZeroTolerance is the interruption that still counts as none for
	// ZeroInterruption: the scheduler's latency between a job's nodes
	// freeing and its successor starting there, which no policy can
	// remove (0: only gap ≤ 0 counts).
	ZeroTolerance time.Duration
}

// Bootstrap defaults.
const (
	DefaultBootstrapBelow = 100  // groups under 100 hand-offs get CIs
	DefaultResamples      = 1000 // resamples per interval
	DefaultLevel          = 0.95 // two-sided level
)

// WithDefaults fills the zero fields with the defaults (DefaultBootstrapBelow,
// DefaultResamples, DefaultLevel).
func (o Options) WithDefaults() Options {
	if o.BootstrapBelow == 0 {
		o.BootstrapBelow = DefaultBootstrapBelow
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = DefaultLevel
	}
	return o
}

// HandoffKey matches the same hand-off across policies.
type HandoffKey struct {
	Cell, Chain string
	Segment     int
	Nodes       int
}

// HandoffOf is the key matching s's hand-off across policies.
func HandoffOf(s *Sample) HandoffKey {
	return HandoffKey{s.Cell, s.ChainID, s.Segment, s.Nodes}
}

// Compute groups samples by protocol, load scale, policy, job size and load
// class (with "all sizes" and "all classes" marginals) and computes each
// group's figures. It is a pure function of its inputs: the same samples and
// options give the same result, in a deterministic order (protocol, scale,
// policy as in opts.Policies, size with all first, class all/low/medium/heavy).
func Compute(samples []Sample, opts Options) []GroupStats {
	opts = opts.WithDefaults()
	groups := map[GroupKey][]*Sample{}
	// reactive interruption per (protocol, scale, hand-off)
	type refKey struct {
		protocol string
		scale    float64
		h        HandoffKey
	}
	ref := map[refKey]time.Duration{}
	for i := range samples {
		s := &samples[i]
		for _, nodes := range withMarginal(0, s.Nodes) {
			for _, class := range withMarginal(AllClasses, s.LoadClass) {
				k := GroupKey{s.Protocol, s.LoadScale, s.Policy, nodes, class}
				groups[k] = append(groups[k], s)
			}
		}
		if s.Policy == Reference {
			ref[refKey{s.Protocol, s.LoadScale, HandoffOf(s)}] = s.Gap
		}
	}
	keys := make([]GroupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	order := policyOrder(opts.Policies, samples)
	slices.SortFunc(keys, func(a, b GroupKey) int {
		return cmp.Or(
			strings.Compare(a.Protocol, b.Protocol),
			cmp.Compare(a.LoadScale, b.LoadScale),
			cmp.Compare(order[a.Policy], order[b.Policy]),
			cmp.Compare(a.Nodes, b.Nodes),
			cmp.Compare(classRank(a.LoadClass), classRank(b.LoadClass)),
			strings.Compare(a.LoadClass, b.LoadClass),
		)
	})
	out := make([]GroupStats, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		var pairs [][2]float64 // (policy, reactive) interruption hours
		for _, s := range g {
			if r, ok := ref[refKey{s.Protocol, s.LoadScale, HandoffOf(s)}]; ok {
				pairs = append(pairs, [2]float64{interruptionH(s.Gap), interruptionH(r)})
			}
		}
		out = append(out, groupStats(k, g, pairs, opts))
	}
	return out
}

// withMarginal returns the marginal and the value, once each.
func withMarginal[T comparable](all, v T) []T {
	if v == all {
		return []T{all}
	}
	return []T{all, v}
}

func classRank(c string) int {
	switch c {
	case AllClasses:
		return 0
	case LoadLow:
		return 1
	case LoadMedium:
		return 2
	case LoadHeavy:
		return 3
	}
	return 4
}

// policyOrder ranks policies: the given order first, then the rest sorted
// with reactive first.
func policyOrder(given []string, samples []Sample) map[string]int {
	rank := map[string]int{}
	for _, p := range given {
		if _, ok := rank[p]; !ok {
			rank[p] = len(rank)
		}
	}
	var rest []string
	for i := range samples {
		p := samples[i].Policy
		if _, ok := rank[p]; !ok && !slices.Contains(rest, p) {
			rest = append(rest, p)
		}
	}
	slices.SortFunc(rest, func(a, b string) int {
		if (a == Reference) != (b == Reference) {
			if a == Reference {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, p := range rest {
		rank[p] = len(rank)
	}
	return rank
}

func GapHours(d time.Duration) float64 { return d.Hours() }

func interruptionH(gap time.Duration) float64 { return math.Max(GapHours(gap), 0) }

func OverlapH(gap time.Duration) float64 { return math.Max(-GapHours(gap), 0) }

// quantile of sorted xs at p in [0,1] by linear interpolation; 0 for none.
func linQuantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func sortedFloats(xs []float64) []float64 {
	c := slices.Clone(xs)
	slices.Sort(c)
	return c
}

func groupStats(k GroupKey, g []*Sample, pairs [][2]float64, opts Options) GroupStats {
	st := GroupStats{GroupKey: k, N: len(g)}
	n := float64(len(g))
	gaps := make([]float64, len(g))
	intr := make([]float64, len(g))
	over := make([]float64, len(g))
	zero := make([]float64, len(g)) // indicators, for the bootstrap
	within := make([]float64, len(g))
	abs := make([]float64, len(g))
	type chainKey struct {
		cell, chain string
		nodes       int
	}
	chains := map[chainKey]float64{}
	chainProtocol := strings.HasPrefix(k.Protocol, "chain")
	for i, s := range g {
		h := GapHours(s.Gap)
		gaps[i], intr[i], over[i], abs[i] = h, interruptionH(s.Gap), OverlapH(s.Gap), math.Abs(h)
		if s.Gap <= opts.ZeroTolerance {
			zero[i] = 1
		}
		if s.Gap <= time.Hour && s.Gap >= -time.Hour {
			within[i] = 1
		}
		if s.Censored {
			st.Censored++
		}
		st.WastedGPUHours += over[i] * float64(s.GPUs)
		st.Submits += s.Submits
		if chainProtocol || s.Segment > 1 {
			chains[chainKey{s.Cell, s.ChainID, s.Nodes}] += intr[i]
		}
	}
	sg := sortedFloats(gaps)
	st.Gap = Quantiles{
		Min: linQuantile(sg, 0), P5: linQuantile(sg, .05), P10: linQuantile(sg, .10), P25: linQuantile(sg, .25),
		P50: linQuantile(sg, .5), P75: linQuantile(sg, .75), P90: linQuantile(sg, .9), P95: linQuantile(sg, .95), Max: linQuantile(sg, 1),
	}
	si, so := sortedFloats(intr), sortedFloats(over)
	st.InterruptionMean, st.InterruptionMedian, st.InterruptionP90 = Mean(intr), linQuantile(si, .5), linQuantile(si, .9)
	st.OverlapMean, st.OverlapP90 = Mean(over), linQuantile(so, .9)
	st.ZeroInterruption, st.WithinHour, st.MeanAbsGap = Mean(zero), Mean(within), Mean(abs)
	if n > 0 {
		st.SubmitsPerHandoff = float64(st.Submits) / n
	}
	st.ReductionPairs = len(pairs)
	if r, ok := reductionOf(pairs); ok {
		st.Reduction = &r
	}
	if len(chains) > 0 {
		ct := make([]float64, 0, len(chains))
		for _, v := range chains {
			ct = append(ct, v)
		}
		slices.Sort(ct)
		st.Chains = len(ct)
		st.ChainInterruptionMean, st.ChainInterruptionMedian, st.ChainInterruptionP90 = Mean(ct), linQuantile(ct, .5), linQuantile(ct, .9)
	}
	if opts.BootstrapBelow > 0 && len(g) < opts.BootstrapBelow && len(g) >= 2 {
		st.CI = bootstrapAll(k, intr, zero, within, abs, pairs, opts)
	}
	return st
}

// reduction is 1 − Σ policy / Σ reactive over matched pairs.
func reductionOf(pairs [][2]float64) (float64, bool) {
	var p, r float64
	for _, x := range pairs {
		p += x[0]
		r += x[1]
	}
	if len(pairs) == 0 || r <= 0 {
		return 0, false
	}
	return 1 - p/r, true
}
