// Package k8stest builds fixtures on the real test control plane started
// by scripts/k8s-up.sh: an admin clientset, a unique namespace per test, GPU
// Nodes (capacity, allocatable and a Ready condition written through the
// status subresource) that kwok keeps alive in place of a kubelet, and pods
// bound to them. Everything it creates is deleted in t.Cleanup.
//
// kwok (sigs.k8s.io/kwok, scripts/k8s/kwok/stages.yaml) renews each ready
// node's lease and plays its pods' lifecycles: a bound pod starts running;
// a pod with the annotation AnnotationCompleteAfter succeeds that long
// after it started; one without it fails at its activeDeadlineSeconds
// (reason DeadlineExceeded); a deleted pod is gone at the end of its grace
// period (AnnotationExitAfter: sooner). A node that is not ready is left
// to the node lifecycle controller (it stays not ready).
//
// Tests running in parallel packages share the server, so fixtures carry the
// label mirage.io/test=<namespace>: restrict an inventory to them with
// NodeSelector(ns) and Config.Namespaces.
package k8stest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// LabelTest marks every fixture with the namespace of the test that made it.
const LabelTest = "mirage.io/test"

// Annotations kwok's stages read (scripts/k8s/kwok/stages.yaml).
const (
	// AnnotationCompleteAfter: a running pod succeeds this long (a Go
	// duration) after it started.
	AnnotationCompleteAfter = "pod-complete.stage.kwok.x-k8s.io/delay"
	// AnnotationExitAfter: a deleted pod is gone this long after its
	// deletion began (default: at the end of its grace period).
	AnnotationExitAfter = "pod-delete.stage.kwok.x-k8s.io/delay"
)

// Env is one test's view of the test cluster.
type Env struct {
	T          testing.TB
	Kubeconfig string               // least-privilege kubeconfig (user mirage)
	AdminPath  string               // admin kubeconfig (system:masters)
	Admin      kubernetes.Interface // admin clientset
	Namespace  string               // unique namespace of this test
	// KwokLabel is the label (KEY=VALUE) by which kwok manages nodes
	// ($MIRAGE_TEST_KWOK_LABEL, written by scripts/k8s-up.sh).
	KwokLabel string
}

// New returns the test environment: skips outside CI when the cluster is not
// configured (fails in CI), creates a unique namespace and deletes it after.
func New(t testing.TB) *Env {
	t.Helper()
	kc := testenv.Kubeconfig(t)
	admin := os.Getenv("MIRAGE_TEST_ADMIN_KUBECONFIG")
	if admin == "" {
		t.Fatalf("MIRAGE_TEST_ADMIN_KUBECONFIG unset although MIRAGE_TEST_KUBECONFIG is: source the env.sh written by scripts/k8s-up.sh")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("admin clientset: %v", err)
	}
	kwok := os.Getenv("MIRAGE_TEST_KWOK_LABEL")
	if _, _, ok := strings.Cut(kwok, "="); !ok {
		t.Fatalf("MIRAGE_TEST_KWOK_LABEL %q: want KEY=VALUE (source the env.sh written by scripts/k8s-up.sh: the control plane has no kwok?)", kwok)
	}
	e := &Env{T: t, Kubeconfig: kc, AdminPath: admin, Admin: cs, Namespace: "mt-" + suffix(), KwokLabel: kwok}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace, Labels: map[string]string{LabelTest: e.Namespace}}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", e.Namespace, err)
	}
	t.Cleanup(func() { e.cleanup() })
	return e
}

// NodeSelector is the label selector matching this test's nodes.
func (e *Env) NodeSelector() string { return LabelTest + "=" + e.Namespace }

// NodeName returns a cluster-unique node name for this test.
func (e *Env) NodeName(short string) string { return e.Namespace + "-" + short }

// NodeSpec describes a fake GPU node.
type NodeSpec struct {
	Name     string            // short name; the node is called NodeName(Name)
	GPUs     int               // nvidia.com/gpu capacity and allocatable
	Product  string            // nvidia.com/gpu.product label ("" = none)
	MIG      map[string]int    // extra MIG resources (nvidia.com/mig-*)
	NotReady bool              // Ready condition False
	Cordoned bool              // spec.unschedulable
	Labels   map[string]string // extra labels
}

// Node creates a node object and writes its status (capacity, allocatable,
// Ready, phase Running) through the status subresource; a ready node is
// labelled for kwok, which keeps it alive (its lease) and runs its pods.
// It returns the node's full name.
func (e *Env) Node(s NodeSpec) string {
	e.T.Helper()
	ctx := context.Background()
	name := e.NodeName(s.Name)
	labels := map[string]string{LabelTest: e.Namespace, "kubernetes.io/hostname": name}
	if s.Product != "" {
		labels["nvidia.com/gpu.product"] = s.Product
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	if !s.NotReady {
		k, v, _ := strings.Cut(e.KwokLabel, "=")
		labels[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Unschedulable: s.Cordoned},
	}
	if _, err := e.Admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		e.T.Fatalf("create node %s: %v", name, err)
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      resource.MustParse(strconv.Itoa(s.GPUs)),
	}
	for k, v := range s.MIG {
		res[corev1.ResourceName(k)] = resource.MustParse(strconv.Itoa(v))
	}
	if err := WriteStatus(ctx, e.Admin, name, res, !s.NotReady); err != nil {
		e.T.Fatalf("update status of node %s: %v", name, err)
	}
	return name
}

// WriteStatus writes a node's status as a kubelet would report it:
// capacity and allocatable res, phase Running, Ready (or not). kwok
// (initialising the node) and the controller manager (tainting it until it
// is ready) may write the node meanwhile, so it writes on the latest
// version.
func WriteStatus(ctx context.Context, cs kubernetes.Interface, name string, res corev1.ResourceList, ready bool) error {
	cond := corev1.ConditionTrue
	if !ready {
		cond = corev1.ConditionFalse
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Capacity, n.Status.Allocatable, n.Status.Phase = res, res, corev1.NodeRunning
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: cond, Reason: "mirage-test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// PodSpec describes a pod bound to a node (or unbound when Node is "": it
// names a scheduler that does not exist, so that it stays unbound).
type PodSpec struct {
	Name      string            // pod name
	Namespace string            // "" = the test namespace
	Node      string            // full node name (as returned by Node); "" = unbound
	GPUs      int               // nvidia.com/gpu request
	Labels    map[string]string // labels (team, borrowed, ...)
	Phase     corev1.PodPhase   // status phase to write ("" = leave Pending)
	// PriorityClass is the pod's priority class ("" = none); borrowed work
	// is the pod of class mirage-borrowed (scripts/k8s/rbac/).
	PriorityClass string
	Annotations   map[string]string // annotations (e.g. AnnotationCompleteAfter)
}

// Pod creates a pod; with Phase set it writes the status too.
func (e *Env) Pod(s PodSpec) *corev1.Pod {
	e.T.Helper()
	ctx := context.Background()
	ns := s.Namespace
	if ns == "" {
		ns = e.Namespace
	}
	labels := map[string]string{LabelTest: e.Namespace}
	for k, v := range s.Labels {
		labels[k] = v
	}
	c := corev1.Container{Name: "work", Image: "busybox:1.36"}
	if s.GPUs > 0 {
		q := resource.MustParse(strconv.Itoa(s.GPUs))
		c.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": q}
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns, Labels: labels, Annotations: s.Annotations},
		Spec: corev1.PodSpec{NodeName: s.Node, Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyNever,
			PriorityClassName: s.PriorityClass},
	}
	if s.Node == "" {
		p.Spec.SchedulerName = "mirage-test-none"
	}
	p, err := e.Admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("create pod %s/%s: %v", ns, s.Name, err)
	}
	if s.Phase != "" {
		// kwok may be starting a bound pod meanwhile: write on the latest.
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			cur, err := e.Admin.CoreV1().Pods(ns).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = s.Phase
			p, err = e.Admin.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			e.T.Fatalf("update status of pod %s/%s: %v", ns, s.Name, err)
		}
	}
	return p
}

// WaitTimeout bounds every wait of WaitPod: the control plane is shared
// by parallel tests on a loaded machine, but a pod that has not changed
// within it never will.
const WaitTimeout = 2 * time.Minute

// WaitPod polls pod ns/name until ok holds and returns it; it fails the
// test, saying what it waited for and what the pod was, after WaitTimeout.
// A pod that does not exist is passed to ok as nil.
func (e *Env) WaitPod(ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	e.T.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		p, err := e.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			e.T.Fatalf("get pod %s/%s: %v", ns, name, err)
		}
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("pod %s/%s: not %s after %s: %+v", ns, name, what, WaitTimeout, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Bound is WaitPod until the scheduler (or mirage) has bound the pod.
func (e *Env) Bound(ns, name string) *corev1.Pod {
	e.T.Helper()
	return e.WaitPod(ns, name, "bound to a node", func(p *corev1.Pod) bool { return p != nil && p.Spec.NodeName != "" })
}

// ExtraNamespace creates an extra namespace (deleted at cleanup) and returns its name.
func (e *Env) ExtraNamespace(short string) string {
	e.T.Helper()
	name := e.Namespace + "-" + short
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelTest: e.Namespace}}}
	if _, err := e.Admin.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		e.T.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// cleanup force-deletes this test's pods (at once, whatever their grace
// periods), its nodes and its namespaces.
func (e *Env) cleanup() {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: e.NodeSelector()}
	zero := int64(0)
	force := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if nss, err := e.Admin.CoreV1().Namespaces().List(ctx, sel); err == nil {
		for _, ns := range nss.Items {
			if pods, err := e.Admin.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{}); err == nil {
				for _, p := range pods.Items {
					_ = e.Admin.CoreV1().Pods(ns.Name).Delete(ctx, p.Name, force)
				}
			}
			_ = e.Admin.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
	if nodes, err := e.Admin.CoreV1().Nodes().List(ctx, sel); err == nil {
		for _, n := range nodes.Items {
			_ = e.Admin.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		}
	}
}

// suffix is a short random DNS-safe string.
func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(hex.EncodeToString(b[:]))
}
