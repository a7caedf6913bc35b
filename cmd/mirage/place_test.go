package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/k8s/k8stest"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// writeFile writes a test input and returns its path.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const placeRules = "teams:\n  - {name: team-a, gpus: 20}\n  - {name: team-b, gpus: 20}\nborrowing: {grace: 45s}\n"

// The fragmentation scenario as a Slurm snapshot: A's six 3-GPU jobs spread
// 6/6/3/3 (one of them borrowed). B's 8-GPU job is within quota (0 + 8 ≤ 20)
// but no node has 8 free (4, 4, 7, 7: 22 in all) and the only borrowed job
// (3 GPUs on n2) would leave 7 there: queued.
const fragSnapshot = `nodes:
  - {name: n1, gpus: 10, gpusUsed: 6}
  - {name: n2, gpus: 10, gpusUsed: 6}
  - {name: n3, gpus: 10, gpusUsed: 3}
  - {name: n4, gpus: 10, gpusUsed: 3}
jobs:
  - {id: "1", account: team-a, state: RUNNING, gpus: 3, nodeList: [n1], qos: normal}
  - {id: "2", account: team-a, state: running, gpus: 3, nodeList: [n1], qos: normal}
  - {id: "3", account: team-a, state: RUNNING, gpus: 3, nodeList: [n2], qos: normal}
  - {id: "4", account: team-a, state: RUNNING, gpus: 3, nodeList: [n2], qos: preemptible}
  - {id: "5", account: team-a, state: RUNNING, gpus: 3, nodeList: [n3], qos: normal}
  - {id: "6", account: team-a, state: RUNNING, gpus: 3, nodeList: [n4], qos: normal}
`

func placeOpts(t *testing.T, team string, gpus int) *placeOptions {
	return &placeOptions{req: provisioner.SubmitRequest{Name: "mirage-place", Account: team, GPUs: gpus, Nodes: 1}, now: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) },
		rules: writeFile(t, "rules.yaml", placeRules), snapshot: writeFile(t, "snap.yaml", fragSnapshot)}
}

func TestPlaceSnapshotQueued(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := runPlace(context.Background(), placeOpts(t, "team-b", 8), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"job:      8 GPUs for team team-b (dry run: nothing submitted)\n",
		"verdict:  queue\n",
		"why:      team team-b within quota (0 of 20 GPUs used, job asks 8); queued: 8 GPUs: no placement: 0 of 4 nodes can take it (22 GPUs free in all); rejected: 4 not enough free GPUs\n",
		"usage:    0 of 20 GPUs within quota, 0 borrowed\n",
		"4 nodes  not enough free GPUs",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// Team A (15 own GPUs, 3 borrowed) asks for 4 more: 19 ≤ 20, admitted.
// Frag-aware: n1 and n2 (4 free → 0) reduce fragmentation most, tie → n1 by
// name; first fit would take n1 too: no hint. --all lists every candidate.
func TestPlaceSnapshotAdmitJSON(t *testing.T) {
	t.Parallel()
	o := placeOpts(t, "team-a", 4)
	o.json, o.all = true, true
	var out bytes.Buffer
	if err := runPlace(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var v team.Explanation
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if v.Verdict != "admit" || len(v.Nodes) != 1 || v.Nodes[0] != "n1" || v.Usage.Used != 15 || v.Usage.Borrowed != 3 || len(v.Ranked) != 4 ||
		v.Ranked[0].Node != "n1" || v.Ranked[1].Node != "n2" || v.Ranked[0].Norm != 1 || len(v.NodeList) != 0 || v.Policy != "frag-aware" {
		t.Errorf("view %+v", v)
	}
	// Over quota (15 + 6 > 20): borrowed, QOS preemptible; the best-fit
	// override puts it on n3 (7 free → 1 left) where first fit takes n3 too.
	o = placeOpts(t, "team-a", 6)
	o.json, o.policy = true, "best-fit"
	out.Reset()
	if err := runPlace(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	v = team.Explanation{}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Verdict != "borrow" || v.QOS != "preemptible" || v.Nodes[0] != "n3" || v.Policy != "best-fit" {
		t.Errorf("borrow view %+v", v)
	}
}

// Kubernetes (fake API server): the idle-quota situation. n1..n4 full; A's
// borrowed pods a5 (5 GPUs, n3) and a6 (5 GPUs, n4). B (10 used) asks for 5:
// reclaim one of them; equal size and priority, no checkpoints, same
// start → the plan falls to the node name: n3's a5. Nothing is evicted.
func TestPlaceKubernetesReclaimPlan(t *testing.T) {
	t.Parallel()
	objs := []runtime.Object{
		k8sNode("n1", 10, false), k8sNode("n2", 10, false), k8sNode("n3", 10, false), k8sNode("n4", 10, false),
		k8sPod("a", "a1", "n1", "team-a", 10, false), k8sPod("a", "a2", "n2", "team-a", 10, false),
		k8sPod("a", "a5", "n3", "team-a", 5, true), k8sPod("b", "b1", "n3", "team-b", 5, false),
		k8sPod("a", "a6", "n4", "team-a", 5, true), k8sPod("b", "b2", "n4", "team-b", 5, false),
	}
	cs := fake.NewClientset(objs...)
	o := &placeOptions{req: provisioner.SubmitRequest{Name: "mirage-place", Account: "team-b", GPUs: 5, Nodes: 1}, rules: writeFile(t, "rules.yaml", placeRules),
		k8sFlags: k8sFlags{teamLabel: k8s.DefaultTeamLabel, newClient: func(_ string, cfg k8s.Config) (*k8s.Client, error) {
			return k8s.NewForClientset(cs, cfg), nil
		}}}
	var out bytes.Buffer
	if err := runPlace(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"verdict:  reclaim\n",
		"reclaim plan: reclaim 5 borrowed GPUs on n3 (pod/a/a5) for team team-b's 5 GPUs\n",
		"  1. signal pod/a/a5 USR1 (checkpoint)\n",
		"  2. wait 45s (grace period)\n",
		"  3. evict pod/a/a5 — reclaim: borrowed by team-a: 5 GPUs, priority 0",
		"  4. place on n3\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("dry run did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestPlaceBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	code := func(err error) int {
		var ee *cmdutil.ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return -1
	}
	for _, tc := range []struct {
		name string
		mod  func(o *placeOptions)
		code int
		want string
	}{
		{"unknown team", func(o *placeOptions) { o.req.Account = "team-z" }, cmdutil.ExitBadInput, `unknown team "team-z"`},
		{"too large", func(o *placeOptions) { o.req.GPUs = 12 }, cmdutil.ExitBadInput, "the largest node (n1) has 10 GPUs"},
		{"quotas", func(o *placeOptions) {
			o.rules = writeFile(t, "r.yaml", "teams: [{name: team-a, gpus: 30}, {name: team-b, gpus: 30}]")
		}, cmdutil.ExitBadInput, "quotas add up to 60 GPUs"},
		{"bad rules", func(o *placeOptions) { o.rules = writeFile(t, "r.yaml", "teams: [{name: a, gpu: 1}]") }, cmdutil.ExitBadInput, `unknown field "gpu"`},
		{"missing rules", func(o *placeOptions) { o.rules = "/nonexistent/rules.yaml" }, cmdutil.ExitBadInput, "no such file"},
		{"bad snapshot", func(o *placeOptions) {
			o.snapshot = writeFile(t, "s.yaml", "nodes: [{name: n1, gpus: 2, gpusUsed: 3}]")
		}, cmdutil.ExitBadInput, "gpusUsed 3 of gpus 2"},
		{"bad state", func(o *placeOptions) {
			o.snapshot = writeFile(t, "s.yaml", "nodes: [{name: n1, gpus: 2, state: broken}]")
		}, cmdutil.ExitBadInput, `state "broken"`},
		{"unknown node", func(o *placeOptions) {
			o.snapshot = writeFile(t, "s.yaml", "nodes: [{name: n1, gpus: 2}]\njobs: [{id: x, state: RUNNING, gpus: 1, nodeList: [n9]}]")
		}, cmdutil.ExitBadInput, "unknown node n9"},
		{"both sources", func(o *placeOptions) { o.kubeconfig = "kc" }, cmdutil.ExitUsage, "not both"},
		{"policy", func(o *placeOptions) { o.policy = "worst-fit" }, cmdutil.ExitUsage, "unknown placement policy"},
	} {
		o := placeOpts(t, "team-b", 4)
		tc.mod(o)
		err := runPlace(ctx, o, &bytes.Buffer{})
		if code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (code %d), want code %d and %q", tc.name, err, code(err), tc.code, tc.want)
		}
	}
}

// An unreachable API server: exit code 4, the server and kubeconfig named.
func TestPlaceUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := writeFile(t, "kc", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://"+addr+
		", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n")
	rules := writeFile(t, "rules.yaml", placeRules)
	var stdout, stderr bytes.Buffer
	f := testFactory(nil)
	f.Out, f.ErrOut = &stdout, &stderr
	root := newRootCmd(f)
	root.SetArgs([]string{"place", "--kubeconfig", kc, "--rules", rules, "--team", "team-b", "--gpus", "4"})
	code := cmdutil.ExitCode(root.ExecuteContext(context.Background()), &stderr)
	if code != cmdutil.ExitUnavailable || !strings.Contains(stderr.String(), "https://"+addr) || !strings.Contains(stderr.String(), kc) || stdout.Len() != 0 {
		t.Errorf("unreachable: code %d stderr %q stdout %q", code, stderr.String(), stdout.String())
	}
}

// mirage place on the real API server (scripts/k8s-up.sh): the
// fragmentation scenario's 6/6/3/3 as pods; team B's 8-GPU job is deferred
// with 22 GPUs free, and nothing is created or evicted. Team names carry
// the test namespace so that other packages' tests cannot interfere.
func TestPlaceIntegrationKubernetes(t *testing.T) {
	t.Parallel()
	e := k8stest.New(t)
	teamA, teamB := "a-"+e.Namespace, "b-"+e.Namespace
	var nodes []string
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		nodes = append(nodes, e.Node(k8stest.NodeSpec{Name: n, GPUs: 10}))
	}
	for i, n := range []int{0, 0, 1, 1, 2, 3} {
		e.Pod(k8stest.PodSpec{Name: fmt.Sprintf("a%d", i+1), Node: nodes[n], GPUs: 3, Labels: map[string]string{k8s.DefaultTeamLabel: teamA}})
	}
	rules := writeFile(t, "rules.yaml", fmt.Sprintf("teams: [{name: %s, gpus: 20}, {name: %s, gpus: 20}]\n", teamA, teamB))
	var stdout, stderr bytes.Buffer
	f := testFactory(nil)
	f.Out, f.ErrOut = &stdout, &stderr
	root := newRootCmd(f)
	root.SetArgs([]string{"place", "--kubeconfig", e.Kubeconfig, "--node-selector", e.NodeSelector(), "--rules", rules,
		"--team", teamB, "--gpus", "8", "--json"})
	if code := cmdutil.ExitCode(root.ExecuteContext(context.Background()), &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var v team.Explanation
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Verdict != "defer" || !strings.Contains(v.Reason, "22 GPUs free") || v.Rejected["not enough free GPUs"] != 4 || v.Usage.Used != 0 {
		t.Errorf("view %+v", v)
	}
	pods, err := e.Admin.CoreV1().Pods(e.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 6 {
		t.Errorf("%d pods (%v), want the 6 there were", len(pods.Items), err)
	}
}
