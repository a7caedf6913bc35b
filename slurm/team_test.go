package slurm

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// What the team rules decide travels to sbatch on the request: team-a
// holds its whole quota of 4 GPUs, so its next job borrows idle GPUs and
// is submitted with the rules' preemptible QOS. The snapshot Slurm gives
// says it queues (so the rules hint, never bind).
func TestRulesReachSbatch(t *testing.T) {
	cfg, err := team.ParseConfig([]byte("teams: [{name: team-a, gpus: 4}, {name: team-b, gpus: 4}]"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := team.NewRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "123\n"}}}}
	c, _ := newTestClient(t, r, nil)
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	snap := &provisioner.Snapshot{Time: now, Caps: Capabilities,
		Nodes: []provisioner.Node{{Name: "n1", State: provisioner.NodeUp, GPUs: 8, GPUsUsed: 4}},
		Jobs: []provisioner.Job{{ID: "1", Account: "team-a", State: provisioner.StateRunning, GPUs: 4, Nodes: 1,
			NodeList: []string{"n1"}, QOS: "normal"}}}
	req := provisioner.SubmitRequest{Name: "a2", Script: "job.sh", Account: "team-a", GPUs: 2}
	a, err := rules.Admit(now, snap, &req)
	if err != nil || !a.Allow || !a.Borrowed || a.Reclaim != nil || req.QOS != team.DefaultBorrowedQOS {
		t.Fatalf("admission %+v %v, request QOS %q", a, err, req.QOS)
	}
	id, err := c.Submit(context.Background(), req)
	if err != nil || id != "123" {
		t.Fatalf("submit: %q %v", id, err)
	}
	if args := r.calls[len(r.calls)-1].args; !slices.Contains(args, "--qos="+team.DefaultBorrowedQOS) {
		t.Errorf("sbatch %v lacks the borrowed QOS", args)
	}
}
