package k8s

// The three scenarios of issue 8 on the test control plane (scripts/k8s-up.sh):
// 4 nodes × 10 GPUs, teams A and B with 20 nominal GPUs each, every job a
// Pod created by mirage's TeamCluster.Place one at a time (least-privilege
// kubeconfig), bound by mirage itself (BindNodeName) and checked with the
// admin client. live_integration_test.go runs the same scenarios through
// the engine with the scheduler binding the pods.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mirage-gpu/mirage/k8s/k8stest"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// teamEnv is one scenario's cluster: 4 × 10 GPUs and a TeamCluster on it.
type teamEnv struct {
	t     *testing.T
	e     *k8stest.Env
	nodes []string // n1..n4 full names, in name order
	tc    *TeamCluster
}

func newTeamEnv(t *testing.T, rulesYAML string, clock provisioner.Timer) *teamEnv {
	t.Helper()
	e := k8stest.New(t)
	te := &teamEnv{t: t, e: e}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		te.nodes = append(te.nodes, e.Node(k8stest.NodeSpec{Name: n, GPUs: 10, Product: "NVIDIA-A100-SXM4-80GB"}))
	}
	cfg := Config{Namespace: e.Namespace, PollInterval: 50 * time.Millisecond, Binding: BindNodeName}
	if clock != nil {
		cfg.Clock = clock
	}
	te.tc = NewTeamCluster(client(t, e, cfg), teamRules(t, rulesYAML))
	te.tc.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return te
}

// place submits one job of a team through the team rules.
func (te *teamEnv) place(name, team string, gpus int) (*PlaceResult, error) {
	return te.tc.Place(context.Background(), provisioner.SubmitRequest{Name: name, Account: team, GPUs: gpus, Comment: "c-" + name})
}

// mustPlace submits and expects a deployed job with the given verdict.
func (te *teamEnv) mustPlace(name, team string, gpus int, verdict team.Verdict) *PlaceResult {
	te.t.Helper()
	res, err := te.place(name, team, gpus)
	if err != nil {
		te.t.Fatalf("%s (%s, %d GPUs): %v", name, team, gpus, err)
	}
	if res.Decision.Verdict != verdict || res.JobID == "" {
		te.t.Fatalf("%s: %s (%s), want %s", name, res.Decision.Verdict, res.Decision.Reason, verdict)
	}
	return res
}

// pods lists the scenario's pods with the admin client.
func (te *teamEnv) pods() []corev1.Pod {
	te.t.Helper()
	l, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		te.t.Fatal(err)
	}
	return l.Items
}

// usedPerNode and perTeam read the GPU requests of the pods from the API
// server (admin view, independent of the inventory code).
func (te *teamEnv) usedPerNode() []int {
	out := make([]int, len(te.nodes))
	for _, p := range te.pods() {
		if i := slices.Index(te.nodes, p.Spec.NodeName); i >= 0 && p.DeletionTimestamp == nil {
			q := p.Spec.Containers[0].Resources.Requests[ResourceGPU]
			out[i] += int(q.Value())
		}
	}
	return out
}

func (te *teamEnv) perTeam() map[string]int {
	out := map[string]int{}
	for _, p := range te.pods() {
		q := p.Spec.Containers[0].Resources.Requests[ResourceGPU]
		out[p.Labels[DefaultTeamLabel]] += int(q.Value())
	}
	return out
}

// podName is the pod of a job id.
func podName(t *testing.T, id string) string {
	t.Helper()
	ref, err := ParseRef(id)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Name
}

// Scenario 1, the greedy team: 4 × 10 GPUs, teams A and B told to use 20
// each, borrowing off. A asks for six 5-GPU jobs (30 GPUs): jobs 1-4 bring
// it to 5, 10, 15, 20 ≤ 20 and are deployed; jobs 5 and 6 would make 25 and
// 30 > 20: deferred, no pod. B then gets all four of its 5-GPU jobs (20):
// A 20, B 20, every node full (frag-aware packs 5+5 per node).
func TestIntegrationTeamsGreedy(t *testing.T) {
	te := newTeamEnv(t, "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\nborrowing: {enabled: false}\n", nil)
	for i, name := range []string{"a1", "a2", "a3", "a4"} {
		te.mustPlace(name, "team-a", 5, team.VerdictAdmit)
		if got := te.perTeam()["team-a"]; got != 5*(i+1) {
			t.Fatalf("after %s team A holds %d GPUs, want %d", name, got, 5*(i+1))
		}
	}
	for _, name := range []string{"a5", "a6"} {
		_, err := te.place(name, "team-a", 5)
		if !errors.Is(err, ErrDeferred) || !strings.Contains(err.Error(), "team team-a over quota (20 of 20 GPUs used, job asks 5); borrowing is disabled") {
			t.Fatalf("%s: %v, want a deferral at the quota", name, err)
		}
	}
	if n := len(te.pods()); n != 4 {
		t.Fatalf("%d pods after A's deferred jobs, want 4", n)
	}
	for _, name := range []string{"b1", "b2", "b3", "b4"} {
		te.mustPlace(name, "team-b", 5, team.VerdictAdmit)
	}
	if got := te.perTeam(); got["team-a"] != 20 || got["team-b"] != 20 {
		t.Errorf("GPUs per team %v, want A 20 and B 20", got)
	}
	if got := te.usedPerNode(); !slices.Equal(got, []int{10, 10, 10, 10}) {
		t.Errorf("GPUs per node %v, want 10/10/10/10", got)
	}
	// The inventory (mirage's own view) agrees.
	inv, err := te.tc.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := inv.Team("team-a"), inv.Team("team-b"); a == nil || b == nil || a.Used != 20 || b.Used != 20 || a.Borrowed != 0 || inv.Free != 0 {
		t.Errorf("inventory A %+v B %+v free %d", a, b, inv.Free)
	}
}

// Scenario 2, fragmentation: team A's six 3-GPU jobs, then team B's 8-GPU job.
//
//	spread (the Kubernetes default scheduler's LeastAllocated): A lands
//	6/6/3/3 (worked out in provisioner's TestPlaceFragmentationScenario:
//	jobs 1-4 one per node, 5 and 6 on n1 and n2); 40 − 18 = 22 GPUs free but
//	no node has 8 → B is deferred, and nothing is evicted: all of A's work
//	is within its quota (18 ≤ 20), none borrowed.
//	frag-aware and best-fit: A lands 9/9/0/0 → B's 8 GPUs go to n3 (n3 and n4
//	tie; by name).
func TestIntegrationTeamsFragmentation(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   []int
		bNode  int // index of B's node, -1 = deferred
	}{
		{"spread", []int{6, 6, 3, 3}, -1},
		{"frag-aware", []int{9, 9, 0, 0}, 2},
		{"best-fit", []int{9, 9, 0, 0}, 2},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			te := newTeamEnv(t, "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\nplacement: {policy: "+tc.policy+"}\n", nil)
			for _, name := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
				te.mustPlace(name, "team-a", 3, team.VerdictAdmit)
			}
			if got := te.usedPerNode(); !slices.Equal(got, tc.want) {
				t.Fatalf("A's jobs per node %v, want %v", got, tc.want)
			}
			res, err := te.place("b1", "team-b", 8)
			if tc.bNode < 0 {
				if !errors.Is(err, ErrDeferred) || !strings.Contains(err.Error(), "22 GPUs free") || !strings.Contains(err.Error(), "4 not enough free GPUs") {
					t.Fatalf("B's 8-GPU job: %v, want a deferral with 22 GPUs free", err)
				}
				if n := len(te.pods()); n != 6 {
					t.Errorf("%d pods, want A's 6 untouched", n)
				}
				for _, p := range te.pods() {
					if p.DeletionTimestamp != nil {
						t.Errorf("pod %s is being deleted", p.Name)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Node != te.nodes[tc.bNode] || res.Decision.Verdict != team.VerdictAdmit {
				t.Errorf("B's job on %s (%s), want %s", res.Node, res.Decision.Reason, te.nodes[tc.bNode])
			}
			p, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(context.Background(), podName(t, res.JobID), metav1.GetOptions{})
			if err != nil || p.Spec.NodeName != te.nodes[tc.bNode] || p.Labels[DefaultTeamLabel] != "team-b" || p.Labels[LabelBorrowed] != "false" {
				t.Errorf("B's pod %+v %v", p, err)
			}
		})
	}
}

// Scenario 3, idle quota: A borrows B's idle GPUs; when B needs its quota
// the borrowed pods are reclaimed — checkpoint signal first, the grace
// period honoured, only borrowed pods evicted — then B is placed.
// Placement best-fit (fewest GPUs left), so that every step is easy to
// follow by hand:
//
//	b1 (B, 2):  empty cluster, all tie → n1.                 n1: b1 2
//	a1 (A, 5):  n1 leaves 3, others 5 → n1.                  n1: 7
//	a2, a3 (5): n1 cannot; n2 (tie by name), then n2 again.  n2: 10
//	a4 (5):     n3 (5 left, tie with n4 → name).             n3: 5   — A at 20/20
//	a5 (5):     over quota → borrowed; n3 (0 left).          n3: 10
//	a6 (5):     borrowed; n4 (5 left).                       n4: 5
//	a7 (3):     borrowed; n1 (3 free → 0).                   n1: 10
//	a8 (5):     borrowed; n4.                                n4: 10  — full; A 20 + 18 borrowed
//
// B (2 of 20 used) asks for 5: within quota, nothing free → reclaim. Sets
// freeing ≥ 5 on one node: n3 {a5}, n4 {a6}, n4 {a8} (n1's a7 frees only 3):
// 5 GPUs each, same priority (class mirage-borrowed) → least progress since
// the last checkpoint: a5 checkpointed 20 min ago, a6 5 min ago, a8 never
// (1 h since it started) → a6. B's second 5-GPU job (7 of 20): n3 {a5} 20 min
// vs n4 {a8} 1 h → a5.
func TestIntegrationTeamsIdleQuotaReclaim(t *testing.T) {
	// The rules' clock: an hour after the pods are created (progress since
	// start ≈ 1 h); After fires only when the test says.
	clock := newManualClock(time.Now().UTC().Add(time.Hour).Truncate(time.Second))
	te := newTeamEnv(t, "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\nborrowing: {grace: 30s}\nplacement: {policy: best-fit}\n", clock)
	ctx := context.Background()
	n1, n2, n3, n4 := te.nodes[0], te.nodes[1], te.nodes[2], te.nodes[3]
	ids := map[string]string{}
	for _, s := range []struct {
		name, team string
		gpus       int
		verdict    team.Verdict
		node       string
	}{
		{"b1", "team-b", 2, team.VerdictAdmit, n1},
		{"a1", "team-a", 5, team.VerdictAdmit, n1},
		{"a2", "team-a", 5, team.VerdictAdmit, n2},
		{"a3", "team-a", 5, team.VerdictAdmit, n2},
		{"a4", "team-a", 5, team.VerdictAdmit, n3},
		{"a5", "team-a", 5, team.VerdictBorrow, n3},
		{"a6", "team-a", 5, team.VerdictBorrow, n4},
		{"a7", "team-a", 3, team.VerdictBorrow, n1},
		{"a8", "team-a", 5, team.VerdictBorrow, n4},
	} {
		res := te.mustPlace(s.name, s.team, s.gpus, s.verdict)
		if res.Node != s.node {
			t.Fatalf("%s on %s, want %s (%s)", s.name, res.Node, s.node, res.Decision.Reason)
		}
		ids[s.name] = podName(t, res.JobID)
	}
	// Borrowed work is marked: label, priority class and its priority.
	for _, name := range []string{"a5", "a6", "a7", "a8"} {
		p, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(ctx, ids[name], metav1.GetOptions{})
		if err != nil || p.Labels[LabelBorrowed] != "true" || p.Spec.PriorityClassName != "mirage-borrowed" || p.Spec.Priority == nil || *p.Spec.Priority != 100 {
			t.Fatalf("%s: %v %+v", name, err, p)
		}
	}
	if got := te.usedPerNode(); !slices.Equal(got, []int{10, 10, 10, 10}) {
		t.Fatalf("GPUs per node %v, want a full cluster", got)
	}
	// The workloads report their last checkpoints.
	for name, ago := range map[string]time.Duration{"a5": 20 * time.Minute, "a6": 5 * time.Minute} {
		patch := `{"metadata":{"annotations":{"` + AnnotationLastCheckpoint + `":"` + clock.now.Add(-ago).Format(time.RFC3339) + `"}}}`
		if _, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Patch(ctx, ids[name], types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	reclaimRound := func(bName, victim, node string, others []string) {
		t.Helper()
		type out struct {
			res *PlaceResult
			err error
		}
		done := make(chan out, 1)
		go func() {
			r, err := te.place(bName, "team-b", 5)
			done <- out{r, err}
		}()
		// The reclaim waits the grace period on the clock.
		select {
		case d := <-clock.waited:
			if d != 30*time.Second {
				t.Errorf("grace period %v, want 30s", d)
			}
		case o := <-done:
			t.Fatalf("%s returned before the grace period: %+v %v", bName, o.res, o.err)
		case <-time.After(time.Minute):
			t.Fatalf("%s: no grace period waited", bName)
		}
		// During the grace period: the victim was asked to checkpoint first and
		// is terminating with the grace period; B's pod does not exist yet;
		// nothing else is touched.
		v, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(ctx, ids[victim], metav1.GetOptions{})
		if err != nil {
			t.Fatalf("victim %s gone before its grace period ended: %v", victim, err)
		}
		if v.Annotations[AnnotationCheckpoint] != clock.now.Format(time.RFC3339) || v.Annotations[AnnotationSignal] != "USR1" {
			t.Errorf("victim %s annotations %v: no checkpoint request", victim, v.Annotations)
		}
		if v.DeletionTimestamp == nil || v.DeletionGracePeriodSeconds == nil || *v.DeletionGracePeriodSeconds != 30 {
			t.Errorf("victim %s deletion %v grace %v, want terminating with 30 s", victim, v.DeletionTimestamp, v.DeletionGracePeriodSeconds)
		}
		for _, p := range te.pods() {
			if p.Labels[DefaultTeamLabel] == "team-b" && strings.HasPrefix(p.Name, bName+"-") {
				t.Errorf("B's pod %s exists before the grace period ended", p.Name)
			}
			if p.Name != ids[victim] && p.DeletionTimestamp != nil {
				t.Errorf("pod %s is being deleted too", p.Name)
			}
		}
		clock.fire <- clock.now.Add(30 * time.Second)
		o := <-done
		if o.err != nil {
			t.Fatalf("%s: %v", bName, o.err)
		}
		if o.res.Decision.Verdict != team.VerdictReclaim || o.res.Node != node || o.res.Borrowed {
			t.Errorf("%s: %s on %s borrowed %t (%s)", bName, o.res.Decision.Verdict, o.res.Node, o.res.Borrowed, o.res.Decision.Reason)
		}
		if vs := o.res.Decision.Reclaim.Victims; len(vs) != 1 || podName(t, vs[0].JobID) != ids[victim] {
			t.Errorf("%s: victims %+v, want only %s", bName, vs, victim)
		}
		if _, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(ctx, ids[victim], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("victim %s after the reclaim: %v", victim, err)
		}
		for _, name := range others {
			p, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(ctx, ids[name], metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp != nil {
				t.Errorf("%s touched by the reclaim: %v", name, err)
			}
		}
		b, err := te.e.Admin.CoreV1().Pods(te.e.Namespace).Get(ctx, podName(t, o.res.JobID), metav1.GetOptions{})
		if err != nil || b.Spec.NodeName != node || b.Labels[LabelBorrowed] != "false" || b.Spec.PriorityClassName != "mirage-quota" {
			t.Errorf("B's pod %v %+v", err, b)
		}
		ids[bName] = b.Name
	}
	reclaimRound("b2", "a6", n4, []string{"b1", "a1", "a2", "a3", "a4", "a5", "a7", "a8"})
	reclaimRound("b3", "a5", n3, []string{"b1", "b2", "a1", "a2", "a3", "a4", "a7", "a8"})
	// A keeps its 20 within quota and 8 borrowed (a7, a8); B has 12 of its 20.
	inv, err := te.tc.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := inv.Team("team-a"), inv.Team("team-b"); a.Used != 28 || a.Borrowed != 8 || b.Used != 12 || b.Borrowed != 0 {
		t.Errorf("inventory A %+v B %+v", a, b)
	}
}

// Bad input on the real server: an unknown team and a job larger than any
// node fail before anything is created; an unreachable API server fails
// with ErrUnavailable naming it.
func TestIntegrationTeamsBadInput(t *testing.T) {
	te := newTeamEnv(t, "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\n", nil)
	te.mustPlace("a1", "team-a", 4, team.VerdictAdmit)
	if _, err := te.place("z", "team-z", 1); !errors.Is(err, team.ErrUnknownTeam) {
		t.Errorf("unknown team: %v", err)
	}
	if _, err := te.place("big", "team-b", 12); !errors.Is(err, placement.ErrJobTooLarge) || !strings.Contains(err.Error(), "has 10 GPUs") {
		t.Errorf("12 GPUs: %v", err)
	}
	over := NewTeamCluster(client(t, te.e, Config{Namespace: te.e.Namespace}), teamRules(t, "teams: [{name: team-a, gpus: 30}, {name: team-b, gpus: 30}]"))
	if _, err := over.Place(context.Background(), provisioner.SubmitRequest{Name: "q", Account: "team-a", GPUs: 1}); !errors.Is(err, team.ErrQuotaExceedsCluster) ||
		!strings.Contains(err.Error(), "60 GPUs (team-a 30 + team-b 30) but the cluster has 40") {
		t.Errorf("quotas above the cluster: %v", err)
	}
	if n := len(te.pods()); n != 1 {
		t.Errorf("%d pods, want only a1", n)
	}
}
