package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/k8s"
)

func k8sNode(name string, gpus int, cordoned bool) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k8s.LabelGPUProduct: "A100"}},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{k8s.ResourceGPU: resource.MustParse(fmt.Sprint(gpus))},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func k8sPod(ns, name, node, team string, gpus int, borrowed bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{k8s.DefaultTeamLabel: team}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{k8s.ResourceGPU: resource.MustParse(fmt.Sprint(gpus))}}}}},
	}
	if borrowed { // as mirage deploys borrowed work: the label and the priority class
		p.Labels[k8s.LabelBorrowed], p.Spec.PriorityClassName = "true", "mirage-borrowed"
	}
	return p
}

// The fragmentation scenario of issue 8: team A's six 3-GPU jobs spread 6/6/3/3
// over 4×10 GPUs leaves 22 free but no node with 8.
func fakeInventoryOptions() *k8sInventoryOptions {
	objs := []runtime.Object{
		k8sNode("n1", 10, false), k8sNode("n2", 10, false), k8sNode("n3", 10, false), k8sNode("n4", 10, false),
		k8sNode("n5", 8, true),
		k8sPod("a", "a1", "n1", "team-a", 3, false), k8sPod("a", "a2", "n1", "team-a", 3, false),
		k8sPod("a", "a3", "n2", "team-a", 3, false), k8sPod("a", "a4", "n2", "team-a", 3, true),
		k8sPod("a", "a5", "n3", "team-a", 3, false), k8sPod("a", "a6", "n4", "team-a", 3, false),
		k8sPod("b", "b1", "", "team-b", 8, false),
	}
	cs := fake.NewClientset(objs...)
	return &k8sInventoryOptions{k8sFlags: k8sFlags{teamLabel: k8s.DefaultTeamLabel, newClient: func(_ string, cfg k8s.Config) (*k8s.Client, error) {
		return k8s.NewForClientset(cs, cfg), nil
	}}}
}

func TestK8sInventoryTable(t *testing.T) {
	t.Parallel()
	o := fakeInventoryOptions()
	o.jobSize = 8
	var out bytes.Buffer
	if err := runK8sInventory(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	want := `NODE  STATE    GPU-TYPE  TOTAL  USED  BORROWED  FREE  FRAG  
n1    up       A100      10     6     0         4     4     
n2    up       A100      10     6     3         4     4     
n3    up       A100      10     3     0         7     7     
n4    up       A100      10     3     0         7     7     
n5    drained  A100      8      0     0         0     0     
all                      48     18    3         22    22    
(FRAG: free GPUs on nodes that cannot fit a 8-GPU job)

TEAM    QUOTA  USED  BORROWED  FREE  PODS  PENDING  
team-a  -      18    3         -     6     0        
team-b  -      0     0         -     0     1        
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestK8sInventoryJSONAndHooks(t *testing.T) {
	t.Parallel()
	o := fakeInventoryOptions() // job size defaults to the most common request: 3
	o.json = true
	o.team = "team-a"
	o.rules = filepath.Join(t.TempDir(), "teams.yaml") // the quotas of the team table
	if err := os.WriteFile(o.rules, []byte("teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runK8sInventory(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// quota 20, used 18 of which 3 borrowed: 15 counted against quota, 5 free.
	for _, frag := range []string{`"job_size": 3`, `"team": "team-a"`, `"quota": 20`, `"free": 5`, `"fragmented": 0`, `"total": 40`} {
		if !strings.Contains(s, frag) {
			t.Errorf("JSON lacks %s:\n%s", frag, s)
		}
	}
	if strings.Contains(s, `"team-b"`) || strings.Contains(s, `"n5"`) {
		t.Errorf("--team team-a shows other teams or unused nodes:\n%s", s)
	}
}

func TestK8sInventoryBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := fakeInventoryOptions()
	o.team = "team-z"
	err := runK8sInventory(ctx, o, &bytes.Buffer{})
	var ee *cmdutil.ExitError
	if !errors.Is(err, k8s.ErrUnknownTeam) || !errors.As(err, &ee) || ee.Code != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "team-a, team-b") {
		t.Errorf("unknown team: %v", err)
	}
	o = fakeInventoryOptions()
	o.namespaceTeams = []string{"no-equals"}
	if err := runK8sInventory(ctx, o, &bytes.Buffer{}); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("bad --namespace-team: %v", err)
	}

	// Unreachable API server: exit code 4 and a message naming it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := filepath.Join(t.TempDir(), "kc")
	body := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://" + addr +
		", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	f := testFactory(nil)
	f.Out, f.ErrOut = &stdout, &stderr
	root := newRootCmd(f)
	root.SetArgs([]string{"k8s", "inventory", "--kubeconfig", kc})
	code := cmdutil.ExitCode(root.ExecuteContext(ctx), &stderr)
	if code != cmdutil.ExitUnavailable || !strings.Contains(stderr.String(), "https://"+addr) || !strings.Contains(stderr.String(), kc) {
		t.Errorf("unreachable: code %d stderr %q", code, stderr.String())
	}
}

// With team rules: quotas in the team table and FRAG under the learned mix.
// Jobs: six 3-GPU pods running, B's 8-GPU pod pending → 7 observed jobs over
// the default {1,2,4,8} of 20 pseudo-jobs: 3 GPUs 6/27, 8 GPUs (1+5)/27,
// 1, 2, 4 GPUs 5/27 each. Only the 8-GPU class fails to fit a node with 4 or
// 7 free whole GPUs: F(n1) = F(n2) = 4·6/27 = 0.89 → 0.9, F(n3) = F(n4) =
// 7·6/27 = 1.56 → 1.6; the cordoned n5 has none free. (Equal weights list
// the larger size first.) Team A: quota 20,
// 18 used of which 3 borrowed → 15 against its quota, 5 free.
func TestK8sInventoryRules(t *testing.T) {
	t.Parallel()
	o := fakeInventoryOptions()
	o.rules = writeFile(t, "rules.yaml", "teams: [{name: team-a, gpus: 20}, {name: team-b, gpus: 20}]")
	var out bytes.Buffer
	if err := runK8sInventory(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	want := `NODE  STATE    GPU-TYPE  TOTAL  USED  BORROWED  FREE  FRAG  
n1    up       A100      10     6     0         4     0.9   
n2    up       A100      10     6     3         4     0.9   
n3    up       A100      10     3     0         7     1.6   
n4    up       A100      10     3     0         7     1.6   
n5    drained  A100      8      0     0         0     0     
all                      48     18    3         22    5     
(FRAG: free GPUs the expected job mix cannot use (ATC'23 measure); mix: 8 GPUs 22%, 3 GPUs 22%, 4 GPUs 19%, 2 GPUs 19%, 1 GPU 19% (learned from 7 jobs, blended with 20 pseudo-jobs of the default))

TEAM    QUOTA  USED  BORROWED  FREE  PODS  PENDING  
team-a  20     18    3         5     6     0        
team-b  20     0     0         20    0     1        
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	o = fakeInventoryOptions()
	o.rules = writeFile(t, "rules.yaml", "teams: [{name: team-a, gpus: -1}]")
	var ee *cmdutil.ExitError
	if err := runK8sInventory(context.Background(), o, &bytes.Buffer{}); !errors.As(err, &ee) || ee.Code != cmdutil.ExitBadInput {
		t.Errorf("bad rules: %v", err)
	}
}
