package k8s

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mirage-gpu/mirage/provisioner"
)

// LabelManagedBy marks every object mirage creates.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// History implements provisioner.HistorySource: mirage's finished pods
// (label app.kubernetes.io/managed-by=mirage, phase Succeeded or Failed)
// that started or ended at or after since, oldest start first. A
// finished pod stays until it is deleted, so a segment that ended between
// two cycles is found here; a pod deleted before a cycle saw it end (an
// eviction, a cancel) is in neither view, and its segment is taken as
// lost. States (FinishedJob): Succeeded is COMPLETED; Failed is TIMEOUT
// when its deadline (the chain's limit, activeDeadlineSeconds) passed,
// PREEMPTED when it was evicted, else FAILED with its container's exit
// code.
func (c *Client) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	namespaces := c.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	m := c.mapping()
	var out []provisioner.Job
	for _, ns := range namespaces {
		for _, phase := range []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed} {
			opts := metav1.ListOptions{LabelSelector: LabelManagedBy + "=mirage", FieldSelector: "status.phase=" + string(phase), Limit: pageSize}
			for {
				l, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
				if err != nil {
					return nil, c.classify(op{"list", "pods", ns}, err)
				}
				for i := range l.Items {
					j := FinishedJob(&l.Items[i], m)
					if !j.Start.Before(since) || !j.End.Before(since) {
						out = append(out, j)
					}
				}
				if l.Continue == "" {
					break
				}
				opts.Continue = l.Continue
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start.Before(out[b].Start) })
	return out, nil
}

// FinishedJob is a terminal pod (phase Succeeded or Failed) as a finished
// job: its state, exit code, start and end (the last container's end,
// else its last condition's change).
func FinishedJob(p *corev1.Pod, m Mapping) provisioner.Job {
	j := podJob(p, m.Team(p), podRequest(p, ResourceGPU))
	j.Reason = p.Status.Reason
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			if t.FinishedAt.After(j.End) {
				j.End = t.FinishedAt.Time
			}
			if j.ExitCode == 0 && t.ExitCode != 0 {
				j.ExitCode, j.Signal = int(t.ExitCode), int(t.Signal)
			}
		}
	}
	if j.End.IsZero() {
		for _, cond := range p.Status.Conditions {
			if cond.LastTransitionTime.After(j.End) {
				j.End = cond.LastTransitionTime.Time
			}
		}
	}
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		j.State, j.ExitCode = provisioner.StateCompleted, 0
	case p.Status.Reason == "DeadlineExceeded":
		j.State = provisioner.StateTimeout
	case p.Status.Reason == "Evicted" || p.Status.Reason == "Preempting":
		j.State = provisioner.StatePreempted
	default:
		j.State = provisioner.StateFailed
	}
	return j
}
