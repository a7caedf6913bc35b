package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
)

// The controller's loop: a cycle at once, another when woken (the fault
// point after-event first), none after ctx ends; a usage error stops it.
func TestControllerLoop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{}, 1)
	ran := make(chan int, 10)
	var n atomic.Int32
	var points []string
	cycle := func(context.Context) error { ran <- int(n.Add(1)); return nil }
	done := make(chan error, 1)
	go func() {
		done <- controllerLoop(ctx, wake, time.Hour, 0, func(p string) { points = append(points, p) }, cycle, io.Discard)
	}()
	if got := <-ran; got != 1 {
		t.Fatalf("first cycle %d", got)
	}
	wake <- struct{}{}
	if got := <-ran; got != 2 {
		t.Fatalf("second cycle %d", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop after cancel: %v, want nil", err)
	}
	if strings.Join(points, ",") != "after-cycle,after-event,after-cycle" {
		t.Errorf("fault points %v", points)
	}
	// A cycle that fails as bad usage stops the loop with its error;
	// others are reported and the loop goes on.
	bad := cmdutil.WithCode(cmdutil.ExitUsage, errors.New("bad flag"))
	err := controllerLoop(context.Background(), nil, time.Hour, 0, func(string) {}, func(context.Context) error { return bad }, io.Discard)
	if !errors.Is(err, bad) {
		t.Errorf("usage error: %v", err)
	}
}

// lead acts only while it holds the Lease and returns once act has: a
// replica that finds the Lease held by another, unexpired, never acts; the
// holder's act ends with the context, cleanly.
func TestLead(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	lo := leaseOptions{namespace: "ns", name: "mirage-controller", duration: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}
	lock := func(id string) *resourcelock.LeaseLock {
		return &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "ns", Name: lo.name}, Client: cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	acting := make(chan struct{})
	var finished atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- lead(ctx, lock("a"), lo, func(ctx context.Context) error {
			close(acting)
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // a cycle finishing after the end
			finished.Store(true)
			return nil
		})
	}()
	<-acting
	l, err := cs.CoordinationV1().Leases("ns").Get(context.Background(), lo.name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "a" {
		t.Fatalf("lease %+v %v: want held by a", l, err)
	}
	// b campaigns while a holds it: it does not act before its own end.
	bctx, bcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer bcancel()
	if err := lead(bctx, lock("b"), lo, func(context.Context) error { t.Error("b acted while a leads"); return nil }); err != nil {
		t.Errorf("b stopped while waiting: %v, want nil", err)
	}
	cancel()
	if err := <-done; err != nil || !finished.Load() {
		t.Errorf("a: %v, act finished %t; want a clean stop after act returned", err, finished.Load())
	}
}
