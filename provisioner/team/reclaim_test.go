package team

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

func isBorrowed(j *provisioner.Job) bool { return j.QOS == DefaultBorrowedQOS }

func victims(p *ReclaimPlan) []string {
	var ids []string
	for _, v := range p.Victims {
		ids = append(ids, v.JobID)
	}
	return ids
}

// Victim choice, worked by hand. Two full 10-GPU nodes:
//
//	n1: own 5 (not borrowed); borrowed x 2 GPUs prio 100, y 3 GPUs prio 100
//	    (checkpointed 10 min ago).
//	n2: own 2; borrowed z 5 GPUs prio 50, w 3 GPUs prio 200.
//
// Need 3 GPUs: candidate sets freeing ≥ 3: n1 {y} 3, {x,y} 5; n2 {w} 3, {z} 5,
// {z,w} 8. Fewest GPUs freed: {y} and {w} (3); lower priority: y (100 < 200).
// Need 4: n1 {x,y} 5 (max prio 100); n2 {z} 5 (max prio 50), {z,w} 8, {w} 3 < 4.
// Fewest freed: 5 for both; lower priority: {z}. Need 6: n1 cannot (5
// borrowed); n2 {z,w} 8 is the only set: both. Need 9: no node can free enough.
func TestPlanReclaimCriteria(t *testing.T) {
	b := cluster(2, 10)
	b.run("own1", "team-a", 5, "n1")
	b.borrowed("x", "team-a", 2, "n1").Priority = 100
	y := b.borrowed("y", "team-a", 3, "n1")
	y.Priority, y.Checkpoint = 100, rt0.Add(-10*time.Minute)
	b.run("own2", "team-a", 2, "n2")
	b.borrowed("z", "team-c", 5, "n2").Priority = 50
	b.borrowed("w", "team-c", 3, "n2").Priority = 200
	plan := func(gpus int) (*ReclaimPlan, error) {
		return PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(gpus), IsBorrowed: isBorrowed,
			Grace: 30 * time.Second})
	}
	for _, tc := range []struct {
		need  int
		node  string
		want  []string
		freed int
	}{
		{3, "n1", []string{"y"}, 3},
		{4, "n2", []string{"z"}, 5},
		{6, "n2", []string{"w", "z"}, 8},
	} {
		p, err := plan(tc.need)
		if err != nil {
			t.Fatalf("need %d: %v", tc.need, err)
		}
		if p.Node != tc.node || !slices.Equal(victims(p), tc.want) || p.FreedGPUs != tc.freed {
			t.Errorf("need %d: %s %v freed %d, want %s %v %d", tc.need, p.Node, victims(p), p.FreedGPUs, tc.node, tc.want, tc.freed)
		}
	}
	if _, err := plan(9); !errors.Is(err, ErrNoReclaim) {
		t.Errorf("need 9: %v", err)
	}
	// y's progress counts from its checkpoint (10 min), x's from its start (1 h).
	p, _ := plan(3)
	if p.Victims[0].Progress != 10*time.Minute {
		t.Errorf("y progress %v", p.Victims[0].Progress)
	}
	// The steps: signal, wait the grace period, evict, place.
	want := []ReclaimStep{
		{Kind: StepSignal, JobID: "y", Signal: "USR1"},
		{Kind: StepWait, Grace: 30 * time.Second},
		{Kind: StepEvict, JobID: "y", Grace: 30 * time.Second},
		{Kind: StepPlace, Node: "n1"},
	}
	if len(p.Steps) != len(want) {
		t.Fatalf("steps %+v", p.Steps)
	}
	for i, s := range p.Steps {
		if s.Reason == "" {
			t.Errorf("step %d has no reason", i)
		}
		s.Reason = ""
		if s != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, s, want[i])
		}
	}
}

// Least progress since the last checkpoint breaks a tie of size and
// priority: two borrowed 4-GPU jobs of equal priority on two nodes; p1
// started 1 h ago, p2 started 3 h ago but checkpointed 5 minutes ago → p2.
func TestPlanReclaimProgress(t *testing.T) {
	b := cluster(2, 10)
	b.run("o1", "team-a", 6, "n1")
	b.borrowed("p1", "team-a", 4, "n1")
	b.run("o2", "team-a", 6, "n2")
	p2 := b.borrowed("p2", "team-a", 4, "n2")
	p2.Start, p2.Checkpoint = rt0.Add(-3*time.Hour), rt0.Add(-5*time.Minute)
	p, err := PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(4), IsBorrowed: isBorrowed})
	if err != nil || !slices.Equal(victims(p), []string{"p2"}) {
		t.Errorf("plan %+v %v, want p2", p, err)
	}
	// Without the checkpoint p1 has less progress (1 h < 3 h).
	b.s.Job("p2").Checkpoint = time.Time{}
	p, err = PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(4), IsBorrowed: isBorrowed})
	if err != nil || !slices.Equal(victims(p), []string{"p1"}) {
		t.Errorf("plan %+v %v, want p1", p, err)
	}
}

// Work within quota is never a victim, however much it holds; nor is work on
// nodes the job cannot use (cordoned, wrong type, excluded).
func TestPlanReclaimOnlyBorrowed(t *testing.T) {
	b := cluster(3, 10)
	b.run("own", "team-a", 10, "n1")
	b.borrowed("bw", "team-a", 10, "n2")
	b.s.Nodes[1].State = provisioner.NodeDrained
	b.borrowed("bx", "team-a", 10, "n3")
	_, err := PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(2), IsBorrowed: isBorrowed, Exclude: []string{"n3"}})
	if !errors.Is(err, ErrNoReclaim) {
		t.Errorf("only own work and borrowed work on unusable nodes: %v", err)
	}
	p, err := PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(2), IsBorrowed: isBorrowed})
	if err != nil || !slices.Equal(victims(p), []string{"bx"}) {
		t.Errorf("plan %+v %v, want bx", p, err)
	}
	if _, err := PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Demand: placement.Demand{GPUMilli: 2000, Nodes: 2}, IsBorrowed: isBorrowed}); !errors.Is(err, ErrNoReclaim) {
		t.Errorf("multi-node: %v", err)
	}
}

func gpus1(n int) placement.Demand { return placement.Demand{GPUMilli: n * placement.MilliGPU} }
