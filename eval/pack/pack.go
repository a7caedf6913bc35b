package pack

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// Pod is one arrival of a packing replay (a pod of the openb traces).
type Pod struct {
	Name    string           // pod name
	Demand  placement.Demand // what it asks of its one node
	Arrive  time.Duration    // arrival, since the start of the trace (orders the arrivals)
	Runtime time.Duration    // how long it holds its resources in replay mode (0 = until the end)
}

// Mode says how a packing replay treats time.
type Mode string

// Packing replay modes.
const (
	// Fill is the ATC'23 methodology: pods arrive one after another and
	// never leave until the arrived GPU demand reaches Options.Until
	// times the cluster's capacity. With a seed the arrivals are the pod list
	// shuffled, then pods drawn from it at random (with replacement) up to
	// Options.Inflate times the capacity, as the ATC'23 artifact's
	// workload tuning does; without one the list is cycled in trace order.
	Fill Mode = "fill"
	// Replay follows the trace's clock: pods arrive at their arrival
	// time and leave after their runtime.
	Replay Mode = "replay"
)

// Options tune a packing replay.
type Options struct {
	Mode      Mode                  // default Fill
	Until     float64               // fill: stop when arrived GPU demand reaches this share of capacity (default 1.0)
	Seed      uint64                // fill: 0 keeps the trace order; otherwise the arrivals are sampled with this seed (see Fill)
	Inflate   float64               // fill with a seed: the sampled arrivals ask for this share of capacity in all (default 1.3, ATC'23)
	ListMix   bool                  // frag-aware uses the whole pod list's mix (as ATC'23 does) instead of learning from recent arrivals
	MixEvery  int                   // frag-aware relearns the job-size mix every this many arrivals (default 50)
	MixWindow int                   // ... from this many most recent arrivals (default 1000)
	Points    int                   // points on the curve (default 20)
	EvalMix   *placement.Mix        // the mix every policy's fragmentation is measured under (default: the whole pod list's)
	Progress  func(done, total int) // called as arrivals are processed (nil = none)
}

// Point is the cluster's state at one point of a replay; shares are of
// the cluster's GPU capacity.
type Point struct {
	Arrivals    int     `json:"arrivals"`     // pods arrived so far
	Arrived     float64 `json:"arrived"`      // GPU demand arrived so far / capacity
	Time        float64 `json:"time_hours"`   // replay: trace time in hours
	Allocated   float64 `json:"allocated"`    // GPUs allocated / capacity
	Unallocated float64 `json:"unallocated"`  // GPUs free / capacity
	Fragmented  float64 `json:"fragmented"`   // expected fragmented GPUs (ATC'23 F(M)) / capacity
	FragOfFree  float64 `json:"frag_of_free"` // expected fragmented GPUs / free GPUs (0 when none free)
	Failed      int     `json:"failed"`       // pods that could not be placed so far
	FailedGPUs  float64 `json:"failed_gpus"`  // their GPU demand, in GPUs
}

// Result is one policy's replay.
type Result struct {
	Policy       placement.Policy `json:"policy"`
	Mode         Mode             `json:"mode"`
	Seed         uint64           `json:"seed"`
	Capacity     float64          `json:"capacity_gpus"`
	Arrivals     int              `json:"arrivals"`
	Placed       int              `json:"placed"`
	Failed       int              `json:"failed"`
	AtFull       *Point           `json:"at_full"`       // the state when the arrived GPU demand first reached the capacity (nil: it never did)
	Unalloc100   float64          `json:"unalloc_100"`   // the ATC'23 headline: unallocated share, mean over arrivals at 99.5–100.5% of capacity (else AtFull's, else the end's)
	FirstFailure *Point           `json:"first_failure"` // the state just before the first pod that could not be placed (nil: none failed)
	FirstFailed  string           `json:"first_failed"`  // that pod and its demand
	Curve        []Point          `json:"curve"`
	End          Point            `json:"end"`
	MaxAlloc     float64          `json:"max_allocated"` // the largest allocated share reached
}

// departure is a placed pod's release in replay mode.
type departure struct {
	at int64
	a  placement.Assignment
}

type departures []departure

func (h departures) Len() int           { return len(h) }
func (h departures) Less(i, j int) bool { return h[i].at < h[j].at }
func (h departures) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *departures) Push(x any)        { *h = append(*h, x.(departure)) }
func (h *departures) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Run replays pod arrivals onto a cluster under one placement policy
// and measures, as the ATC'23 work does, the share of GPUs left unallocated
// when the arrived GPU demand reaches the capacity (Unalloc100), the first
// failure and the fragmentation along the way. The frag-aware policy uses
// the whole pod list's job mix with ListMix (as the ATC'23 "typical pods",
// classes keyed by GPU, CPU and GPU types; unlike theirs, every class up
// to packMixClasses, not only the most frequent covering 95% of the pods:
// the rare large classes are the ones that need the scarce nodes, and
// measured on seeds 1–10 the cut failed them early — the 8-GPU, 120-CPU
// jobs only the G3 nodes hold — while leaving more GPUs unallocated),
// else learns it from the recent arrivals only (MixWindow,
// relearned every MixEvery arrivals, over the power-of-two default). The
// FGD baseline (placement.FGD) always uses the pod list's typical pods
// (TypicalMix), the paper's definition. All policies are measured under the
// same evaluation mix. The state is not
// modified (the replay works on a clone).
func Run(initial *placement.State, pods []Pod, policy placement.Policy, o Options) (*Result, error) {
	if err := placement.CheckPolicy(policy); err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, errors.New("pack-eval: no pods")
	}
	if o.Mode == "" {
		o.Mode = Fill
	}
	if o.Mode != Fill && o.Mode != Replay {
		return nil, fmt.Errorf("pack-eval: mode %q: want fill or replay", o.Mode)
	}
	if o.Until <= 0 {
		o.Until = 1
	}
	if o.MixEvery <= 0 {
		o.MixEvery = 50
	}
	if o.MixWindow <= 0 {
		o.MixWindow = 1000
	}
	if o.Points <= 0 {
		o.Points = 20
	}
	for i := range pods {
		if err := pods[i].Demand.Validate(); err != nil {
			return nil, fmt.Errorf("pack-eval: pod %s: %w", pods[i].Name, err)
		}
	}
	st := initial.Clone()
	st.Memoize()
	capMilli, _ := st.Totals()
	if capMilli == 0 {
		return nil, errors.New("pack-eval: the cluster has no GPUs")
	}
	capacity := float64(capMilli) / placement.MilliGPU
	evalMix := o.EvalMix
	if evalMix == nil {
		ds := make([]placement.Demand, len(pods))
		for i := range pods {
			ds[i] = pods[i].Demand
		}
		m := placement.LearnMix(ds, placement.Mix{}, placement.MixOptions{MaxClasses: 64})
		m.Source = fmt.Sprintf("the whole pod list (%d pods)", len(pods))
		evalMix = &m
	}
	order := arrivalOrder(pods, o, capMilli)
	res := &Result{Policy: policy, Mode: o.Mode, Seed: o.Seed, Capacity: capacity}
	def := placement.DefaultMix(st)
	mix := def
	learn := placement.MixOptions{ByCPU: true, MaxClasses: packMixClasses}
	if o.ListMix {
		mix = placement.LearnMix(listDemands(pods), placement.Mix{}, learn)
	}
	if policy == placement.FGD {
		mix = TypicalMix(pods)
	}
	var recent []placement.Demand
	var deps departures
	arrivedMilli := 0.0
	var failedMilli float64
	point := func(now time.Duration) Point {
		_, free := st.Totals()
		frag, _, _ := st.Fragmentation(*evalMix)
		p := Point{Arrivals: res.Arrivals, Arrived: arrivedMilli / placement.MilliGPU / capacity, Time: now.Hours(),
			Allocated: 1 - float64(free)/float64(capMilli), Unallocated: float64(free) / float64(capMilli),
			Fragmented: frag / capacity, Failed: res.Failed, FailedGPUs: failedMilli / placement.MilliGPU}
		if free > 0 {
			p.FragOfFree = frag / (float64(free) / placement.MilliGPU)
		}
		return p
	}
	// The stop condition and the curve's spacing.
	total := len(order)
	var lastT time.Duration
	if o.Mode == Replay {
		for _, p := range pods {
			lastT = max(lastT, p.Arrive+p.Runtime)
		}
	} else if o.Seed == 0 {
		sum := 0.0
		for _, p := range pods {
			sum += float64(p.Demand.GPUMilli)
		}
		if sum == 0 {
			return nil, errors.New("pack-eval: no pod asks for a GPU")
		}
		total = int(float64(len(pods)) * o.Until * float64(capMilli) / sum)
	}
	next := 1
	var lastNow time.Duration
	step := func(now time.Duration) {
		var frac float64
		if o.Mode == Fill {
			frac = arrivedMilli / float64(capMilli) / o.Until
		} else if lastT > 0 {
			frac = float64(now) / float64(lastT)
		}
		for next <= o.Points && frac >= float64(next)/float64(o.Points) {
			res.Curve = append(res.Curve, point(now))
			next++
		}
	}
	// The headline window: arrivals whose arrived share rounds to 100%.
	var winSum float64
	var winN int
	for k := 0; ; k++ {
		if o.Mode == Fill && (arrivedMilli >= o.Until*float64(capMilli) || o.Seed != 0 && k >= len(order)) ||
			o.Mode == Replay && k >= len(order) {
			break
		}
		i := order[k%len(order)]
		pod := pods[i]
		now := pod.Arrive
		lastNow = now
		if o.Mode == Replay {
			for len(deps) > 0 && deps[0].at <= int64(now) {
				d := heap.Pop(&deps).(departure)
				st.Release(d.a)
			}
		}
		if policy == placement.FragAware && !o.ListMix && k%o.MixEvery == 0 && k > 0 {
			mix = placement.LearnMix(recent[max(0, len(recent)-o.MixWindow):], def, learn)
		}
		if recent = append(recent, pod.Demand); len(recent) >= 2*o.MixWindow {
			recent = append(recent[:0], recent[len(recent)-o.MixWindow:]...)
		}
		p, err := placement.Place(st, pod.Demand, policy, placement.Options{Mix: &mix})
		if err != nil {
			return nil, fmt.Errorf("pack-eval: pod %s: %w", pod.Name, err)
		}
		if !p.OK() {
			if res.FirstFailure == nil {
				fp := point(now)
				res.FirstFailure = &fp
				res.FirstFailed = pod.Name + " (" + pod.Demand.String() + ")"
			}
			res.Failed++
			failedMilli += float64(pod.Demand.GPUMilli)
		} else {
			res.Placed++
			for _, a := range p.Assignments {
				st.Assign(a)
				if o.Mode == Replay && pod.Runtime > 0 {
					heap.Push(&deps, departure{at: int64(now + pod.Runtime), a: a})
				}
			}
		}
		res.Arrivals++
		arrivedMilli += float64(pod.Demand.GPUMilli)
		_, free := st.Totals()
		alloc := 1 - float64(free)/float64(capMilli)
		res.MaxAlloc = max(res.MaxAlloc, alloc)
		if o.Mode == Fill {
			if a := arrivedMilli / float64(capMilli); a >= 0.995 && a < 1.005 {
				winSum += alloc
				winN++
			}
			if res.AtFull == nil && arrivedMilli >= float64(capMilli) {
				fp := point(now)
				res.AtFull = &fp
			}
		}
		step(now)
		if o.Progress != nil && k%100 == 0 {
			o.Progress(k, total)
		}
	}
	res.End = point(lastNow)
	switch {
	case winN > 0:
		res.Unalloc100 = 1 - winSum/float64(winN)
	case res.AtFull != nil:
		res.Unalloc100 = res.AtFull.Unallocated
	default:
		res.Unalloc100 = res.End.Unallocated
	}
	if o.Progress != nil {
		o.Progress(total, total)
	}
	return res, nil
}

// TypicalPopularity is the share of the pods that the FGD baseline's
// "typical tasks" cover: the paper keeps the most frequent classes that
// together account for 95% of the pods.
const TypicalPopularity = 0.95

// TypicalMix is the FGD baseline's mix (placement.FGD): the pod list's
// classes keyed by GPU demand, CPU demand and allowed GPU types, CPU-only
// pods included, the most frequent that together cover TypicalPopularity of
// the pods, their popularity renormalised over those.
func TypicalMix(pods []Pod) placement.Mix {
	m := placement.LearnMix(listDemands(pods), placement.Mix{},
		placement.MixOptions{ByCPU: true, MaxClasses: max(len(pods), 1), Popularity: TypicalPopularity})
	m.Source = fmt.Sprintf("typical pods: the most frequent classes covering %.0f%% of the pod list", 100*TypicalPopularity)
	return m
}

// packMixClasses bounds the classes of frag-aware's mix in a replay.
const packMixClasses = 200

// listDemands are the pods' demands.
func listDemands(pods []Pod) []placement.Demand {
	ds := make([]placement.Demand, len(pods))
	for i := range pods {
		ds[i] = pods[i].Demand
	}
	return ds
}

// arrivalOrder is the sequence of pod indices that arrive: in trace order
// (cycled by Run) without a seed or in replay mode; with one, the list
// shuffled and then, while the GPU demand stays within Inflate × capacity,
// pods drawn uniformly with replacement (a list asking for more than that
// loses pods drawn at random instead), the ATC'23 artifact's workload
// tuning.
func arrivalOrder(pods []Pod, o Options, capMilli int) []int {
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pods[a].Arrive, pods[b].Arrive) })
	if o.Mode != Fill || o.Seed == 0 {
		return order
	}
	inflate := o.Inflate
	if inflate <= 0 {
		inflate = 1.3
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7061636b))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	target := inflate * float64(capMilli)
	sum := 0.0
	for _, p := range pods {
		sum += float64(p.Demand.GPUMilli)
	}
	for sum > target && len(order) > 0 {
		k := rng.IntN(len(order))
		sum -= float64(pods[order[k]].Demand.GPUMilli)
		order = slices.Delete(order, k, k+1)
	}
	for {
		k := rng.IntN(len(pods))
		if sum+float64(pods[k].Demand.GPUMilli) > target {
			break
		}
		sum += float64(pods[k].Demand.GPUMilli)
		order = append(order, k)
	}
	return order
}
