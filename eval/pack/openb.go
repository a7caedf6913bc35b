package pack

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/traces"
)

// ErrInput marks a pack-eval error caused by its input: a malformed or
// missing node list, a node list without GPUs, a pod list without pods, a
// pod no placement can take as stated. errors.Is finds it; the message is
// the cause's. Errors reading the pod lists are the traces package's own.
var ErrInput = errors.New("bad pack-eval input")

// packInputError is an input error: its own message, matching ErrInput.
type packInputError struct{ err error }

func (e packInputError) Error() string   { return e.err.Error() }
func (e packInputError) Unwrap() []error { return []error{e.err, ErrInput} }

func packInput(err error) error { return packInputError{err} }

// Spec is one pack-eval run: an openb node list, the pod lists replayed
// onto it, and the placement policies compared on each.
type Spec struct {
	Nodes     string             // node list (openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model)
	Pods      []string           // pod lists (openb_pod_list_*.csv)
	Policies  []placement.Policy // policies to compare, in this order
	Mode      Mode               // Fill or Replay
	Until     float64            // fill: stop when the arrived GPU demand reaches this multiple of the capacity
	Order     string             // fill: "shuffled" (the ATC'23 methodology: seeded sampling, see Fill) or "trace" ("" = trace)
	Seeds     int                // shuffled: how many seeds, each a replay per policy (default 10)
	FirstSeed uint64             // shuffled: the first seed; the others follow it (the ATC'23 figures use 42–51)
	Inflate   float64            // shuffled: the sampled arrivals ask for this multiple of the capacity (default 1.3)
	Mix       string             // frag-aware's mix: "list" (the whole pod list's, as ATC'23; "" = list) or "recent" (learned from recent arrivals)
	Types     float64            // give this share of the GPU pods a GPU-type constraint (ConstrainTypes; 0 = none)
	MultiGPU  float64            // re-draw single-GPU pods as multi-GPU pods until they carry this share of the GPU demand (MultiGPU; 0 = none)
	Points    int                // points on the fragmentation curve
	SkipBad   bool               // skip malformed pod rows instead of failing
	Workers   int                // replays run in parallel (0 = GOMAXPROCS)
	Progress  Progress           // follows the replays (nil = silent)
}

// Progress follows a pack-eval run: Start before the replays of a pod
// list (label "FILE"), Update as they finish (replays done of all), Done
// after them.
type Progress interface {
	Start(label string)
	Update(done, total int)
	Done()
}

// Stat is a figure over the seeds: mean and sample standard deviation
// (0 with one run) over N runs.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	N    int     `json:"n"`
}

// packStat summarises values.
func packStat(xs []float64) Stat {
	st := Stat{N: len(xs)}
	if len(xs) == 0 {
		return st
	}
	for _, x := range xs {
		st.Mean += x
	}
	st.Mean /= float64(len(xs))
	if len(xs) > 1 {
		for _, x := range xs {
			st.SD += (x - st.Mean) * (x - st.Mean)
		}
		st.SD = math.Sqrt(st.SD / float64(len(xs)-1))
	}
	return st
}

// Summary is one policy's figures on one pod list over its runs.
type Summary struct {
	Policy      placement.Policy `json:"policy"`
	Unalloc100  Stat             `json:"unalloc_100"`        // the headline: unallocated share at 100% arrival (Result.Unalloc100)
	Failed100   Stat             `json:"failed_100"`         // pods that could not be placed by 100% arrival (at the end when never reached)
	Frag100     Stat             `json:"frag_100"`           // fragmented share at 100% arrival (at the end when never reached)
	FirstFail   Stat             `json:"first_fail_arrived"` // arrived share at the first failure, over the runs that had one
	FailUnalloc Stat             `json:"first_fail_unalloc"` // unallocated share then
	Curve       []Point          `json:"curve"`              // the mean of the runs' curves, point by point
}

// List is the outcome for one pod list.
type List struct {
	File     string        `json:"file"`
	Pods     int           `json:"pods"`
	GPUPods  int           `json:"gpu_pods"`
	Sharing  int           `json:"sharing_pods"`
	Typed    int           `json:"typed_pods"`
	Multi    int           `json:"multi_gpu_pods"`  // pods asking for 2 or more whole GPUs (with MultiGPU: in the first seed's draw)
	MultiGPU float64       `json:"multi_gpu_share"` // their share of the GPU demand (MultiGPUShare)
	Skipped  int           `json:"skipped_rows,omitempty"`
	EvalMix  placement.Mix `json:"eval_mix"`
	Summary  []Summary     `json:"summary"`      // one per policy, in the spec's order
	Results  []*Result     `json:"results"`      // every replay: per policy, per seed
	WallSecs float64       `json:"wall_seconds"` // reporting only
}

// Report is the outcome of a pack-eval run.
type Report struct {
	Nodes    string             `json:"nodes"`
	NodeN    int                `json:"node_count"`
	GPUs     float64            `json:"gpus"`
	Mode     Mode               `json:"mode"`
	Until    float64            `json:"until"`
	Order    string             `json:"order"`
	Seeds    []uint64           `json:"seeds,omitempty"`
	Inflate  float64            `json:"inflate,omitempty"`
	Mix      string             `json:"mix"`
	Types    float64            `json:"types,omitempty"`
	MultiGPU float64            `json:"multi_gpu,omitempty"`
	Policies []placement.Policy `json:"policies"`
	Lists    []List             `json:"pod_lists"`
}

// Validate reports a spec Evaluate cannot run, naming the flags of `mirage
// pack-eval` that set the values.
func (s *Spec) Validate() error {
	if s.Until <= 0 || s.Points <= 0 {
		return errors.New("--until and --points must be positive")
	}
	if s.Mode != Fill && s.Mode != Replay {
		return fmt.Errorf("--mode %q: want fill or replay", s.Mode)
	}
	switch s.Order {
	case "", "trace":
	case "shuffled":
		if s.Seeds < 0 || s.FirstSeed == 0 || s.Inflate < 0 {
			return errors.New("--seeds must not be negative, --first-seed must be positive, --inflate must not be negative")
		}
	default:
		return fmt.Errorf("--order %q: want shuffled or trace", s.Order)
	}
	if s.Mix != "" && s.Mix != "list" && s.Mix != "recent" {
		return fmt.Errorf("--mix %q: want list or recent", s.Mix)
	}
	if s.Types < 0 || s.Types > 1 {
		return errors.New("--types must be a share between 0 and 1")
	}
	if s.MultiGPU < 0 || s.MultiGPU >= 1 {
		return errors.New("--multi-gpu must be a share at least 0 and below 1")
	}
	for _, p := range s.Policies {
		if err := placement.CheckPolicy(p); err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
	}
	return nil
}

// seeds are the arrival seeds of the spec: none (one trace-order replay
// per policy) unless the order is shuffled in fill mode.
func (s *Spec) seeds() []uint64 {
	if s.Mode != Fill || s.Order != "shuffled" {
		return nil
	}
	n := s.Seeds
	if n == 0 {
		n = 10
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = s.FirstSeed + uint64(i)
	}
	return out
}

// Evaluate replays every pod list onto the node list under every policy
// (Run) and every seed, the replays in parallel, each policy's
// fragmentation measured under the mix of the whole pod list, and
// summarises each policy over the seeds.
func Evaluate(ctx context.Context, spec Spec) (*Report, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	st, nNodes, err := LoadNodes(spec.Nodes)
	if err != nil {
		return nil, err
	}
	capMilli, _ := st.Totals()
	seeds := spec.seeds()
	rep := &Report{Nodes: spec.Nodes, NodeN: nNodes, GPUs: float64(capMilli) / placement.MilliGPU, Mode: spec.Mode,
		Until: spec.Until, Order: "trace", Seeds: seeds, Mix: spec.Mix, Types: spec.Types, MultiGPU: spec.MultiGPU, Policies: spec.Policies}
	if rep.Mix == "" {
		rep.Mix = "list"
	}
	if len(seeds) > 0 {
		rep.Order, rep.Inflate = "shuffled", spec.Inflate
		if rep.Inflate == 0 {
			rep.Inflate = 1.3
		}
	}
	workers := spec.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for _, file := range spec.Pods {
		pods, pl, err := LoadPods(file, spec.SkipBad)
		if err != nil {
			return nil, err
		}
		runSeeds := seeds
		if len(runSeeds) == 0 {
			runSeeds = []uint64{0}
		}
		// The pods each seed replays: with multi-GPU pods re-drawn and type
		// constraints drawn per seed.
		podsOf := make([][]Pod, len(runSeeds))
		for k, sd := range runSeeds {
			podsOf[k] = pods
			if spec.MultiGPU > 0 {
				podsOf[k] = MultiGPU(podsOf[k], st, spec.MultiGPU, sd)
			}
			if spec.Types > 0 {
				podsOf[k] = ConstrainTypes(podsOf[k], st, spec.Types, sd)
			}
		}
		if spec.Types > 0 {
			pl.Typed = 0
			for _, p := range podsOf[0] {
				if len(p.Demand.GPUTypes) > 0 {
					pl.Typed++
				}
			}
		}
		for _, p := range podsOf[0] {
			if p.Demand.WholeGPUs() >= 2 {
				pl.Multi++
			}
		}
		pl.MultiGPU = MultiGPUShare(podsOf[0])
		mix := placement.LearnMix(listDemands(podsOf[0]), placement.Mix{}, placement.MixOptions{MaxClasses: 64})
		mix.Source = fmt.Sprintf("%s (%d pods)", filepath.Base(file), len(pods))
		pl.EvalMix = mix
		wall := time.Now() // reporting only
		type job struct{ pol, seed int }
		var jobs []job
		for p := range spec.Policies {
			for k := range runSeeds {
				jobs = append(jobs, job{p, k})
			}
		}
		results := make([]*Result, len(jobs))
		errs := make([]error, len(jobs))
		if spec.Progress != nil {
			spec.Progress.Start(filepath.Base(file))
		}
		var mu sync.Mutex
		done := 0
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(workers, len(jobs)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range next {
					jb := jobs[j]
					o := Options{Mode: spec.Mode, Until: spec.Until, Seed: runSeeds[jb.seed], Inflate: spec.Inflate, Points: spec.Points,
						EvalMix: &mix, ListMix: spec.Mix != "recent"}
					results[j], errs[j] = Run(st, podsOf[jb.seed], spec.Policies[jb.pol], o)
					mu.Lock()
					done++
					if spec.Progress != nil {
						spec.Progress.Update(done, len(jobs))
					}
					mu.Unlock()
				}
			}()
		}
		for j := range jobs {
			if ctx.Err() != nil {
				break
			}
			next <- j
		}
		close(next)
		wg.Wait()
		if spec.Progress != nil {
			spec.Progress.Done()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, err := range errs {
			if err != nil {
				return nil, packInput(fmt.Errorf("%s: %w", file, err))
			}
		}
		pl.Results = results
		for p, pol := range spec.Policies {
			pl.Summary = append(pl.Summary, summarise(pol, results[p*len(runSeeds):(p+1)*len(runSeeds)]))
		}
		pl.WallSecs = time.Since(wall).Seconds()
		rep.Lists = append(rep.Lists, *pl)
	}
	return rep, nil
}

// summarise is one policy's figures over its runs.
func summarise(pol placement.Policy, runs []*Result) Summary {
	s := Summary{Policy: pol}
	var ua, fl, fr, ff, fu []float64
	for _, r := range runs {
		ua = append(ua, r.Unalloc100)
		at := r.End
		if r.AtFull != nil {
			at = *r.AtFull
		}
		fl = append(fl, float64(at.Failed))
		fr = append(fr, at.Fragmented)
		if r.FirstFailure != nil {
			ff = append(ff, r.FirstFailure.Arrived)
			fu = append(fu, r.FirstFailure.Unallocated)
		}
	}
	s.Unalloc100, s.Failed100, s.Frag100, s.FirstFail, s.FailUnalloc = packStat(ua), packStat(fl), packStat(fr), packStat(ff), packStat(fu)
	n := len(runs[0].Curve)
	for _, r := range runs {
		n = min(n, len(r.Curve))
	}
	for i := range n {
		var p Point
		for _, r := range runs {
			c := r.Curve[i]
			p.Arrivals += c.Arrivals
			p.Arrived += c.Arrived
			p.Time += c.Time
			p.Allocated += c.Allocated
			p.Unallocated += c.Unallocated
			p.Fragmented += c.Fragmented
			p.FragOfFree += c.FragOfFree
			p.Failed += c.Failed
			p.FailedGPUs += c.FailedGPUs
		}
		k := float64(len(runs))
		p.Arrivals, p.Failed = int(math.Round(float64(p.Arrivals)/k)), int(math.Round(float64(p.Failed)/k))
		p.Arrived, p.Time, p.Allocated, p.Unallocated = p.Arrived/k, p.Time/k, p.Allocated/k, p.Unallocated/k
		p.Fragmented, p.FragOfFree, p.FailedGPUs = p.Fragmented/k, p.FragOfFree/k, p.FailedGPUs/k
		s.Curve = append(s.Curve, p)
	}
	return s
}

// LoadNodes reads an openb node list into a placement state (every node
// schedulable, all its GPUs free) and returns it with the node count.
func LoadNodes(path string) (*placement.State, int, error) {
	nodes, err := traces.ReadNodes(path)
	if err != nil {
		var pe *traces.ParseError
		if errors.As(err, &pe) || errors.Is(err, traces.ErrMalformed) || errors.Is(err, os.ErrNotExist) {
			return nil, 0, packInput(err)
		}
		return nil, 0, err
	}
	if len(nodes) == 0 {
		return nil, 0, packInput(fmt.Errorf("%s: no nodes", path))
	}
	pn := make([]placement.Node, len(nodes))
	for i, n := range nodes {
		pn[i] = placement.Node{Name: n.Name, GPUType: n.Model, Schedulable: true, CPUMilli: n.CPUMilli, MemMiB: n.MemoryMiB,
			GPUFree: make([]int, n.GPUs)}
		for g := range pn[i].GPUFree {
			pn[i].GPUFree[g] = placement.MilliGPU
		}
	}
	st, err := placement.NewState(pn)
	if err != nil {
		return nil, 0, packInput(fmt.Errorf("%s: %w", path, err))
	}
	if c, _ := st.Totals(); c == 0 {
		return nil, 0, packInput(fmt.Errorf("%s: no GPUs on any node", path))
	}
	return st, len(nodes), nil
}

// LoadPods reads an openb pod list: every pod asking for a GPU or a CPU,
// as a pod of one node (num_gpu whole GPUs, or a share of one GPU when
// gpu_milli is below 1000; the GPU models of gpu_spec; cpu_milli and
// memory_mib exactly, see openbCPUMem), arriving
// at its creation time and holding its resources for its recorded runtime.
// The list's counts come back in a List.
func LoadPods(path string, skipBad bool) ([]Pod, *List, error) {
	r, err := traces.Open(path, traces.Options{Format: traces.FormatOpenB, SkipBad: skipBad})
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	pl := &List{File: path}
	exact := openbCPUMem(path)
	var pods []Pod
	for j, err := range traces.All(r) {
		if err != nil {
			return nil, nil, err
		}
		d := placement.Demand{GPUMilli: j.GPUs * placement.MilliGPU, CPUMilli: j.CPUs * 1000}
		if cm, ok := exact[j.ID]; ok {
			d.CPUMilli, d.MemMiB = cm[0], cm[1]
		}
		if j.GPUMilli > 0 {
			d.GPUMilli = j.GPUMilli
			pl.Sharing++
		}
		if j.GPUType != "" {
			d.GPUTypes = strings.Split(j.GPUType, "|")
			pl.Typed++
		}
		if d.GPUMilli == 0 && d.CPUMilli == 0 {
			continue
		}
		if d.GPUMilli > 0 {
			pl.GPUPods++
		}
		pods = append(pods, Pod{Name: j.ID, Demand: d, Arrive: j.Submit.Sub(time.Unix(0, 0)), Runtime: j.Runtime()})
	}
	pl.Skipped = r.Skipped()
	pl.Pods = len(pods)
	if len(pods) == 0 {
		return nil, nil, packInput(fmt.Errorf("%s: no pods asking for GPUs or CPUs", path))
	}
	return pods, pl, nil
}

// openbCPUMem reads the exact cpu_milli and memory_mib of an openb pod
// list by pod name (the traces package keeps whole CPUs only, rounded up,
// and no memory). It returns nil when the file cannot be read as plain CSV
// with those columns (a compressed list, say): the pods then ask for their
// whole CPUs and no memory. Rows it cannot parse are left out; the traces
// package reports them.
func openbCPUMem(path string) map[string][2]int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	cr := csv.NewReader(bufio.NewReader(f))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	name, okN := col["name"]
	cpu, okC := col["cpu_milli"]
	mem, okM := col["memory_mib"]
	if !okN || !okC || !okM {
		return nil
	}
	out := map[string][2]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out
		}
		var pe *csv.ParseError
		if err != nil && !errors.As(err, &pe) {
			return out
		}
		if err != nil || len(rec) <= max(name, cpu, mem) {
			continue
		}
		c, err1 := strconv.Atoi(rec[cpu])
		m, err2 := strconv.Atoi(rec[mem])
		if err1 == nil && err2 == nil && c >= 0 && m >= 0 {
			out[rec[name]] = [2]int{c, m}
		}
	}
}
