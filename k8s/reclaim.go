package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mirage-gpu/mirage/provisioner"
)

// CheckpointNotice is the JSON body POSTed to Config.CheckpointHook by Signal.
type CheckpointNotice struct {
	Job       string    `json:"job"`       // job id (pod/ns/name or job/ns/name)
	Namespace string    `json:"namespace"` // pod namespace
	Pod       string    `json:"pod"`       // pod name
	Node      string    `json:"node"`      // node the pod is bound to
	Team      string    `json:"team"`      // team of the pod
	Signal    string    `json:"signal"`    // requested signal, e.g. "USR1"
	Requested time.Time `json:"requested"` // when mirage asked
}

// Signal implements provisioner.Cluster. Kubernetes cannot deliver a signal
// through the API, so mirage asks for a checkpoint: it sets the annotations
// mirage.io/checkpoint-requested=<RFC 3339 time> and
// mirage.io/checkpoint-signal=<signal> on the pod (on each pod of a Job),
// which the workload sees through a downward-API volume, and POSTs a
// CheckpointNotice to Config.CheckpointHook when one is configured.
func (c *Client) Signal(ctx context.Context, jobID string, signal string) error {
	ref, err := ParseRef(jobID)
	if err != nil {
		return err
	}
	pods, err := c.refPods(ctx, ref)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("k8s: signal %s: %w: the job has no pods", jobID, provisioner.ErrNotFound)
	}
	now := c.cfg.Clock.Now().UTC()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		AnnotationCheckpoint: now.Format(time.RFC3339Nano),
		AnnotationSignal:     signal,
	}}})
	if err != nil {
		return fmt.Errorf("k8s: signal %s: %w", jobID, err)
	}
	var errs []error
	for _, p := range pods {
		got, err := c.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "mirage"})
		if err != nil {
			errs = append(errs, c.classify(op{"patch", "pods", p.Namespace}, err))
			continue
		}
		if c.cfg.CheckpointHook != "" {
			n := CheckpointNotice{Job: jobID, Namespace: got.Namespace, Pod: got.Name, Node: got.Spec.NodeName,
				Team: c.cfg.Mapping.Team(got), Signal: signal, Requested: now}
			if err := c.postHook(ctx, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// postHook POSTs one checkpoint notice to the configured URL.
func (c *Client) postHook(ctx context.Context, n CheckpointNotice) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("k8s: checkpoint hook: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.CheckpointHook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("k8s: checkpoint hook %s: %w", c.cfg.CheckpointHook, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("k8s: checkpoint hook %s: %w", c.cfg.CheckpointHook, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("k8s: checkpoint hook %s: HTTP %s", c.cfg.CheckpointHook, resp.Status)
	}
	return nil
}

// EvictResult reports what Evict did.
type EvictResult struct {
	Job      string        // the job id evicted
	Pods     []string      // pods evicted, "namespace/name"
	Forced   []string      // of Pods, those still present when the grace period ended, evicted again with grace 0
	Grace    time.Duration // grace period given
	Started  time.Time     // when the first eviction was accepted
	Finished time.Time     // when the last pod was gone
}

// Evict reclaims a job's GPUs through the Eviction API (policy/v1): each pod
// is evicted with the grace period (rounded up to whole seconds; the kubelet
// sends SIGTERM and kills after it), Evict waits until the pods are gone or the
// grace period has elapsed, and evicts any pod still there again with grace 0
// (a node whose kubelet is gone would otherwise leave it Terminating forever);
// with grace 0 from the start it only waits for the pods to go. A Job is deleted first (orphaning its pods) so that no
// replacement pod is created. reason is recorded as an event on each pod
// evicted (LabelReclaim, with the pod's team: the cluster's memory of the
// reclaim, Snapshot.Reclaimed).
// A disruption budget that refuses the eviction gives ErrEvictionBlocked and
// leaves the pod running; nothing is forced.
func (c *Client) Evict(ctx context.Context, jobID string, grace time.Duration, reason string) (*EvictResult, error) {
	ref, err := ParseRef(jobID)
	if err != nil {
		return nil, err
	}
	if grace < 0 {
		grace = 0
	}
	pods, err := c.refPods(ctx, ref)
	if err != nil {
		return nil, err
	}
	if ref.Kind == "job" {
		orphan := metav1.DeletePropagationOrphan
		err := c.cs.BatchV1().Jobs(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &orphan})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, c.classify(op{"delete", "jobs", ref.Namespace}, err)
		}
	}
	res := &EvictResult{Job: jobID, Grace: grace}
	secs := int64((grace + time.Second - 1) / time.Second)
	var evicted []corev1.Pod
	var errs []error
	for _, p := range pods {
		if err := c.evictOne(ctx, &p, secs); err != nil {
			errs = append(errs, err)
			continue
		}
		c.event(ctx, &p, ReasonReclaim, fmt.Sprintf("evicting with a %s grace period: %s", grace, reason),
			map[string]string{LabelReclaim: "true", LabelReclaimTeam: labelValue(c.mapping().Team(&p))})
		if res.Started.IsZero() {
			res.Started = c.cfg.Clock.Now()
		}
		res.Pods = append(res.Pods, p.Namespace+"/"+p.Name)
		evicted = append(evicted, p)
	}
	if len(evicted) > 0 && secs == 0 {
		// Evicted with grace 0 already: evicting again cannot hasten anything.
		// A pod may stay a moment after the eviction was accepted (a Job's pod
		// until the Job controller drops its tracking finalizer); wait for it.
		if _, err := c.waitGone(ctx, evicted, nil); err != nil {
			errs = append(errs, err)
		}
		res.Finished = c.cfg.Clock.Now()
	} else if len(evicted) > 0 {
		remaining, err := c.waitGone(ctx, evicted, c.cfg.Clock.After(grace))
		if err != nil {
			return res, errors.Join(append(errs, err)...)
		}
		for _, p := range remaining {
			if err := c.evictOne(ctx, &p, 0); err != nil {
				errs = append(errs, err)
				continue
			}
			res.Forced = append(res.Forced, p.Namespace+"/"+p.Name)
		}
		if len(res.Forced) > 0 {
			// Grace 0 removes the pod at once; confirm it (bounded by ctx).
			if _, err := c.waitGone(ctx, remaining, nil); err != nil {
				errs = append(errs, err)
			}
		}
		res.Finished = c.cfg.Clock.Now()
	}
	if len(pods) == 0 && ref.Kind == "pod" {
		return res, fmt.Errorf("k8s: evict %s: %w", jobID, provisioner.ErrNotFound)
	}
	return res, errors.Join(errs...)
}

// evictOne posts one Eviction with the given grace period (seconds); a pod
// already gone counts as evicted.
func (c *Client) evictOne(ctx context.Context, p *corev1.Pod, graceSeconds int64) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &graceSeconds, Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	err := c.cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// NotFound: already gone; Conflict: the UID precondition failed, so this pod is gone
		// (a new one may carry its name).
		return nil
	}
	return c.classify(op{"create", "pods/eviction", p.Namespace}, err)
}

// waitGone polls until every pod is gone (or replaced under the same name), or
// until deadline fires (nil: only ctx bounds the wait); it returns the pods
// still present at the deadline.
func (c *Client) waitGone(ctx context.Context, pods []corev1.Pod, deadline <-chan time.Time) ([]corev1.Pod, error) {
	tick := time.NewTicker(c.cfg.PollInterval)
	defer tick.Stop()
	left := pods
	for {
		var still []corev1.Pod
		for _, p := range left {
			got, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, c.classify(op{"get", "pods", p.Namespace}, err)
			case got.UID == p.UID:
				still = append(still, p)
			}
		}
		left = still
		if len(left) == 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return left, fmt.Errorf("k8s: waiting for %d evicted pod(s) to go: %w", len(left), ctx.Err())
		case <-deadline:
			return left, nil
		case <-tick.C:
		}
	}
}

// refPods returns the pods of a job id: the pod itself, or the pods of a Job
// (by the job-name label). A missing pod or Job wraps provisioner.ErrNotFound.
func (c *Client) refPods(ctx context.Context, ref Ref) ([]corev1.Pod, error) {
	switch ref.Kind {
	case "pod":
		p, err := c.cs.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, c.classify(op{"get", "pods", ref.Namespace}, err)
		}
		return []corev1.Pod{*p}, nil
	case "job":
		if _, err := c.cs.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
			return nil, c.classify(op{"get", "jobs", ref.Namespace}, err)
		}
		l, err := c.cs.CoreV1().Pods(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + ref.Name})
		if err != nil {
			return nil, c.classify(op{"list", "pods", ref.Namespace}, err)
		}
		return l.Items, nil
	}
	return nil, fmt.Errorf("k8s: %w: kind %q", ErrBadRef, ref.Kind)
}

// Cancel implements provisioner.Cluster: it deletes the pod, or the Job and
// its pods, with the pods' own grace period (Config.CancelGrace when set).
func (c *Client) Cancel(ctx context.Context, jobID string) error {
	ref, err := ParseRef(jobID)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if c.cfg.CancelGrace != nil {
		s := int64((*c.cfg.CancelGrace + time.Second - 1) / time.Second)
		opts.GracePeriodSeconds = &s
	}
	if ref.Kind == "pod" {
		err := c.cs.CoreV1().Pods(ref.Namespace).Delete(ctx, ref.Name, opts)
		return c.classify(op{"delete", "pods", ref.Namespace}, err)
	}
	pods, err := c.refPods(ctx, ref)
	if err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	if err := c.cs.BatchV1().Jobs(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return c.classify(op{"delete", "jobs", ref.Namespace}, err)
	}
	// The garbage collector would delete the pods; do it directly so that
	// cancelling does not depend on controllers.
	var errs []error
	for _, p := range pods {
		if err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.classify(op{"delete", "pods", p.Namespace}, err))
		}
	}
	return errors.Join(errs...)
}

// Labels of the events mirage records when it reclaims a pod: the
// cluster's memory of reclaims, read back into every snapshot
// (Snapshot.Reclaimed) for the team rules' back-off.
const (
	LabelReclaim     = "mirage.io/reclaim"      // "true" on a reclaim's event
	LabelReclaimTeam = "mirage.io/reclaim-team" // the team whose borrowed pod was reclaimed
	ReasonReclaim    = "MirageReclaim"          // the event's reason
)

// event records a decision on a pod as a Kubernetes event (with labels);
// failures are logged, never fatal.
func (c *Client) event(ctx context.Context, p *corev1.Pod, reason, msg string, labels map[string]string) {
	now := metav1.NewTime(c.cfg.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace, Labels: labels},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name,
			UID: p.UID, ResourceVersion: p.ResourceVersion},
		Reason:              reason,
		Message:             msg,
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: "mirage"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: "mirage.io/mirage",
		ReportingInstance:   "mirage",
	}
	if _, err := c.cs.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		slog.Warn("k8s: recording event failed", "pod", p.Namespace+"/"+p.Name, "reason", reason, "err", c.classify(op{"create", "events", p.Namespace}, err))
	}
}

// EvictBorrowed implements provisioner.Evictor, the engine's executor of
// a reclaim: it re-reads the job's pods and, when each is still borrowed
// work (Mapping.Borrowed: the borrowed priority class, which a pod cannot
// change), evicts them with the grace period (Evict). A pod that is not
// stops it before any eviction: nothing is evicted (ErrNotBorrowed).
func (c *Client) EvictBorrowed(ctx context.Context, jobID string, grace time.Duration, reason string) error {
	ref, err := ParseRef(jobID)
	if err != nil {
		return err
	}
	pods, err := c.refPods(ctx, ref)
	if err != nil {
		return err
	}
	m := c.mapping()
	for i := range pods {
		if p := &pods[i]; !m.Borrowed(p) {
			return fmt.Errorf("k8s: %w: pod %s/%s of %s (priority class %q, label %s=%q); nothing evicted",
				provisioner.ErrNotBorrowed, p.Namespace, p.Name, jobID, p.Spec.PriorityClassName, LabelBorrowed, p.Labels[LabelBorrowed])
		}
	}
	_, err = c.Evict(ctx, jobID, grace, reason)
	return err
}

// reclaimed lists the reclaims the cluster remembers: mirage's reclaim
// events (LabelReclaim) in the namespaces the client reads, as
// Snapshot.Reclaimed. Events expire (the API server's --event-ttl, an
// hour by default), which bounds the back-off the rules can hold.
func (c *Client) reclaimed(ctx context.Context) ([]provisioner.Reclaimed, error) {
	namespaces, _ := c.Watched()
	var out []provisioner.Reclaimed
	for _, ns := range namespaces {
		opts := metav1.ListOptions{LabelSelector: LabelReclaim + "=true", Limit: pageSize}
		for {
			l, err := c.cs.CoreV1().Events(ns).List(ctx, opts)
			if err != nil {
				return nil, c.classify(op{"list", "events", ns}, err)
			}
			for _, ev := range l.Items {
				t := ev.FirstTimestamp.Time
				if t.IsZero() {
					t = ev.CreationTimestamp.Time
				}
				out = append(out, provisioner.Reclaimed{JobID: PodRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name).String(),
					Team: ev.Labels[LabelReclaimTeam], Time: t})
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
	}
	return out, nil
}
