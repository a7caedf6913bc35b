package eval

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

// PackPod is one arrival of a packing replay (a pod of the openb traces).
type PackPod struct {
	Name    string           // pod name
	Demand  placement.Demand // what it asks of its one node
	Arrive  time.Duration    // arrival, since the start of the trace (orders the arrivals)
	Runtime time.Duration    // how long it holds its resources in replay mode (0 = until the end)
}

// PackMode says how a packing replay treats time.
type PackMode string

// Packing replay modes.
const (
	// PackFill is the ATC'23 methodology: pods arrive one after another and
	// never leave, cycling through the list, until the arrived GPU demand
	// reaches PackOptions.Until times the cluster's capacity.
	PackFill PackMode = "fill"
	// PackReplay follows the trace's clock: pods arrive at their arrival
	// time and leave after their runtime.
	PackReplay PackMode = "replay"
)

// PackOptions tune a packing replay.
type PackOptions struct {
	Mode      PackMode              // default PackFill
	Until     float64               // fill: stop when arrived GPU demand reaches this share of capacity (default 1.0)
	Seed      uint64                // fill: 0 keeps the trace order; otherwise the arrival order is shuffled with this seed
	MixEvery  int                   // frag-aware relearns the job-size mix every this many arrivals (default 50)
	MixWindow int                   // ... from this many most recent arrivals (default 1000)
	Points    int                   // points on the curve (default 20)
	EvalMix   *placement.Mix        // the mix every policy's fragmentation is measured under (default: the whole pod list's)
	Progress  func(done, total int) // called as arrivals are processed (nil = none)
}

// PackPoint is the cluster's state at one point of a replay; shares are of
// the cluster's GPU capacity.
type PackPoint struct {
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

// PackResult is one policy's replay.
type PackResult struct {
	Policy       placement.Policy `json:"policy"`
	Mode         PackMode         `json:"mode"`
	Seed         uint64           `json:"seed"`
	Capacity     float64          `json:"capacity_gpus"`
	Arrivals     int              `json:"arrivals"`
	Placed       int              `json:"placed"`
	Failed       int              `json:"failed"`
	FirstFailure *PackPoint       `json:"first_failure"` // the state just before the first pod that could not be placed (nil: none failed)
	FirstFailed  string           `json:"first_failed"`  // that pod and its demand
	Curve        []PackPoint      `json:"curve"`
	End          PackPoint        `json:"end"`
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

// Pack replays pod arrivals onto a cluster under one placement policy
// and measures, as the ATC'23 work does, the share of GPUs left unallocated
// when placement first fails and the fragmentation along the way. The
// frag-aware policy learns its job-size mix from the recent arrivals only
// (MixWindow, relearned every MixEvery arrivals, over the power-of-two
// default); all policies are measured under the same evaluation mix.
// The state is not modified (the replay works on a clone).
func Pack(initial *placement.State, pods []PackPod, policy placement.Policy, o PackOptions) (*PackResult, error) {
	if _, err := placement.ParsePolicy(string(policy)); err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, errors.New("pack-eval: no pods")
	}
	if o.Mode == "" {
		o.Mode = PackFill
	}
	if o.Mode != PackFill && o.Mode != PackReplay {
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
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pods[a].Arrive, pods[b].Arrive) })
	var rng *rand.Rand
	if o.Mode == PackFill && o.Seed != 0 {
		rng = rand.New(rand.NewPCG(o.Seed, 0x7061636b))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	res := &PackResult{Policy: policy, Mode: o.Mode, Seed: o.Seed, Capacity: capacity}
	def := placement.DefaultMix(st)
	mix := def
	var recent []placement.Demand
	var deps departures
	arrivedMilli := 0.0
	var failedMilli float64
	point := func(now time.Duration) PackPoint {
		_, free := st.Totals()
		frag, _, _ := st.Fragmentation(*evalMix)
		p := PackPoint{Arrivals: res.Arrivals, Arrived: arrivedMilli / placement.MilliGPU / capacity, Time: now.Hours(),
			Allocated: 1 - float64(free)/float64(capMilli), Unallocated: float64(free) / float64(capMilli),
			Fragmented: frag / capacity, Failed: res.Failed, FailedGPUs: failedMilli / placement.MilliGPU}
		if free > 0 {
			p.FragOfFree = frag / (float64(free) / placement.MilliGPU)
		}
		return p
	}
	// The stop condition and the curve's spacing.
	total := len(pods)
	var lastT time.Duration
	if o.Mode == PackReplay {
		for _, p := range pods {
			lastT = max(lastT, p.Arrive+p.Runtime)
		}
	} else {
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
		if o.Mode == PackFill {
			frac = arrivedMilli / float64(capMilli) / o.Until
		} else if lastT > 0 {
			frac = float64(now) / float64(lastT)
		}
		for next <= o.Points && frac >= float64(next)/float64(o.Points) {
			res.Curve = append(res.Curve, point(now))
			next++
		}
	}
	for k := 0; ; k++ {
		i := order[k%len(order)]
		pod := pods[i]
		now := pod.Arrive
		lastNow = now
		if o.Mode == PackFill {
			if arrivedMilli >= o.Until*float64(capMilli) {
				break
			}
		} else {
			if k >= len(order) {
				break
			}
			for len(deps) > 0 && deps[0].at <= int64(now) {
				d := heap.Pop(&deps).(departure)
				st.Release(d.a)
			}
		}
		if policy == placement.FragAware && k%o.MixEvery == 0 && k > 0 {
			mix = placement.LearnMix(recent, def, placement.MixOptions{})
		}
		recent = append(recent, pod.Demand)
		if len(recent) > o.MixWindow {
			recent = recent[len(recent)-o.MixWindow:]
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
				if o.Mode == PackReplay && pod.Runtime > 0 {
					heap.Push(&deps, departure{at: int64(now + pod.Runtime), a: a})
				}
			}
		}
		res.Arrivals++
		arrivedMilli += float64(pod.Demand.GPUMilli)
		if _, free := st.Totals(); 1-float64(free)/float64(capMilli) > res.MaxAlloc {
			res.MaxAlloc = 1 - float64(free)/float64(capMilli)
		}
		step(now)
		if o.Progress != nil && k%100 == 0 {
			o.Progress(k, total)
		}
	}
	res.End = point(lastNow)
	if o.Progress != nil {
		o.Progress(total, total)
	}
	return res, nil
}
