package traces

import (
	"math"
	"testing"
	"time"
)

func TestStatsSmall(t *testing.T) {
	r, err := Open("testdata/ls6-small.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := ComputeStats(r)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-worked from the fixture (see TestLS6Small): runtimes 7200, 600,
	// 18000 s → sorted 600, 7200, 18000; p50 = 7200; p90 = 7200 + 0.8·10800 =
	// 15840; p99 = 7200 + 0.98·10800 = 17784. Waits 60, 3630, 1800 → sorted
	// 60, 1800, 3630: p50 1800, p90 1800 + 0.8·1830 = 3264.
	// Jobs 100 (10:00–12:00 CDT, 1 node) and 101 (12:00:30–12:10:30, 2 nodes)
	// do not overlap; 102 has 4 nodes: peak 4 nodes, 12 GPUs.
	// Hits: 100 (2 h of 2 h) and 102 (5 h of 4.5 h): 2 of 3.
	want := struct {
		jobs                       int
		rt50, rt90, rt99, w50, w90 float64
		peakN, peakG, hit          int
	}{3, 7200, 15840, 17784, 1800, 3264, 4, 12, 2}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if s.Jobs != want.jobs || !near(s.Runtime.P50, want.rt50) || !near(s.Runtime.P90, want.rt90) || !near(s.Runtime.P99, want.rt99) ||
		!near(s.Wait.P50, want.w50) || !near(s.Wait.P90, want.w90) || s.PeakNodes != want.peakN || s.PeakGPUs != want.peakG || s.HitLimit != want.hit || s.WithLimit != 3 {
		t.Errorf("stats %+v, want %+v", s, want)
	}
	if s.Nodes[0].Count != 1 || s.Nodes[1].Count != 1 || s.Nodes[3].Count != 1 || s.GPUs[3].Count != 1 || s.GPUs[4].Count != 1 || s.GPUs[5].Count != 1 {
		t.Errorf("distributions nodes %+v gpus %+v", s.Nodes, s.GPUs)
	}
	if !s.PeakNodesAt.Equal(time.Date(2022, 11, 6, 4, 30, 0, 0, time.UTC)) {
		t.Errorf("peak at %v", s.PeakNodesAt)
	}
}

func TestPeakSweepTouching(t *testing.T) {
	// A job starting exactly when another ends does not overlap it.
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewStatsBuilder()
	b.Add(&Job{Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 2, GPUs: 6})
	b.Add(&Job{Submit: t0, Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour), Nodes: 3, GPUs: 9})
	b.Add(&Job{Submit: t0, Start: t0.Add(30 * time.Minute), End: t0.Add(90 * time.Minute), Nodes: 1, GPUs: 3})
	s := b.Stats()
	// 0:00 2 → 0:30 3 → 1:00 (end 2, start 3) 4 → 1:30 3 → 2:00 0
	if s.PeakNodes != 4 || s.PeakGPUs != 12 {
		t.Errorf("peak %d nodes %d gpus, want 4 and 12", s.PeakNodes, s.PeakGPUs)
	}
}
