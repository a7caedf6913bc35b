package k8s

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Workload is one piece of GPU work to deploy onto a chosen node.
type Workload struct {
	Namespace     string            // namespace
	Name          string            // name prefix; the API server appends a unique suffix
	Team          string            // team label value
	Borrowed      bool              // borrowed (preemptible) work: label mirage.io/borrowed=true
	Chain         string            // chain label value ("" = none)
	Comment       string            // stored verbatim in the annotation mirage.io/comment
	PriorityClass string            // priority class name ("" = none)
	GPUs          int               // nvidia.com/gpu requested (and limited)
	GPUType       string            // required GPU product (node selector nvidia.com/gpu.product), "" = any
	Node          string            // the node chosen by the team rules (required)
	Image         string            // container image
	Command       []string          // container command (entrypoint and arguments), nil = the image's
	Env           map[string]string // container environment
	WorkDir       string            // container working directory
	TimeLimit     time.Duration     // activeDeadlineSeconds (0 = none)
	Labels        map[string]string // extra labels
	Annotations   map[string]string // extra annotations (Config.PodAnnotations)
	// Bind sets spec.nodeName (BindNodeName): the pod is bound without a
	// scheduler. Otherwise the scheduler binds it, held to Node by the
	// required node affinity every workload carries.
	Bind bool
}

// labels returns the workload's labels; teamLabel is the configured team label key.
func (w *Workload) labels(teamLabel string) map[string]string {
	if teamLabel == "" {
		teamLabel = DefaultTeamLabel
	}
	l := map[string]string{LabelManagedBy: "mirage"}
	maps.Copy(l, w.Labels)
	if w.Team != "" {
		l[teamLabel] = w.Team
	}
	if w.Borrowed {
		l[LabelBorrowed] = "true"
	} else {
		l[LabelBorrowed] = "false"
	}
	if w.Chain != "" {
		l[LabelChain] = w.Chain
	}
	return l
}

// podSpec is the pod spec shared by Pod and Job mode. bind sets
// spec.nodeName; the required node affinity on metadata.name is set always.
func (w *Workload) podSpec(bind bool, restart corev1.RestartPolicy) corev1.PodSpec {
	ctr := corev1.Container{
		Name:       "work",
		Image:      w.Image,
		Command:    w.Command,
		WorkingDir: w.WorkDir,
	}
	if w.GPUs > 0 {
		q := gpuQuantity(w.GPUs)
		ctr.Resources.Requests = corev1.ResourceList{ResourceGPU: q}
		ctr.Resources.Limits = corev1.ResourceList{ResourceGPU: q}
	}
	keys := make([]string, 0, len(w.Env))
	for k := range w.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: k, Value: w.Env[k]})
	}
	spec := corev1.PodSpec{
		Containers:        []corev1.Container{ctr},
		RestartPolicy:     restart,
		PriorityClassName: w.PriorityClass,
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{
						Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{w.Node},
					}},
				}},
			},
		}},
		// GPU nodes are commonly tainted so that only GPU work lands there.
		Tolerations: []corev1.Toleration{{Key: string(ResourceGPU), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
	}
	if bind {
		spec.NodeName = w.Node
	}
	if w.GPUType != "" {
		spec.NodeSelector = map[string]string{LabelGPUProduct: w.GPUType}
	}
	if w.TimeLimit > 0 {
		s := int64(w.TimeLimit / time.Second)
		spec.ActiveDeadlineSeconds = &s
	}
	return spec
}

// meta is the object metadata (generateName, labels, the extra and the
// comment annotations).
func (w *Workload) meta(teamLabel string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Namespace:    w.Namespace,
		GenerateName: dnsName(w.Name) + "-",
		Labels:       w.labels(teamLabel),
	}
	if len(w.Annotations) > 0 || w.Comment != "" {
		m.Annotations = maps.Clone(w.Annotations)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		if w.Comment != "" {
			m.Annotations[AnnotationComment] = w.Comment
		}
	}
	return m
}

// PodManifest is the bare Pod for a workload, never restarted: required on
// w.Node by node affinity (the scheduler binds it) and, with w.Bind, bound
// there through spec.nodeName.
func PodManifest(w Workload, teamLabel string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: w.meta(teamLabel),
		Spec:       w.podSpec(w.Bind, corev1.RestartPolicyNever),
	}
}

// JobManifest is the batch/v1 Job for a workload: one pod, no retries, the
// node required through node affinity (the scheduler binds it there).
func JobManifest(w Workload, teamLabel string) *batchv1.Job {
	one, zero := int32(1), int32(0)
	m := w.meta(teamLabel)
	return &batchv1.Job{
		ObjectMeta: m,
		Spec: batchv1.JobSpec{
			Parallelism:  &one,
			Completions:  &one,
			BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: m.Labels, Annotations: m.Annotations},
				Spec:       w.podSpec(false, corev1.RestartPolicyNever),
			},
		},
	}
}

// Deploy creates the workload in the given mode and returns its reference.
func (c *Client) Deploy(ctx context.Context, w Workload, mode DeployMode) (Ref, error) {
	if w.Node == "" {
		return Ref{}, fmt.Errorf("k8s: deploy %q: %w (the team rules choose it)", w.Name, ErrNoNode)
	}
	if err := c.CheckTeam(w.Team); err != nil {
		return Ref{}, fmt.Errorf("%w (%w)", err, provisioner.ErrRejected)
	}
	if w.Namespace == "" {
		w.Namespace = c.TeamNamespace(w.Team)
	}
	if w.Image == "" {
		w.Image = c.cfg.Image
	}
	switch mode {
	case ModePod, "":
		p, err := c.cs.CoreV1().Pods(w.Namespace).Create(ctx, PodManifest(w, c.cfg.TeamLabel), metav1.CreateOptions{FieldManager: "mirage"})
		if err != nil {
			return Ref{}, c.classify(op{"create", "pods", w.Namespace}, err)
		}
		return PodRef(p.Namespace, p.Name), nil
	case ModeJob:
		j, err := c.cs.BatchV1().Jobs(w.Namespace).Create(ctx, JobManifest(w, c.cfg.TeamLabel), metav1.CreateOptions{FieldManager: "mirage"})
		if err != nil {
			return Ref{}, c.classify(op{"create", "jobs", w.Namespace}, err)
		}
		return JobRef(j.Namespace, j.Name), nil
	}
	return Ref{}, fmt.Errorf("k8s: deploy: unknown mode %q (want pod or job)", mode)
}

// Submit implements provisioner.Cluster: it deploys the request onto
// req.NodeList[0] (the team rules' placement) for team req.Account, as
// borrowed work when req.QOS is Config.BorrowedQOS, reaching the node as
// Config.Binding says. Script and Args become the container command (a
// path inside the image and its arguments); the chain label is derived
// from req.Comment.
func (c *Client) Submit(ctx context.Context, req provisioner.SubmitRequest) (string, error) {
	if len(req.NodeList) == 0 {
		return "", fmt.Errorf("k8s: submit %q: %w: NodeList is empty (%w)", req.Name, ErrNoNode, provisioner.ErrRejected)
	}
	borrowed := req.QOS != "" && req.QOS == c.cfg.BorrowedQOS
	pc := c.cfg.PriorityClass
	if borrowed {
		pc = c.cfg.BorrowedPriorityClass
	}
	if pc == "-" {
		pc = ""
	}
	w := Workload{
		Name:          req.Name,
		Team:          req.Account,
		Borrowed:      borrowed,
		Chain:         labelValue(req.Comment),
		Comment:       req.Comment,
		PriorityClass: pc,
		GPUs:          req.GPUs,
		GPUType:       req.GPUType,
		Node:          req.NodeList[0],
		Env:           req.Env,
		WorkDir:       req.WorkDir,
		TimeLimit:     req.TimeLimit,
		Annotations:   c.cfg.PodAnnotations,
		Bind:          c.cfg.Binding == BindNodeName,
	}
	if req.Script != "" {
		w.Command = append([]string{req.Script}, req.Args...)
	}
	ref, err := c.Deploy(ctx, w, c.cfg.Mode)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}

// dnsName turns a job name into a DNS-1123 label prefix (lower case,
// alphanumerics and '-', at most 52 characters so the generated suffix fits).
func dnsName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 52 {
		out = strings.Trim(out[:52], "-")
	}
	if out == "" {
		out = "mirage"
	}
	return out
}

// labelValue turns free text into a valid label value (alphanumerics, '-',
// '_', '.', at most 63 characters, alphanumeric at both ends), or "".
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 63 {
		out = out[:63]
	}
	return strings.TrimFunc(out, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}
