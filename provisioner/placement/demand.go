package placement

import (
	"errors"
	"fmt"
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
