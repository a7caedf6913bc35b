package sim

import (
	"testing"
	"time"
)

// On a shared partition the backfill planner plans node by node, as
// sched/backfill's will-run test does: free GPUs summed over the partition
// are not a place a job fits. Four nodes of 4 GPUs, shared (cons_tres),
// priority by submission, no latency; runtimes equal limits:
//
//	0:00  R1..R4 (3 GPUs, 10 h) start on n1..n4; r1..r3 (1 GPU, 1 h) fill
//	      n1..n3; n4 keeps 1 GPU free
//	0:05  B (1 node, 4 GPUs, 6 h) arrives: no node has 4 GPUs before
//	      10:00, when R1 ends, so it is planned on n1 at 10:00 and n1 is
//	      reserved over [10:00, 16:00). It blocks the main pass.
//	0:10  S (1 node, 1 GPU, 2 h) arrives: n4 has its GPU and no
//	      reservation, so the backfill pass of 0:10 (every 30 s from
//	      0:00, after the arrivals of the same second) starts it at once
//	10:00 R1..R4 end; B starts on n1
//
// Planned on the partition's GPU count instead, B would take 4 GPUs from
// 1:00 (when r1..r3 end, 1 + 3 GPUs are free, on four nodes) and S, whose
// 2 hours cross 1:00, would wait for that plan to fail at 1:00 and
// start at the pass after r1..r3 end (1:00:30).
func TestBackfillPlansSharedNodesOneByOne(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: n, CPUs: 64, GPUs: 4})
	}
	cfg.Partitions = []PartitionConfig{{Name: "gpu", Nodes: []string{"n1", "n2", "n3", "n4"}, MaxTime: 48 * time.Hour, Default: true}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Duration, gpus int, limit time.Duration) JobSpec {
		return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: limit, Runtime: limit, Nodes: 1, GPUs: gpus, CPUs: 1}
	}
	jobs := []JobSpec{job("R1", 0, 3, 10*time.Hour), job("R2", 0, 3, 10*time.Hour), job("R3", 0, 3, 10*time.Hour), job("R4", 0, 3, 10*time.Hour),
		job("r1", time.Second, 1, time.Hour), job("r2", time.Second, 1, time.Hour), job("r3", time.Second, 1, time.Hour),
		job("B", 5*time.Minute, 4, 6*time.Hour), job("S", 10*time.Minute, 1, 2*time.Hour)}
	if err := s.Load(jobs); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.Run(t0.Add(48 * time.Hour))
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"R1", 0}, {"r1", time.Second}, {"S", 10 * time.Minute}, {"B", 10 * time.Hour}} {
		res, err := s.Result(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Start.Sub(t0); got != c.start {
			t.Errorf("job %s started at +%s, want +%s", c.id, got, c.start)
		}
	}
}
