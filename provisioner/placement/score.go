package placement

import (
	"math"
	"slices"
)

// pick chooses the GPUs of node i for the demand under the policy and
// returns them with the node's fragmentation increase (frag-aware and FGD only).
// Whole GPUs: the lowest-numbered entirely free devices (all equivalent).
// A share of one GPU: first-fit the lowest-numbered device with room,
// best-fit the device with the least room that suffices, spread the one with
// the most room, frag-aware the device whose use grows the node's
// fragmentation least (ties: least room, then lowest number), FGD the
// device whose use grows the paper's measure least (ties: lowest number).
func (st *State) pick(i int, c *cdemand, policy Policy, fm *fragModel, buf []int) ([]int, float64) {
	free := st.free[st.off[i]:st.off[i+1]]
	gpus := buf[:0]
	var before float64
	if fm != nil {
		before = fm.before(st, i)
	}
	if c.whole > 0 {
		for g, f := range free {
			if f == MilliGPU {
				gpus = append(gpus, g)
				if len(gpus) == int(c.whole) {
					break
				}
			}
		}
		var delta float64
		if fm != nil {
			delta = fm.after(st, i, gpus, MilliGPU, c) - before
		}
		return gpus, delta
	}
	if c.milli == 0 {
		var delta float64
		if fm != nil {
			delta = fm.after(st, i, nil, 0, c) - before
		}
		return gpus, delta
	}
	best, bestDelta := -1, 0.0
	var seen [8]int32 // frag-aware: free shares already measured (a GPU with the same share has the same outcome)
	nSeen := 0
	for g, f := range free {
		if f < c.milli {
			continue
		}
		if policy == FragAware || policy == FGD {
			if slices.Contains(seen[:nSeen], f) {
				continue
			}
			if nSeen < len(seen) {
				seen[nSeen] = f
				nSeen++
			}
		}
		if best < 0 {
			best = g
			if fm != nil {
				bestDelta = fm.after(st, i, []int{g}, c.milli, c) - before
			}
			if policy == FirstFit {
				break
			}
			continue
		}
		bf := free[best]
		switch policy {
		case BestFit:
			if f < bf {
				best = g
			}
		case Spread:
			if f > bf {
				best = g
			}
		case FragAware:
			d := fm.after(st, i, []int{g}, c.milli, c) - before
			if d < bestDelta-fragEps || d <= bestDelta+fragEps && f < bf {
				best, bestDelta = g, d
			}
		case FGD:
			if d := fm.after(st, i, []int{g}, c.milli, c) - before; d < bestDelta-fragEps {
				best, bestDelta = g, d
			}
		}
	}
	return append(gpus, best), bestDelta
}

// fragEps is the tolerance under which two fragmentation figures tie.
const fragEps = 1e-9

// better reports whether candidate a ranks above b under the policy (the
// comparators documented on the policy constants).
func better(policy Policy, a, b *Candidate, names []string) bool {
	switch policy {
	case FirstFit:
		return a.Index < b.Index
	case FragAware:
		if d := (a.FragDelta + a.Scarcity) - (b.FragDelta + b.Scarcity); d < -fragEps || d > fragEps {
			return d < 0
		}
		if a.FreeAfter != b.FreeAfter {
			return a.FreeAfter < b.FreeAfter
		}
	case FGD:
		if d := a.FragDelta - b.FragDelta; d < -fragEps || d > fragEps {
			return d < 0
		}
		if a.FreeAfter != b.FreeAfter {
			return a.FreeAfter < b.FreeAfter
		}
	case BestFit:
		if a.FreeAfter != b.FreeAfter {
			return a.FreeAfter < b.FreeAfter
		}
	case Spread:
		if a.FreeAfter != b.FreeAfter {
			return a.FreeAfter > b.FreeAfter
		}
	}
	return names[a.Index] < names[b.Index]
}

// cpuAfter breaks best-fit and spread ties on CPU; folded into FreeAfter as a
// tiny fraction so that the comparator stays one number per criterion.
func cpuTie(s *nodeSum, cpu int32) float64 {
	if s.cpuFree == math.MaxInt32 {
		return 0
	}
	return float64(s.cpuFree-cpu) * 1e-9
}
