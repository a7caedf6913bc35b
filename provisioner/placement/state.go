package placement

import (
	"fmt"
	"math"
	"slices"

	"github.com/mirage-gpu/mirage/provisioner"
)

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
