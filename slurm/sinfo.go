package slurm

import (
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// nodeRec holds one node of sinfo --json 22.05 (top-level "nodes", the shape
// `scontrol show nodes --json` keeps in later releases).
type nodeRec struct {
	Name            string
	States          []string
	CPUs, AllocCPUs flexNum
	Gres, GresUsed  string
	Partitions      []string
}

// sinfoRec holds one entry of the "sinfo" list of 23.02+: a group of nodes
// sharing partition and state (one node per entry with `sinfo -N`).
type sinfoRec struct {
	Nodes           []string
	States          []string
	Partition       string
	CPUs, AllocCPUs flexNum
	Gres, GresUsed  string
}

func readNodeRec(s *scanner, r *nodeRec) error {
	*r = nodeRec{}
	var flags []string
	err := s.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "name":
			r.Name, err = s.str()
		case "state":
			r.States, err = s.strs()
		case "state_flags":
			flags, err = s.strs()
		case "cpus":
			r.CPUs, err = s.num()
		case "alloc_cpus":
			r.AllocCPUs, err = s.num()
		case "gres":
			r.Gres, err = s.str()
		case "gres_used":
			r.GresUsed, err = s.str()
		case "partitions":
			r.Partitions, err = s.strs()
		default:
			err = s.skip()
		}
		return err
	})
	r.States = append(r.States, flags...)
	return err
}

func readSinfoRec(s *scanner, r *sinfoRec) error {
	*r = sinfoRec{}
	return s.object(func(k []byte) error {
		switch string(k) {
		case "nodes":
			r.Nodes = nil
			return s.object(func(k []byte) error {
				if string(k) == "nodes" {
					var err error
					r.Nodes, err = s.strs()
					return err
				}
				return s.skip()
			})
		case "node":
			r.States = nil
			return s.object(func(k []byte) error {
				if string(k) == "state" {
					var err error
					r.States, err = s.strs()
					return err
				}
				return s.skip()
			})
		case "partition":
			r.Partition = ""
			return s.object(func(k []byte) error {
				if string(k) == "name" {
					var err error
					r.Partition, err = s.str()
					return err
				}
				return s.skip()
			})
		case "cpus":
			r.CPUs, r.AllocCPUs = flexNum{}, flexNum{}
			return s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "total":
					r.CPUs, err = s.num()
				case "allocated":
					r.AllocCPUs, err = s.num()
				default:
					err = s.skip()
				}
				return err
			})
		case "gres":
			r.Gres, r.GresUsed = "", ""
			return s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "total":
					r.Gres, err = s.str()
				case "used":
					r.GresUsed, err = s.str()
				default:
					err = s.skip()
				}
				return err
			})
		}
		return s.skip()
	})
}

// ParseSinfoJSON parses `sinfo -N --json` (22.05 to 25.x) into nodes with
// CPU and GPU totals and use, in the order listed.
//
// 22.05 lists nodes under "nodes" (one entry per node). 23.02 and later list
// "sinfo" entries, one per node and partition with -N: a node in two
// partitions is merged into one Node with both partitions. An entry naming
// several nodes (output without -N) gives each node the entry's GRES (a
// per-node figure) and an even share of its CPU counts, rounded down; GPUs in
// use cannot be attributed to a node from such an entry and are set only
// when the entry has one node.
func ParseSinfoJSON(b []byte) ([]provisioner.Node, Version, error) {
	// Both lists are collected separately; "nodes" wins when a document has
	// both, whatever their order.
	var fromNodes, fromSinfo []provisioner.Node
	var idxNodes, idxSinfo map[string]int
	hb := newHostBudget()
	foundNodes, foundSinfo := false, false
	v, err := parseDoc("sinfo --json", b, func(s *scanner, key []byte) error {
		switch string(key) {
		case "nodes":
			foundNodes = true
			fromNodes, idxNodes = nil, map[string]int{}
			var r nodeRec
			return s.array(func() error {
				if err := readNodeRec(s, &r); err != nil {
					return err
				}
				n := provisioner.Node{
					Name:       r.Name,
					State:      mapNodeState(r.States...),
					CPUs:       r.CPUs.int(),
					CPUsUsed:   r.AllocCPUs.int(),
					Partitions: r.Partitions,
				}
				n.GPUs, n.GPUType = gpusFromGres(r.Gres)
				n.GPUsUsed, _ = gpusFromGres(r.GresUsed)
				addNode(&fromNodes, idxNodes, n)
				return nil
			})
		case "sinfo":
			foundSinfo = true
			fromSinfo, idxSinfo = nil, map[string]int{}
			var r sinfoRec
			return s.array(func() error {
				if err := readSinfoRec(s, &r); err != nil {
					return err
				}
				var names []string
				for _, h := range r.Nodes {
					more, err := hb.nodeList(h)
					if err != nil {
						return err
					}
					names = append(names, more...)
				}
				k := max(len(names), 1)
				for _, name := range names {
					n := provisioner.Node{
						Name:     name,
						State:    mapNodeState(r.States...),
						CPUs:     r.CPUs.int() / k,
						CPUsUsed: r.AllocCPUs.int() / k,
					}
					if r.Partition != "" {
						n.Partitions = []string{r.Partition}
					}
					n.GPUs, n.GPUType = gpusFromGres(r.Gres)
					if len(names) == 1 {
						n.GPUsUsed, _ = gpusFromGres(r.GresUsed)
					}
					addNode(&fromSinfo, idxSinfo, n)
				}
				return nil
			})
		}
		return s.skip()
	})
	if err != nil {
		return nil, v, err
	}
	out := fromSinfo
	switch {
	case foundNodes:
		out = fromNodes
	case !foundSinfo:
		return nil, v, missingField("sinfo --json", "nodes\" or \"sinfo", v)
	}
	if out == nil {
		out = []provisioner.Node{}
	}
	return out, v, nil
}

// addNode appends n, or merges its partitions into an earlier entry of the same name.
func addNode(out *[]provisioner.Node, idx map[string]int, n provisioner.Node) {
	i, ok := idx[n.Name]
	if !ok {
		idx[n.Name] = len(*out)
		*out = append(*out, n)
		return
	}
	prev := &(*out)[i]
	for _, p := range n.Partitions {
		if !contains(prev.Partitions, p) {
			prev.Partitions = append(prev.Partitions, p)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mapNodeState maps Slurm node state words and flags ("idle", "MIXED",
// "DRAIN", "down*", "IDLE+DRAIN", ["IDLE","DRAIN"]) to a NodeState: any
// down-like word makes it down; else drain or maintenance make it drained;
// else a reservation makes it reserved; else it is up.
func mapNodeState(words ...string) provisioner.NodeState {
	st := provisioner.NodeUp
	for _, w := range words {
		w = strings.ToUpper(strings.TrimRight(strings.TrimSpace(w), "*~#!%$@^-"))
		for _, p := range strings.Split(w, "+") {
			switch p {
			case "DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "NO_RESPOND", "UNKNOWN", "FUTURE",
				"POWERED_DOWN", "POWER_DOWN", "POWERING_DOWN", "POWERING_UP", "INVALID", "INVALID_REG",
				"REBOOT_ISSUED", "UNK", "FUT", "NPC":
				return provisioner.NodeDown
			case "DRAIN", "DRAINED", "DRAINING", "DRNG", "MAINT", "MAINTENANCE", "REBOOT_REQUESTED":
				st = provisioner.NodeDrained
			case "RESERVED", "RESV":
				if st == provisioner.NodeUp {
					st = provisioner.NodeReserved
				}
			}
		}
	}
	return st
}
