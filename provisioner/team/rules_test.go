package team

import (
	"errors"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

var rt0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// snapB builds snapshots: nodes, and running jobs that add to their node's use.
type snapB struct{ s *provisioner.Snapshot }

// cluster is a snapshot of a backend that queues (as Slurm); kubernetes()
// turns it into one of a backend that does not.
func cluster(nodes int, gpus int) *snapB {
	b := &snapB{&provisioner.Snapshot{Time: rt0, Caps: provisioner.Capabilities{Queues: true, Unpins: true}}}
	for i := 1; i <= nodes; i++ {
		b.s.Nodes = append(b.s.Nodes, provisioner.Node{Name: "n" + string(rune('0'+i)), State: provisioner.NodeUp, GPUs: gpus})
	}
	return b
}

// kubernetes makes the snapshot one of a backend that does not queue.
func (b *snapB) kubernetes() *snapB {
	b.s.Caps = provisioner.Capabilities{}
	return b
}

// run adds a running job on one node and returns it for further tuning.
func (b *snapB) run(id, team string, gpus int, node string) *provisioner.Job {
	for i := range b.s.Nodes {
		if b.s.Nodes[i].Name == node {
			b.s.Nodes[i].GPUsUsed += gpus
		}
	}
	b.s.Jobs = append(b.s.Jobs, provisioner.Job{ID: id, Account: team, State: provisioner.StateRunning, GPUs: gpus, Nodes: 1,
		NodeList: []string{node}, Start: rt0.Add(-time.Hour), QOS: "normal"})
	return &b.s.Jobs[len(b.s.Jobs)-1]
}

func (b *snapB) borrowed(id, team string, gpus int, node string) *provisioner.Job {
	j := b.run(id, team, gpus, node)
	j.QOS = DefaultBorrowedQOS
	return j
}

// used returns GPUsUsed per node.
func (b *snapB) used() []int {
	out := make([]int, len(b.s.Nodes))
	for i, n := range b.s.Nodes {
		out[i] = n.GPUsUsed
	}
	return out
}

// rules parses a rules file for the tests.
func rules(t testing.TB, yaml string) *Rules {
	t.Helper()
	cfg, err := ParseConfig([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const twoTeams = `
teams:
  - {name: team-a, gpus: 20}
  - {name: team-b, gpus: 20}
`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
teams:
  - name: team-a
    gpus: 20
    gpuTypes: {A100: 12}
    borrowLimit: 10
  - name: team-b
    gpus: 20
borrowing:
  grace: 30s
  qos: scavenger
placement:
  policy: best-fit
  hints: never
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Team("team-a").GPUTypes["A100"] != 12 || *cfg.Team("team-a").BorrowLimit != 10 || time.Duration(cfg.Borrowing.Grace) != 30*time.Second ||
		cfg.Borrowing.QOS != "scavenger" || cfg.Placement.Policy != placement.BestFit || cfg.Placement.Hints != HintsNever {
		t.Errorf("parsed %+v", cfg)
	}
	// defaults
	if !*cfg.Borrowing.Enabled || cfg.Borrowing.Signal != "USR1" || !slices.Equal(cfg.Borrowing.Markers, []string{"mirage-borrowed"}) ||
		time.Duration(cfg.Placement.HistoryWindow) != 7*24*time.Hour || cfg.Placement.PriorJobs != 20 {
		t.Errorf("defaults %+v", cfg)
	}
	// JSON is YAML too.
	if _, err := ParseConfig([]byte(`{"teams":[{"name":"x","gpus":1}]}`), "rules.json"); err != nil {
		t.Errorf("JSON: %v", err)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"no teams", `teams: []`, "no teams"},
		{"typo", "teams: [{name: a, gpu: 3}]", `unknown field "gpu"`},
		{"duplicate", "teams: [{name: a, gpus: 1}, {name: a, gpus: 2}]", "teams[1] (a): team listed twice"},
		{"negative", "teams: [{name: a, gpus: -3}]", "gpus -3: must be ≥ 0"},
		{"type above total", "teams: [{name: a, gpus: 4, gpuTypes: {A100: 5}}]", "gpuTypes A100: 5: must be between 0 and the team's gpus (4)"},
		{"policy", "teams: [{name: a, gpus: 1}]\nplacement: {policy: worst-fit}", "unknown placement policy"},
		{"hints", "teams: [{name: a, gpus: 1}]\nplacement: {hints: sometimes}", "hints \"sometimes\""},
		{"grace", "teams: [{name: a, gpus: 1}]\nborrowing: {grace: soon}", "want a duration"},
		{"not yaml", "teams: [", "rules.yaml"},
	} {
		_, err := ParseConfig([]byte(tc.yaml), "rules.yaml")
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rules.yaml") {
			t.Errorf("%s: %v, want ErrConfig mentioning %q and the file", tc.name, err, tc.want)
		}
	}
}

// Quotas against the cluster: 4×10 = 40 GPUs.
func TestCheckCluster(t *testing.T) {
	s := cluster(4, 10).s
	for i := range s.Nodes {
		s.Nodes[i].GPUType = "A100"
	}
	ok := rules(t, twoTeams)
	if err := ok.cfg.CheckCluster(s); err != nil {
		t.Errorf("20+20 of 40: %v", err)
	}
	over := rules(t, "teams: [{name: team-a, gpus: 24}, {name: team-b, gpus: 24}]")
	err := over.cfg.CheckCluster(s)
	if !errors.Is(err, ErrQuotaExceedsCluster) || !strings.Contains(err.Error(), "48 GPUs (team-a 24 + team-b 24) but the cluster has 40") {
		t.Errorf("24+24 of 40: %v", err)
	}
	// Every decision reports it: nothing is admitted under broken quotas.
	if _, err := over.Admit(rt0, s, &provisioner.SubmitRequest{Account: "team-a", GPUs: 1}); !errors.Is(err, ErrQuotaExceedsCluster) {
		t.Errorf("admit under broken quotas: %v", err)
	}
	if err := rules(t, "teams: [{name: team-a, gpus: 24}, {name: team-b, gpus: 24}]\novercommit: true").cfg.CheckCluster(s); err != nil {
		t.Errorf("overcommit allowed: %v", err)
	}
	err = rules(t, "teams: [{name: a, gpus: 8, gpuTypes: {H100: 8}}]").cfg.CheckCluster(s)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `no GPUs of that type (types: A100)`) {
		t.Errorf("unknown type: %v", err)
	}
	err = rules(t, "teams: [{name: a, gpus: 30, gpuTypes: {A100: 30}}, {name: b, gpus: 10, gpuTypes: {A100: 10}}]").cfg.CheckCluster(s)
	if err != nil {
		t.Errorf("40 A100 of 40: %v", err)
	}
}

func TestDecideBadInput(t *testing.T) {
	r := rules(t, twoTeams)
	b := cluster(4, 10)
	_, err := r.Admit(rt0, b.s, &provisioner.SubmitRequest{Account: "team-z", GPUs: 1})
	if !errors.Is(err, ErrUnknownTeam) || !strings.Contains(err.Error(), `"team-z": the team rules know team-a, team-b`) {
		t.Errorf("unknown team: %v", err)
	}
	_, err = r.Admit(rt0, b.s, &provisioner.SubmitRequest{Account: "team-a", GPUs: 12})
	if !errors.Is(err, placement.ErrJobTooLarge) || !strings.Contains(err.Error(), "largest node (n1) has 10 GPUs") {
		t.Errorf("12 GPUs on 10-GPU nodes: %v", err)
	}
	_, err = r.Admit(rt0, b.s, &provisioner.SubmitRequest{Account: "team-a", GPUs: 7, Nodes: 2})
	if !errors.Is(err, placement.ErrBadDemand) {
		t.Errorf("7 GPUs over 2 nodes: %v", err)
	}
}

// place applies a decision to the snapshot as the backend would: the job
// runs on the chosen node, borrowed when the QOS says so.
func (b *snapB) apply(t testing.TB, r *Rules, id, team string, gpus int) *Decision {
	t.Helper()
	req := &provisioner.SubmitRequest{Name: id, Account: team, GPUs: gpus}
	d, err := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict == VerdictAdmit || d.Verdict == VerdictBorrow {
		j := b.run(id, team, gpus, d.Placement.Assignments[0].Name)
		j.QOS = "normal"
		if req.QOS != "" {
			j.QOS = req.QOS
		}
	}
	return d
}

// The greedy team of issue 8 on the rules alone: 4×10 GPUs, teams A and B
// with 20 each. A asks for six 5-GPU jobs (30 GPUs), then B for four (20).
//
// Without borrowing: A's jobs 1-4 bring it to 5, 10, 15, 20 ≤ 20 (admitted);
// job 5 would make 25 > 20 → deferred. B's four fit in the 20 GPUs left:
// A 20, B 20. Frag-aware packs A on n1, n1, n2, n2 (a 5-GPU job leaves 5
// free; the second one empties the node, −¼·5 of fragmentation) and B on n3, n4.
func TestGreedyTeamStoppedAtQuota(t *testing.T) {
	r := rules(t, twoTeams+"borrowing: {enabled: false}\n")
	b := cluster(4, 10)
	for i := 1; i <= 6; i++ {
		d := b.apply(t, r, "a"+string(rune('0'+i)), "team-a", 5)
		want := VerdictAdmit
		if i > 4 {
			want = VerdictDefer
		}
		if d.Verdict != want {
			t.Fatalf("A's job %d: %s (%s), want %s", i, d.Verdict, d.Reason, want)
		}
		if i == 5 && !strings.Contains(d.Reason, "team team-a over quota (20 of 20 GPUs used, job asks 5); borrowing is disabled") {
			t.Errorf("reason %q", d.Reason)
		}
	}
	for i := 1; i <= 4; i++ {
		if d := b.apply(t, r, "b"+string(rune('0'+i)), "team-b", 5); d.Verdict != VerdictAdmit {
			t.Fatalf("B's job %d: %s (%s)", i, d.Verdict, d.Reason)
		}
	}
	u := r.Usage(b.s)
	if u[0].Used != 20 || u[1].Used != 20 || !slices.Equal(b.used(), []int{10, 10, 10, 10}) {
		t.Errorf("usage %+v, nodes %v", u, b.used())
	}
}

// With borrowing: A's jobs 5 and 6 go to idle GPUs as borrowed work (QOS
// preemptible), A then holds 20 + 10 borrowed; the cluster is 30 of 40 used.
// B's first two 5-GPU jobs fit the 10 free GPUs. B's third is within quota
// (10 + 5 ≤ 20) but nothing is free: reclaim. On a queueing backend (Slurm)
// that is an admission whose reclaim Slurm's preemption performs.
func TestIdleQuotaBorrowThenReclaim(t *testing.T) {
	r := rules(t, twoTeams)
	b := cluster(4, 10)
	var verdicts []Verdict
	for i := 1; i <= 6; i++ {
		verdicts = append(verdicts, b.apply(t, r, "a"+string(rune('0'+i)), "team-a", 5).Verdict)
	}
	if !slices.Equal(verdicts, []Verdict{VerdictAdmit, VerdictAdmit, VerdictAdmit, VerdictAdmit, VerdictBorrow, VerdictBorrow}) {
		t.Fatalf("A's verdicts %v", verdicts)
	}
	if j := b.s.Job("a5"); j.QOS != "preemptible" {
		t.Errorf("a5 QOS %q", j.QOS)
	}
	if u := r.Usage(b.s); u[0].Used != 20 || u[0].Borrowed != 10 {
		t.Errorf("A usage %+v", u[0])
	}
	for i := 1; i <= 2; i++ {
		if d := b.apply(t, r, "b"+string(rune('0'+i)), "team-b", 5); d.Verdict != VerdictAdmit {
			t.Fatalf("B's job %d: %s", i, d.Reason)
		}
	}
	req := &provisioner.SubmitRequest{Account: "team-b", GPUs: 5, QOS: "normal"}
	d, err := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != VerdictReclaim || d.Reclaim == nil || len(d.Reclaim.Victims) != 1 || !strings.Contains(d.Reason, "preemption of QOS preemptible") {
		t.Fatalf("B's job 3: %s %+v", d.Verdict, d)
	}
	if v := d.Reclaim.Victims[0]; v.JobID != "a5" && v.JobID != "a6" || v.GPUs != 5 {
		t.Errorf("victim %+v, want a borrowed job of A", v)
	}
	if req.QOS != "normal" || len(req.NodeList) != 0 {
		t.Errorf("request rewritten on a reclaim: %+v", req)
	}
	a, err := r.Admit(rt0, b.s, &provisioner.SubmitRequest{Account: "team-b", GPUs: 5})
	if err != nil || !a.Allow || a.Borrowed || a.Reclaim != nil {
		t.Errorf("admission %+v %v: want allowed, no reclaim for the engine (Slurm's preemption does it)", a, err)
	}
	// On a backend that does not queue the engine carries the reclaim out:
	// the admission names the victim, its node is the request's, and the
	// plan's signal and grace travel with it (defaults USR1, 60 s).
	b.kubernetes()
	kreq := &provisioner.SubmitRequest{Account: "team-b", GPUs: 5}
	a, err = r.Admit(rt0, b.s, kreq)
	if err != nil || !a.Allow || a.Borrowed || a.Reclaim == nil || len(a.Reclaim.Victims) != 1 || a.Reclaim.Signal != "USR1" ||
		a.Reclaim.Grace != time.Minute || !slices.Equal(kreq.NodeList, []string{a.Reclaim.Node}) || a.Reclaim.Victims[0].Node != a.Reclaim.Node {
		t.Errorf("kubernetes admission %+v %v, request nodes %v", a, err, kreq.NodeList)
	}
	// Without borrowed work to reclaim, a queueing backend queues, Kubernetes defers.
	full := cluster(4, 10)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		full.run("x-"+n, "team-a", 10, n) // team A over its quota, but not as borrowed work
	}
	decide := func(s *provisioner.Snapshot, team string, gpus int) *Decision {
		t.Helper()
		d, err := r.Decide(DecideInput{Now: rt0, Snapshot: s, Request: &provisioner.SubmitRequest{Account: team, GPUs: gpus}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d = decide(full.s, "team-b", 4); d.Verdict != VerdictQueue {
		t.Errorf("queueing: %s %s", d.Verdict, d.Reason)
	}
	k8s := *full.s
	k8s.Caps = provisioner.Capabilities{}
	if d = decide(&k8s, "team-b", 4); d.Verdict != VerdictDefer || !strings.Contains(d.Reason, "reclaiming borrowed work cannot make room") {
		t.Errorf("kubernetes: %s %s", d.Verdict, d.Reason)
	}
	// Over quota and nothing idle: deferred with the reason.
	if d = decide(full.s, "team-a", 4); d.Verdict != VerdictDefer || !strings.Contains(d.Reason, "over quota (40 of 20 GPUs used, job asks 4); no idle GPUs to borrow") {
		t.Errorf("over quota, full: %s %s", d.Verdict, d.Reason)
	}
}

// The borrow limit caps borrowed GPUs.
func TestBorrowLimit(t *testing.T) {
	r := rules(t, "teams: [{name: a, gpus: 4, borrowLimit: 6}, {name: b, gpus: 36}]")
	b := cluster(4, 10)
	b.run("a1", "a", 4, "n1")
	b.borrowed("a2", "a", 4, "n1")
	d, _ := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "a", GPUs: 2}})
	if d.Verdict != VerdictBorrow {
		t.Errorf("4 + 2 borrowed ≤ 6: %s %s", d.Verdict, d.Reason)
	}
	d, _ = r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "a", GPUs: 3}})
	if d.Verdict != VerdictDefer || !strings.Contains(d.Reason, "borrow limit 6 reached (4 borrowed)") {
		t.Errorf("4 + 3 borrowed > 6: %s %s", d.Verdict, d.Reason)
	}
}

// A successor that depends on its running predecessor replaces it: a team
// at 20 of 20 with an 8-GPU segment running may pre-submit the next 8-GPU
// segment with afterany on it. Pending work without a dependency counts.
func TestUsageReplacementAndQueued(t *testing.T) {
	r := rules(t, twoTeams)
	b := cluster(4, 10)
	b.run("100", "team-a", 8, "n1")
	b.run("101", "team-a", 8, "n2")
	b.run("102", "team-a", 4, "n3")
	d, err := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-a", GPUs: 8, Dependency: slurmfmt.AfterAny("100")}})
	if err != nil || d.Verdict == VerdictDefer || d.Verdict == VerdictBorrow || d.Usage.Used != 12 || d.Usage.Replaced != 8 {
		t.Errorf("successor: %v %s %+v", err, d.Verdict, d.Usage)
	}
	b.s.Jobs = append(b.s.Jobs, provisioner.Job{ID: "103", Account: "team-b", State: provisioner.StatePending, GPUs: 6},
		provisioner.Job{ID: "104", Account: "team-b", State: provisioner.StatePending, GPUs: 6, Depend: "afterok:103", Reason: "Dependency"})
	u := r.Usage(b.s)
	if u[1].Used != 6 || u[1].Queued != 6 {
		t.Errorf("B %+v: the pending job counts, its dependent successor does not", u[1])
	}
}

// Per-type quotas: team a has 8 GPUs, of which at most 4 on A100; nodes n1,
// n2 are A100, n3, n4 V100 (10 GPUs each).
func TestTypeQuota(t *testing.T) {
	r := rules(t, "teams: [{name: a, gpus: 8, gpuTypes: {A100: 4, V100: 8}}, {name: b, gpus: 32}]\nplacement: {policy: best-fit}")
	b := cluster(4, 10).kubernetes()
	for i, typ := range []string{"A100", "A100", "V100", "V100"} {
		b.s.Nodes[i].GPUType = typ
	}
	b.run("a1", "a", 3, "n1")
	// 3 used on A100: another 2 on A100 would be 5 > 4, so it goes to V100 within quota.
	d, _ := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "a", GPUs: 2}})
	if d.Verdict != VerdictAdmit || d.Placement.Assignments[0].Name != "n3" {
		t.Errorf("2 GPUs: %s on %v (%s)", d.Verdict, d.Placement.NodeNames(), d.Reason)
	}
	// Asking for A100 explicitly: over the A100 quota → borrowed.
	d, _ = r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "a", GPUs: 2, GPUType: "A100"}})
	if d.Verdict != VerdictBorrow || !strings.Contains(d.Reason, "over its GPU-type quotas") {
		t.Errorf("2 A100: %s %s", d.Verdict, d.Reason)
	}
}

// Packing hints on a queueing backend (Slurm): only where the policy's node
// differs from first fit. Nodes n1..n4 × 10 GPUs with 2, 7, 0, 0 used.
//
// A 3-GPU job: first fit takes n1 (8 free). Best-fit takes n2 (3 free → 0
// left): hint = exclude n1. A 9-GPU job: first fit n3, best-fit n3 (tie with
// n4 → name): no hint. With hints: always, the node list is pinned.
func TestHints(t *testing.T) {
	b := cluster(4, 10)
	b.run("x", "team-b", 2, "n1")
	b.run("y", "team-b", 7, "n2")
	r := rules(t, twoTeams+"placement: {policy: best-fit}\n")
	req := &provisioner.SubmitRequest{Account: "team-a", GPUs: 3}
	d, _ := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if d.Placement.Assignments[0].Name != "n2" || !slices.Equal(req.Exclude, []string{"n1"}) || len(req.NodeList) != 0 {
		t.Errorf("3 GPUs: %v, exclude %v, list %v (%s)", d.Placement.NodeNames(), req.Exclude, req.NodeList, d.Reason)
	}
	req = &provisioner.SubmitRequest{Account: "team-a", GPUs: 9}
	d, _ = r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if d.Placement.Assignments[0].Name != "n3" || len(req.Exclude)+len(req.NodeList) != 0 || !strings.Contains(d.Reason, "no packing hint") {
		t.Errorf("9 GPUs: exclude %v list %v (%s)", req.Exclude, req.NodeList, d.Reason)
	}
	always := rules(t, twoTeams+"placement: {policy: best-fit, hints: always}\n")
	req = &provisioner.SubmitRequest{Account: "team-a", GPUs: 9}
	always.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if !slices.Equal(req.NodeList, []string{"n3"}) {
		t.Errorf("always: %v", req.NodeList)
	}
	// Kubernetes (not queueing) always gets the node.
	k := rules(t, twoTeams+"placement: {policy: best-fit, hints: never}\n")
	req = &provisioner.SubmitRequest{Account: "team-a", GPUs: 3}
	k.Decide(DecideInput{Now: rt0, Snapshot: b.kubernetes().s, Request: req})
	if !slices.Equal(req.NodeList, []string{"n2"}) {
		t.Errorf("kubernetes: %v", req.NodeList)
	}
}

// Quota.Free and Rules.Mix, the figures the Kubernetes inventory shows.
func TestQuotaFreeAndMix(t *testing.T) {
	q := Quota{Name: "a", GPUs: 20}
	if q.Free(15) != 5 || q.Free(25) != 0 {
		t.Errorf("free %d, %d", q.Free(15), q.Free(25))
	}
	r := rules(t, twoTeams)
	b := cluster(4, 10)
	b.run("1", "team-a", 3, "n1")
	// One running 3-GPU job over the default {1,2,4,8} of 20 pseudo-jobs.
	m := r.Mix(b.s, rt0)
	for _, c := range m.Classes {
		want := 5.0 / 21
		if c.GPUMilli == 3000 {
			want = 1.0 / 21
		}
		if math.Abs(c.Weight-want) > 1e-12 {
			t.Errorf("class %d: %v, want %v (mix %v)", c.GPUMilli, c.Weight, want, m)
		}
	}
}
