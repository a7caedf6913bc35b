package k8s

// Integration tests against the real kube-apiserver started by
// scripts/k8s-up.sh (skipped with a message outside CI when it is not
// configured; failing in CI). Fixtures are made with the admin kubeconfig;
// the adapter under test uses mirage's least-privilege kubeconfig.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mirage-gpu/mirage/k8s/k8stest"
	"github.com/mirage-gpu/mirage/provisioner"
)

// manualClock is a Clock whose After channels fire only when the test says.
type manualClock struct {
	now    time.Time
	fire   chan time.Time
	waited chan time.Duration // receives each duration passed to After
}

func newManualClock(now time.Time) *manualClock {
	return &manualClock{now: now, fire: make(chan time.Time), waited: make(chan time.Duration, 8)}
}
func (c *manualClock) Now() time.Time { return c.now }
func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.waited <- d
	return c.fire
}

// client returns the adapter on mirage's kubeconfig, restricted to this test's fixtures.
func client(t testing.TB, e *k8stest.Env, cfg Config) *Client {
	t.Helper()
	cfg.NodeSelector = e.NodeSelector()
	if cfg.Namespaces == nil {
		cfg.Namespaces = []string{e.Namespace}
	}
	c, err := NewFromKubeconfig(e.Kubeconfig, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIntegrationInventory(t *testing.T) {
	e := k8stest.New(t)
	nsA := e.ExtraNamespace("a")
	n := make([]string, 7)
	for i := 1; i <= 4; i++ {
		n[i] = e.Node(k8stest.NodeSpec{Name: "n" + string(rune('0'+i)), GPUs: 10, Product: "NVIDIA-A100-SXM4-80GB"})
	}
	n[5] = e.Node(k8stest.NodeSpec{Name: "n5", GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", Cordoned: true})
	n[6] = e.Node(k8stest.NodeSpec{Name: "n6", GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", NotReady: true,
		MIG: map[string]int{"nvidia.com/mig-1g.10gb": 7}})
	team := func(t string) map[string]string { return map[string]string{DefaultTeamLabel: t} }
	// team-a by namespace mapping, team-b by label.
	e.Pod(k8stest.PodSpec{Name: "a1", Namespace: nsA, Node: n[1], GPUs: 4})
	e.Pod(k8stest.PodSpec{Name: "a2", Namespace: nsA, Node: n[1], GPUs: 3})
	e.Pod(k8stest.PodSpec{Name: "a3", Namespace: nsA, Node: n[2], GPUs: 3, Phase: corev1.PodRunning})
	e.Pod(k8stest.PodSpec{Name: "a4", Namespace: nsA, Node: n[3], GPUs: 6, Labels: map[string]string{LabelBorrowed: "true"}, PriorityClass: "mirage-borrowed"})
	e.Pod(k8stest.PodSpec{Name: "b1", Node: n[2], GPUs: 5, Labels: team("team-b")})
	e.Pod(k8stest.PodSpec{Name: "b2", Node: n[4], GPUs: 2, Labels: team("team-b")})
	e.Pod(k8stest.PodSpec{Name: "b3", Node: n[5], GPUs: 1, Labels: team("team-b")})
	e.Pod(k8stest.PodSpec{Name: "b4", Node: n[4], GPUs: 5, Labels: team("team-b"), Phase: corev1.PodSucceeded})
	e.Pod(k8stest.PodSpec{Name: "b5", GPUs: 2, Labels: team("team-b")}) // unbound

	c := client(t, e, Config{Mapping: Mapping{NamespaceTeams: map[string]string{nsA: "team-a"}},
		Namespaces: []string{e.Namespace, nsA}})
	inv, err := c.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Hand-computed: used n1 7, n2 8, n3 6, n4 2 (b4 finished), n5 1; free on
	// up nodes 3+2+4+8 = 17; 56 GPUs; 6 borrowed.
	want := []struct {
		node                       string
		state                      provisioner.NodeState
		gpus, used, borrowed, free int
	}{
		{n[1], provisioner.NodeUp, 10, 7, 0, 3},
		{n[2], provisioner.NodeUp, 10, 8, 0, 2},
		{n[3], provisioner.NodeUp, 10, 6, 6, 4},
		{n[4], provisioner.NodeUp, 10, 2, 0, 8},
		{n[5], provisioner.NodeDrained, 8, 1, 0, 0},
		{n[6], provisioner.NodeDown, 8, 0, 0, 0},
	}
	if len(inv.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(inv.Nodes), len(want))
	}
	for _, w := range want {
		got := inv.Node(w.node)
		if got == nil || got.State != w.state || got.GPUs != w.gpus || got.Used != w.used || got.Borrowed != w.borrowed || got.Free != w.free {
			t.Errorf("node %s = %+v, want %+v", w.node, got, w)
		}
	}
	if inv.Node(n[6]).MIG["nvidia.com/mig-1g.10gb"].Allocatable != 7 || inv.Node(n[1]).GPUType != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("MIG/product not read: %+v %+v", inv.Node(n[6]).MIG, inv.Node(n[1]).GPUType)
	}
	if inv.GPUs != 56 || inv.Used != 24 || inv.Borrowed != 6 || inv.Free != 17 {
		t.Errorf("totals gpus %d used %d borrowed %d free %d, want 56 24 6 17", inv.GPUs, inv.Used, inv.Borrowed, inv.Free)
	}
	if a := inv.Team("team-a"); a == nil || *a != (TeamInventory{Team: "team-a", Used: 16, Borrowed: 6, Pods: 4}) {
		t.Errorf("team-a = %+v", a)
	}
	if b := inv.Team("team-b"); b == nil || *b != (TeamInventory{Team: "team-b", Used: 8, Pods: 3, Pending: 1}) {
		t.Errorf("team-b = %+v", b)
	}
	s := inv.Snapshot()
	if j := s.Job("pod/" + nsA + "/a3"); j == nil || j.Account != "team-a" || j.State != provisioner.StateRunning || j.GPUs != 3 || j.Reason != "" {
		t.Errorf("job a3 = %+v", j)
	}
	if len(s.Jobs) != 8 {
		t.Errorf("%d jobs, want 8 (b4 finished)", len(s.Jobs))
	}
}

func TestIntegrationDeploy(t *testing.T) {
	e := k8stest.New(t)
	n1 := e.Node(k8stest.NodeSpec{Name: "n1", GPUs: 10})
	n2 := e.Node(k8stest.NodeSpec{Name: "n2", GPUs: 10})
	ctx := context.Background()
	c := client(t, e, Config{Teams: []string{"team-a", "team-b"}, TeamNamespaces: map[string]string{"team-a": e.Namespace, "team-b": e.Namespace}})

	id, err := c.Submit(ctx, provisioner.SubmitRequest{Name: "train", Account: "team-a", QOS: "preemptible", GPUs: 4,
		NodeList: []string{n2}, Comment: "c-42", TimeLimit: time.Hour, Script: "/work/run.sh", Args: []string{"--epochs", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseRef(id)
	if err != nil {
		t.Fatal(err)
	}
	p := e.Bound(ref.Namespace, ref.Name) // by the scheduler, where mirage required
	if p.Spec.NodeName != n2 || p.Labels[DefaultTeamLabel] != "team-a" || p.Labels[LabelBorrowed] != "true" || p.Labels[LabelChain] != "c-42" {
		t.Errorf("pod = node %q labels %v", p.Spec.NodeName, p.Labels)
	}
	// The Priority admission plugin resolved the class to its value (scripts/k8s/rbac/).
	if p.Spec.PriorityClassName != "mirage-borrowed" || p.Spec.Priority == nil || *p.Spec.Priority != 100 {
		t.Errorf("priority class %q priority %v", p.Spec.PriorityClassName, p.Spec.Priority)
	}
	if q := p.Spec.Containers[0].Resources.Requests[ResourceGPU]; q.Value() != 4 {
		t.Errorf("gpu request %v", q)
	}
	if got := strings.Join(p.Spec.Containers[0].Command, " "); got != "/work/run.sh --epochs 3" {
		t.Errorf("command %q", got)
	}
	s, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j := s.Job(id) // a borrowed pod carries the borrowed QOS, the team rules' mark of borrowed work
	if j == nil || j.Account != "team-a" || j.GPUs != 4 || j.NodeList[0] != n2 || j.QOS != "preemptible" || j.Comment != "c-42" || j.TimeLimit != time.Hour {
		t.Errorf("job = %+v", j)
	}
	if s.Nodes[0].Name != n1 || s.Nodes[0].GPUsUsed != 0 || s.Nodes[1].GPUsUsed != 4 {
		t.Errorf("nodes = %+v", s.Nodes)
	}

	// Job mode: a batch/v1 Job requiring the node (its pod: the Job controller's).
	jc := client(t, e, Config{Mode: ModeJob, Namespace: e.Namespace})
	jid, err := jc.Submit(ctx, provisioner.SubmitRequest{Name: "infer", Account: "team-b", GPUs: 2, NodeList: []string{n1}})
	if err != nil {
		t.Fatal(err)
	}
	jref, _ := ParseRef(jid)
	job, err := e.Admin.BatchV1().Jobs(jref.Namespace).Get(ctx, jref.Name, metav1.GetOptions{})
	if err != nil || jref.Kind != "job" {
		t.Fatalf("job %s: %v", jid, err)
	}
	ps := job.Spec.Template.Spec
	if ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != n1 ||
		ps.PriorityClassName != "mirage-quota" || job.Spec.Template.Labels[DefaultTeamLabel] != "team-b" {
		t.Errorf("job template = %+v", ps)
	}
	if err := jc.Cancel(ctx, jid); err != nil {
		t.Errorf("cancel job: %v", err)
	}
	if _, err := e.Admin.BatchV1().Jobs(jref.Namespace).Get(ctx, jref.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job after cancel: %v", err)
	}

	// Unknown team: rejected, nothing created.
	_, err = c.Submit(ctx, provisioner.SubmitRequest{Name: "x", Account: "team-z", GPUs: 1, NodeList: []string{n1}})
	if !errors.Is(err, ErrUnknownTeam) || !errors.Is(err, provisioner.ErrRejected) {
		t.Errorf("unknown team: %v", err)
	}
	pods, err := e.Admin.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	live := 0
	for _, p := range pods.Items {
		// The cancelled Job's pod is not counted: the garbage collector
		// deletes it after the Job, at its own pace (its pod was seen live
		// here once, not yet marked for deletion), and then it leaves at
		// the end of its grace period.
		if owner := metav1.GetControllerOf(&p); owner != nil && owner.Kind == "Job" && owner.Name == jref.Name {
			continue
		}
		if p.DeletionTimestamp == nil {
			live++
		}
		if p.Labels[DefaultTeamLabel] == "team-z" {
			t.Errorf("pod %s of the rejected team-z exists", p.Name)
		}
	}
	if err != nil || live != 1 {
		t.Errorf("pods after the rejection: %d live of %d (%v), want 1 (the first pod)", live, len(pods.Items), err)
	}
}

func TestIntegrationCheckpointThenEvict(t *testing.T) {
	e := k8stest.New(t)
	n1 := e.Node(k8stest.NodeSpec{Name: "n1", GPUs: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lbl := func(borrowed string) map[string]string {
		return map[string]string{DefaultTeamLabel: "team-a", LabelBorrowed: borrowed}
	}
	victim := e.Pod(k8stest.PodSpec{Name: "victim", Node: n1, GPUs: 4, Labels: lbl("true"), Phase: corev1.PodRunning, PriorityClass: "mirage-borrowed"})
	other := e.Pod(k8stest.PodSpec{Name: "other-borrowed", Node: n1, GPUs: 2, Labels: lbl("true"), Phase: corev1.PodRunning, PriorityClass: "mirage-borrowed"})
	owned := e.Pod(k8stest.PodSpec{Name: "owned", Node: n1, GPUs: 4, Labels: lbl("false"), Phase: corev1.PodRunning})

	clock := newManualClock(time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC))
	c := client(t, e, Config{Clock: clock, PollInterval: 50 * time.Millisecond})
	id := PodRef(victim.Namespace, victim.Name).String()

	// 1. Checkpoint signal: annotations with the clock's time.
	if err := c.Signal(ctx, id, "USR1"); err != nil {
		t.Fatal(err)
	}
	got, err := e.Admin.CoreV1().Pods(e.Namespace).Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[AnnotationCheckpoint] != "2026-11-22T19:00:00Z" || got.Annotations[AnnotationSignal] != "USR1" {
		t.Errorf("annotations = %v", got.Annotations)
	}

	// 2. Evict with a 30 s grace period; the clock's After fires only when we say.
	type out struct {
		res *EvictResult
		err error
	}
	done := make(chan out, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := c.Evict(ctx, id, 30*time.Second, "team-b needs its quota")
		done <- out{r, err}
	}()
	var d time.Duration
	select {
	case d = <-clock.waited:
	case o := <-done:
		t.Fatalf("Evict returned before waiting the grace period: %+v %v", o.res, o.err)
	}
	if d != 30*time.Second {
		t.Errorf("waited %v, want the 30s grace period", d)
	}
	// During the grace period: the victim is Terminating with the grace period
	// given, still holding its GPUs; nothing else is touched.
	got, err = e.Admin.CoreV1().Pods(e.Namespace).Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("victim gone before the grace period ended: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Errorf("victim deletion timestamp %v grace %v, want terminating with 30", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u := inv.Node(n1).Used; u != 10 {
		t.Errorf("used during grace = %d, want 10 (a terminating pod holds its GPUs)", u)
	}
	// 3. The grace period elapses: the pod is evicted again with grace 0 and gone.
	clock.fire <- clock.now.Add(30 * time.Second)
	wg.Wait()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := e.Namespace + "/victim"
	if len(o.res.Pods) != 1 || o.res.Pods[0] != want || len(o.res.Forced) != 1 || o.res.Forced[0] != want {
		t.Errorf("result = %+v", o.res)
	}
	if _, err := e.Admin.CoreV1().Pods(e.Namespace).Get(ctx, "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("victim after eviction: %v", err)
	}
	for _, p := range []*corev1.Pod{other, owned} {
		g, err := e.Admin.CoreV1().Pods(e.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || g.DeletionTimestamp != nil {
			t.Errorf("%s touched: %v %v", p.Name, err, g)
		}
	}
	evs, err := e.Admin.CoreV1().Events(e.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=victim"})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Reason != "MirageReclaim" || !strings.Contains(evs.Items[0].Message, "team-b needs its quota") {
		t.Errorf("events = %+v (%v)", evs, err)
	}
	if inv, err = c.Inventory(ctx); err != nil || inv.Node(n1).Used != 6 {
		t.Errorf("used after eviction = %+v, %v; want 6", inv.Node(n1), err)
	}
	// Evicting a pod that is gone: not found, nothing else happens.
	if _, err := c.Evict(ctx, id, time.Second, "again"); !errors.Is(err, provisioner.ErrNotFound) {
		t.Errorf("evict missing pod: %v", err)
	}
}

func TestIntegrationLeastPrivilege(t *testing.T) {
	e := k8stest.New(t)
	n1 := e.Node(k8stest.NodeSpec{Name: "n1", GPUs: 8})
	ctx := context.Background()
	c := client(t, e, Config{})
	inv, err := c.Inventory(ctx)
	if err != nil {
		t.Fatalf("mirage may list nodes and pods: %v", err)
	}
	if inv.Node(n1) == nil || inv.GPUs != 8 {
		t.Errorf("inventory = %+v", inv)
	}
	cs := c.Clientset()
	err = cs.CoreV1().Nodes().Delete(ctx, n1, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("delete node as mirage: %v, want Forbidden", err)
	}
	cerr := c.classify(op{"delete", "nodes", ""}, err)
	if !errors.Is(cerr, ErrForbidden) || !strings.Contains(cerr.Error(), "may not delete nodes") || !strings.Contains(cerr.Error(), `"mirage"`) {
		t.Errorf("classified: %v", cerr)
	}
	if _, err := cs.CoreV1().Secrets(e.Namespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as mirage: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n1, "application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("cordon as mirage: %v, want Forbidden", err)
	}
	if _, err := e.Admin.CoreV1().Nodes().Get(ctx, n1, metav1.GetOptions{}); err != nil {
		t.Errorf("node gone: %v", err)
	}
}

// Job mode: the Job controller makes the Job's pod, the scheduler binds it
// to the node mirage required, kwok runs it. Snapshot reports it under the
// Job's id; Evict deletes the Job (so nothing replaces the pod) and evicts
// the pod.
func TestIntegrationEvictJob(t *testing.T) {
	e := k8stest.New(t)
	n1 := e.Node(k8stest.NodeSpec{Name: "n1", GPUs: 8})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client(t, e, Config{Mode: ModeJob, Namespace: e.Namespace})
	id, err := c.Submit(ctx, provisioner.SubmitRequest{Name: "borrowed", Account: "team-a", QOS: "preemptible", GPUs: 8, NodeList: []string{n1}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := ParseRef(id)
	var pod string
	for pod == "" { // the Job controller's pod
		l, err := e.Admin.CoreV1().Pods(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + ref.Name})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > 0 {
			pod = l.Items[0].Name
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if p := e.WaitPod(ref.Namespace, pod, "running", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodRunning }); p.Spec.NodeName != n1 {
		t.Errorf("the Job's pod runs on %s, want %s", p.Spec.NodeName, n1)
	}
	s, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j := s.Job(id); j == nil || j.GPUs != 8 || j.Account != "team-a" || j.State != provisioner.StateRunning {
		t.Fatalf("snapshot job %s = %+v (jobs %+v)", id, j, s.Jobs)
	}
	res, err := c.Evict(ctx, id, 0, "owner needs its quota")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pods) != 1 || len(res.Forced) != 0 {
		t.Errorf("result = %+v, want one pod evicted at once, none forced", res)
	}
	// Deleted with orphan propagation: gone, or terminating until the
	// garbage collector removes its "orphan" finalizer.
	if j, err := e.Admin.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil && j.DeletionTimestamp == nil {
		t.Errorf("job after evict is not being deleted: %+v", j.ObjectMeta)
	}
	if _, err := e.Admin.CoreV1().Pods(ref.Namespace).Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after evict: %v", err)
	}
}
