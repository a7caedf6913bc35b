package placement

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Policy names a placement policy.
type Policy string

// Placement policies. Each ranks the nodes that pass the filter; the
// comparator of each is documented on its constant.
const (
	// FirstFit takes the first node in the state's order (Slurm's
	// cons_tres with equal node weights). Criteria: node order.
	FirstFit Policy = "first-fit"
	// BestFit takes the node left with the fewest free GPUs. Criteria: least
	// free GPU share after placement, then least free CPU after, then node name.
	BestFit Policy = "best-fit"
	// Spread takes the node left with the most free GPUs (the Kubernetes
	// default scheduler's LeastAllocated). Criteria: most free GPU share after
	// placement, then most free CPU after, then node name.
	Spread Policy = "spread"
	// FragAware takes the node whose expected fragmentation grows least (the
	// ATC'23 fragmentation gradient descent), charging GPUs of types that
	// type-constrained jobs need. Criteria: smallest increase of the node's
	// fragmentation under the job-size mix plus the scarcity cost of the GPU
	// type taken (GPUTypeScarcity; 0 when no class of the mix is
	// type-constrained), then least free GPU share after placement (best
	// fit), then least free CPU after, then node name. On multi-GPU-heavy
	// mixes the CPU-capacity term and the scarcity cost give way
	// (ExtensionWeight).
	FragAware Policy = "frag-aware"
	// FGD is an evaluation baseline, not a policy of the product: the
	// fragmentation gradient descent of "Beware of Fragmentation" (Weng et
	// al., USENIX ATC'23) as its paper defines it, for pack-eval to compare
	// frag-aware with. It takes the node whose expected fragmentation F_n(M)
	// grows least under the mix it is given (the paper's "typical tasks":
	// pack-eval hands it the pod list's most frequent classes covering 95%
	// of the pods), F_n(m) being the paper's fragment alone (frag.go: all of
	// the node's free GPU capacity when the class cannot run there, else its
	// GPUs with less free than min(D_m, 1)), without frag-aware's
	// CPU-capacity term and scarcity cost. Criteria: smallest increase of
	// F_n(M); the paper leaves ties open: then least free GPU share after
	// placement (best fit; on the openb default list and its multi-GPU-heavy
	// mixes, arrival seeds 1–10, it left fewer GPUs unallocated than node
	// order), then least free CPU after, then node name. Inside a node a
	// shared GPU is the one whose use grows F_n(M) least, then the
	// lowest-numbered. It is not in Policies and ParsePolicy rejects it (team
	// rules, mirage place, the daemon); Place and pack-eval take it.
	FGD Policy = "fgd"
)

// Policies lists the policies, for help texts.
var Policies = []Policy{FirstFit, BestFit, Spread, FragAware}

// CheckPolicy accepts the names Place takes: the policies of Policies and
// the evaluation baseline FGD.
func CheckPolicy(p Policy) error {
	if p == FGD {
		return nil
	}
	_, err := ParsePolicy(string(p))
	return err
}

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q (want first-fit, best-fit, spread or frag-aware)", ErrBadPolicy, s)
}

// Options tune one placement.
type Options struct {
	NodeList []string // only these nodes (empty = any)
	Exclude  []string // never these nodes
	Mix      *Mix     // job-size mix for frag-aware and FGD (nil = DefaultMix of the state)
	Explain  bool     // record every rejected node and every candidate's score
}

// Candidate is one node that passed the filter, with its score.
type Candidate struct {
	Node      string  // node name
	Index     int     // node index
	FragDelta float64 // frag-aware: increase of the node's expected fragmentation, in GPUs
	Scarcity  float64 // frag-aware: the GPU type's scarcity cost of the GPUs taken, in GPUs (see GPUTypeScarcity)
	FreeAfter float64 // free GPUs left on the node after placement
	Score     float64 // the policy's primary score, higher is better
	Norm      float64 // Score normalised over all candidates to [0, 1] (1 = best)
}

// Rejection is one node the filter rejected.
type Rejection struct {
	Node   string // node name
	Reason string // one of the Reason constants
}

// Result is the outcome of one placement: the chosen nodes or why none,
// with the filter's rejections and the scores.
type Result struct {
	Policy      Policy         // policy used
	Demand      Demand         // what was placed
	Assignments []Assignment   // one per node, best first; empty when the job cannot be placed
	Chosen      []Candidate    // the chosen nodes' scores, aligned with Assignments
	Candidates  int            // nodes that passed the filter
	Rejected    map[string]int // filter reason → number of nodes
	Rejections  []Rejection    // with Explain: every rejected node
	Ranked      []Candidate    // with Explain: every candidate, best first
	Reason      string         // one-line summary of the decision
}

// OK reports whether the job was placed.
func (p *Result) OK() bool { return len(p.Assignments) > 0 }

// NodeNames returns the chosen nodes' names.
func (p *Result) NodeNames() []string {
	out := make([]string, len(p.Assignments))
	for i, a := range p.Assignments {
		out[i] = a.Name
	}
	return out
}

// Place runs the placement pipeline for one job: filter (node list,
// schedulable, GPU type, capacity, free GPUs, free CPUs; each rejection
// counted under a constant reason), score (the policy's criteria),
// normalise (scores to [0, 1] over the candidates) and pick (the best
// Demand.Nodes distinct nodes under the policy's comparator, ties broken by
// node name). It does not change the state (but for the figures Memoize
// keeps): Assign the result to commit it.
// A job no node can take now is not an error: the Result says why.
func Place(st *State, d Demand, policy Policy, o Options) (*Result, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := CheckPolicy(policy); err != nil {
		return nil, err
	}
	allow, why, err := st.allowMask(o.NodeList, o.Exclude)
	if err != nil {
		return nil, err
	}
	c := st.compile(d)
	var fm *fragModel
	var memo *memoRow
	if policy == FragAware || policy == FGD {
		mix := o.Mix
		if mix == nil {
			m := DefaultMix(st)
			mix = &m
		}
		var mm *fragMemo
		if fm, mm = st.model(mix, policy == FGD); mm != nil {
			memo = mm.row(&d, len(st.names))
		}
	}
	p := &Result{Policy: policy, Demand: d, Rejected: map[string]int{}}
	k := d.nodes()
	top := make([]Candidate, 0, k+1)
	var all []Candidate
	lo, hi := math.Inf(1), math.Inf(-1)
	var buf [64]int
	for i := range st.names {
		reason := st.filter(i, &c, allow)
		if reason == ReasonNotListed && why != nil {
			reason = why[i]
		}
		if reason != "" {
			p.Rejected[reason]++
			if o.Explain {
				p.Rejections = append(p.Rejections, Rejection{Node: st.names[i], Reason: reason})
			}
			continue
		}
		p.Candidates++
		s := &st.sum[i]
		cand := Candidate{Node: st.names[i], Index: i}
		taken := int32(c.whole) * MilliGPU
		if c.whole == 0 {
			taken = c.milli
		}
		cand.FreeAfter = float64(s.totalFree-taken)/MilliGPU + cpuTie(s, c.cpu)
		switch policy {
		case FirstFit:
			cand.Score = -float64(i)
		case BestFit:
			cand.Score = -cand.FreeAfter
		case Spread:
			cand.Score = cand.FreeAfter
		case FragAware, FGD:
			if memo != nil && memo.gen[i] == st.ngen[i]+1 {
				cand.FragDelta = memo.delta[i]
			} else {
				_, cand.FragDelta = st.pick(i, &c, policy, fm, buf[:])
				if memo != nil {
					memo.delta[i], memo.gen[i] = cand.FragDelta, st.ngen[i]+1
				}
			}
			cand.FragDelta /= MilliGPU
			if fm.press != nil {
				cand.Scarcity = fm.scarcityW * fm.press[st.shape[i]] * float64(taken) / MilliGPU
			}
			cand.Score = -(cand.FragDelta + cand.Scarcity)
		}
		lo, hi = min(lo, cand.Score), max(hi, cand.Score)
		if o.Explain {
			all = append(all, cand)
		}
		// keep the k best, best first
		pos := len(top)
		for pos > 0 && better(policy, &cand, &top[pos-1], st.names) {
			pos--
		}
		if pos < k {
			top = slices.Insert(top, pos, cand)
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	norm := func(c *Candidate) {
		c.Norm = 1
		if hi > lo {
			c.Norm = (c.Score - lo) / (hi - lo)
		}
	}
	if o.Explain {
		slices.SortFunc(all, func(a, b Candidate) int {
			if better(policy, &a, &b, st.names) {
				return -1
			}
			if better(policy, &b, &a, st.names) {
				return 1
			}
			return 0
		})
		for i := range all {
			norm(&all[i])
		}
		p.Ranked = all
	}
	if len(top) < k {
		p.Reason = st.noPlaceReason(p, k)
		return p, nil
	}
	for i := range top {
		norm(&top[i])
		gpus, _ := st.pick(top[i].Index, &c, policy, fm, buf[:])
		p.Assignments = append(p.Assignments, Assignment{Node: top[i].Index, Name: top[i].Node,
			GPUs: slices.Clone(gpus), Milli: int(c.milli), CPUMilli: int(c.cpu), MemMiB: int(c.mem)})
	}
	p.Chosen = top
	p.Reason = placedReason(p)
	return p, nil
}

// placedReason summarises a successful placement.
func placedReason(p *Result) string {
	c := p.Chosen[0]
	s := fmt.Sprintf("%s on %s by %s among %d candidate nodes", p.Demand, strings.Join(p.NodeNames(), ","), p.Policy, p.Candidates)
	switch p.Policy {
	case FGD:
		s += fmt.Sprintf(" (fragmentation %+.2f GPUs, %.4g GPUs left free)", c.FragDelta, math.Round(c.FreeAfter*1000)/1000)
	case FragAware:
		if c.Scarcity > 0 {
			s += fmt.Sprintf(" (fragmentation %+.2f GPUs, scarcity %+.2f GPUs, %.4g GPUs left free)", c.FragDelta, c.Scarcity, math.Round(c.FreeAfter*1000)/1000)
		} else {
			s += fmt.Sprintf(" (fragmentation %+.2f GPUs, %.4g GPUs left free)", c.FragDelta, math.Round(c.FreeAfter*1000)/1000)
		}
	case BestFit, Spread:
		s += fmt.Sprintf(" (%.4g GPUs left free)", math.Round(c.FreeAfter*1000)/1000)
	}
	return s
}

// noPlaceReason explains why no placement was found, by filter reason.
func (st *State) noPlaceReason(p *Result, k int) string {
	reasons := make([]string, 0, len(p.Rejected))
	for r := range p.Rejected {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", p.Rejected[r], r)
	}
	_, free := st.Totals()
	s := fmt.Sprintf("%s: no placement: %d of %d nodes can take it", p.Demand, p.Candidates, st.Len())
	if k > 1 {
		s = fmt.Sprintf("%s: no placement: %d nodes can take a share, %d needed", p.Demand, p.Candidates, k)
	}
	s += fmt.Sprintf(" (%.4g GPUs free in all)", float64(free)/MilliGPU)
	if len(parts) > 0 {
		s += "; rejected: " + strings.Join(parts, ", ")
	}
	return s
}

// CheckFits returns ErrJobTooLarge when no node of the state could ever hold
// the demand, whatever runs on it (capacity and GPU type only, schedulable
// or not), naming the largest node.
func (st *State) CheckFits(d Demand) error {
	if err := d.Validate(); err != nil {
		return err
	}
	c := st.compile(d)
	largest, largestName, fits := -1, "", 0
	for i := range st.names {
		if !c.typeOK(st.sum[i].typ) {
			continue
		}
		if g := st.gpus(i); g > largest {
			largest, largestName = g, st.names[i]
		}
		if st.capacityOK(i, &c) {
			fits++
		}
	}
	if fits >= d.nodes() {
		return nil
	}
	if largest < 0 {
		return fmt.Errorf("%w: %s: no node has an allowed GPU type (the cluster has %s)", ErrJobTooLarge, d, strings.Join(st.types, ", "))
	}
	if d.nodes() > 1 && fits > 0 {
		return fmt.Errorf("%w: %s: only %d nodes can hold a share", ErrJobTooLarge, d, fits)
	}
	return fmt.Errorf("%w: %s per node, the largest node (%s) has %d GPUs; split the job over more nodes or ask for fewer GPUs", ErrJobTooLarge, d, largestName, largest)
}
