package sim

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// A job with a begin time (sbatch --begin, SubmitRequest.Begin) pends for
// that reason until then and is started by the next backfill pass after it
// (Slurm has no event for a begin time), not at once. Two nodes of 4 GPUs,
// no latency, backfill every 30 s from 0:00; every job 1 node:
//
//	0:00     A (trace) starts on n1, runs 2 h
//	0:10:00  B submitted with begin 0:12:10: pending (BeginTime), though
//	         n2 is free; eligible at 0:12:10, started by the backfill pass
//	         at 0:12:30
func TestBeginTime(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.SchedLatency = 0
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}, {Name: "n2", CPUs: 8, GPUs: 4}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load([]JobSpec{{ID: "A", User: "u", Account: "a", Submit: t0, TimeLimit: 4 * time.Hour, Runtime: 2 * time.Hour, Nodes: 1, GPUs: 4}}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return time.Hour })
	ctx := context.Background()
	req := provisioner.SubmitRequest{Account: "a", TimeLimit: 4 * time.Hour, Nodes: 1, GPUs: 4}

	s.Run(t0.Add(10 * time.Minute))
	rb := req
	rb.Name, rb.Begin = "B", t0.Add(12*time.Minute+10*time.Second)
	b, err := s.Submit(ctx, rb)
	if err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(12 * time.Minute))
	wantPending(t, s, b, "BeginTime")

	s.Run(t0.Add(24 * time.Hour))
	for _, w := range []struct {
		id    string
		start time.Duration
	}{{"A", 0}, {b, 12*time.Minute + 30*time.Second}} {
		res, err := s.Result(w.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Start.Sub(t0); got != w.start {
			t.Errorf("job %s started at +%s, want +%s", w.id, got, w.start)
		}
	}
}

// wantPending fails unless job id is pending in s's snapshot for reason.
func wantPending(t *testing.T, s *Sim, id, reason string) {
	t.Helper()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range snap.Jobs {
		if j.ID == id {
			if j.State != provisioner.StatePending || j.Reason != reason {
				t.Errorf("at %s job %s is %s (%s), want pending (%s)", s.Now().Format("15:04:05"), id, j.State, j.Reason, reason)
			}
			return
		}
	}
	t.Errorf("at %s job %s is not in the snapshot, want pending (%s)", s.Now().Format("15:04:05"), id, reason)
}
