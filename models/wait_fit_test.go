package models

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// TestWaitQueryRunnable (#51): a job the cluster can never run gets no
// predicted wait. The cluster: three nodes of 4 GPUs in partition debug
// (the default, MaxTime 10 min) and one in long (no limit).
func TestWaitQueryRunnable(t *testing.T) {
	st := &ClusterState{Snap: &provisioner.Snapshot{Nodes: []provisioner.Node{
		{Name: "n1", GPUs: 4, Partitions: []string{"debug"}}, {Name: "n2", GPUs: 4, Partitions: []string{"debug"}},
		{Name: "n3", GPUs: 4, Partitions: []string{"debug"}}, {Name: "n4", GPUs: 8, Partitions: []string{"long"}},
	}}, Partitions: []PartitionLimit{{Name: "debug", Default: true, MaxTime: 10 * time.Minute}, {Name: "long"}}}
	for _, c := range []struct {
		q    WaitQuery
		want string // "" runs
	}{
		{WaitQuery{Nodes: 3, TimeLimit: 10 * time.Minute, GPUsPerNode: -1}, ""},
		{WaitQuery{Nodes: 8, TimeLimit: 48 * time.Hour, GPUsPerNode: -1}, "-N 8: partition debug has 3 node(s)"},
		{WaitQuery{Nodes: 1, TimeLimit: 48 * time.Hour, GPUsPerNode: -1}, "-t 48h0m0s: partition debug allows at most 10m0s (MaxTime)"},
		{WaitQuery{Nodes: 1, TimeLimit: 48 * time.Hour, GPUsPerNode: 8, Partition: "long"}, ""},
		{WaitQuery{Nodes: 1, TimeLimit: time.Minute, GPUsPerNode: 8}, "--gres gpu:8 on 1 node(s): partition debug has 0 node(s) with that many GPUs"},
		{WaitQuery{Nodes: 2, TimeLimit: time.Minute, GPUsPerNode: -1, Partition: "long"}, "-N 2: partition long has 1 node(s)"},
		{WaitQuery{Nodes: 1, TimeLimit: time.Minute, GPUsPerNode: -1, Partition: "gpu"}, "-p gpu: no such partition (the cluster has debug, long)"},
	} {
		err := c.q.Runnable(st)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want runnable", c.q, err)
		case c.want != "" && (!errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want ErrCannotRun saying %q", c.q, err, c.want)
		}
	}
	// Without partitions (a snapshot file): nodes are checked, times cannot be.
	st.Partitions = nil
	if err := (&WaitQuery{Nodes: 5, TimeLimit: 48 * time.Hour, GPUsPerNode: -1}).Runnable(st); err == nil || !strings.Contains(err.Error(), "-N 5: the cluster has 4 node(s)") {
		t.Errorf("5 nodes of 4 without partitions: %v", err)
	}
	if err := (&WaitQuery{Nodes: 4, TimeLimit: 48 * time.Hour, GPUsPerNode: -1}).Runnable(st); err != nil {
		t.Errorf("4 nodes of 4 without partitions: %v", err)
	}
}

// TestShapeOf: the largest node's GPUs, every node counted.
func TestShapeOf(t *testing.T) {
	s := ShapeOf([]provisioner.Node{{GPUs: 3}, {GPUs: 4, State: provisioner.NodeDown}, {GPUs: 0}})
	if s != (ClusterShape{Nodes: 3, GPUsPerNode: 4}) || s.String() != "3 nodes × 4 GPUs" {
		t.Errorf("ShapeOf = %+v (%s)", s, s)
	}
}
