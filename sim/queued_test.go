package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// QueuedGPUHours on a schedule worked by hand: one node of 4 GPUs,
// allocated whole (the default partition is exclusive), 1 h jobs but T1:
//
//	T1 4 GPUs, submitted 0:00, runs 0:00–2:00 (2 h)
//	T2 2 GPUs, submitted 0:30, runs 2:00–3:00: queued 1.5 h × 2 = 3 GPU-h
//	T3 2 GPUs, submitted 1:00, runs 3:00–4:00: queued 2 h × 2 = 4 GPU-h
//	T4 4 GPUs, submitted 5:00, runs 5:00–6:00: not queued
//
// 7 GPU-h in all. With X, a job submitted through the seam at 4:30 (1 h),
// the idle node runs X 4:30–5:30 and T4 waits 0.5 h × 4 = 2 GPU-h: 9 in
// all (X itself is not counted), so X cost the others 2 GPU-h.
func TestQueuedGPUHours(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	build := func(withX bool) *Sim {
		cfg := Defaults()
		cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		job := func(id string, at time.Duration, gpus int, run time.Duration) JobSpec {
			return JobSpec{ID: id, User: "u", Account: "a", Submit: t0.Add(at), TimeLimit: 3 * time.Hour, Runtime: run, Nodes: 1, GPUs: gpus}
		}
		if err := s.Load([]JobSpec{job("T1", 0, 4, 2*time.Hour), job("T2", 30*time.Minute, 2, time.Hour), job("T3", time.Hour, 2, time.Hour),
			job("T4", 5*time.Hour, 4, time.Hour)}); err != nil {
			t.Fatal(err)
		}
		s.SetStart(t0)
		if withX {
			s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return time.Hour })
			s.Run(t0.Add(270 * time.Minute))
			if _, err := s.Submit(context.Background(), provisioner.SubmitRequest{Name: "X", Account: "a", TimeLimit: 3 * time.Hour, Nodes: 1, GPUs: 4}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %.4f GPU-h queued, want %.4f", what, got, want)
		}
	}
	s := build(false)
	s.Run(t0.Add(90 * time.Minute))
	near("to 1:30 (T2, T3 still pending: counted until now)", s.QueuedGPUHours(t0, t0.Add(24*time.Hour)), 1*2+0.5*2)
	s.Run(t0.Add(24 * time.Hour))
	near("whole day", s.QueuedGPUHours(t0, t0.Add(24*time.Hour)), 1.5*2+2*2)
	near("window 1:00–2:30", s.QueuedGPUHours(t0.Add(time.Hour), t0.Add(150*time.Minute)), 1*2+1.5*2)
	near("empty window", s.QueuedGPUHours(t0.Add(time.Hour), t0.Add(time.Hour)), 0)
	x := build(true)
	x.Run(t0.Add(24 * time.Hour))
	near("with X", x.QueuedGPUHours(t0, t0.Add(24*time.Hour)), 1.5*2+2*2+0.5*4)
}
