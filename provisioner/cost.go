package provisioner

import (
	"fmt"
	"slices"
	"time"
)

// GapCost prices the outcome of one hand-off, the negative of the
// terminal reward of a learned policy's episode:
//
//	cost = InterruptionPerHour·interruption_h
//	     + (OverlapPerHour + OverlapPerGPUHour·GPUs)·max(overlap_h − OverlapBudget_h, 0)
//
// where a positive gap (successor start − predecessor end) is interruption
// and a negative one overlap. DefaultGapCost reproduces the published
// design's symmetric reward −60·|gap in hours| so results stay comparable
// with it; a workload (WorkloadCost) prices what really hurts it.
type GapCost struct {
	InterruptionPerHour float64       `json:"interruption_per_h"`          // cost of one hour without a running segment
	OverlapPerHour      float64       `json:"overlap_per_h"`               // cost of one hour of overlap beyond the budget, whatever the size
	OverlapPerGPUHour   float64       `json:"overlap_per_gpu_h,omitempty"` // cost of one GPU-hour held twice beyond the budget
	OverlapBudget       time.Duration `json:"overlap_budget_ns,omitempty"` // overlap that costs nothing (a service wants both copies serving for a while)
	// HandOff: the chain's successors hand off (mirage handoff), so an
	// early start costs a checkpoint and a restart, not hours of GPUs held
	// twice. Learned policies then decide by the wait's quantile under the
	// cost, not by thresholds tuned on hand-offs that run to their limits.
	HandOff bool `json:"hand_off,omitempty"`
}

// DefaultGapCost is the published symmetric cost: 60 per hour either way.
var DefaultGapCost = GapCost{InterruptionPerHour: 60, OverlapPerHour: 60}

// Cost returns the cost of a gap for a successor holding gpus GPUs.
func (c GapCost) Cost(gap time.Duration, gpus int) float64 {
	if gap >= 0 {
		return c.InterruptionPerHour * gap.Hours()
	}
	over := max(-gap-c.OverlapBudget, 0)
	return (c.OverlapPerHour + c.OverlapPerGPUHour*float64(gpus)) * over.Hours()
}

// Reward is −Cost, the terminal reward of an episode.
func (c GapCost) Reward(gap time.Duration, gpus int) float64 { return -c.Cost(gap, gpus) }

// String is the cost in words ("interruption 60/h, overlap 2.5/h + 0/GPU-h").
func (c GapCost) String() string {
	s := fmt.Sprintf("interruption %g/h, overlap %g/h + %g/GPU-h", c.InterruptionPerHour, c.OverlapPerHour, c.OverlapPerGPUHour)
	if c.OverlapBudget > 0 {
		s += " beyond " + c.OverlapBudget.String()
	}
	if c.HandOff {
		s += ", with hand-off"
	}
	return s
}

// Workloads: what a chain runs, which decides what its hand-offs cost.
const (
	// WorkloadTraining is a checkpointing training run that hands off
	// (mirage handoff): an hour of interruption delays the result by an
	// hour; an early start costs one checkpoint and restart, which every
	// hand-off pays anyway, plus the work it moves into an extra segment
	// later. The overlap rate prices that: an hour of overlap is worth
	// 1/24 of an hour of interruption (a day of overlap, about half a 48 h
	// segment, against one hour of the result's delay).
	WorkloadTraining = "training"
	// WorkloadService is an inference service: downtime is what hurts (ten
	// times the published rate), and both copies serving is wanted up to a
	// budget of two hours; overlap beyond it costs the published rate.
	WorkloadService = "service"
)

// Workloads lists the workload names.
func Workloads() []string { return []string{WorkloadTraining, WorkloadService} }

// WorkloadCost is the cost of a workload ("" is the published symmetric cost).
func WorkloadCost(workload string) (GapCost, error) {
	switch workload {
	case "":
		return DefaultGapCost, nil
	case WorkloadTraining:
		return GapCost{InterruptionPerHour: 60, OverlapPerHour: 2.5, HandOff: true}, nil
	case WorkloadService:
		return GapCost{InterruptionPerHour: 600, OverlapPerHour: 60, OverlapBudget: 2 * time.Hour}, nil
	}
	return GapCost{}, fmt.Errorf("unknown workload %q (known: %v)", workload, Workloads())
}

// IsWorkload reports whether w names a workload.
func IsWorkload(w string) bool { return slices.Contains(Workloads(), w) }
