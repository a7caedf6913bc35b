package main

// mirage controller on the test control plane (scripts/k8s-up.sh: the
// scheduler binds pods, kwok runs them), installed with the manifests of
// deploy/ and running as their service account: a chain of three segments
// that complete and hand off, and the controller killed at each of its
// named points.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/k8s/k8stest"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// deployDocs reads the YAML documents of a file under deploy/.
func deployDocs(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

// installController applies deploy/'s service account and RBAC to the
// test's namespace (in place of mirage-system; the cluster-wide role and
// binding under names of the test's own), creates the rest of deploy/ with
// a server-side dry run (schema and references checked, nothing run: no
// container runs here), and returns a kubeconfig holding a token of the
// service account: the controller runs with exactly the manifests'
// permissions.
func installController(t *testing.T, e *k8stest.Env) string {
	t.Helper()
	ctx := context.Background()
	ns := e.Namespace
	suffix := "-" + ns
	dryRunDeploy(t, e) // before the objects below exist under the same names
	decode := func(doc []byte, into any) {
		t.Helper()
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("deploy manifest: %v\n%s", err, doc)
		}
	}
	var sa corev1.ServiceAccount
	decode(deployDocs(t, "01-serviceaccount.yaml")[0], &sa)
	sa.Namespace = ns
	if _, err := e.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	docs := deployDocs(t, "02-clusterrole.yaml")
	var cr rbacv1.ClusterRole
	var crb rbacv1.ClusterRoleBinding
	decode(docs[0], &cr)
	decode(docs[1], &crb)
	cr.Name += suffix
	crb.Name += suffix
	crb.RoleRef.Name = cr.Name
	crb.Subjects[0].Namespace = ns
	if _, err := e.Admin.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
		_ = e.Admin.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
	})
	docs = deployDocs(t, "03-role-lease.yaml")
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	decode(docs[0], &role)
	decode(docs[1], &rb)
	role.Namespace, rb.Namespace, rb.Subjects[0].Namespace = ns, ns, ns
	if _, err := e.Admin.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.RbacV1().RoleBindings(ns).Create(ctx, &rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A token of the service account, in a kubeconfig on the admin's server.
	exp := int64(3600)
	tok, err := e.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(e.AdminPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = tok.Status.Token
	}
	path := filepath.Join(t.TempDir(), "controller.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// dryRunDeploy creates every object of deploy/ with a server-side dry run
// (the namespaced ones in the test's namespace): the API server checks each
// against its schema and admission without storing it.
func dryRunDeploy(t *testing.T, e *k8stest.Env) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", e.AdminPath)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("deploy/*.yaml: %v %v", files, err)
	}
	resources := map[string]string{"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings", "PriorityClass": "priorityclasses",
		"ConfigMap": "configmaps", "PersistentVolumeClaim": "persistentvolumeclaims", "Deployment": "deployments"}
	for _, f := range files {
		for _, doc := range deployDocs(t, filepath.Base(f)) {
			var u unstructured.Unstructured
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
			if err != nil || resources[u.GetKind()] == "" {
				t.Fatalf("%s: %s %s: %v", f, u.GetAPIVersion(), u.GetKind(), err)
			}
			r := dc.Resource(gv.WithResource(resources[u.GetKind()]))
			opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
			var cerr error
			if u.GetNamespace() != "" {
				u.SetNamespace(e.Namespace)
				_, cerr = r.Namespace(e.Namespace).Create(context.Background(), &u, opts)
			} else {
				u.SetName(u.GetName() + "-" + e.Namespace)
				_, cerr = r.Create(context.Background(), &u, opts)
			}
			if cerr != nil {
				t.Errorf("%s: %s %s: the API server refuses it: %v", filepath.Base(f), u.GetKind(), u.GetName(), cerr)
			}
		}
	}
}

// controllerEnv is one test's cluster nodes, rules, state and controller.
type controllerEnv struct {
	e          *k8stest.Env
	bin        string
	kubeconfig string // the controller's: the service account of deploy/
	dir        string
	rules      string
	state      string
	nodes      []string
	extra      []string // more flags for the controller
	// teamA, teamB are the test's own team names (the cluster's reclaim
	// events, which hold a team back, are cluster-wide).
	teamA, teamB string
}

// newControllerEnv makes the test's cluster: nodes of 10 GPUs and the
// rules, whose {A} and {B} name the test's teams.
func newControllerEnv(t *testing.T, rules string, nodes int) *controllerEnv {
	t.Helper()
	e := k8stest.New(t)
	ce := &controllerEnv{e: e, bin: mirageBinary(t), dir: t.TempDir(), teamA: "a-" + e.Namespace, teamB: "b-" + e.Namespace}
	rules = strings.NewReplacer("{A}", ce.teamA, "{B}", ce.teamB).Replace(rules)
	ce.kubeconfig = installController(t, e)
	for i := 1; i <= nodes; i++ {
		ce.nodes = append(ce.nodes, e.Node(k8stest.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 10}))
	}
	ce.rules, ce.state = filepath.Join(ce.dir, "rules.yaml"), filepath.Join(ce.dir, "state")
	if err := os.WriteFile(ce.rules, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	return ce
}

// backend are the flags every command of the test shares.
func (ce *controllerEnv) backend() []string {
	return []string{"--backend", "kubernetes", "--node-selector", ce.e.NodeSelector(), "--namespace", ce.e.Namespace,
		"--rules", ce.rules, "--state", ce.state}
}

// submit registers a chain with the CLI (as user mirage) and returns its id.
func (ce *controllerEnv) submit(t *testing.T, script, team string, args ...string) string {
	t.Helper()
	all := append(append([]string{"submit", script, "--kubeconfig", ce.e.Kubeconfig}, ce.backend()...), args...)
	all = append(all, "--", "-A", team)
	cmd := exec.Command(ce.bin, all...)
	cmd.Dir = ce.dir
	out, err := cmd.CombinedOutput()
	id := regexp.MustCompile(`chain (c-\S+) registered`).FindStringSubmatch(string(out))
	if err != nil || id == nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	return id[1]
}

// script writes a job script whose #SBATCH lines give its shape.
func (ce *controllerEnv) script(t *testing.T, name, sbatch string) string {
	t.Helper()
	p := filepath.Join(ce.dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+sbatch+"\npython train.py --resume\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// controller is one running controller process.
type controller struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// syncBuffer is a bytes.Buffer safe for a process writing and a test reading.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the controller with env (e.g. a crash point) as the
// manifests' service account; it is killed at the test's end if still
// running.
func (ce *controllerEnv) start(t *testing.T, env ...string) *controller {
	t.Helper()
	args := append([]string{"controller", "--kubeconfig", ce.kubeconfig, "--lease-namespace", ce.e.Namespace, "--identity", "replica-1",
		"--resync", "2s", "--settle", "200ms", "--submit-grace", "10s"}, ce.backend()...)
	args = append(args, ce.extra...)
	c := &controller{cmd: exec.Command(ce.bin, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	c.cmd.Dir = ce.dir
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// status reads a chain from the state database (the CLI's status --json).
func (ce *controllerEnv) status(t *testing.T, id string) chainops.ChainJSON {
	t.Helper()
	cmd := exec.Command(ce.bin, "status", id, "--json", "--state", ce.state)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("status %s: %v", id, err)
	}
	var c chainops.ChainJSON
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("status %s: %v\n%s", id, err, out)
	}
	return c
}

// waitChain waits until the chain has ended (or fails after a bound).
func (ce *controllerEnv) waitChain(t *testing.T, id string, c *controller) chainops.ChainJSON {
	t.Helper()
	deadline := time.Now().Add(3 * k8stest.WaitTimeout)
	for {
		s := ce.status(t, id)
		if s.State != string(provisioner.ChainActive) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain %s still active: %+v\ncontroller output:\n%s", id, s, c.out.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// podRecord is what a watch saw of one pod of the test's namespace.
type podRecord struct {
	name, node, required, comment string
	phase                         corev1.PodPhase
	scheduled                     bool // PodScheduled True (the scheduler bound it)
	start, end                    time.Time
}

// podRecorder keeps, for every pod the namespace ever had, its last state.
type podRecorder struct {
	mu   sync.Mutex
	pods map[string]*podRecord
}

func recordPods(t *testing.T, e *k8stest.Env) *podRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.Admin.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &podRecorder{pods: map[string]*podRecord{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r.mu.Lock()
			rec := r.pods[p.Name]
			if rec == nil {
				rec = &podRecord{name: p.Name, comment: p.Annotations[k8s.AnnotationComment]}
				r.pods[p.Name] = rec
			}
			rec.node, rec.phase = p.Spec.NodeName, p.Status.Phase
			if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				rec.required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
					rec.scheduled = true
				}
			}
			if p.Status.StartTime != nil {
				rec.start = p.Status.StartTime.Time
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Terminated != nil {
					rec.end = cs.State.Terminated.FinishedAt.Time
				}
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// byTag groups the recorded pods by the segment tag in their comment.
func (r *podRecorder) byTag() map[provisioner.Tag][]podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[provisioner.Tag][]podRecord{}
	for _, p := range r.pods {
		if tag, ok := provisioner.ParseTag(p.comment); ok {
			out[tag] = append(out[tag], *p)
		}
	}
	return out
}

// A chain of three segments on the live control plane, run by the
// controller: every segment's pod is bound by the scheduler to the node
// the rules chose, runs (kwok), completes 4 s after it started (the
// completion annotation: its scaled duration) and is followed by the next
// (policy dependency: submitted once the predecessor's pod is no longer
// live, as Kubernetes has no job dependencies). The chain ends done after
// its three segments; mirage's record (status) and the cluster's (the
// pods) agree: one pod per segment, each Succeeded, each successor started
// after its predecessor ended. The controller holds the Lease.
func TestIntegrationControllerChain(t *testing.T) {
	t.Parallel()
	ce := newControllerEnv(t, "teams: [{name: '{A}', gpus: 10}, {name: '{B}', gpus: 10}]\n", 2)
	ce.extra = []string{"--pod-annotation", k8stest.AnnotationCompleteAfter + "=4s"}
	pods := recordPods(t, ce.e)
	script := ce.script(t, "train.sh", "#SBATCH -t 5\n#SBATCH --gpus 4")
	id := ce.submit(t, script, ce.teamA, "--segments", "3", "--policy", "dependency",
		"--pod-annotation", k8stest.AnnotationCompleteAfter+"=4s")
	c := ce.start(t)
	s := ce.waitChain(t, id, c)
	if s.State != string(provisioner.ChainDone) || !strings.Contains(s.Reason, "all 3 segments ran") || len(s.SegmentList) != 3 {
		t.Fatalf("chain %+v; want done after 3 segments\n%s", s, c.out.String())
	}
	tags := pods.byTag()
	var prevEnd time.Time
	for i, seg := range s.SegmentList {
		ps := tags[provisioner.Tag{Chain: id, Segment: i, Attempt: 0}]
		if seg.State != string(provisioner.StateCompleted) || len(ps) != 1 {
			t.Fatalf("segment %d: %+v, pods %+v; want one pod, completed", i, seg, ps)
		}
		p := ps[0]
		if !p.scheduled || p.node == "" || p.node != p.required || p.phase != corev1.PodSucceeded {
			t.Errorf("segment %d pod %+v: want bound by the scheduler to mirage's node, Succeeded", i, p)
		}
		if p.end.Sub(p.start) < 4*time.Second {
			t.Errorf("segment %d ran %s, less than its 4 s", i, p.end.Sub(p.start))
		}
		if i > 0 && p.start.Before(prevEnd) {
			t.Errorf("segment %d started at %s, before its predecessor ended at %s", i, p.start, prevEnd)
		}
		prevEnd = p.end
	}
	lease, err := ce.e.Admin.CoordinationV1().Leases(ce.e.Namespace).Get(context.Background(), "mirage-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "replica-1" {
		t.Errorf("lease %+v %v: want held by replica-1", lease, err)
	}
}

// The controller killed at each of its named points, then started again:
// no pod is created twice for one segment and no segment is lost. Two
// nodes × 10 GPUs; team-a (quota 10) runs a1 (10 GPUs, its quota) and
// borrows n2 for a2; team-b (quota 10) then asks for a chain of two 10-GPU
// segments of 5 s each: within quota, nothing free, and a2 is younger than
// the 5 s minimum run time, so submit defers it; the controller reclaims
// a2 once it comes of age (checkpoint signal, 2 s grace) and runs b's two
// segments (each ends at its 5 s limit: TIMEOUT). Each run of the scenario
// kills the controller once at one point (the first time it gets there),
// starts it again, and waits for b's chain to end. Points: the
// controller's (after-elected, after-event, after-cycle), the cycle's
// (after-lock) and the engine's (after-snapshot, after-bookkeeping,
// before-reclaim, after-reclaim, before-submit, after-submit,
// after-commit).
func TestIntegrationControllerCrashPoints(t *testing.T) {
	t.Parallel()
	points := []string{faultAfterElected, faultAfterEvent, "after-lock", provisioner.FaultAfterSnapshot, provisioner.FaultAfterBookkeeping,
		provisioner.FaultBeforeReclaim, provisioner.FaultAfterReclaim, provisioner.FaultBeforeSubmit, provisioner.FaultAfterSubmit,
		provisioner.FaultAfterCommit, faultAfterCycle}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			ce := newControllerEnv(t, "teams: [{name: '{A}', gpus: 10}, {name: '{B}', gpus: 10}]\n"+
				"borrowing: {grace: 2s, minRuntime: 5s, backoff: 1h}\n", 2)
			pods := recordPods(t, ce.e)
			long := ce.script(t, "long.sh", "#SBATCH -t 60\n#SBATCH --gpus 10")
			a1 := ce.submit(t, long, ce.teamA, "--segments", "1")
			a2 := ce.submit(t, long, ce.teamA, "--segments", "1", "--new")
			b := ce.submit(t, ce.script(t, "b.sh", "#SBATCH -t 0:05\n#SBATCH --gpus 10"), ce.teamB, "--segments", "2", "--policy", "dependency")
			if s := ce.status(t, b); len(s.SegmentList) != 0 {
				log, _ := exec.Command(ce.bin, "log", b, "--state", ce.state).CombinedOutput()
				t.Fatalf("b submitted at once: %+v; want it deferred (a2 too young to reclaim)\n%s", s, log)
			}
			c := ce.start(t, "MIRAGE_TEST_CRASH_AT="+point)
			select {
			case err := <-c.done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != crashExitCode || !strings.Contains(c.out.String(), "point="+point) {
					t.Fatalf("controller at %s: %v, want a crash there\n%s", point, err, c.out.String())
				}
			case <-time.After(3 * k8stest.WaitTimeout):
				t.Fatalf("the controller never reached %s\n%s", point, c.out.String())
			}
			again := ce.start(t)
			s := ce.waitChain(t, b, again)
			if s.State != string(provisioner.ChainDone) || len(s.SegmentList) != 2 {
				t.Fatalf("b after a crash at %s: %+v\nfirst run:\n%s\nsecond run:\n%s", point, s, c.out.String(), again.out.String())
			}
			// 0 duplicates: one pod per segment tag; 0 lost: each of b's
			// segments ran to its limit, a1 still runs, a2 was reclaimed once.
			for tag, ps := range pods.byTag() {
				if len(ps) != 1 {
					t.Errorf("%v: %d pods, want one: %+v", tag, len(ps), ps)
				}
			}
			tags := pods.byTag()
			for i := range 2 {
				ps := tags[provisioner.Tag{Chain: b, Segment: i}]
				if len(ps) != 1 || ps[0].phase != corev1.PodFailed || !ps[0].scheduled {
					t.Errorf("b segment %d: %+v; want one pod, scheduled, ended at its deadline", i, ps)
				}
			}
			if ps := tags[provisioner.Tag{Chain: a1}]; len(ps) != 1 || ps[0].phase != corev1.PodRunning {
				t.Errorf("a1: %+v, want its one pod running", ps)
			}
			if ps := tags[provisioner.Tag{Chain: a2}]; len(ps) != 1 {
				t.Errorf("a2: %+v, want one pod (reclaimed, not admitted again within the back-off)", ps)
			}
			if s := ce.status(t, a1); s.State != string(provisioner.ChainActive) || len(s.SegmentList) != 1 {
				t.Errorf("a1 %+v: want active with its one segment", s)
			}
		})
	}
}
