package k8s

import (
	"testing"
)

// The view of testCluster under a reference job of 4 GPUs: free whole GPUs
// are 3, 2, 4, 8 on the up nodes n1..n4 (none counted on the cordoned n5 and
// the not-ready n6); FRAG is the free GPUs of a node that cannot fit 4:
// 3 + 2 = 5. Quotas of 10 each: team-a holds 18 GPUs of which 6 borrowed, so
// 12 against its quota and none free; team-b holds 7: 3 free.
func TestInventoryView(t *testing.T) {
	nodes, pods, m := testCluster()
	inv := BuildInventory(t0, nodes, pods, m)
	quota := func(team string) (int, bool) { return 10, team == "team-a" || team == "team-b" }
	v := inv.View(ViewOptions{JobSize: 4, Quota: quota})
	frag := map[string]float64{}
	for _, n := range v.Nodes {
		frag[n.Name] = n.Frag
	}
	want := map[string]float64{"n1": 3, "n2": 2, "n3": 0, "n4": 0, "n5": 0, "n6": 0}
	for n, f := range want {
		if frag[n] != f {
			t.Errorf("FRAG %s = %v, want %v", n, frag[n], f)
		}
	}
	if v.Frag != 5 || v.JobSize != 4 || v.Mix != "" || v.Time != "2026-11-22T12:00:00Z" {
		t.Errorf("view %+v", v)
	}
	free := map[string]int{}
	for _, tv := range v.Teams {
		if tv.Quota != nil {
			free[tv.Team] = *tv.Free
		}
	}
	if free["team-a"] != 0 || free["team-b"] != 3 || len(free) != 2 {
		t.Errorf("free quota %v", free)
	}
	// One team: its row and the nodes it uses.
	v = inv.View(ViewOptions{JobSize: 4, Team: "team-b"})
	if len(v.Teams) != 1 || v.Teams[0].Quota != nil || len(v.Nodes) != 2 || v.Nodes[0].Name != "n2" || v.Nodes[1].Name != "n4" {
		t.Errorf("team-b view %+v", v)
	}
}
