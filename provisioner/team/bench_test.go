package team

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// BenchmarkDecide1213 is one whole team-rules decision (quota check against
// the cluster, usage, job-size mix learned from 3,000 running jobs, frag-aware
// placement, hints) on a 1,213-node snapshot with 8 GPUs per node.
func BenchmarkDecide1213(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 8))
	s := &provisioner.Snapshot{Time: rt0, Caps: provisioner.Capabilities{Queues: true}} // as Slurm (hints, never a node)
	for i := range 1213 {
		s.Nodes = append(s.Nodes, provisioner.Node{Name: fmt.Sprintf("node-%04d", i), State: provisioner.NodeUp, GPUs: 8})
	}
	teams := []string{"team-a", "team-b", "team-c", "team-d"}
	for i := range 3000 {
		n := &s.Nodes[rng.IntN(len(s.Nodes))]
		g := []int{1, 1, 1, 2, 2, 4, 8}[rng.IntN(7)]
		if n.GPUsUsed+g > n.GPUs {
			continue
		}
		n.GPUsUsed += g
		s.Jobs = append(s.Jobs, provisioner.Job{ID: fmt.Sprint(i), Account: teams[i%4], State: provisioner.StateRunning, GPUs: g, Nodes: 1,
			NodeList: []string{n.Name}, QOS: "normal", Start: rt0.Add(-time.Hour)})
	}
	cfg, err := ParseConfig([]byte("teams: [{name: team-a, gpus: 2400}, {name: team-b, gpus: 2400}, {name: team-c, gpus: 2400}, {name: team-d, gpus: 2400}]"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRules(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := provisioner.SubmitRequest{Account: "team-b", GPUs: 4}
		d, err := r.Decide(DecideInput{Now: rt0, Snapshot: s, Request: &req})
		if err != nil || d.Verdict != VerdictAdmit {
			b.Fatal(err, d)
		}
	}
}
