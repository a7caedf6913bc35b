package k8s

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestPodManifest(t *testing.T) {
	w := Workload{Namespace: "ns", Name: "Train ResNet_50", Team: "team-a", Borrowed: true, Chain: "c-1",
		Comment: "mirage chain c-1 seg 3", PriorityClass: "mirage-borrowed", GPUs: 4, GPUType: "A100", Node: "n2",
		Image: "img", Command: []string{"/run.sh", "--x"}, Env: map[string]string{"B": "2", "A": "1"}, TimeLimit: 90 * time.Minute,
		Annotations: map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "20s"}, Bind: true}
	p := PodManifest(w, "")
	if p.GenerateName != "train-resnet-50-" || p.Namespace != "ns" {
		t.Errorf("name %q ns %q", p.GenerateName, p.Namespace)
	}
	wantLabels := map[string]string{DefaultTeamLabel: "team-a", LabelBorrowed: "true", LabelChain: "c-1", "app.kubernetes.io/managed-by": "mirage"}
	for k, v := range wantLabels {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if p.Annotations[AnnotationComment] != w.Comment || p.Annotations["pod-complete.stage.kwok.x-k8s.io/delay"] != "20s" || len(p.Annotations) != 2 {
		t.Errorf("annotations = %v", p.Annotations)
	}
	s := p.Spec
	if s.NodeName != "n2" || s.PriorityClassName != "mirage-borrowed" || s.RestartPolicy != corev1.RestartPolicyNever ||
		s.NodeSelector[LabelGPUProduct] != "A100" || *s.ActiveDeadlineSeconds != 5400 {
		t.Errorf("spec = %+v", s)
	}
	req := s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
	if req.Key != "metadata.name" || req.Values[0] != "n2" {
		t.Errorf("affinity = %+v", req)
	}
	c := s.Containers[0]
	if q := c.Resources.Requests[ResourceGPU]; q.Value() != 4 {
		t.Errorf("gpu request = %v", q)
	}
	if q := c.Resources.Limits[ResourceGPU]; q.Value() != 4 {
		t.Errorf("gpu limit = %v", q)
	}
	if len(c.Env) != 2 || c.Env[0].Name != "A" || c.Env[1].Name != "B" || c.Command[0] != "/run.sh" || c.Image != "img" {
		t.Errorf("container = %+v", c)
	}
	// Without Bind the scheduler binds: no nodeName, the same affinity.
	w.Bind = false
	p = PodManifest(w, "")
	if p.Spec.NodeName != "" || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "n2" {
		t.Errorf("scheduled pod: nodeName %q, affinity %+v", p.Spec.NodeName, p.Spec.Affinity)
	}
}

func TestJobManifest(t *testing.T) {
	j := JobManifest(Workload{Namespace: "ns", Name: "x", Team: "t", GPUs: 8, Node: "n1", Image: "img"}, "example.com/team")
	if *j.Spec.BackoffLimit != 0 || *j.Spec.Parallelism != 1 || *j.Spec.Completions != 1 {
		t.Errorf("job spec = %+v", j.Spec)
	}
	ps := j.Spec.Template.Spec
	if ps.NodeName != "" {
		t.Errorf("job mode must not bind: nodeName %q", ps.NodeName)
	}
	if ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "n1" {
		t.Errorf("affinity = %+v", ps.Affinity)
	}
	if l := j.Spec.Template.Labels; l["example.com/team"] != "t" || l[LabelBorrowed] != "false" {
		t.Errorf("template labels = %v", l)
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"Train ResNet_50": "train-resnet-50", "--": "mirage", strings.Repeat("a", 80): strings.Repeat("a", 52)} {
		if got := dnsName(in); got != want {
			t.Errorf("dnsName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"c-20261122-ab12cd": "c-20261122-ab12cd", "mirage:c-1/seg 3": "mirage_c-1_seg_3", "(x)": "x", "": ""} {
		if got := labelValue(in); got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"pod/ns/a", PodRef("ns", "a"), true},
		{"job/ns/a", JobRef("ns", "a"), true},
		{"ns/a", PodRef("ns", "a"), true},
		{"deploy/ns/a", Ref{}, false},
		{"a", Ref{}, false},
		{"pod//a", Ref{}, false},
		{"", Ref{}, false},
	}
	for _, c := range cases {
		got, err := ParseRef(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseRef(%q) = %v, %v", c.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrBadRef) {
			t.Errorf("ParseRef(%q) error %v does not wrap ErrBadRef", c.in, err)
		}
		if c.ok && c.in != "ns/a" && got.String() != c.in {
			t.Errorf("String() = %q, want %q", got.String(), c.in)
		}
	}
}

func TestSubmitRejectsBeforeTouchingTheCluster(t *testing.T) {
	cs := fake.NewClientset()
	c := NewForClientset(cs, Config{Teams: []string{"team-a", "team-b"}})
	ctx := context.Background()
	_, err := c.Submit(ctx, provisioner.SubmitRequest{Name: "x", Account: "team-z", GPUs: 1, NodeList: []string{"n1"}})
	if !errors.Is(err, ErrUnknownTeam) || !errors.Is(err, provisioner.ErrRejected) || !strings.Contains(err.Error(), `"team-z"`) {
		t.Errorf("unknown team: err = %v", err)
	}
	_, err = c.Submit(ctx, provisioner.SubmitRequest{Name: "x", Account: "team-a", GPUs: 1})
	if !errors.Is(err, ErrNoNode) || !errors.Is(err, provisioner.ErrRejected) {
		t.Errorf("no node: err = %v", err)
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("%d API calls made for rejected submissions, want 0", n)
	}
	// A good one goes to the team's namespace with the borrowed class.
	c = NewForClientset(cs, Config{TeamNamespaces: map[string]string{"team-a": "ns-a"}})
	id, err := c.Submit(ctx, provisioner.SubmitRequest{Name: "x", Account: "team-a", QOS: "preemptible", GPUs: 2, NodeList: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	// (the fake clientset does not expand generateName, so the name is empty here)
	if !strings.HasPrefix(id, "pod/ns-a/") {
		t.Errorf("id = %s", id)
	}
}

// The unreachable API server: a kubeconfig pointing at a closed port.
func TestUnreachableAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	server := "https://" + addr
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: t
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, server)
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewFromKubeconfig(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Inventory(ctx)
	if !errors.Is(err, provisioner.ErrUnavailable) {
		t.Fatalf("inventory: err = %v, want ErrUnavailable", err)
	}
	for _, s := range []string{server, kc, "unreachable", "list nodes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	// Nothing evicted by mistake: reclaim fails the same clear way.
	if _, err := c.Evict(ctx, "pod/ns/p", time.Second, "test"); !errors.Is(err, provisioner.ErrUnavailable) {
		t.Errorf("evict: err = %v, want ErrUnavailable", err)
	}
	if _, err := NewFromKubeconfig(filepath.Join(t.TempDir(), "missing"), Config{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing kubeconfig: err = %v", err)
	}
}
