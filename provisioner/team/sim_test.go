package team_test

// The three scenarios of issue 8 on the Slurm side, with the simulator
// standing in for slurmctld: team = Slurm account, the team rules consulted
// before every submission (Rules.Admit, as the engine does), borrowed work
// submitted under the preemptible QOS so that Slurm's own QOS preemption
// reclaims it, packing hints through --nodelist/--exclude. The simulator
// allocates GPUs per node (cons_tres) first fit in node order, like
// slurmctld with equal node weights.
//
// What the simulator does not model: PreemptMode's GraceTime (SIGTERM, then
// the grace period, then the kill) — a preempted job stops at once here —
// and Signal has no effect. The checkpoint signal and grace period are
// tested on Kubernetes (k8s/team_integration_test.go), where mirage performs
// the reclaim itself.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
	"github.com/mirage-gpu/mirage/sim"
)

var day0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// slurmEnv is a simulated Slurm cluster (4 nodes × 10 GPUs, one shared GPU
// partition, QOS normal and preemptible) with the team rules in front.
type slurmEnv struct {
	t     *testing.T
	s     *sim.Sim
	rules *team.Rules       // nil: no rules (plain Slurm)
	ids   map[string]string // name → sim job id
}

func newSlurmEnv(t *testing.T, rulesYAML string) *slurmEnv {
	t.Helper()
	cfg := sim.Defaults()
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		cfg.Nodes = append(cfg.Nodes, sim.NodeConfig{Name: n, CPUs: 64, GPUs: 10, GPUType: "a100"})
	}
	cfg.Partitions = []sim.PartitionConfig{{Name: "gpu", Default: true}}
	// As sites configure a scavenger QOS: below normal in priority (so that a
	// requeued borrowed job does not queue ahead of the owners' work),
	// preemptible by it, requeued when preempted. (This "normal" entry, with
	// its priority, takes over the simulator's implied one for jobs naming it.)
	cfg.QOS = []sim.QOSConfig{{Name: "normal", Priority: 10}, {Name: "preemptible", Preemptible: true, PreemptMode: "requeue"}}
	cfg.PriorityWeightQOS = 1000
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetStart(day0)
	e := &slurmEnv{t: t, s: s, ids: map[string]string{}}
	if rulesYAML != "" {
		c, err := team.ParseConfig([]byte(rulesYAML), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if e.rules, err = team.NewRules(c); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// submit asks the rules (when set) and submits; it returns the admission.
// The simulated scheduler runs at once (a main pass at the logical now).
func (e *slurmEnv) submit(name, team string, gpus int) provisioner.Admission {
	e.t.Helper()
	ctx := context.Background()
	req := provisioner.SubmitRequest{Name: name, Account: team, GPUs: gpus, TimeLimit: 24 * time.Hour, QOS: "normal"}
	adm := provisioner.Admission{Allow: true}
	if e.rules != nil {
		snap, err := e.s.Snapshot(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if adm, err = e.rules.Admit(e.s.Now(), snap, &req); err != nil {
			e.t.Fatalf("%s: %v", name, err)
		}
	}
	if adm.Allow {
		id, err := e.s.Submit(ctx, req)
		if err != nil {
			e.t.Fatalf("%s: %v", name, err)
		}
		e.ids[name] = id
	}
	e.s.Run(e.s.Now())
	return adm
}

// job returns a submitted job as squeue would show it (nil when gone).
func (e *slurmEnv) job(name string) *provisioner.Job {
	e.t.Helper()
	snap, err := e.s.Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Job(e.ids[name])
}

// running sums the GPUs of running jobs per account and per node.
func (e *slurmEnv) running() (perTeam map[string]int, perNode []int) {
	e.t.Helper()
	snap, err := e.s.Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	perTeam = map[string]int{}
	for _, j := range snap.Running() {
		perTeam[j.Account] += j.GPUs
	}
	for _, n := range snap.Nodes {
		perNode = append(perNode, n.GPUsUsed)
	}
	return perTeam, perNode
}

const slurmTeams = "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\n"

// Greedy team. Plain Slurm: A's six 5-GPU jobs all start (30 of 40 GPUs);
// B's four 5-GPU jobs: two start on the 10 GPUs left, two wait — B gets 10
// of its 20. With the rules (borrowing off): A's jobs 1-4 (5..20 ≤ 20) are
// submitted, 5 and 6 (25, 30 > 20) are not; B's four all start: 20 and 20.
func TestSlurmGreedyTeam(t *testing.T) {
	plain := newSlurmEnv(t, "")
	for _, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		plain.submit(n, "team-a", 5)
	}
	for _, n := range []string{"b1", "b2", "b3", "b4"} {
		plain.submit(n, "team-b", 5)
	}
	if got, _ := plain.running(); got["team-a"] != 30 || got["team-b"] != 10 {
		t.Errorf("plain Slurm: running %v, want A 30 and B 10 (the greedy team)", got)
	}

	e := newSlurmEnv(t, slurmTeams+"borrowing: {enabled: false}\n")
	for i, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		adm := e.submit(n, "team-a", 5)
		if adm.Allow != (i < 4) {
			t.Fatalf("%s: %+v", n, adm)
		}
		if i == 4 && !strings.Contains(adm.Reason, "over quota (20 of 20 GPUs used, job asks 5); borrowing is disabled") {
			t.Errorf("%s reason %q", n, adm.Reason)
		}
	}
	for _, n := range []string{"b1", "b2", "b3", "b4"} {
		if adm := e.submit(n, "team-b", 5); !adm.Allow || adm.Borrowed {
			t.Fatalf("%s: %+v", n, adm)
		}
	}
	got, nodes := e.running()
	if got["team-a"] != 20 || got["team-b"] != 20 || !slices.Equal(nodes, []int{10, 10, 10, 10}) {
		t.Errorf("with the rules: running %v nodes %v, want A 20 and B 20 on a full cluster", got, nodes)
	}
}

// Fragmentation. With the spread policy pinned through --nodelist (what a
// spreading scheduler does), A's six 3-GPU jobs land 6/6/3/3 and B's 8-GPU
// job — within quota, nothing borrowed to preempt — is queued and stays
// pending with 22 GPUs free. With frag-aware (hints: auto) the rules find
// that Slurm's own first fit already packs as they would (n1, n1, n1, n2,
// n2, n2): no hint, 9/9/0/0, and B's job starts on n3.
func TestSlurmFragmentation(t *testing.T) {
	for _, tc := range []struct {
		rules string
		want  []int
		bRuns bool
	}{
		{slurmTeams + "placement: {policy: spread, hints: always}\n", []int{6, 6, 3, 3}, false},
		{slurmTeams + "placement: {policy: frag-aware}\n", []int{9, 9, 0, 0}, true},
	} {
		e := newSlurmEnv(t, tc.rules)
		for _, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
			if adm := e.submit(n, "team-a", 3); !adm.Allow || adm.Borrowed {
				t.Fatalf("%s: %+v", n, adm)
			}
		}
		if _, nodes := e.running(); !slices.Equal(nodes, tc.want) {
			t.Fatalf("%s: A's jobs per node %v, want %v", tc.rules, nodes, tc.want)
		}
		adm := e.submit("b1", "team-b", 8)
		if !adm.Allow {
			t.Fatalf("B's job not submitted: %+v", adm)
		}
		j := e.job("b1")
		if tc.bRuns != (j.State == provisioner.StateRunning) {
			t.Fatalf("%s: B's job %s (%s)", tc.rules, j.State, adm.Reason)
		}
		if tc.bRuns && j.NodeList[0] != "n3" {
			t.Errorf("B's job on %v, want n3", j.NodeList)
		}
		if !tc.bRuns && (!strings.HasPrefix(adm.Reason, "queue:") || !strings.Contains(adm.Reason, "22 GPUs free")) {
			t.Errorf("B's admission %q, want queued with 22 GPUs free", adm.Reason)
		}
		if tc.bRuns && !strings.Contains(adm.Reason, "no packing hint") {
			t.Errorf("B's admission %q, want no hint needed", adm.Reason)
		}
	}
}

// Packing hints where they help: n1 has 3 GPUs used, n2 8 (team C). A
// 2-GPU job: Slurm's first fit takes n1 (7 free → 5 left). Frag-aware, mix
// {1,2,4,8} ¼ each, F(f) = ¼·f per size above f: n1 7→5: ¼·5 − ¼·7 = −0.5;
// n2 2→0: 0 − ¼·2·2 (4 and 8) = −1; n3 10→8: 0 − 0. → n2, and the rules
// exclude n1 (--exclude) so that Slurm's first fit reaches n2.
func TestSlurmPackingHint(t *testing.T) {
	e := newSlurmEnv(t, "teams: [{name: team-a, gpus: 20}, {name: team-c, gpus: 20}]\n")
	e.submit("c1", "team-c", 3)
	if _, nodes := e.running(); nodes[0] != 3 {
		t.Fatalf("c1 on %v", nodes)
	}
	// c2 must go to n2: pin it there (a setup step, not under test).
	ctx := context.Background()
	if _, err := e.s.Submit(ctx, provisioner.SubmitRequest{Name: "c2", Account: "team-c", GPUs: 8, TimeLimit: time.Hour, NodeList: []string{"n2"}}); err != nil {
		t.Fatal(err)
	}
	e.s.Run(e.s.Now())
	adm := e.submit("a1", "team-a", 2)
	if !strings.Contains(adm.Reason, "hint: exclude n1") {
		t.Errorf("reason %q, want an exclusion hint", adm.Reason)
	}
	if j := e.job("a1"); j.State != provisioner.StateRunning || j.NodeList[0] != "n2" {
		t.Errorf("a1 %s on %v, want running on n2", j.State, j.NodeList)
	}
}

// Idle quota. A's four 5-GPU jobs are within its 20 (first fit and
// frag-aware agree: n1, n1, n2, n2); two more go to idle GPUs as borrowed
// work under QOS preemptible (n3, n3). B's first two 5-GPU jobs start on
// n4. B's third (10 + 5 ≤ 20) finds nothing free: the rules admit it under
// B's own QOS, and Slurm's QOS preemption stops a borrowed job (the latest
// started; a5 and a6 tie, the later submitted goes first: a6), requeues it,
// and starts b3 on n3; b4 preempts a5 the same way. A keeps its 20 within
// quota untouched; B has its 20; the borrowed jobs wait in the queue.
func TestSlurmIdleQuotaReclaim(t *testing.T) {
	e := newSlurmEnv(t, slurmTeams)
	for i, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		adm := e.submit(n, "team-a", 5)
		if !adm.Allow || adm.Borrowed != (i >= 4) {
			t.Fatalf("%s: %+v", n, adm)
		}
	}
	for _, n := range []string{"a5", "a6"} {
		if j := e.job(n); j.QOS != "preemptible" || j.State != provisioner.StateRunning || j.NodeList[0] != "n3" {
			t.Fatalf("%s: %+v, want running borrowed on n3", n, j)
		}
	}
	for _, n := range []string{"b1", "b2"} {
		if adm := e.submit(n, "team-b", 5); !adm.Allow || e.job(n).NodeList[0] != "n4" {
			t.Fatalf("%s: %+v on %v", n, adm, e.job(n).NodeList)
		}
	}
	e.s.Run(day0.Add(10 * time.Minute)) // time passes
	for _, tc := range []struct{ b, victim string }{{"b3", "a6"}, {"b4", "a5"}} {
		adm := e.submit(tc.b, "team-b", 5)
		if !adm.Allow || adm.Borrowed || !strings.HasPrefix(adm.Reason, "reclaim:") || !strings.Contains(adm.Reason, "preemption of QOS preemptible") {
			t.Fatalf("%s: %+v", tc.b, adm)
		}
		if j := e.job(tc.b); j.State != provisioner.StateRunning || j.QOS != "normal" || j.NodeList[0] != "n3" {
			t.Errorf("%s: %+v, want running on n3 under QOS normal", tc.b, j)
		}
		if v := e.job(tc.victim); v == nil || v.State != provisioner.StatePending {
			t.Errorf("victim %s: %+v, want requeued (pending)", tc.victim, v)
		}
	}
	got, nodes := e.running()
	if got["team-a"] != 20 || got["team-b"] != 20 || !slices.Equal(nodes, []int{10, 10, 10, 10}) {
		t.Errorf("running %v nodes %v, want A 20 and B 20", got, nodes)
	}
	// Only borrowed work was preempted: A's own jobs run since the start.
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		if j := e.job(n); j.State != provisioner.StateRunning || !j.Start.Equal(day0) {
			t.Errorf("%s: %s since %v, want running since the start", n, j.State, j.Start)
		}
	}
	for _, r := range e.s.Results() {
		want := 0
		if r.ID == e.ids["a5"] || r.ID == e.ids["a6"] {
			want = 1
		}
		if r.Requeues != want {
			t.Errorf("job %s requeued %d times, want %d", r.ID, r.Requeues, want)
		}
	}
}
