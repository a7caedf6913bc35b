package sim

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// A hand-off frees the predecessor's node after exactly the checkpoint time,
// and a job waiting for that node starts then. Worked by hand, one node of 4
// GPUs, no scheduler latency, C = 5 min:
//
//	t0        A (4 GPUs, runs 10 h) starts
//	t0+1h     B (4 GPUs) is submitted: pending, the node is full
//	t0+2h     A is signalled (the successor's `mirage handoff`)
//	t0+2h05m  A ends COMPLETED; B starts on the freed node
//
// Without a checkpoint time the signal changes nothing: B starts at t0+10h.
func TestSignalCheckpointFreesNodes(t *testing.T) {
	for _, c := range []struct {
		checkpoint   time.Duration
		aEnd, bStart time.Duration
		aState       provisioner.JobState
	}{
		{5 * time.Minute, 2*time.Hour + 5*time.Minute, 2*time.Hour + 5*time.Minute, provisioner.StateCompleted},
		{0, 10 * time.Hour, 10 * time.Hour, provisioner.StateCompleted},
	} {
		cfg := Defaults()
		cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}}
		cfg.Checkpoint = c.checkpoint
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
		s.SetStart(t0)
		s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return 10 * time.Hour })
		ctx := context.Background()
		req := provisioner.SubmitRequest{Name: "x", Account: "a", TimeLimit: 12 * time.Hour, Nodes: 1, GPUs: 4}
		a, err := s.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		s.Run(t0.Add(time.Hour))
		b, err := s.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		s.Run(t0.Add(2 * time.Hour))
		if err := s.Signal(ctx, a, "USR1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Signal(ctx, a, "USR1"); err != nil { // a second signal moves nothing
			t.Fatal(err)
		}
		s.Run(t0.Add(24 * time.Hour))
		ra, _ := s.Result(a)
		rb, _ := s.Result(b)
		if !ra.End.Equal(t0.Add(c.aEnd)) || ra.State != c.aState || !rb.Start.Equal(t0.Add(c.bStart)) {
			t.Errorf("checkpoint %v: A ended %s %s, B started %s; want A %s at +%v, B at +%v",
				c.checkpoint, ra.State, ra.End.Sub(t0), rb.Start.Sub(t0), c.aState, c.aEnd, c.bStart)
		}
	}
}

// OnStart sees each job start at its start time, and a hand-off done from
// it (the successor signalling its predecessor as it starts, as `mirage
// handoff` does) ends the predecessor exactly the checkpoint time later.
// Worked by hand: two nodes; A starts at t0 (runs 10 h); B is submitted at
// t0+1h and starts at once on the other node; A ends at t0+1h05m.
func TestOnStartHandOff(t *testing.T) {
	cfg := Defaults()
	cfg.Nodes = []NodeConfig{{Name: "n1", CPUs: 8, GPUs: 4}, {Name: "n2", CPUs: 8, GPUs: 4}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetCheckpoint(5 * time.Minute)
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	s.SetStart(t0)
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return 10 * time.Hour })
	ctx := context.Background()
	req := provisioner.SubmitRequest{Name: "x", Account: "a", TimeLimit: 12 * time.Hour, Nodes: 1, GPUs: 4}
	a, err := s.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var b string
	started := map[string]time.Time{}
	s.OnStart(func(id string) {
		started[id] = s.Now()
		if id == b {
			if err := s.Signal(ctx, a, "USR1"); err != nil {
				t.Error(err)
			}
		}
	})
	s.Run(t0.Add(time.Hour))
	if b, err = s.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	s.Run(t0.Add(24 * time.Hour))
	ra, _ := s.Result(a)
	if !started[b].Equal(t0.Add(time.Hour)) || !ra.End.Equal(t0.Add(time.Hour+5*time.Minute)) || ra.State != provisioner.StateCompleted {
		t.Errorf("B started %v, A ended %s at %v; want B at +1h, A COMPLETED at +1h05m", started[b].Sub(t0), ra.State, ra.End.Sub(t0))
	}
}
