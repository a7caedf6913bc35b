package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrCannotRun: the cluster can never run a job of the queried shape
// (sbatch would reject it, or it would pend forever), so no wait is
// predicted for it.
var ErrCannotRun = errors.New("the cluster cannot run this job")

// PartitionLimit is what a partition lets a job ask for, where the cluster
// state knows it (sinfo on a live Slurm).
type PartitionLimit struct {
	Name    string
	Default bool          // the partition of a job that names none
	MaxTime time.Duration // 0: unlimited
}

// Runnable checks that the cluster of st can run a job of q at all: its
// partition (q.Partition, else the default one where st.Partitions says
// which) exists, has q.Nodes nodes with q.GPUsPerNode GPUs each, and
// (where st.Partitions is known) a MaxTime no shorter than q.TimeLimit.
// The error wraps ErrCannotRun and names the limit.
func (q *WaitQuery) Runnable(st *ClusterState) error {
	part := q.Partition
	var limit *PartitionLimit
	for i := range st.Partitions {
		p := &st.Partitions[i]
		if p.Name == part || part == "" && p.Default {
			limit = p
		}
	}
	if part == "" && limit != nil {
		part = limit.Name
	}
	if q.Partition != "" && limit == nil && len(st.Partitions) > 0 {
		names := make([]string, len(st.Partitions))
		for i, p := range st.Partitions {
			names[i] = p.Name
		}
		return fmt.Errorf("%w: -p %s: no such partition (the cluster has %s)", ErrCannotRun, q.Partition, strings.Join(names, ", "))
	}
	var nodes, withGPUs int
	for _, n := range st.Snap.Nodes {
		if part != "" && len(n.Partitions) > 0 && !slices.Contains(n.Partitions, part) {
			continue
		}
		nodes++
		if n.GPUs >= q.GPUsPerNode {
			withGPUs++
		}
	}
	where := "the cluster"
	if part != "" {
		where = "partition " + part
	}
	switch {
	case nodes == 0:
		return fmt.Errorf("%w: %s has no nodes", ErrCannotRun, where)
	case q.Nodes > nodes:
		return fmt.Errorf("%w: -N %d: %s has %d node(s)", ErrCannotRun, q.Nodes, where, nodes)
	case q.GPUsPerNode > 0 && q.Nodes > withGPUs:
		return fmt.Errorf("%w: --gres gpu:%d on %d node(s): %s has %d node(s) with that many GPUs", ErrCannotRun, q.GPUsPerNode, q.Nodes, where, withGPUs)
	case limit != nil && limit.MaxTime > 0 && q.TimeLimit > limit.MaxTime:
		return fmt.Errorf("%w: -t %s: %s allows at most %s (MaxTime)", ErrCannotRun, q.TimeLimit, where, limit.MaxTime)
	}
	return nil
}

// TrainedFor is the cluster the predictor was trained on (nil when its
// models do not say: trained before mirage recorded it).
func (w *WaitPredictor) TrainedFor() *ClusterShape {
	return w.Models[1].Meta().Cluster
}

// ShapeWarning says when the predictor was trained on a cluster of another
// shape than st's ("" when the same, or not recorded): its features count
// nodes and GPUs, so its answer there is an extrapolation.
func (w *WaitPredictor) ShapeWarning(st *ClusterState) string {
	trained := w.TrainedFor()
	if trained == nil {
		return ""
	}
	here := ShapeOf(st.Snap.Nodes)
	if here == *trained {
		return ""
	}
	return fmt.Sprintf("the wait model was trained on a cluster of %s, this one has %s: its answer extrapolates; train one on this cluster's own history (mirage train --trace, from its sacct)", trained, here)
}
