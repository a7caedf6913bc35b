package placement

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// MilliGPU is one whole GPU in the placement's unit (thousandths of a GPU),
// so that GPU-sharing requests (half a GPU = 500) and whole GPUs share a scale.
const MilliGPU = 1000

// Errors of the placement.
var (
	ErrBadDemand   = errors.New("invalid resource demand")      // a demand that no cluster could satisfy as stated
	ErrUnknownNode = errors.New("unknown node")                 // a node list or exclusion names a node the cluster does not have
	ErrBadPolicy   = errors.New("unknown placement policy")     // not first-fit, best-fit, spread or frag-aware
	ErrJobTooLarge = errors.New("job larger than any node")     // no node could ever hold the per-node demand
	ErrNoPlacement = errors.New("no node can take the job now") // every node was filtered out
)

// Demand is what one job asks of every node it runs on.
type Demand struct {
	GPUMilli int      // per node, in thousandths of a GPU: 1–999 a share of one GPU (GPU sharing), else whole GPUs (a multiple of 1000); 0 = no GPU
	CPUMilli int      // per node, thousandths of a CPU; 0 = not constrained
	MemMiB   int      // per node, memory in MiB; 0 = not constrained
	GPUTypes []string // allowed GPU types (products); empty = any
	Nodes    int      // nodes, each given the per-node demand; 0 means 1
}

// nodes is the node count with the zero value meaning one.
func (d Demand) nodes() int { return max(d.Nodes, 1) }

// NodeCount is the number of nodes the demand spans (Nodes, with 0 meaning 1).
func (d Demand) NodeCount() int { return d.nodes() }

// WholeGPUs is the number of whole GPUs per node (0 for a fractional or GPU-less demand).
func (d Demand) WholeGPUs() int {
	if d.GPUMilli >= MilliGPU {
		return d.GPUMilli / MilliGPU
	}
	return 0
}

// Fractional reports whether the demand is a share of one GPU.
func (d Demand) Fractional() bool { return d.GPUMilli > 0 && d.GPUMilli < MilliGPU }

// Validate reports a demand that no placement can honour as stated.
func (d Demand) Validate() error {
	switch {
	case d.GPUMilli < 0 || d.CPUMilli < 0 || d.MemMiB < 0 || d.Nodes < 0:
		return fmt.Errorf("%w: negative amount in %s", ErrBadDemand, d)
	case d.GPUMilli > MilliGPU && d.GPUMilli%MilliGPU != 0:
		return fmt.Errorf("%w: %d thousandths of a GPU per node: above one GPU only whole GPUs can be asked for", ErrBadDemand, d.GPUMilli)
	}
	return nil
}

// String renders the demand, e.g. "8 GPUs", "0.5 GPU", "2 nodes × 4 GPUs [A100]".
func (d Demand) String() string {
	var b strings.Builder
	if d.nodes() > 1 {
		b.WriteString(strconv.Itoa(d.nodes()) + " nodes × ")
	}
	switch {
	case d.GPUMilli == 0:
		b.WriteString("no GPU")
	case d.Fractional():
		b.WriteString(strconv.FormatFloat(float64(d.GPUMilli)/MilliGPU, 'f', -1, 64) + " GPU")
	case d.GPUMilli == MilliGPU:
		b.WriteString("1 GPU")
	default:
		b.WriteString(strconv.Itoa(d.WholeGPUs()) + " GPUs")
	}
	if d.CPUMilli > 0 {
		b.WriteString(", " + strconv.FormatFloat(float64(d.CPUMilli)/1000, 'f', -1, 64) + " CPUs")
	}
	if len(d.GPUTypes) > 0 {
		b.WriteString(" [" + strings.Join(d.GPUTypes, "|") + "]")
	}
	return b.String()
}

// DemandOf is the per-node demand of a submission: its GPUs spread evenly
// over its nodes (as Slurm's --gpus with --nodes), restricted to its GPU type.
func DemandOf(req *provisioner.SubmitRequest) (Demand, error) {
	d := Demand{Nodes: max(req.Nodes, 1)}
	if req.GPUs < 0 {
		return d, fmt.Errorf("%w: %d GPUs", ErrBadDemand, req.GPUs)
	}
	if req.GPUs%d.Nodes != 0 {
		return d, fmt.Errorf("%w: %d GPUs do not divide evenly over %d nodes", ErrBadDemand, req.GPUs, d.Nodes)
	}
	d.GPUMilli = req.GPUs / d.Nodes * MilliGPU
	if req.GPUType != "" {
		d.GPUTypes = []string{req.GPUType}
	}
	return d, nil
}

// JobDemand is the per-node demand of a job in a snapshot or history
// (GPUs rounded up per node).
func JobDemand(j *provisioner.Job) Demand {
	n := max(j.Nodes, 1)
	d := Demand{Nodes: n, GPUMilli: (j.GPUs + n - 1) / n * MilliGPU}
	if j.GPUType != "" {
		d.GPUTypes = []string{j.GPUType}
	}
	return d
}

// Node is one node as the placement sees it.
type Node struct {
	Name        string // node name
	GPUType     string // GPU type (product); "" when unknown
	Schedulable bool   // up and accepting work
	CPUMilli    int    // CPU capacity in thousandths; 0 = CPUs not tracked (never a constraint)
	CPUUsed     int    // CPU in use, thousandths
	MemMiB      int    // memory capacity in MiB; 0 = memory not tracked (never a constraint)
	MemUsed     int    // memory in use, MiB
	GPUFree     []int  // free thousandths of each GPU device (1000 = unused)
}

// State is a cluster as the placement sees it: per node, free
// thousandths of every GPU, free CPU, GPU type and schedulability. It is
// mutable (Assign, Release) so that replays and what-if probes can place
// job after job; Clone copies it.
type State struct {
	names  []string
	types  []string // GPU type names, by id
	typeID map[string]int16
	index  map[string]int
	sum    []nodeSum
	free   []int32 // free thousandths per GPU, nodes back to back
	off    []int32 // node i's GPUs are free[off[i]:off[i+1]]
	cpuCap []int32
	memCap []int32
	shape  []int16   // by node: its shape (GPU type, GPUs, CPU and memory capacity), an index into shapes
	shapes []shape   // the distinct node shapes
	memo   *fragMemo // frag-aware figures kept between placements (Memoize); nil = none
	ngen   []uint32  // by node: changes since Memoize (with memo only)
}

// nodeSum caches the figures filters and scores need per node.
type nodeSum struct {
	typ       int16 // GPU type id
	up        bool  // schedulable
	cpuFree   int32 // free CPU thousandths (math.MaxInt32 when not tracked)
	memFree   int32 // free memory MiB (math.MaxInt32 when not tracked)
	totalFree int32 // Σ free thousandths over the node's GPUs
	nFull     int16 // GPUs entirely free
	maxFree   int32 // largest free share of one GPU
	partial   int32 // Σ free thousandths of partially used GPUs
}

// NewState builds a state from nodes; names must be unique and every
// GPU's free share within [0, 1000].
func NewState(nodes []Node) (*State, error) {
	st := &State{typeID: map[string]int16{}, index: make(map[string]int, len(nodes))}
	st.names = make([]string, len(nodes))
	st.sum = make([]nodeSum, len(nodes))
	st.off = make([]int32, len(nodes)+1)
	st.cpuCap = make([]int32, len(nodes))
	st.memCap = make([]int32, len(nodes))
	total := 0
	for _, n := range nodes {
		total += len(n.GPUFree)
	}
	st.free = make([]int32, 0, total)
	for i, n := range nodes {
		if _, dup := st.index[n.Name]; dup {
			return nil, fmt.Errorf("placement: duplicate node %q", n.Name)
		}
		if len(n.GPUFree) > MaxNodeGPUs {
			return nil, fmt.Errorf("placement: node %s: %d GPUs, more than the %d modelled per node", n.Name, len(n.GPUFree), MaxNodeGPUs)
		}
		st.index[n.Name] = i
		st.names[i] = n.Name
		st.off[i] = int32(len(st.free))
		for g, f := range n.GPUFree {
			if f < 0 || f > MilliGPU {
				return nil, fmt.Errorf("placement: node %s GPU %d: free share %d outside [0, 1000]", n.Name, g, f)
			}
			st.free = append(st.free, int32(f))
		}
		if n.CPUMilli < 0 || n.CPUUsed < 0 || n.MemMiB < 0 || n.MemUsed < 0 {
			return nil, fmt.Errorf("placement: node %s: negative CPU or memory figures", n.Name)
		}
		st.cpuCap[i] = int32(n.CPUMilli)
		st.memCap[i] = int32(min(n.MemMiB, math.MaxInt32-1))
		s := &st.sum[i]
		s.typ = st.typeOf(n.GPUType)
		s.up = n.Schedulable
		s.cpuFree = math.MaxInt32
		if n.CPUMilli > 0 {
			s.cpuFree = int32(n.CPUMilli - n.CPUUsed)
		}
		s.memFree = math.MaxInt32
		if st.memCap[i] > 0 {
			s.memFree = st.memCap[i] - int32(min(n.MemUsed, n.MemMiB))
		}
	}
	st.off[len(nodes)] = int32(len(st.free))
	for i := range st.sum {
		st.refresh(i)
	}
	st.buildShapes()
	return st, nil
}

// MaxNodeGPUs bounds the GPU devices the placement models per node; a node
// reporting more (no real node does) is modelled with this many.
const MaxNodeGPUs = 4096

// FromSnapshot builds the state of a snapshot: each node's first
// GPUsUsed devices in use, the rest free (snapshots count whole GPUs); only
// up nodes are schedulable. A node listed twice keeps its first entry; GPU
// counts are capped at MaxNodeGPUs.
func FromSnapshot(s *provisioner.Snapshot) *State {
	n := len(s.Nodes)
	st := &State{typeID: map[string]int16{}, index: make(map[string]int, n),
		names: make([]string, 0, n), sum: make([]nodeSum, 0, n), off: make([]int32, 0, n+1), cpuCap: make([]int32, 0, n),
		memCap: make([]int32, 0, n)}
	total := 0
	for i := range s.Nodes {
		total += min(max(s.Nodes[i].GPUs, 0), MaxNodeGPUs)
	}
	st.free = make([]int32, 0, total)
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		if _, dup := st.index[nd.Name]; dup {
			continue
		}
		k := len(st.names)
		st.index[nd.Name] = k
		st.names = append(st.names, nd.Name)
		st.off = append(st.off, int32(len(st.free)))
		for g := range min(max(nd.GPUs, 0), MaxNodeGPUs) {
			f := int32(MilliGPU)
			if g < nd.GPUsUsed {
				f = 0
			}
			st.free = append(st.free, f)
		}
		sum := nodeSum{typ: st.typeOf(nd.GPUType), up: nd.State == provisioner.NodeUp, cpuFree: math.MaxInt32, memFree: math.MaxInt32}
		var cpuCap int32
		if nd.CPUs > 0 {
			cpuCap = int32(nd.CPUs * 1000)
			sum.cpuFree = cpuCap - int32(min(max(nd.CPUsUsed, 0), nd.CPUs)*1000)
		}
		st.cpuCap = append(st.cpuCap, cpuCap)
		st.memCap = append(st.memCap, 0)
		st.sum = append(st.sum, sum)
	}
	st.off = append(st.off, int32(len(st.free)))
	for i := range st.sum {
		st.refresh(i)
	}
	st.buildShapes()
	return st
}

func (st *State) typeOf(t string) int16 {
	id, ok := st.typeID[t]
	if !ok {
		id = int16(len(st.types))
		st.typeID[t] = id
		st.types = append(st.types, t)
	}
	return id
}

// refresh recomputes node i's cached figures from its GPUs.
func (st *State) refresh(i int) {
	s := &st.sum[i]
	s.totalFree, s.nFull, s.maxFree, s.partial = 0, 0, 0, 0
	for _, f := range st.free[st.off[i]:st.off[i+1]] {
		s.totalFree += f
		s.maxFree = max(s.maxFree, f)
		if f == MilliGPU {
			s.nFull++
		} else {
			s.partial += f
		}
	}
}

// Clone returns an independent copy.
func (st *State) Clone() *State {
	c := *st
	c.sum = slices.Clone(st.sum)
	c.free = slices.Clone(st.free)
	c.types = slices.Clone(st.types)
	c.typeID = make(map[string]int16, len(st.typeID))
	for k, v := range st.typeID {
		c.typeID[k] = v
	}
	c.memo, c.ngen = nil, nil
	return &c
}

// Len is the number of nodes.
func (st *State) Len() int { return len(st.names) }

// Name returns node i's name.
func (st *State) Name(i int) string { return st.names[i] }

// WholeFree returns the number of node i's GPUs that are entirely free.
func (st *State) WholeFree(i int) int { return int(st.sum[i].nFull) }

// Index returns the index of a node by name.
func (st *State) Index(name string) (int, bool) {
	i, ok := st.index[name]
	return i, ok
}

// Node returns node i as a Node (a copy).
func (st *State) Node(i int) Node {
	s := &st.sum[i]
	n := Node{Name: st.names[i], GPUType: st.types[s.typ], Schedulable: s.up, CPUMilli: int(st.cpuCap[i])}
	if n.CPUMilli > 0 {
		n.CPUUsed = n.CPUMilli - int(s.cpuFree)
	}
	if n.MemMiB = int(st.memCap[i]); n.MemMiB > 0 {
		n.MemUsed = n.MemMiB - int(s.memFree)
	}
	for _, f := range st.free[st.off[i]:st.off[i+1]] {
		n.GPUFree = append(n.GPUFree, int(f))
	}
	return n
}

// Totals returns the GPU capacity of all nodes and the free share on
// schedulable nodes, in thousandths of a GPU.
func (st *State) Totals() (capacity, free int) {
	for i := range st.sum {
		capacity += int(st.off[i+1]-st.off[i]) * MilliGPU
		if st.sum[i].up {
			free += int(st.sum[i].totalFree)
		}
	}
	return capacity, free
}

// SetSchedulable marks a node up or not (a cordon in a what-if probe).
func (st *State) SetSchedulable(i int, up bool) { st.sum[i].up = up }

// Assignment is where one node's share of a job goes.
type Assignment struct {
	Node     int    // node index in the state
	Name     string // node name
	GPUs     []int  // GPU device indices on the node
	Milli    int    // thousandths taken from each listed GPU (1000 for whole GPUs)
	CPUMilli int    // CPU thousandths taken
	MemMiB   int    // memory MiB taken
}

// Assign takes an assignment's resources from the state. It panics if the
// assignment does not fit (a broken invariant: it came from Place).
func (st *State) Assign(a Assignment) {
	free := st.free[st.off[a.Node]:st.off[a.Node+1]]
	for _, g := range a.GPUs {
		if free[g] < int32(a.Milli) {
			panic(fmt.Sprintf("placement: assign %d to GPU %d of %s with %d free", a.Milli, g, st.names[a.Node], free[g]))
		}
		free[g] -= int32(a.Milli)
	}
	if st.cpuCap[a.Node] > 0 {
		st.sum[a.Node].cpuFree -= int32(a.CPUMilli)
	}
	if st.memCap[a.Node] > 0 {
		st.sum[a.Node].memFree -= int32(a.MemMiB)
	}
	st.refresh(a.Node)
	st.touch(a.Node)
}

// Release gives an assignment's resources back.
func (st *State) Release(a Assignment) {
	free := st.free[st.off[a.Node]:st.off[a.Node+1]]
	for _, g := range a.GPUs {
		free[g] = min(free[g]+int32(a.Milli), MilliGPU)
	}
	if st.cpuCap[a.Node] > 0 {
		st.sum[a.Node].cpuFree = min(st.sum[a.Node].cpuFree+int32(a.CPUMilli), st.cpuCap[a.Node])
	}
	if st.memCap[a.Node] > 0 {
		st.sum[a.Node].memFree = min(st.sum[a.Node].memFree+int32(a.MemMiB), st.memCap[a.Node])
	}
	st.refresh(a.Node)
	st.touch(a.Node)
}

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
	// fit), then least free CPU after, then node name.
	FragAware Policy = "frag-aware"
)

// Policies lists the policies, for help texts.
var Policies = []Policy{FirstFit, BestFit, Spread, FragAware}

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q (want first-fit, best-fit, spread or frag-aware)", ErrBadPolicy, s)
}

// Filter reasons: the constant string recorded for every node a placement
// rejects, checked in this order.
const (
	ReasonNotListed      = "not in the node list"    // a node list was given and the node is not in it
	ReasonExcluded       = "excluded"                // the node is in the exclusion list
	ReasonNotSchedulable = "not schedulable"         // drained (cordoned), down (not ready) or reserved
	ReasonGPUType        = "GPU type not allowed"    // the node's GPU type is not among the allowed ones
	ReasonTooSmall       = "fewer GPUs than asked"   // the node's capacity is below the per-node demand
	ReasonGPUs           = "not enough free GPUs"    // capacity suffices, free GPUs do not
	ReasonCPUs           = "not enough free CPUs"    // GPUs suffice, free CPUs do not
	ReasonMemory         = "not enough free memory"  // GPUs and CPUs suffice, free memory does not
	ReasonNotChosen      = "ranked below the chosen" // passed the filter, lost on score (explanations only)
)

// Options tune one placement.
type Options struct {
	NodeList []string // only these nodes (empty = any)
	Exclude  []string // never these nodes
	Mix      *Mix     // job-size mix for frag-aware (nil = DefaultMix of the state)
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

// cdemand is a demand compiled against a state's type table.
type cdemand struct {
	milli   int32  // per GPU share (fractional) or 1000 (whole)
	whole   int16  // whole GPUs per node (0 for fractional / none)
	cpu     int32  // CPU thousandths per node
	mem     int32  // memory MiB per node
	allowed []bool // by type id; nil = any
}

func (st *State) compile(d Demand) cdemand {
	c := cdemand{cpu: int32(min(d.CPUMilli, math.MaxInt32)), mem: int32(min(d.MemMiB, math.MaxInt32))}
	switch {
	case d.Fractional():
		c.milli = int32(d.GPUMilli)
	case d.GPUMilli > 0:
		c.milli, c.whole = MilliGPU, int16(d.WholeGPUs())
	}
	if len(d.GPUTypes) > 0 {
		c.allowed = make([]bool, len(st.types))
		for _, t := range d.GPUTypes {
			if id, ok := st.typeID[t]; ok {
				c.allowed[id] = true
			}
		}
	}
	return c
}

// typeOK reports whether node type id t is allowed.
func (c *cdemand) typeOK(t int16) bool { return c.allowed == nil || c.allowed[t] }

// gpus is the number of GPU devices on node i.
func (st *State) gpus(i int) int { return int(st.off[i+1] - st.off[i]) }

// capacityOK reports whether node i could ever hold the demand (ignoring use).
func (st *State) capacityOK(i int, c *cdemand) bool {
	switch {
	case c.whole > 0:
		return st.gpus(i) >= int(c.whole)
	case c.milli > 0:
		return st.gpus(i) >= 1
	}
	return true
}

// fitsNow reports whether node i's free resources hold the demand.
func (s *nodeSum) fitsGPU(c *cdemand) bool {
	switch {
	case c.whole > 0:
		return s.nFull >= c.whole
	case c.milli > 0:
		return s.maxFree >= c.milli
	}
	return true
}

// filter returns "" when node i passes, else the reason it is rejected.
func (st *State) filter(i int, c *cdemand, allow []bool) string {
	s := &st.sum[i]
	switch {
	case allow != nil && !allow[i]:
		return ReasonNotListed
	case !s.up:
		return ReasonNotSchedulable
	case !c.typeOK(s.typ):
		return ReasonGPUType
	case !st.capacityOK(i, c):
		return ReasonTooSmall
	case !s.fitsGPU(c):
		return ReasonGPUs
	case c.cpu > s.cpuFree:
		return ReasonCPUs
	case c.mem > s.memFree:
		return ReasonMemory
	}
	return ""
}

// allowMask turns a node list and exclusion list into a mask (nil = all
// allowed) and the reason for the nodes it rejects.
func (st *State) allowMask(list, exclude []string) ([]bool, []string, error) {
	if len(list) == 0 && len(exclude) == 0 {
		return nil, nil, nil
	}
	allow := make([]bool, len(st.names))
	why := make([]string, len(st.names))
	for i := range allow {
		allow[i] = len(list) == 0
		if !allow[i] {
			why[i] = ReasonNotListed
		}
	}
	for _, n := range list {
		i, ok := st.index[n]
		if !ok {
			return nil, nil, fmt.Errorf("%w %q in the node list", ErrUnknownNode, n)
		}
		allow[i], why[i] = true, ""
	}
	for _, n := range exclude {
		i, ok := st.index[n]
		if !ok {
			return nil, nil, fmt.Errorf("%w %q in the exclusion list", ErrUnknownNode, n)
		}
		allow[i], why[i] = false, ReasonExcluded
	}
	return allow, why, nil
}

// Filter is the filter stage of Place on its own: a demand compiled
// against a state with a node list and an exclusion list, asked node by
// node. It reads the state as it is when asked (Assign and Release show).
type Filter struct {
	st    *State
	c     cdemand
	allow []bool   // nil = every node listed
	why   []string // the reason for the nodes allow rejects
}

// Filter compiles a demand for asking which nodes pass the filter. An
// unknown node in either list is an error (ErrUnknownNode), as in Place.
func (st *State) Filter(d Demand, nodeList, exclude []string) (Filter, error) {
	allow, why, err := st.allowMask(nodeList, exclude)
	if err != nil {
		return Filter{}, err
	}
	return Filter{st: st, c: st.compile(d), allow: allow, why: why}, nil
}

// Reason returns "" when node i passes the filter, else the constant
// reason Place records for it.
func (f *Filter) Reason(i int) string {
	r := f.st.filter(i, &f.c, f.allow)
	if r == ReasonNotListed && f.why != nil {
		r = f.why[i]
	}
	return r
}

// Holds reports whether node i could take the demand once GPUs on it are
// freed: listed and not excluded, schedulable, GPU type allowed, enough
// GPUs in all and enough free CPU and memory. Only the GPUs in use are ignored.
func (f *Filter) Holds(i int) bool {
	s := &f.st.sum[i]
	return (f.allow == nil || f.allow[i]) && s.up && f.c.typeOK(s.typ) && f.st.capacityOK(i, &f.c) && f.c.cpu <= s.cpuFree && f.c.mem <= s.memFree
}

// pick chooses the GPUs of node i for the demand under the policy and
// returns them with the node's fragmentation increase (frag-aware only).
// Whole GPUs: the lowest-numbered entirely free devices (all equivalent).
// A share of one GPU: first-fit the lowest-numbered device with room,
// best-fit the device with the least room that suffices, spread the one with
// the most room, frag-aware the device whose use grows the node's
// fragmentation least (ties: least room, then lowest number).
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
		if policy == FragAware {
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
	if _, err := ParsePolicy(string(policy)); err != nil {
		return nil, err
	}
	allow, why, err := st.allowMask(o.NodeList, o.Exclude)
	if err != nil {
		return nil, err
	}
	c := st.compile(d)
	var fm *fragModel
	var memo *memoRow
	if policy == FragAware {
		mix := o.Mix
		if mix == nil {
			m := DefaultMix(st)
			mix = &m
		}
		var mm *fragMemo
		if fm, mm = st.model(mix); mm != nil {
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
		case FragAware:
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
				cand.Scarcity = ScarcityWeight * fm.press[st.shape[i]] * float64(taken) / MilliGPU
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
