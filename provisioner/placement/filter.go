package placement

import (
	"fmt"
	"math"
)

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
