package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/k8s/k8stest"
)

// The daemon's Kubernetes mode on the real API server (scripts/k8s-up.sh):
// mirage submit and mirage daemon with --backend kubernetes and team rules.
// 4 nodes × 10 GPUs; team A has 4 nominal GPUs, team B 36. A's first 4-GPU
// chain is deployed within quota; its second (4 + 4 > 4) goes to idle GPUs as
// borrowed work (label and priority class). Frag-aware packs both on n1:
// first job, default mix {1,2,4,8} ¼ each, every node 10 → 6 free, F(6) =
// ¼·6 (8 does not fit) → +1.5 everywhere, tie → n1 by name. Second job,
// mix learned from that 4-GPU job (4 GPUs 6/21, others 5/21): n1 6 → 2 free,
// F goes from 6·5/21 to 2·(6+5)/21 (4 and 8 do not fit): −8/21; any other
// node 10 → 6: +30/21 → n1. A daemon cycle then sees both chains' segments
// running (bound pods) and submits nothing more (reactive waits for the end).
// Team names carry the test namespace so that parallel tests cannot share them.
func TestDaemonKubernetesMode(t *testing.T) {
	t.Parallel()
	e := k8stest.New(t)
	teamA, teamB := "a-"+e.Namespace, "b-"+e.Namespace
	var nodes []string
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		nodes = append(nodes, e.Node(k8stest.NodeSpec{Name: n, GPUs: 10}))
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(fmt.Sprintf("teams: [{name: %s, gpus: 4}, {name: %s, gpus: 36}]\n", teamA, teamB)), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -t 60\n#SBATCH --gpus 4\npython train.py --resume\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	backend := []string{"--backend", "kubernetes", "--kubeconfig", e.Kubeconfig, "--node-selector", e.NodeSelector(),
		"--namespace", e.Namespace, "--rules", rules, "--state", filepath.Join(dir, "state")}
	submit := func(extra ...string) (string, string) {
		t.Helper()
		args := append(append([]string{"submit", script, "--segments", "3", "--policy", "reactive"}, backend...), extra...)
		out, stderr, code := runMirage(t, append(args, "--", "-A", teamA)...)
		if code != 0 {
			t.Fatalf("submit: exit %d: %s%s", code, out, stderr)
		}
		m := regexp.MustCompile(`chain (c-\S+) registered .* submitted as job (pod/\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("submit output %q", out)
		}
		return m[1], m[2]
	}
	_, job1 := submit()
	chain2, job2 := submit("--new") // the same work again: a second chain only with --new
	get := func(id string) (node, borrowed, team, chain string) {
		t.Helper()
		ref, err := k8s.ParseRef(id)
		if err != nil {
			t.Fatal(err)
		}
		p := e.Bound(ref.Namespace, ref.Name) // by the scheduler, to the node mirage chose
		return p.Spec.NodeName, p.Labels[k8s.LabelBorrowed], p.Labels[k8s.DefaultTeamLabel], p.Labels[k8s.LabelChain]
	}
	n1, b1, tm1, _ := get(job1)
	n2, b2, tm2, c2 := get(job2)
	if n1 != nodes[0] || b1 != "false" || tm1 != teamA {
		t.Errorf("first segment on %s borrowed=%s team %s", n1, b1, tm1)
	}
	if n2 != nodes[0] || b2 != "true" || tm2 != teamA || !strings.Contains(c2, chain2) {
		t.Errorf("second chain's segment on %s borrowed=%s team %s chain label %q", n2, b2, tm2, c2)
	}
	out, stderr, code := runMirage(t, append([]string{"daemon", "--once"}, backend...)...)
	if code != 0 || !strings.Contains(out, "cycle: 2 active chains; 0 submitted, 0 rejected, 0 adopted, 2 waits, 0 ended, 0 cancelled, 0 errors") {
		t.Errorf("daemon: exit %d\n%s%s", code, out, stderr)
	}
	// The Kubernetes mode refuses to run without team rules.
	args := []string{"daemon", "--once", "--backend", "kubernetes", "--kubeconfig", e.Kubeconfig, "--state", filepath.Join(dir, "state")}
	if _, stderr, code := runMirage(t, args...); code != cmdutil.ExitUsage || !strings.Contains(stderr, "needs --rules") {
		t.Errorf("without rules: exit %d %s", code, stderr)
	}
}
