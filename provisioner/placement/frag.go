package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// The fragmentation measure of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
// USENIX ATC'23), restated:
//
// For a node n and a task class m (a per-node GPU demand D_m — a share of one
// GPU, or k whole GPUs —, a CPU and memory demand and allowed GPU types),
// the GPU fragment F_n(m) is
//   - all of n's free GPU capacity, when m cannot run on n at all (GPU type
//     not allowed, not enough free CPU or memory, no GPU with room for D_m,
//     fewer than k entirely free GPUs);
//   - otherwise the free capacity of the GPUs whose free share is below
//     min(D_m, 1): for a whole-GPU class the partially used GPUs, for a share
//     d the GPUs with less than d free. A class asking no GPU leaves none.
//     Beyond the paper, the GPUs that n's free CPU and memory cannot feed
//     count too: when the free GPUs hold J jobs of m but the free CPU and
//     memory only H < J, the (J − H)·D_m GPU capacity of the jobs without
//     CPU is fragmented for m. The paper checks the CPU of one job only, so
//     it sees no cost in taking the CPU that a GPU-rich node's later jobs
//     would need (this is what lost CPU-heavy mixes to best fit).
//
// Under a mix M of classes with popularity p_m, a node's expected
// fragmentation is F_n(M) = Σ_m p_m F_n(m): the free GPU capacity that the
// expected next job cannot use. The cluster's is Σ_n F_n(M) over
// schedulable nodes. Fragmentation-aware placement puts each job where
// F_n(M) grows least (the "gradient" of the paper), which keeps large free
// blocks for the jobs that need them.

// MixClass is one kind of job in a job-size mix.
type MixClass struct {
	GPUMilli int      `json:"gpu_milli"`           // per-node GPU demand (thousandths; see Demand)
	CPUMilli int      `json:"cpu_milli,omitempty"` // per-node CPU demand (thousandths; 0 = none)
	MemMiB   int      `json:"mem_mib,omitempty"`   // per-node memory demand (MiB; 0 = none)
	GPUTypes []string `json:"gpu_types,omitempty"` // allowed GPU types (empty = any)
	Weight   float64  `json:"weight"`              // popularity; weights of a mix sum to 1
}

// Mix is the expected mix of job sizes that fragmentation is measured against.
type Mix struct {
	Classes []MixClass `json:"classes"` // the classes, heaviest first
	Source  string     `json:"source"`  // how the mix was obtained, for explanations
	// Observed is how many jobs LearnMix learned the mix from (0: the
	// prior alone, or a mix not learned), and ObservedMultiGPU the share
	// of their GPU demand in classes of 2 or more whole GPUs: what the
	// workload itself asks, without the prior's pseudo-jobs (ExtensionWeight
	// reads it).
	Observed         int     `json:"observed,omitempty"`
	ObservedMultiGPU float64 `json:"observed_multi_gpu,omitempty"`
}

// String renders the mix compactly, e.g. "1 GPU 25%, 8 GPUs 25% (default)".
func (m Mix) String() string {
	parts := make([]string, len(m.Classes))
	for i, c := range m.Classes {
		parts[i] = fmt.Sprintf("%s %.0f%%", Demand{GPUMilli: c.GPUMilli, CPUMilli: c.CPUMilli, GPUTypes: c.GPUTypes}, 100*c.Weight)
	}
	return strings.Join(parts, ", ") + " (" + m.Source + ")"
}

// DefaultMix is the mix assumed without history: whole-GPU jobs of every
// power of two from 1 up to the largest node's GPU count, equally likely.
// Rationale: GPU jobs are overwhelmingly sized in powers of two (1, 2, 4, 8
// GPUs per node in the openb, Philly and Helios traces), and weighing them
// equally gives the large sizes — the ones fragmentation hurts — a voice
// even where small jobs are the most common.
func DefaultMix(st *State) Mix {
	largest := 1
	for i := range st.names {
		largest = max(largest, st.gpus(i))
	}
	var m Mix
	for k := 1; k <= largest; k *= 2 {
		m.Classes = append(m.Classes, MixClass{GPUMilli: k * MilliGPU})
	}
	for i := range m.Classes {
		m.Classes[i].Weight = 1 / float64(len(m.Classes))
	}
	m.Source = "default: powers of two up to " + strconv.Itoa(largest) + " GPUs, equally likely"
	return m
}

// SizeMix is the mix of one job size: whole-GPU jobs of gpus GPUs per node,
// nothing else. Under it a node's fragmentation is its free GPUs when such a
// job does not fit there, else its partly used GPUs' free share.
func SizeMix(gpus int) Mix {
	return Mix{Classes: []MixClass{{GPUMilli: gpus * MilliGPU, Weight: 1}}}
}

// CommonJobSize is the most common GPU request among the running jobs that
// ask for GPUs (ties: the larger), or 1 when there are none.
func CommonJobSize(jobs []provisioner.Job) int {
	count := map[int]int{}
	for _, j := range jobs {
		if j.State == provisioner.StateRunning && j.GPUs > 0 {
			count[j.GPUs]++
		}
	}
	best, bestN := 1, 0
	for size, n := range count {
		if n > bestN || n == bestN && size > best {
			best, bestN = size, n
		}
	}
	return best
}

// MixOptions tune LearnMix.
type MixOptions struct {
	PriorJobs  float64 // weight of the prior, in pseudo-jobs (default 20)
	MaxClasses int     // keep the most frequent classes (default 32)
	// ByCPU keys classes by their exact CPU demand too (as the ATC'23
	// work's "typical pods" are keyed), so that a class's CPU decides
	// whether it fits where free CPU is short; without it a class's CPU
	// demand is the mean of its jobs'. Learned classes ask no memory:
	// measured on the openb lists, classes with their jobs' mean memory
	// packed worse (memory seldom binds there and the mean misjudges it);
	// the filter still checks every job's memory.
	ByCPU bool
	// Popularity keeps only the most frequent classes that together
	// account for at least this share of the demands (the ATC'23 work
	// keeps 95%); 0 keeps up to MaxClasses.
	Popularity float64
}

// LearnMix estimates the job-size mix from observed demands (jobs seen
// recently), blended with a prior mix: the weight of class c is
// (count_c + k·p_prior(c)) / (n + k) with n observed jobs and k = PriorJobs
// pseudo-jobs, so the prior dominates a short history and fades as history
// accumulates. Demands without GPUs are ignored unless they ask for CPU
// (CPU-only work matters where CPUs are tracked). Classes are keyed by
// per-node GPU demand and allowed GPU types (and CPU demand with ByCPU); a
// class's CPU demand (without ByCPU) is the mean of its jobs', its memory
// demand none. The MaxClasses most frequent classes are kept (ties: larger GPU
// demand first), fewer under Popularity, and renormalised.
func LearnMix(demands []Demand, prior Mix, o MixOptions) Mix {
	if o.PriorJobs <= 0 {
		o.PriorJobs = 20
	}
	if o.MaxClasses <= 0 {
		o.MaxClasses = 32
	}
	type acc struct {
		c     MixClass
		count float64
		cpu   float64
	}
	type mixKey struct {
		milli, cpu int
		types      string
	}
	byKey := map[mixKey]*acc{}
	var order []mixKey
	get := func(milli, cpu int, types []string) *acc {
		k := mixKey{milli: milli}
		if o.ByCPU {
			k.cpu = cpu
		}
		if len(types) > 0 {
			k.types = strings.Join(types, "|")
		}
		a := byKey[k]
		if a == nil {
			a = &acc{c: MixClass{GPUMilli: milli, CPUMilli: k.cpu, GPUTypes: types}}
			byKey[k] = a
			order = append(order, k)
		}
		return a
	}
	n := 0.0
	var gpuMilli, multiMilli float64 // the jobs' own GPU demand, and its multi-GPU part
	for _, d := range demands {
		if d.GPUMilli == 0 && d.CPUMilli == 0 {
			continue
		}
		a := get(d.GPUMilli, d.CPUMilli, d.GPUTypes)
		a.count++
		a.cpu += float64(d.CPUMilli)
		n++
		gpuMilli += float64(d.GPUMilli)
		if d.GPUMilli >= 2*MilliGPU && d.GPUMilli%MilliGPU == 0 {
			multiMilli += float64(d.GPUMilli)
		}
	}
	for k, a := range byKey {
		if a.count > 0 {
			a.c.CPUMilli = int(math.Round(a.cpu / a.count))
		}
		byKey[k] = a
	}
	for _, c := range prior.Classes {
		a := get(c.GPUMilli, c.CPUMilli, c.GPUTypes)
		if a.count == 0 {
			a.c.CPUMilli, a.c.MemMiB = c.CPUMilli, c.MemMiB
		}
		a.count += o.PriorJobs * c.Weight
	}
	total := n + o.PriorJobs
	if len(prior.Classes) == 0 {
		total = n
	}
	var m Mix
	for _, k := range order {
		a := byKey[k]
		if a.count <= 0 || total <= 0 {
			continue
		}
		a.c.Weight = a.count / total
		m.Classes = append(m.Classes, a.c)
	}
	slices.SortStableFunc(m.Classes, func(a, b MixClass) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return cmp.Compare(b.GPUMilli, a.GPUMilli)
	})
	if len(m.Classes) > o.MaxClasses {
		m.Classes = m.Classes[:o.MaxClasses]
	}
	if o.Popularity > 0 {
		cum := 0.0
		for i, c := range m.Classes {
			if cum += c.Weight; cum >= o.Popularity-1e-12 {
				m.Classes = m.Classes[:i+1]
				break
			}
		}
	}
	sum := 0.0
	for _, c := range m.Classes {
		sum += c.Weight
	}
	for i := range m.Classes {
		m.Classes[i].Weight /= sum
	}
	m.Observed = int(n)
	if gpuMilli > 0 {
		m.ObservedMultiGPU = multiMilli / gpuMilli
	}
	switch {
	case n == 0:
		m.Source = prior.Source
	case len(prior.Classes) == 0:
		m.Source = fmt.Sprintf("learned from %d jobs", int(n))
	default:
		m.Source = fmt.Sprintf("learned from %d jobs, blended with %g pseudo-jobs of the default", int(n), o.PriorJobs)
	}
	return m
}

// MixFromJobs learns the mix from the jobs of a snapshot and a history:
// every job that ran or waited at or after since (running and pending jobs
// of the snapshot, started or finished jobs of the history), each job id
// counted once, blended with DefaultMix of the state.
func MixFromJobs(st *State, snap *provisioner.Snapshot, history []provisioner.Job, since time.Time, o MixOptions) Mix {
	// History and snapshot may list the same job: count it once.
	var seen map[string]bool
	if len(history) > 0 {
		seen = make(map[string]bool, len(history))
	}
	n := len(history)
	if snap != nil {
		n += len(snap.Jobs)
	}
	ds := make([]Demand, 0, n)
	add := func(j *provisioner.Job) {
		if j.GPUs <= 0 || seen != nil && j.ID != "" && seen[j.ID] {
			return
		}
		if seen != nil {
			seen[j.ID] = true
		}
		ds = append(ds, JobDemand(j))
	}
	for i := range history {
		j := &history[i]
		if j.Start.IsZero() && j.Submit.Before(since) {
			continue
		}
		if !j.Start.IsZero() && j.Start.Before(since) && !j.End.IsZero() && j.End.Before(since) {
			continue
		}
		add(j)
	}
	if snap != nil {
		for i := range snap.Jobs {
			if j := &snap.Jobs[i]; j.State == provisioner.StateRunning || j.State == provisioner.StatePending {
				add(j)
			}
		}
	}
	for i := range ds {
		ds[i].Nodes = 0 // the mix is per node
	}
	return LearnMix(ds, DefaultMix(st), o)
}

// fragModel is a mix compiled against a state's type table, with the
// scarcity of each GPU type under it.
type fragModel struct {
	classes   []fclass
	press     []float64 // by node shape: scarcity pressure there (see scarcity); nil when no class is restricted, or paper
	paper     bool      // the paper's measure alone (the FGD baseline): no CPU-capacity term, no scarcity
	cpuW      float64   // weight of the CPU-capacity term: 1 in the measure (Fragmentation), ExtensionWeight for frag-aware's placements
	scarcityW float64   // scarcity cost per GPU taken per unit of pressure: ScarcityWeight, × ExtensionWeight for frag-aware's placements
}

type fclass struct {
	cdemand
	w float64
}

func compileMix(st *State, m *Mix, paper bool) *fragModel {
	fm := &fragModel{classes: make([]fclass, 0, len(m.Classes)), paper: paper, cpuW: 1, scarcityW: ScarcityWeight}
	for _, c := range m.Classes {
		if c.Weight <= 0 {
			continue
		}
		d := Demand{GPUMilli: c.GPUMilli, CPUMilli: c.CPUMilli, MemMiB: c.MemMiB, GPUTypes: c.GPUTypes}
		if d.Validate() != nil {
			continue
		}
		fc := fclass{cdemand: st.compile(d), w: c.Weight}
		fm.classes = append(fm.classes, fc)
	}
	if !paper && st.restricted(fm.classes) {
		fm.press = st.scarcity(fm.classes)
	}
	return fm
}

// shape is what a node could ever hold: its GPU type and GPU count, CPU
// and memory capacity (0: not tracked).
type shape struct {
	typ            int16
	gpus           int
	cpuCap, memCap int32
}

// buildShapes groups the nodes by shape.
func (st *State) buildShapes() {
	st.shape = make([]int16, len(st.names))
	index := map[shape]int16{}
	st.shapes = st.shapes[:0]
	for i := range st.names {
		sh := shape{typ: st.sum[i].typ, gpus: st.gpus(i), cpuCap: st.cpuCap[i], memCap: st.memCap[i]}
		id, ok := index[sh]
		if !ok {
			id = int16(len(st.shapes))
			index[sh] = id
			st.shapes = append(st.shapes, sh)
		}
		st.shape[i] = id
	}
}

// holds reports whether nodes of the shape could ever hold the class.
func (sh *shape) holds(c *cdemand) bool {
	switch {
	case !c.typeOK(sh.typ):
		return false
	case c.whole > 0 && sh.gpus < int(c.whole), c.milli > 0 && sh.gpus == 0:
		return false
	case sh.cpuCap > 0 && c.cpu > sh.cpuCap, sh.memCap > 0 && c.mem > sh.memCap:
		return false
	}
	return true
}

// restricted reports whether some class of the mix is restricted (see scarcity).
func (st *State) restricted(classes []fclass) bool {
	for k := range classes {
		if classes[k].milli == 0 {
			continue
		}
		for h := range st.shapes {
			if sh := &st.shapes[h]; sh.gpus > 0 && !sh.holds(&classes[k].cdemand) {
				return true
			}
		}
	}
	return false
}

// scarcity is, by node shape (shape), the share of its free GPU capacity
// that the mix's restricted classes are expected to claim, capped at 1. A
// class is restricted when some nodes with GPUs could never hold it: its
// GPU types, or its GPUs, CPU or memory per node, rule them out. A class c
// asks s_c = w_c·g_c / Σ w·g of the GPU demand (g: its GPUs per job); the
// demand still to come is taken to be the free capacity R (the cluster
// fills up), so c is expected to claim s_c·R, spread over the shapes that
// can hold it in proportion to their free capacity F_c: a shape's pressure
// is Σ_{c held there} s_c·R / F_c. Frag-aware charges a job ScarcityWeight
// × this pressure for every GPU it takes from a node of the shape, so that
// jobs that could run anywhere leave the scarce nodes — GPU models that
// constrained jobs ask for, nodes big enough for the largest jobs — to the
// jobs that cannot.
func (st *State) scarcity(classes []fclass) []float64 {
	freeS := make([]float64, len(st.shapes))
	total := 0.0
	for i := range st.sum {
		if s := &st.sum[i]; s.up {
			freeS[st.shape[i]] += float64(s.totalFree)
			total += float64(s.totalFree)
		}
	}
	g := 0.0
	for k := range classes {
		g += classes[k].w * float64(classes[k].gpuMilli())
	}
	press := make([]float64, len(st.shapes))
	if g == 0 || total == 0 {
		return press
	}
	held := make([]bool, len(st.shapes))
	for k := range classes {
		c := &classes[k]
		if c.milli == 0 {
			continue
		}
		restricted, fc := false, 0.0
		for h := range st.shapes {
			sh := &st.shapes[h]
			held[h] = sh.holds(&c.cdemand)
			if held[h] {
				fc += freeS[h]
			} else if sh.gpus > 0 {
				restricted = true
			}
		}
		if !restricted || fc == 0 {
			continue
		}
		claim := c.w * float64(c.gpuMilli()) / g * total / fc
		for h := range press {
			if held[h] {
				press[h] += claim
			}
		}
	}
	for h := range press {
		press[h] = min(press[h], 1)
	}
	return press
}

// gpuMilli is the demand's GPU thousandths per node.
func (c *cdemand) gpuMilli() int32 {
	if c.whole > 0 {
		return int32(c.whole) * MilliGPU
	}
	return c.milli
}

// adapt weighs the model's two extensions of the paper's measure for
// frag-aware's placements by ExtensionWeight of the mix's multi-GPU share
// (the measure reported by Fragmentation keeps them whole). The FGD
// baseline's model has neither.
func (fm *fragModel) adapt(m *Mix) *fragModel {
	if fm.paper {
		return fm
	}
	w := ExtensionWeight(m.WorkloadMultiGPUShare())
	fm.cpuW, fm.scarcityW = w, ScarcityWeight*w
	return fm
}

// WorkloadMultiGPUShare is the multi-GPU share ExtensionWeight reads: that
// of the jobs the mix was learned from when there were any
// (ObservedMultiGPU), else the mix's own (MultiGPUShare). A prior's
// pseudo-jobs (the power-of-two DefaultMix is 14/15 multi-GPU) regularise
// the class weights; they are not evidence that the workload is
// multi-GPU-heavy, and must not switch the extensions off on a cluster
// whose few known jobs ask one GPU each.
func (m Mix) WorkloadMultiGPUShare() float64 {
	if m.Observed > 0 {
		return m.ObservedMultiGPU
	}
	return m.MultiGPUShare()
}

// Multi-GPU-heavy mixes. frag-aware's two extensions of the paper's
// measure — the CPU-capacity term (the GPUs a node's free CPU and memory
// cannot feed) and the scarcity cost — are weighed by how much of the
// mix's GPU demand comes from classes of 2 or more whole GPUs per node
// (Mix.MultiGPUShare, computed from the mix alone): in full up to
// ExtensionFullBelow, not at all from ExtensionNoneFrom, linearly in
// between (ExtensionWeight). Why: the paper's fragment already keeps whole
// nodes for the multi-GPU classes in proportion to their weight (a job
// that breaks a node's last block a class needs counts that node's free
// GPUs as fragmented for it). When those classes carry much of the demand
// the extensions work against it: the CPU-capacity term of the 1-GPU and
// shared-GPU classes sends small pods away from partly used nodes whose
// CPU runs short, onto whole nodes the multi-GPU pods need, and the
// scarcity cost keeps the big nodes for the largest pods and pushes the
// rest onto nodes with less CPU, leaving GPUs without CPU. Chosen on the
// openb default list with 20–50% of its GPU demand re-drawn as 2-, 4- and
// 8-GPU pods (eval/pack MultiGPU), arrival seeds 1–10 (the figures are in
// docs/guide/training-and-evaluation.md): without the CPU-capacity term
// frag-aware left clearly fewer GPUs unallocated at every share, without
// the scarcity cost about as many, without both the fewest; a
// half-weight term left more at 20% than none. The 18 shared openb lists
// carry at most 8.8% of their GPU demand in multi-GPU classes, so
// ExtensionFullBelow leaves them (and their tuning) as they were; by 20%
// both extensions are gone. The share is the workload's: that of the jobs
// a mix was learned from, not of the prior it was blended with
// (WorkloadMultiGPUShare). Without any history the power-of-two DefaultMix
// is all there is; it asks no CPU and names no GPU type, so neither
// extension has anything to weigh then.
const (
	ExtensionFullBelow = 0.10 // multi-GPU share of the mix's GPU demand up to which the extensions count in full
	ExtensionNoneFrom  = 0.20 // ... from which they do not count
)

// ExtensionWeight is the weight of frag-aware's CPU-capacity term and
// scarcity cost under a mix whose multi-GPU classes carry share of its GPU
// demand: 1 up to ExtensionFullBelow, 0 from ExtensionNoneFrom, linear in
// between.
func ExtensionWeight(share float64) float64 {
	switch {
	case share <= ExtensionFullBelow:
		return 1
	case share >= ExtensionNoneFrom:
		return 0
	}
	return (ExtensionNoneFrom - share) / (ExtensionNoneFrom - ExtensionFullBelow)
}

// ScarcityWeight scales the scarcity cost frag-aware charges per GPU taken
// (pressure × weight GPUs per GPU). Tuned on the openb default and cpu250
// lists with 25% of their GPU pods type-constrained (ConstrainTypes in
// eval), arrival seeds 1–10, when the pressure was by GPU type only and the
// replays' mix kept the classes covering 95% of the pods: weights 0.5, 1,
// 2 and 4 left 5.13, 4.71, 4.57 and 4.60% (default) and 6.79, 6.50, 6.40
// and 6.29% (cpu250) of the GPUs unallocated at 100% arrival, and 7.59 /
// 7.71% without the term; 2 and 4 are within noise, 2 is the smaller
// departure from the pressure itself. With the pressure by node shape and
// every class in the mix, weight 2 left 4.46 / 5.82% on the same runs.
const ScarcityWeight = 2.0

// Scarcity is the pressure on each node under the mix as the state stands
// (see State.scarcity): 0 where no restricted class of the mix can run, up
// to 1 where their expected demand claims all the free capacity of the
// node's shape; frag-aware charges ScarcityWeight × pressure per GPU taken.
// Nodes under no pressure are absent.
func (st *State) Scarcity(m Mix) map[string]float64 {
	fm := compileMix(st, &m, false)
	out := map[string]float64{}
	for i, sh := range st.shape {
		if fm.press != nil && fm.press[sh] > 0 {
			out[st.names[i]] = fm.press[sh]
		}
	}
	return out
}

// frag is F_n(M) in thousandths of a GPU for a node with the given figures
// and per-GPU free shares (with paper, the ATC'23 measure alone: without
// the CPU-capacity term).
func (fm *fragModel) frag(s *nodeSum, free []int32) float64 {
	if s.totalFree == 0 {
		return 0
	}
	var f float64
	for k := range fm.classes {
		c := &fm.classes[k]
		var fc int32
		switch {
		case !c.typeOK(s.typ) || c.cpu > s.cpuFree || c.mem > s.memFree || !s.fitsGPU(&c.cdemand):
			fc = s.totalFree
		case c.milli == 0:
			fc = 0
		case c.whole > 0:
			fc = s.partial
		default:
			for _, g := range free {
				if g < c.milli {
					fc += g
				}
			}
		}
		if !fm.paper && fm.cpuW > 0 && c.milli > 0 && fc < s.totalFree && (c.cpu > 0 && s.cpuFree != math.MaxInt32 || c.mem > 0 && s.memFree != math.MaxInt32) {
			if fm.cpuW == 1 {
				fc += c.starved(s, free)
			} else {
				f += c.w * fm.cpuW * float64(c.starved(s, free))
			}
		}
		f += c.w * float64(fc)
	}
	return f
}

// starved is the GPU capacity, in thousandths, of the jobs of the class
// that the node's free GPUs hold beyond those its free CPU and memory hold
// (the CPU-capacity term of the measure; the class fits at least once).
func (c *cdemand) starved(s *nodeSum, free []int32) int32 {
	g := c.gpuMilli()
	cpuShort := c.cpu > 0 && s.cpuFree != math.MaxInt32 && int64(s.cpuFree)*int64(g) < int64(s.totalFree)*int64(c.cpu)
	memShort := c.mem > 0 && s.memFree != math.MaxInt32 && int64(s.memFree)*int64(g) < int64(s.totalFree)*int64(c.mem)
	if !cpuShort && !memShort {
		// free/demand ≥ totalFree/g for CPU and memory: they feed at least
		// ⌊totalFree/g⌋ jobs, more than the GPUs can hold.
		return 0
	}
	hold := int32(math.MaxInt32)
	if cpuShort {
		hold = s.cpuFree / c.cpu
	}
	if memShort {
		hold = min(hold, s.memFree/c.mem)
	}
	var jobs int32
	if c.whole > 0 {
		jobs = int32(s.nFull / c.whole)
	} else {
		for _, f := range free {
			jobs += f / c.milli
		}
	}
	if jobs <= hold {
		return 0
	}
	return (jobs - hold) * g
}

// before is node i's F_n(M) as it stands.
func (fm *fragModel) before(st *State, i int) float64 {
	return fm.frag(&st.sum[i], st.free[st.off[i]:st.off[i+1]])
}

// after is node i's F_n(M) if milli were taken from each of the GPUs listed
// and the demand's CPU and memory from the node.
func (fm *fragModel) after(st *State, i int, gpus []int, milli int32, c *cdemand) float64 {
	s := st.sum[i]
	free := st.free[st.off[i]:st.off[i+1]]
	var buf [64]int32
	var after []int32
	if len(free) <= len(buf) {
		after = buf[:len(free)]
	} else {
		after = make([]int32, len(free))
	}
	copy(after, free)
	for _, g := range gpus {
		after[g] -= milli
	}
	a := s
	a.totalFree, a.nFull, a.maxFree, a.partial = 0, 0, 0, 0
	for _, f := range after {
		a.totalFree += f
		a.maxFree = max(a.maxFree, f)
		if f == MilliGPU {
			a.nFull++
		} else {
			a.partial += f
		}
	}
	if a.cpuFree != math.MaxInt32 {
		a.cpuFree -= c.cpu
	}
	if a.memFree != math.MaxInt32 {
		a.memFree -= c.mem
	}
	return fm.frag(&a, after)
}

// Fragmentation measures a state under a mix: the expected fragmented GPU
// capacity Σ_n F_n(M) over schedulable nodes and the free capacity there,
// both in GPUs, and each schedulable node's F_n(M) by node index (0 for the
// others).
func (st *State) Fragmentation(m Mix) (frag, free float64, perNode []float64) {
	fm := compileMix(st, &m, false)
	perNode = make([]float64, len(st.names))
	for i := range st.sum {
		s := &st.sum[i]
		if !s.up {
			continue
		}
		f := fm.frag(s, st.free[st.off[i]:st.off[i+1]]) / MilliGPU
		perNode[i] = f
		frag += f
		free += float64(s.totalFree) / MilliGPU
	}
	return frag, free, perNode
}

// FragmentationByNode is each node's expected fragmentation F_n(M) under the
// mix, in GPUs, by node name, for a snapshot (see State.Fragmentation; nodes
// that are not up count 0).
func FragmentationByNode(s *provisioner.Snapshot, m Mix) map[string]float64 {
	st := FromSnapshot(s)
	_, _, per := st.Fragmentation(m)
	out := make(map[string]float64, len(per))
	for i, f := range per {
		out[st.names[i]] = f
	}
	return out
}

// FormatGPUs prints a GPU figure with at most one decimal.
func FormatGPUs(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) }

// MultiGPUShare is the share of the mix's GPU demand (Σ weight × GPUs per
// node over its classes) that its classes of 2 or more whole GPUs per node
// carry (0 when no class asks for a GPU).
func (m Mix) MultiGPUShare() float64 {
	var total, multi float64
	for _, c := range m.Classes {
		if c.Weight <= 0 || c.GPUMilli <= 0 {
			continue
		}
		g := c.Weight * float64(c.GPUMilli)
		total += g
		if c.GPUMilli >= 2*MilliGPU && c.GPUMilli%MilliGPU == 0 {
			multi += g
		}
	}
	if total == 0 {
		return 0
	}
	return multi / total
}
