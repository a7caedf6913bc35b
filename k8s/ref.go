package k8s

import (
	"fmt"
	"strings"
)

// Ref names a workload mirage deployed: a bare Pod or a batch/v1 Job.
type Ref struct {
	Kind      string // "pod" or "job"
	Namespace string // namespace
	Name      string // object name
}

// PodRef names a pod.
func PodRef(namespace, name string) Ref { return Ref{Kind: "pod", Namespace: namespace, Name: name} }

// JobRef names a batch/v1 Job.
func JobRef(namespace, name string) Ref { return Ref{Kind: "job", Namespace: namespace, Name: name} }

// String renders the job id: "pod/<namespace>/<name>" or "job/<namespace>/<name>".
func (r Ref) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// ParseRef parses a job id; "<namespace>/<name>" alone means a pod.
func ParseRef(id string) (Ref, error) {
	parts := strings.Split(id, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return PodRef(parts[0], parts[1]), nil
	case len(parts) == 3 && (parts[0] == "pod" || parts[0] == "job") && parts[1] != "" && parts[2] != "":
		return Ref{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, nil
	}
	return Ref{}, fmt.Errorf("k8s: %w %q: want pod/<namespace>/<name> or job/<namespace>/<name>", ErrBadRef, id)
}
