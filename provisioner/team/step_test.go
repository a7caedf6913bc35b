package team

import (
	"fmt"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Two submissions of one cycle cannot both count on the same quota or
// GPUs: Step judges each on the snapshot with the ones planned before it.
// One 8-GPU node on a backend that does not queue, team-a with a quota of
// 8 (team-b holds the rest of nothing: 0), borrowing on. Three new chains
// of team-a ask for 4 GPUs each, in order c1, c2, c3:
//
//	c1: 0 + 4 ≤ 8 within quota, n1 has 8 free → admit on n1 (4 left);
//	c2: 4 + 4 ≤ 8 (c1 counts) → admit on n1 (0 left);
//	c3: 8 + 4 > 8 over quota → borrow needs 4 idle GPUs: n1 has none → defer.
//
// Judged each on the bare snapshot, all three would have been admitted.
func TestStepReservesWithinCycle(t *testing.T) {
	r := rules(t, "teams: [{name: team-a, gpus: 8}, {name: team-b, gpus: 0}]")
	snap := cluster(1, 8).kubernetes().s
	var chains []provisioner.ChainRecord
	for i := 1; i <= 3; i++ {
		chains = append(chains, provisioner.ChainRecord{Chain: provisioner.Chain{ID: fmt.Sprintf("c%d", i), State: provisioner.ChainActive,
			Policy: provisioner.PolicyReactive, Account: "team-a", GPUs: 4, Nodes: 1, TimeLimit: time.Hour, Segments: 3, Created: rt0}})
	}
	plan := provisioner.Step(&provisioner.StepInput{Now: rt0, Snapshot: snap, Chains: chains, Rules: r})
	submitted := map[string]string{}
	for _, op := range plan.Ops {
		if op.Kind == provisioner.OpSubmit {
			submitted[op.Segment.ChainID] = fmt.Sprint(op.Request.NodeList)
		}
	}
	if len(submitted) != 2 || submitted["c1"] != "[n1]" || submitted["c2"] != "[n1]" {
		t.Errorf("submitted %v, want c1 and c2 on n1", submitted)
	}
	if snap.Nodes[0].GPUsUsed != 0 || len(snap.Jobs) != 0 {
		t.Errorf("the input snapshot changed: %+v", snap)
	}
}
