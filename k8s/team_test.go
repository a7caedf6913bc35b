package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// teamRules parses a rules file.
func teamRules(t testing.TB, yaml string) *team.Rules {
	t.Helper()
	cfg, err := team.ParseConfig([]byte(yaml), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := team.NewRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const rules2x20 = "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\nborrowing: {grace: 30s}\n"

// fakeTeamCluster is a TeamCluster on client-go's fake clientset with 4
// nodes × 10 GPUs and the given pods; the fake gives generated names and
// lets evictions delete the pod at once (a kubelet that stops in time).
// It has no scheduler: mirage binds its pods (BindNodeName).
func fakeTeamCluster(t testing.TB, rules string, pods ...corev1.Pod) (*TeamCluster, *fake.Clientset) {
	t.Helper()
	cs := fakeCluster(pods...)
	c := NewForClientset(cs, Config{Namespace: "ns", Clock: fixedClock{now: t0}, PollInterval: time.Millisecond, Binding: BindNodeName})
	tc := NewTeamCluster(c, teamRules(t, rules))
	tc.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return tc, cs
}

// fakeCluster is client-go's fake clientset with 4 nodes × 10 GPUs and the
// given pods; it gives generated names and carries out evictions.
func fakeCluster(pods ...corev1.Pod) *fake.Clientset {
	var objs []runtime.Object
	for i := 1; i <= 4; i++ {
		n := node(fmt.Sprintf("n%d", i)).GPUs(10).Obj()
		objs = append(objs, &n)
	}
	for i := range pods {
		objs = append(objs, &pods[i])
	}
	cs := fake.NewClientset(objs...)
	seq := 0
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetSubresource() {
		case "":
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			if p.Name == "" {
				seq++
				p.Name = fmt.Sprintf("%s%d", p.GenerateName, seq)
			}
			return false, nil, nil
		case "eviction":
			ev := a.(k8stesting.CreateAction).GetObject()
			m := ev.(metav1.Object)
			return true, nil, cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, a.GetNamespace(), m.GetName())
		}
		return false, nil, nil
	})
	return cs
}

func podsOf(t testing.TB, cs *fake.Clientset) map[string]corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range l.Items {
		out[p.Name] = p
	}
	return out
}

func evictions(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "eviction" {
			out = append(out, a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

// Admit, borrow and defer on a small cluster. Team A holds 18 GPUs within
// quota (n1 9, n2 9); A asks for 2 more: 20 ≤ 20, admitted; 2 GPUs do not fit
// n1 or n2 (1 free each), n3 and n4 tie → n3 by name. Then 4 more: 24 > 20,
// borrowed onto idle GPUs. With borrowing off, deferred.
func TestTeamClusterAdmitBorrowDefer(t *testing.T) {
	tc, cs := fakeTeamCluster(t, rules2x20,
		pod("ns", "a1").On("n1").GPUs(9).Team("team-a").Obj(),
		pod("ns", "a2").On("n2").GPUs(9).Team("team-a").Obj())
	ctx := context.Background()
	res, err := tc.Place(ctx, provisioner.SubmitRequest{Name: "a3", Account: "team-a", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Verdict != team.VerdictAdmit || res.Node != "n3" || res.Borrowed {
		t.Errorf("a3: %s on %s borrowed %t (%s)", res.Decision.Verdict, res.Node, res.Borrowed, res.Decision.Reason)
	}
	res, err = tc.Place(ctx, provisioner.SubmitRequest{Name: "a4", Account: "team-a", GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := podsOf(t, cs)[strings.TrimPrefix(res.JobID, "pod/ns/")]
	if res.Decision.Verdict != team.VerdictBorrow || !res.Borrowed || p.Labels[LabelBorrowed] != "true" ||
		p.Spec.PriorityClassName != "mirage-borrowed" || p.Spec.NodeName != res.Node {
		t.Errorf("a4: %s %+v, pod labels %v class %q node %q", res.Decision.Verdict, res, p.Labels, p.Spec.PriorityClassName, p.Spec.NodeName)
	}
	off, cs2 := fakeTeamCluster(t, "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\nborrowing: {enabled: false}",
		pod("ns", "a1").On("n1").GPUs(10).Team("team-a").Obj(),
		pod("ns", "a2").On("n2").GPUs(10).Team("team-a").Obj())
	before := len(podsOf(t, cs2))
	_, err = off.Place(ctx, provisioner.SubmitRequest{Name: "a3", Account: "team-a", GPUs: 1})
	if !errors.Is(err, ErrDeferred) || errors.Is(err, provisioner.ErrRejected) || !strings.Contains(err.Error(), "borrowing is disabled") {
		t.Errorf("borrowing off: %v", err)
	}
	if n := len(podsOf(t, cs2)); n != before {
		t.Errorf("%d pods after a deferral, want %d", n, before)
	}
}

// Reclaim with the fake: B (under quota) needs 5 GPUs on a full cluster in
// which A's only borrowed pod is a 5-GPU pod on n4: signal it, evict it
// (nothing else), deploy B there.
func TestTeamClusterReclaim(t *testing.T) {
	tc, cs := fakeTeamCluster(t, rules2x20,
		pod("ns", "a1").On("n1").GPUs(10).Team("team-a").Obj(),
		pod("ns", "a2").On("n2").GPUs(10).Team("team-a").Obj(),
		pod("ns", "b1").On("n3").GPUs(10).Team("team-b").Obj(),
		pod("ns", "b2").On("n4").GPUs(5).Team("team-b").Obj(),
		pod("ns", "a3").On("n4").GPUs(5).Team("team-a").Borrowed().Obj())
	ctx := context.Background()
	// B uses 15 of 20: 5 more is within quota.
	res, err := tc.Place(ctx, provisioner.SubmitRequest{Name: "b3", Account: "team-b", GPUs: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Verdict != team.VerdictReclaim || res.Node != "n4" || res.Borrowed {
		t.Fatalf("b3: %+v (%s)", res, res.Decision.Reason)
	}
	if ev := evictions(cs); len(ev) != 1 || ev[0] != "a3" {
		t.Errorf("evictions %v, want [a3]", ev)
	}
	pods := podsOf(t, cs)
	if _, ok := pods["a3"]; ok {
		t.Error("a3 still there")
	}
	for _, name := range []string{"a1", "a2", "b1", "b2"} {
		if _, ok := pods[name]; !ok {
			t.Errorf("%s gone", name)
		}
	}
	// The signal came before the eviction: the patch is earlier in the action log.
	var order []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" || a.GetSubresource() == "eviction" {
			order = append(order, a.GetVerb()+"/"+a.GetSubresource())
		}
	}
	if strings.Join(order, ",") != "patch/,create/eviction" {
		t.Errorf("actions %v, want the checkpoint patch then the eviction", order)
	}
}

// Nothing is evicted by mistake: a victim that is no longer borrowed work
// by the time of the eviction (its pod replaced by one of another priority
// class), or a checkpoint signal that cannot reach the API server, stops the
// reclaim before any eviction.
func TestTeamClusterReclaimGuards(t *testing.T) {
	pods := []corev1.Pod{
		pod("ns", "a1").On("n1").GPUs(10).Team("team-a").Obj(),
		pod("ns", "a2").On("n2").GPUs(10).Team("team-a").Obj(),
		pod("ns", "b1").On("n3").GPUs(10).Team("team-b").Obj(),
		pod("ns", "a3").On("n4").GPUs(10).Team("team-a").Borrowed().Obj(),
	}
	ctx := context.Background()
	req := provisioner.SubmitRequest{Name: "b2", Account: "team-b", GPUs: 4}

	tc, cs := fakeTeamCluster(t, rules2x20, pods...)
	// Between the list and the eviction, the pod of that name became one of
	// the quota's priority class.
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != "a3" {
			return false, nil, nil
		}
		p := pods[3].DeepCopy()
		p.Spec.PriorityClassName = "mirage-quota"
		return true, p, nil
	})
	if _, err := tc.Place(ctx, req); !errors.Is(err, ErrNotBorrowed) {
		t.Errorf("replaced victim: %v", err)
	}
	if ev := evictions(cs); len(ev) != 0 {
		t.Errorf("evicted %v", ev)
	}

	tc, cs = fakeTeamCluster(t, rules2x20, pods...)
	cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	_, err := tc.Place(ctx, req)
	if !errors.Is(err, provisioner.ErrUnavailable) || !strings.Contains(err.Error(), "nothing evicted") {
		t.Errorf("signal unavailable: %v", err)
	}
	if ev := evictions(cs); len(ev) != 0 {
		t.Errorf("evicted %v", ev)
	}
	if n := len(podsOf(t, cs)); n != 4 {
		t.Errorf("%d pods, want the 4 there were", n)
	}
}

// Bad input through the Kubernetes path: an unknown team, a job larger than
// any node, quotas above the cluster — errors, nothing created or evicted.
func TestTeamClusterBadInput(t *testing.T) {
	ctx := context.Background()
	victim := pod("ns", "a3").On("n4").GPUs(10).Team("team-a").Borrowed().Obj()
	for _, tc := range []struct {
		name  string
		rules string
		req   provisioner.SubmitRequest
		want  error
	}{
		{"unknown team", rules2x20, provisioner.SubmitRequest{Name: "z", Account: "team-z", GPUs: 1}, team.ErrUnknownTeam},
		{"too large", rules2x20, provisioner.SubmitRequest{Name: "b", Account: "team-b", GPUs: 12}, placement.ErrJobTooLarge},
		{"quotas", "teams: [{name: team-a, gpus: 30}, {name: team-b, gpus: 30}]", provisioner.SubmitRequest{Name: "b", Account: "team-b", GPUs: 1}, team.ErrQuotaExceedsCluster},
	} {
		c, cs := fakeTeamCluster(t, tc.rules, victim)
		if _, err := c.Place(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		for _, a := range cs.Actions() {
			if a.GetVerb() != "list" {
				t.Errorf("%s: unexpected %s %s/%s", tc.name, a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
			}
		}
	}
}

// An unreachable API server: Place fails with ErrUnavailable naming the
// server and the kubeconfig, before deciding or touching anything.
func TestTeamClusterUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := filepath.Join(t.TempDir(), "kc")
	body := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://" + addr +
		", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewFromKubeconfig(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tc := NewTeamCluster(c, teamRules(t, rules2x20))
	_, err = tc.Place(context.Background(), provisioner.SubmitRequest{Name: "b", Account: "team-b", GPUs: 4})
	if !errors.Is(err, provisioner.ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), kc) {
		t.Errorf("unreachable: %v", err)
	}
}

// The rules see borrowed pods by their label (QOS set to the rules'
// borrowed QOS) and the workloads' last checkpoints by their annotation.
func TestRulesSnapshotAndCheckpoints(t *testing.T) {
	b := pod("ns", "b").On("n1").GPUs(2).Team("team-a").Borrowed()
	b.p.Spec.PriorityClassName = "something-else"
	b.p.Annotations = map[string]string{AnnotationLastCheckpoint: "2026-11-22T11:30:00Z"}
	o := pod("ns", "o").On("n1").GPUs(2).Team("team-a")
	o.p.Annotations = map[string]string{AnnotationLastCheckpoint: "not a time"}
	n := node("n1").GPUs(8).Obj()
	inv := BuildInventory(t0, []corev1.Node{n}, []corev1.Pod{b.Obj(), o.Obj()}, Mapping{})
	r := teamRules(t, "teams: [{name: team-a, gpus: 8}]\nborrowing: {qos: scavenger}")
	s := RulesSnapshot(inv, r)
	if j := s.Job("pod/ns/b"); j.QOS != "scavenger" || !r.IsBorrowed(j) {
		t.Errorf("borrowed pod as %+v", j)
	}
	if j := s.Job("pod/ns/o"); r.IsBorrowed(j) {
		t.Errorf("own pod seen as borrowed: %+v", j)
	}
	if len(inv.Checkpoints) != 1 || !inv.Checkpoints["pod/ns/b"].Equal(t0.Add(-30*time.Minute)) {
		t.Errorf("checkpoints %v", inv.Checkpoints)
	}
}

// Through the engine's path: the client's snapshot says what Kubernetes
// does (it does not queue) and marks borrowed pods with the borrowed QOS;
// Admit chooses the node and the borrowed QOS on it; Submit deploys
// exactly that, reading nothing (no list: the cycle's snapshot is the one
// read). Team A holds 20 of 20 and a3 borrowed on n3: a4 (2 GPUs) is over
// quota → borrowed, onto idle GPUs. Frag-aware, with the mix learned from
// the running 10-, 10- and 2-GPU pods over 20 pseudo-jobs of 1, 2, 4, 8
// (weights 1:5, 2:6, 4:5, 8:5, 10:2 of 23): on n3, 8 free → 6, the free
// GPUs no 8- or 10-GPU job can use grow from 8·2/23 to 6·7/23 (+26/23); on
// n4, 10 → 8, from 0 to 8·2/23 (+16/23) → n4.
func TestAdmitThenSubmit(t *testing.T) {
	tc, cs := fakeTeamCluster(t, rules2x20,
		pod("ns", "a1").On("n1").GPUs(10).Team("team-a").Obj(),
		pod("ns", "a2").On("n2").GPUs(10).Team("team-a").Obj(),
		pod("ns", "a3").On("n3").GPUs(2).Team("team-a").Borrowed().Obj())
	ctx := context.Background()
	snap, err := tc.Client.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Caps.Queues || snap.Caps.Unpins {
		t.Errorf("capabilities %+v: Kubernetes neither queues nor unpins", snap.Caps)
	}
	if j := snap.Job("pod/ns/a3"); j == nil || j.QOS != "preemptible" {
		t.Fatalf("borrowed pod in the snapshot: %+v", j)
	}
	req := provisioner.SubmitRequest{Name: "a4", Account: "team-a", GPUs: 2}
	adm, err := tc.Rules.Admit(t0, snap, &req)
	if err != nil || !adm.Allow || !adm.Borrowed || adm.Reclaim != nil || req.QOS != "preemptible" || fmt.Sprint(req.NodeList) != "[n4]" {
		t.Fatalf("admit %+v %v, request %+v", adm, err, req)
	}
	cs.ClearActions()
	tc.cfg.Binding = BindAffinity // as with a scheduler (the fake has none)
	id, err := tc.Client.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "create" {
			t.Errorf("submit did %s %s: it deploys what was decided, nothing else", a.GetVerb(), a.GetResource().Resource)
		}
	}
	p := podsOf(t, cs)[strings.TrimPrefix(id, "pod/ns/")]
	if p.Labels[LabelBorrowed] != "true" || p.Spec.PriorityClassName != "mirage-borrowed" || requiredNode(&p) != "n4" || p.Spec.NodeName != "" {
		t.Errorf("deployed with labels %v class %q node %q/%q, want borrowed, for the scheduler to bind on n4",
			p.Labels, p.Spec.PriorityClassName, requiredNode(&p), p.Spec.NodeName)
	}
	// Before the scheduler binds it, the inventory counts its GPUs on n4.
	inv, err := tc.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := inv.Node("n4"); n.Used != 2 || n.Free != 8 {
		t.Errorf("n4 %+v: want the unbound pod's 2 GPUs counted", n)
	}
}

func TestParseNamespaceTeams(t *testing.T) {
	if m, err := ParseNamespaceTeams(nil); m != nil || err != nil {
		t.Errorf("no pairs: %v, %v; want a nil map", m, err)
	}
	m, err := ParseNamespaceTeams([]string{"ml=team-a", "infra=team-b", "ml=team-c"})
	if err != nil || len(m) != 2 || m["ml"] != "team-c" || m["infra"] != "team-b" {
		t.Errorf("pairs: %v, %v; want ml→team-c (the last wins), infra→team-b", m, err)
	}
	for _, bad := range []string{"ml", "=team-a", "ml="} {
		if _, err := ParseNamespaceTeams([]string{"ok=x", bad}); err == nil || err.Error() != `--namespace-team "`+bad+`": want NAMESPACE=TEAM` {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
