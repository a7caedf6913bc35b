package team

import (
	"errors"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// fragSnapshot is the fragmentation scenario as a Slurm snapshot: A's six
// 3-GPU jobs spread 6/6/3/3 over 4 × 10 GPUs, one of them borrowed.
const fragSnapshot = `nodes:
  - {name: n1, gpus: 10, gpusUsed: 6}
  - {name: n2, gpus: 10, gpusUsed: 6}
  - {name: n3, gpus: 10, gpusUsed: 3}
  - {name: n4, gpus: 10, gpusUsed: 3}
jobs:
  - {id: "1", account: team-a, state: RUNNING, gpus: 3, nodeList: [n1], qos: normal}
  - {id: "2", account: team-a, state: running, gpus: 3, nodeList: [n1], qos: normal}
  - {id: "3", account: team-a, state: RUNNING, gpus: 3, nodeList: [n2], qos: normal}
  - {id: "4", account: team-a, state: RUNNING, gpus: 3, nodeList: [n2], qos: preemptible}
  - {id: "5", account: team-a, state: RUNNING, gpus: 3, nodeList: [n3], qos: normal}
  - {id: "6", account: team-a, state: RUNNING, gpus: 3, nodeList: [n4], qos: normal}
`

func TestParseSnapshot(t *testing.T) {
	s, err := ParseSnapshot([]byte(fragSnapshot), "snap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 4 || s.Nodes[0].State != provisioner.NodeUp || s.Jobs[1].State != provisioner.StateRunning {
		t.Errorf("parsed %+v", s)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"not yaml", "nodes: [", "snapshot s.yaml: "},
		{"no nodes", "jobs: []", "no nodes"},
		{"no name", "nodes: [{gpus: 2}]", "nodes[0]: no name"},
		{"twice", "nodes: [{name: n1}, {name: n1}]", "node n1 listed twice"},
		{"too many GPUs", "nodes: [{name: n1, gpus: 5000}]", "5000 GPUs, more than 4096"},
		{"used", "nodes: [{name: n1, gpus: 2, gpusUsed: 3}]", "gpusUsed 3 of gpus 2"},
		{"state", "nodes: [{name: n1, gpus: 2, state: broken}]", `state "broken"`},
		{"unknown node", "nodes: [{name: n1, gpus: 2}]\njobs: [{id: x, state: RUNNING, gpus: 1, nodeList: [n9]}]", "unknown node n9"},
	} {
		_, err := ParseSnapshot([]byte(tc.yaml), "s.yaml")
		if !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ErrBadSnapshot.Error()) {
			t.Errorf("%s: %v, want ErrBadSnapshot with the message %q only", tc.name, err, tc.want)
		}
	}
}

// FuzzParseSnapshot: a snapshot file either parses into nodes the placement
// accepts (then placing a job does not panic) or fails as bad input.
func FuzzParseSnapshot(f *testing.F) {
	f.Add([]byte(fragSnapshot))
	f.Add([]byte(`{"nodes":[{"name":"n1","gpus":8,"state":"drained"}],"jobs":[{"id":"1","state":"pending","gpus":2}]}`))
	f.Add([]byte("nodes: [{name: n1, gpus: 2, gpusUsed: 3}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSnapshot(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error without ErrBadSnapshot: %v", err)
			}
			return
		}
		st := placement.FromSnapshot(s)
		if _, err := placement.Place(st, placement.Demand{GPUMilli: 1000}, placement.FragAware, placement.Options{}); err != nil {
			t.Fatalf("place on a parsed snapshot: %v", err)
		}
	})
}

// Explain on the fragmentation snapshot. With the rules: team-b's 8-GPU job
// is within quota but fits no node (4, 4, 7, 7 free): queued, every node
// rejected for free GPUs. Without rules: the placement alone, best-fit on
// n3 (7 free, first by name among the tie with n4) for a 6-GPU job, and only
// the best five candidates unless All.
func TestExplain(t *testing.T) {
	s, err := ParseSnapshot([]byte(fragSnapshot), "snap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rules(t, twoTeams)
	e, err := Explain(ExplainInput{Rules: r, Now: rt0, Snapshot: s, Request: provisioner.SubmitRequest{Account: "team-b", GPUs: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Team != "team-b" || e.Verdict != string(VerdictQueue) || e.Usage == nil || e.Usage.Quota != 20 || e.Policy != "frag-aware" ||
		e.Rejected[placement.ReasonGPUs] != 4 || len(e.Nodes) != 0 || len(e.Ranked) != 0 || e.RejectedN != nil {
		t.Errorf("rules: %+v", e)
	}
	e, err = Explain(ExplainInput{Policy: placement.BestFit, Now: rt0, Snapshot: s, Request: provisioner.SubmitRequest{Account: "x", GPUs: 6}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.Verdict != "placed" || e.Usage != nil || len(e.Nodes) != 1 || e.Nodes[0] != "n3" || len(e.Ranked) != 2 || e.Ranked[0].Norm != 1 ||
		!strings.HasSuffix(e.Reason, " (no --rules: quotas not checked)") || len(e.RejectedN) != 2 {
		t.Errorf("placement only: %+v", e)
	}
	if _, err := Explain(ExplainInput{Now: rt0, Snapshot: s, Request: provisioner.SubmitRequest{GPUs: 12}}); !errors.Is(err, placement.ErrJobTooLarge) {
		t.Errorf("12 GPUs: %v", err)
	}
}
