package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

// fixedClock never lets a grace period elapse unless fire is closed.
type fixedClock struct {
	now  time.Time
	fire chan time.Time
}

func (c fixedClock) Now() time.Time                       { return c.now }
func (c fixedClock) After(time.Duration) <-chan time.Time { return c.fire }

func TestEvictBlockedByDisruptionBudgetForcesNothing(t *testing.T) {
	p := pod("ns", "victim").On("n1").GPUs(2).Borrowed().Obj()
	cs := fake.NewClientset(&p)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	})
	c := NewForClientset(cs, Config{Clock: fixedClock{now: t0}})
	res, err := c.Evict(context.Background(), "pod/ns/victim", 5*time.Second, "test")
	if !errors.Is(err, ErrEvictionBlocked) {
		t.Fatalf("err = %v, want ErrEvictionBlocked", err)
	}
	if len(res.Pods) != 0 || len(res.Forced) != 0 {
		t.Errorf("result = %+v, want nothing evicted", res)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("unexpected delete: %v", a)
		}
	}
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("victim gone: %v", err)
	}
}

func TestEvictGoneDuringGraceIsNotForced(t *testing.T) {
	p := pod("ns", "victim").On("n1").GPUs(2).Obj()
	cs := fake.NewClientset(&p)
	var graces []int64
	// A kubelet that stops the pod within the grace period: the eviction deletes it.
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		graces = append(graces, *ev.DeleteOptions.GracePeriodSeconds)
		return true, nil, cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ns", ev.Name)
	})
	c := NewForClientset(cs, Config{Clock: fixedClock{now: t0}, PollInterval: time.Millisecond})
	res, err := c.Evict(context.Background(), "pod/ns/victim", 1500*time.Millisecond, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(graces) != 1 || graces[0] != 2 {
		t.Errorf("eviction grace periods = %v, want [2] (1.5 s rounded up)", graces)
	}
	if len(res.Pods) != 1 || len(res.Forced) != 0 {
		t.Errorf("result = %+v, want one pod evicted, none forced", res)
	}
}

func TestSignalAnnotatesAndCallsHook(t *testing.T) {
	p := pod("ns", "p").On("n1").GPUs(1).Team("team-a").Obj()
	cs := fake.NewClientset(&p)
	got := make(chan CheckpointNotice, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n CheckpointNotice
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("hook body: %v", err)
		}
		got <- n
	}))
	defer srv.Close()
	c := NewForClientset(cs, Config{Clock: fixedClock{now: t0}, CheckpointHook: srv.URL})
	ctx := context.Background()
	if err := c.Signal(ctx, "pod/ns/p", "USR1"); err != nil {
		t.Fatal(err)
	}
	q, _ := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if q.Annotations[AnnotationCheckpoint] != "2026-11-22T12:00:00Z" || q.Annotations[AnnotationSignal] != "USR1" {
		t.Errorf("annotations = %v", q.Annotations)
	}
	n := <-got
	want := CheckpointNotice{Job: "pod/ns/p", Namespace: "ns", Pod: "p", Node: "n1", Team: "team-a", Signal: "USR1", Requested: t0}
	if n != want {
		t.Errorf("notice = %+v, want %+v", n, want)
	}
	if err := c.Signal(ctx, "pod/ns/missing", "USR1"); !errors.Is(err, provisioner.ErrNotFound) {
		t.Errorf("missing pod: %v", err)
	}
}

func TestCancelJobDeletesJobAndPods(t *testing.T) {
	p := pod("ns", "j-abc").On("n1").GPUs(1).Obj()
	p.Labels["batch.kubernetes.io/job-name"] = "j"
	other := pod("ns", "other").On("n1").GPUs(1).Obj()
	job := JobManifest(Workload{Namespace: "ns", Name: "j", Node: "n1", Image: "i"}, "")
	job.Name = "j"
	cs := fake.NewClientset(&p, &other, job)
	grace := time.Duration(0)
	c := NewForClientset(cs, Config{CancelGrace: &grace})
	ctx := context.Background()
	if err := c.Cancel(ctx, "job/ns/j"); err != nil {
		t.Fatal(err)
	}
	l, _ := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if len(l.Items) != 1 || l.Items[0].Name != "other" {
		t.Errorf("pods left = %v", l.Items)
	}
	if _, err := cs.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job after cancel: %v", err)
	}
	if err := c.Cancel(ctx, "job/ns/j"); !errors.Is(err, provisioner.ErrNotFound) {
		t.Errorf("second cancel: %v", err)
	}
}

// The engine's reclaim (provisioner.ExecuteReclaim) on the fake: the
// checkpoint signal (a patch of the pod) comes before the eviction; a
// victim that is gone stops it before any eviction (not found).
func TestReclaimSignalsThenEvicts(t *testing.T) {
	p := pod("ns", "victim").On("n1").GPUs(2).Borrowed().Obj()
	cs := fake.NewClientset(&p)
	var order []string
	cs.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch {
		case a.GetVerb() == "patch":
			order = append(order, "signal")
		case a.GetVerb() == "create" && a.GetSubresource() == "eviction":
			order = append(order, "evict")
			return true, nil, cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ns", "victim")
		}
		return false, nil, nil
	})
	c := NewForClientset(cs, Config{Clock: fixedClock{now: t0}, PollInterval: time.Millisecond})
	r := &provisioner.Reclaim{Team: "b", Node: "n1", Signal: "USR1", Grace: time.Second,
		Victims: []provisioner.Victim{{JobID: "pod/ns/victim", Reason: "owner needs quota"}}}
	if _, err := provisioner.ExecuteReclaim(context.Background(), c, r); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "signal" || order[1] != "evict" {
		t.Errorf("order = %v", order)
	}
	// A missing job: nothing evicted, not found.
	if _, err := provisioner.ExecuteReclaim(context.Background(), c, r); !errors.Is(err, provisioner.ErrNotFound) || len(order) != 2 {
		t.Errorf("missing: %v (calls %v)", err, order)
	}
}

// A reclaim is remembered by the cluster: the event recorded on the
// evicted pod carries its team, and the next snapshot lists it
// (Snapshot.Reclaimed) for the rules' back-off.
func TestReclaimIsRemembered(t *testing.T) {
	p := pod("ns", "victim").On("n1").GPUs(2).Team("team-a").Borrowed().Obj()
	cs := fakeCluster(p)
	c := NewForClientset(cs, Config{Clock: fixedClock{now: t0}, PollInterval: time.Millisecond})
	if err := c.EvictBorrowed(context.Background(), "pod/ns/victim", 0, "owner needs its quota"); err != nil {
		t.Fatal(err)
	}
	s, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Reclaimed) != 1 || s.Reclaimed[0] != (provisioner.Reclaimed{JobID: "pod/ns/victim", Team: "team-a", Time: t0}) {
		t.Errorf("reclaimed %+v, want pod/ns/victim of team-a at %v", s.Reclaimed, t0)
	}
}

// A pod evicted with grace 0 that lingers a moment (a Job's pod keeps its
// tracking finalizer until the Job controller drops it) is waited for, not
// evicted a second time nor reported as forced: the CI failure of stop 56.
func TestEvictGraceZeroWaitsForLingeringPod(t *testing.T) {
	p := pod("ns", "victim").On("n1").GPUs(2).Obj()
	cs := fake.NewClientset(&p)
	var graces []int64
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		graces = append(graces, *ev.DeleteOptions.GracePeriodSeconds)
		return true, nil, nil // accepted; the pod stays for now
	})
	polls := 0
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		polls++
		if polls == 3 { // gone at the third look
			_ = cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ns", "victim")
		}
		return false, nil, nil
	})
	// The wall clock: a grace period of 0 has elapsed at once, as in CI.
	c := NewForClientset(cs, Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Evict(ctx, "pod/ns/victim", 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(graces) != 1 || graces[0] != 0 {
		t.Errorf("eviction grace periods = %v, want one eviction with 0", graces)
	}
	if len(res.Pods) != 1 || len(res.Forced) != 0 {
		t.Errorf("result = %+v, want one pod evicted, none forced", res)
	}
	if polls < 3 {
		t.Errorf("looked %d times, want until the pod was gone (3)", polls)
	}
}
