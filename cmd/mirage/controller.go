package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/k8s"
)

// Fault points of the controller itself (tests kill it there; the
// engine's are provisioner.Fault*, the daemon cycle's "after-lock").
const (
	faultAfterElected = "after-elected" // leadership acquired, informers not started yet
	faultAfterEvent   = "after-event"   // a watch event woke the controller; its cycle has not run
	faultAfterCycle   = "after-cycle"   // a cycle is done and reported; the next not begun
)

// controllerOptions are the flags of mirage controller.
type controllerOptions struct {
	daemon daemonOptions // the cycle's: backend, state, policies, grace, --json
	resync time.Duration // a cycle at least this often
	settle time.Duration // events arriving within this window share one cycle
	lease  leaseOptions
}

// leaseOptions configure the leader election.
type leaseOptions struct {
	namespace, name, identity string
	duration, renew, retry    time.Duration
}

func newControllerCmd(f *Factory, runF func(*controllerOptions) error) *cobra.Command {
	o := &controllerOptions{daemon: daemonOptions{f: f}}
	o.daemon.backend.kind = "kubernetes"
	cmd := &cobra.Command{
		Use:   "controller --rules FILE [--kubeconfig FILE]",
		Short: "Run the chains and the team rules on Kubernetes as a controller: watch, elect a leader, reconcile",
		Long: `The daemon's cycle for Kubernetes, driven by the cluster instead of a timer: it
watches pods and nodes (client-go informers) and runs a cycle when they change
(events within --settle share one), and at least every --resync. Several
replicas may run: a Lease (--lease-namespace/--lease-name) elects the one that
acts; the others wait, and one takes over when the leader stops renewing it.
Each cycle is the daemon's (mirage daemon --once): the same state database
(--state), lock, decisions and crash safety. Cron mode stays for login nodes.
Installing it in a cluster (Deployment, ServiceAccount, RBAC): deploy/ and
docs/guide/kubernetes.md.`,
		Example: `  mirage controller --rules /etc/mirage/teams.yaml --state /var/lib/mirage
  mirage controller --rules teams.yaml --kubeconfig ~/.kube/config --lease-namespace mirage-system`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return controllerRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&o.resync, "resync", time.Minute, "run a cycle at least this often, whatever the cluster does")
	fl.DurationVar(&o.settle, "settle", time.Second, "events arriving within this window after the first share one cycle")
	fl.StringVar(&o.lease.namespace, "lease-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace inside a pod, else default)")
	fl.StringVar(&o.lease.name, "lease-name", "mirage-controller", "name of the leader-election Lease")
	fl.StringVar(&o.lease.identity, "identity", "", "this replica's name in the Lease (default: $POD_NAME, else the host name)")
	fl.DurationVar(&o.lease.duration, "lease-duration", 15*time.Second, "how long a leader that stops renewing keeps the Lease")
	fl.DurationVar(&o.lease.renew, "renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops acting")
	fl.DurationVar(&o.lease.retry, "retry-period", 2*time.Second, "how often replicas try to acquire or renew the Lease")
	fl.BoolVar(&o.daemon.json, "json", false, "print each cycle's report as JSON")
	addSubmitGrace(cmd, &o.daemon.grace)
	o.daemon.policy.add(cmd)
	o.daemon.state.add(cmd)
	o.daemon.backend.add(cmd)
	for _, slurmOnly := range []string{"slurm-conf", "slurm-bin", "slurm-timeout"} {
		_ = fl.MarkHidden(slurmOnly)
	}
	if b := fl.Lookup("backend"); b != nil {
		_ = b.Value.Set("kubernetes")
		b.DefValue, b.Usage = "kubernetes", "cluster backend: kubernetes (the only one the controller watches)"
	}
	return cmd
}

// check refuses flags that cannot work, as usage errors.
func (o *controllerOptions) check() error {
	b := &o.daemon.backend
	switch {
	case b.kind != "kubernetes" && b.kind != "k8s":
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--backend %s: the controller watches Kubernetes (on Slurm, run mirage daemon)", b.kind))
	case b.rules == "":
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--rules is required: the team rules choose each pod's node"))
	case o.daemon.grace <= 0:
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--submit-grace %s: want a positive duration", o.daemon.grace))
	case o.resync <= 0 || o.settle < 0:
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--resync %s, --settle %s: want a positive resync and a settle of 0 or more", o.resync, o.settle))
	case o.lease.duration <= o.lease.renew || o.lease.renew <= o.lease.retry || o.lease.retry <= 0:
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--lease-duration %s > --renew-deadline %s > --retry-period %s > 0 is required",
			o.lease.duration, o.lease.renew, o.lease.retry))
	}
	return nil
}

// controllerRun opens what the daemon's cycle needs, then campaigns for
// the Lease; as leader it watches and reconciles until ctx ends or the
// leadership is lost (an error: the process exits, a Deployment starts it
// again).
func controllerRun(ctx context.Context, o *controllerOptions) error {
	d := &o.daemon
	dir, err := d.state.Resolve()
	if err != nil {
		return stateErr(err)
	}
	cl, err := d.f.Backend(&d.backend)
	if err != nil {
		return stateErr(err)
	}
	kc, ok := cl.(*k8s.Client)
	if !ok {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("the controller needs the Kubernetes backend, not %T", cl))
	}
	st, err := d.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	key, err := d.state.tagKey(d.f)
	if err != nil {
		return err
	}
	rules, err := d.backend.loadRules()
	if err != nil {
		return err
	}
	eng := newEngine(d.f, cl, rules, st, key, d.grace, d.policy)
	lockPath := filepath.Join(dir, state.LockName)
	cycle := func(ctx context.Context) error { return daemonCycle(ctx, d, eng, st, lockPath) }
	fault := eng.Fault
	if fault == nil {
		fault = func(string) {}
	}
	lock, err := o.leaseLock(kc.Clientset(), d.f.Getenv)
	if err != nil {
		return err
	}
	return lead(ctx, lock, o.lease, func(ctx context.Context) error {
		fault(faultAfterElected)
		fmt.Fprintf(d.f.ErrOut, "mirage: leading as %s (lease %s/%s)\n", lock.Identity(), o.lease.namespace, o.lease.name)
		wake := make(chan struct{}, 1)
		if err := watchCluster(ctx, kc, wake); err != nil {
			return err
		}
		return controllerLoop(ctx, wake, o.resync, o.settle, fault, cycle, d.f.ErrOut)
	})
}

// lead campaigns for lock and, while leading, runs act with a context
// that ends when the leadership does. It returns act's error, else an
// error when the leadership was lost while ctx lives (nil when ctx ended:
// a clean stop), and only once act has returned, so that nothing act uses
// is closed under it.
func lead(ctx context.Context, lock resourcelock.Interface, lo leaseOptions, act func(context.Context) error) error {
	var mu sync.Mutex
	var stopped error // the first reason to stop
	stop := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if stopped == nil {
			stopped = err
		}
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var acting sync.WaitGroup // act, waited for before returning
	var started atomic.Bool
	var once sync.Once
	acting.Add(1)
	done := func() { once.Do(acting.Done) }
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: lo.duration, RenewDeadline: lo.renew, RetryPeriod: lo.retry, ReleaseOnCancel: true, Name: lo.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				started.Store(true)
				defer done()
				if ctx.Err() != nil {
					return // stopped before it began: it touches nothing
				}
				if err := act(ctx); err != nil {
					stop(err)
				}
				cancel()
			},
			OnStoppedLeading: func() {
				if parent.Err() == nil {
					stop(cmdutil.WithCode(cmdutil.ExitUnavailable, fmt.Errorf("lost the lease %s/%s: stopped acting (another replica may lead now)", lo.namespace, lo.name)))
				}
				cancel()
			},
		},
	})
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	elector.Run(ctx)
	cancel()
	if !started.Load() {
		done() // never led; should act begin now, it sees ctx ended and returns
	}
	acting.Wait()
	mu.Lock()
	defer mu.Unlock()
	return stopped
}

// leaseLock is the Lease the replicas campaign for.
func (o *controllerOptions) leaseLock(cs kubernetes.Interface, getenv func(string) string) (*resourcelock.LeaseLock, error) {
	if o.lease.namespace == "" {
		o.lease.namespace = "default"
		if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
			o.lease.namespace = string(ns)
		}
	}
	id := cmp.Or(o.lease.identity, getenv("POD_NAME"))
	if id == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("no --identity and no host name: %w", err))
		}
		id = h
	}
	return &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: o.lease.namespace, Name: o.lease.name},
		Client: cs.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: id}}, nil
}

// watchCluster starts informers on the pods and nodes the client reads
// and signals wake (without blocking: one pending wake is enough) on every
// change; it returns once their caches are synced.
func watchCluster(ctx context.Context, kc *k8s.Client, wake chan<- struct{}) error {
	cs := kc.Clientset()
	namespaces, nodeSelector := kc.Watched()
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	var informers []cache.SharedIndexInformer
	for _, ns := range namespaces {
		informers = append(informers, cache.NewSharedIndexInformer(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Pods(ns).List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods(ns).Watch(ctx, opts)
			},
		}, &corev1.Pod{}, 0, cache.Indexers{}))
	}
	informers = append(informers, cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = nodeSelector
			return cs.CoreV1().Nodes().List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = nodeSelector
			return cs.CoreV1().Nodes().Watch(ctx, opts)
		},
	}, &corev1.Node{}, 0, cache.Indexers{}))
	synced := make([]cache.InformerSynced, 0, len(informers))
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watch the cluster: %w", err)
		}
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("watch the cluster: the pod and node caches did not sync: %w", cmp.Or(ctx.Err(), errors.New("stopped")))
	}
	return nil
}

// controllerLoop runs cycle at once, then again whenever wake fires (after
// waiting settle, so that the events of one change share a cycle) or
// resync has passed since the last, until ctx ends. A failed cycle is
// reported and the next one tries again.
func controllerLoop(ctx context.Context, wake <-chan struct{}, resync, settle time.Duration, fault func(string), cycle func(context.Context) error, errOut io.Writer) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		woken := false
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-wake:
			woken = true
		}
		if woken {
			fault(faultAfterEvent)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(settle):
			}
			select { // what arrived while settling is this cycle's too
			case <-wake:
			default:
			}
		}
		if err := cycle(ctx); err != nil && ctx.Err() == nil {
			var ee *cmdutil.ExitError
			if errors.As(err, &ee) && ee.Code == cmdutil.ExitUsage {
				return err
			}
			fmt.Fprintf(errOut, "mirage: controller cycle failed; trying again at the next change or resync: %v\n", err)
		}
		fault(faultAfterCycle)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(resync)
	}
}
