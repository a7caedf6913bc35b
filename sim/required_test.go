package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// A pending job whose node list (--nodelist) names busy nodes keeps the
// main scheduler off those nodes only; it does not block its partition, as
// slurmctld's _schedule does for a job with required nodes. Two nodes of 4
// GPUs, allocated whole, no latency, no backfill (the main pass alone
// starts jobs); every job 1 node:
//
//	0:00  A (trace) starts on n1, runs 2 h
//	0:10  P is submitted through the seam pinned to n1: pending (n1 busy)
//	0:20  Q (trace) arrives: P ranks above it (older), but Q needs any
//	      node and n2 is free: the main pass starts it at 0:20
//	2:00  A ends; P starts on n1 (Q holds n2 until 3:20)
//
// Blocking the partition instead, Q would wait until P starts at 2:00.
func TestRequiredNodesDoNotBlockThePartition(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor
	cfg.PriorityWeightAge = 1000 // older first
	cfg.Backfill = false
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}, {Name: "n2", CPUs: 8, GPUs: 4}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at, run time.Duration) JobSpec {
		return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: 4 * time.Hour, Runtime: run, Nodes: 1, GPUs: 4}
	}
	if err := s.Load([]JobSpec{job("A", 0, 2*time.Hour), job("Q", 20*time.Minute, 3*time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return time.Hour })
	s.Run(t0.Add(10 * time.Minute))
	p, err := s.Submit(context.Background(), provisioner.SubmitRequest{Name: "P", Account: "a", TimeLimit: 4 * time.Hour, Nodes: 1, GPUs: 4, NodeList: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(24 * time.Hour))
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"A", 0}, {p, 2 * time.Hour}, {"Q", 20 * time.Minute}} {
		res, err := s.Result(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Start.Sub(t0); got != c.start {
			t.Errorf("job %s started at +%s, want +%s", c.id, got, c.start)
		}
	}
}

// The backfill planner plans a job with a node list on those nodes: not
// before they are all free. Five nodes, allocated whole, no latency:
//
//	0:00  A (2 nodes, limit 10 h) starts on n1, n2; D (1 node, 2 h) on n3
//	0:05  B (5 nodes, 4 h) arrives: it cannot start and, unpinned, blocks
//	      the main pass; the planner reserves all five nodes at 10:00
//	0:10  P (2 nodes, 5 h) is submitted pinned to n1, n2: planned at
//	      10:00, when A's limit frees them, hence after B, at 14:00
//	0:20  Q (2 nodes, 4 h) arrives: n4, n5 are free until B's 10:00, so
//	      the planner starts it at once
//	10:00 A ends, B starts on all five; 14:00 B ends, P starts
//
// Planned on any two nodes instead, P would take two from 2:00 (when D
// frees n3, three are idle) and Q could not start before then.
func TestBackfillPlansRequiredNodes(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor
	cfg.PriorityWeightAge = 1000 // older first
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: n, CPUs: 8, GPUs: 4})
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Duration, nodes int, limit time.Duration) JobSpec {
		return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: limit, Runtime: limit, Nodes: nodes, GPUs: 4 * nodes}
	}
	if err := s.Load([]JobSpec{job("A", 0, 2, 10*time.Hour), job("D", 0, 1, 2*time.Hour), job("B", 5*time.Minute, 5, 4*time.Hour),
		job("Q", 20*time.Minute, 2, 4*time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return 5 * time.Hour })
	s.Run(t0.Add(10 * time.Minute))
	p, err := s.Submit(context.Background(), provisioner.SubmitRequest{Name: "P", Account: "a", TimeLimit: 5 * time.Hour, Nodes: 2, GPUs: 8, NodeList: []string{"n1", "n2"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(48 * time.Hour))
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"A", 0}, {"D", 0}, {"Q", 20 * time.Minute}, {"B", 10 * time.Hour}, {p, 14 * time.Hour}} {
		res, err := s.Result(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Start.Sub(t0); got != c.start {
			t.Errorf("job %s started at +%s, want +%s", c.id, got, c.start)
		}
	}
}

// Jobs of equal priority start in submission order, whether they came
// from the trace or through the seam: slurmctld sorts equal priorities by
// increasing job id, which it hands out in submission order. One node,
// allocated whole, priority/multifactor with every weight 0 (all
// priorities equal), no latency:
//
//	0:00  A (trace, 1 h) starts
//	0:10  P is submitted through the seam: pending
//	0:20  T (trace) arrives: pending
//	1:00  A ends: P, submitted first, starts (until 2:00); then T
//
// Ranked by load index instead, every trace job would go before every
// job of the seam: T at 1:00 and P at 2:00.
func TestEqualPrioritiesStartInSubmissionOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor // every weight 0
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Duration) JobSpec {
		return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: time.Hour, Runtime: time.Hour, Nodes: 1, GPUs: 4}
	}
	if err := s.Load([]JobSpec{job("A", 0), job("T", 20*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return time.Hour })
	s.Run(t0.Add(10 * time.Minute))
	p, err := s.Submit(context.Background(), provisioner.SubmitRequest{Name: "P", Account: "a", TimeLimit: time.Hour, Nodes: 1, GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(24 * time.Hour))
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"A", 0}, {p, time.Hour}, {"T", 2 * time.Hour}} {
		res, err := s.Result(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Start.Sub(t0); got != c.start {
			t.Errorf("job %s started at +%s, want +%s", c.id, got, c.start)
		}
	}
}

// The decision callback runs after the scheduler's passes of its second,
// as a daemon reads squeue after slurmctld has scheduled what happened at
// the start of that second. Two nodes, allocated whole, a callback every
// 10 minutes from 0:00:
//
//	0:00  A starts on n1 (1 h)
//	0:10  B arrives; the main pass of 0:10 starts it on n2; the callback of
//	      0:10 sees B running and no idle node
//
// Run before the passes, the callback would see B pending and n2 idle.
func TestTickSeesTheSecondsPasses(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}, {Name: "n2", CPUs: 8, GPUs: 4}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Duration) JobSpec {
		return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: time.Hour, Runtime: time.Hour, Nodes: 1, GPUs: 4}
	}
	if err := s.Load([]JobSpec{job("A", 0), job("B", 10*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	var seen []string
	s.OnTick(10*time.Minute, func(now time.Time, c provisioner.Cluster) {
		snap, err := c.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		idle := 0
		for _, n := range snap.Nodes {
			if n.GPUsUsed == 0 {
				idle++
			}
		}
		b := "absent"
		for _, j := range snap.Jobs {
			if j.ID == "B" {
				b = string(j.State)
			}
		}
		seen = append(seen, fmt.Sprintf("%s B %s, %d idle", now.Sub(t0), b, idle))
	})
	s.Run(t0.Add(15 * time.Minute))
	want := []string{"10m0s B RUNNING, 0 idle"}
	if !slices.Equal(seen, want) {
		t.Errorf("the callbacks saw %q, want %q", seen, want)
	}
}
