package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/k8s/k8stest"
	"github.com/mirage-gpu/mirage/traces"
)

// The README commands test (issue #20): every command line of the fenced
// sh, bash, console and cron blocks of README.md and docs/guide/*.md runs
// as written, in document order (README first, then the guides in the
// README's order), as a user who follows them would run it: through bash
// (-o pipefail), with the built mirage first in PATH, in a sandbox laid out
// like a clone beside the shared folder (SANDBOX/co, SANDBOX/shared) and
// holding the files the commands name (the user's own: job scripts, team
// rules, a snapshot, traces). HOME is the sandbox's, so state, models and
// caches land there. A page's variables (CHAIN=$(…)) carry to its later
// commands.
//
// mirage commands that need Slurm run on the loopback cluster
// (scripts/slurm-up.sh) when its env is set; the Kubernetes ones on a
// private kube-apiserver started for this test with scripts/k8s-up.sh when
// the loopback one is configured (its binary is then cached): the commands
// name no node selector or namespace, so they must have a cluster to
// themselves. make commands are dry-run (make -n: the target exists and
// expands), sbatch commands are --test-only. What did not run is logged
// with the reason, and the few commands that take minutes whatever the
// trace run only with MIRAGE_README_SLOW=1 (readmeSlow).

// readmeSlowEnv enables the slow commands of readmeSlow.
const readmeSlowEnv = "MIRAGE_README_SLOW"

// readmeSlow names, as written, the documented commands that take minutes
// on 2 cores however small the trace, with the reason, and those that need
// their output. The test fails if one no longer appears in the docs.
var readmeSlow = map[string]struct {
	why   string
	slurm bool // needs what a job array on Slurm wrote
}{
	"mirage train --trace ls6.log.gz --model xgb,rf,rf-xgb,dqn,pg --out ls6-models/ --train-until 2023-02-01 --until 2023-02-27 --cache .datasets": {
		why: "dqn's 150,000 steps and pg's 800 iterations (their defaults) take about 3 minutes whatever the trace"},
	"mirage eval --trace ls6.log.gz --policies reactive,average,quantile,rf,xgb,dqn,pg,oracle --models ls6-models/ --from 2023-02-01 --until 2023-03-01 --out report/": {
		why: "needs the dqn and pg models of the slow train"},
	"mirage eval --sweep eval/sweeps/ls6.yaml": {
		why: "the sweep's policies include dqn and pg: needs the models of the slow train"},
	"mirage eval merge --out ls6-eval ls6-eval/cells": {slurm: true,
		why: "merges the cells the sweep's job array wrote on Slurm (its dqn and pg cells need the slow train's models)"},
	"mirage eval walk-forward --trace ls6.log.gz --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27": {
		why: "fits 5 policies on 3 monthly folds of a trace from November: about 2 minutes whatever the trace's size"},
	"mirage eval site-grid --trace ls6.log.gz --out grid --rank 2022-11-15 --rank-scale 1.9 --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27 --cell age0": {
		why: "a grid cell is two walk-forwards of four candidates, one of them over a scaled November: minutes whatever the trace's size"},
	"mirage eval site-grid --out grid --report": {
		why: "reports the cell the slow site-grid command writes"},
}

// docCommand is one command of a fenced block of the docs.
type docCommand struct {
	File   string   // path relative to the repository root
	Line   int      // its first line in File
	Kind   string   // sh (also bash), console, cron (the command of a crontab line) or script (a whole #! block)
	Text   string   // the command as written, continuation lines joined, without its comment
	Note   string   // its trailing comment
	Output []string // console: the output the page shows after it
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// docFences are the fenced block kinds whose lines are commands.
var docFences = map[string]bool{"sh": true, "bash": true, "console": true, "cron": true}

// extractCommands returns the commands of the fenced sh, bash, console and
// cron blocks of a Markdown page: comment and blank lines are skipped, a
// trailing comment is cut off, lines ending in \ are joined with the next;
// in console blocks only "$ " lines are commands and the others their
// output; a crontab line gives the command after its five time fields; a
// bash block that starts with #! is a script (one docCommand).
func extractCommands(file, src string) []docCommand {
	var out []docCommand
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "```") {
			end++
		}
		i = end
		kind := strings.TrimSpace(info)
		if !docFences[kind] {
			continue
		}
		body := lines[start:end]
		if kind == "bash" && len(body) > 0 && strings.HasPrefix(body[0], "#!") {
			out = append(out, docCommand{File: file, Line: start + 1, Kind: "script", Text: strings.Join(body, "\n")})
			continue
		}
		out = append(out, blockCommands(file, start+1, kind, body)...)
	}
	return out
}

// blockCommands extracts the commands of one block's lines; first is the
// line number of body[0].
func blockCommands(file string, first int, kind string, body []string) []docCommand {
	var out []docCommand
	for k := 0; k < len(body); k++ {
		line, at := body[k], first+k
		if kind == "console" {
			cmd, ok := strings.CutPrefix(line, "$ ")
			if !ok {
				if n := len(out); n > 0 && strings.TrimSpace(line) != "" {
					out[n-1].Output = append(out[n-1].Output, line)
				}
				continue
			}
			line = cmd
		} else if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		for strings.HasSuffix(line, `\`) && k+1 < len(body) {
			k++
			line = strings.TrimRight(strings.TrimSuffix(line, `\`), " \t") + " " + strings.TrimSpace(body[k])
		}
		text, note := splitComment(line)
		c := docCommand{File: file, Line: at, Kind: "sh", Text: text, Note: note}
		if kind == "console" {
			c.Kind = "console"
		}
		if cmd, ok := cronCommand(text); ok {
			c.Kind, c.Text = "cron", cmd
		}
		out = append(out, c)
	}
	return out
}

// splitComment cuts a shell line at its comment: a # that starts a word,
// outside quotes and $(…). It returns the command and the comment's text,
// trimmed.
func splitComment(line string) (string, string) {
	var quote rune
	depth := 0
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(' && prev == '$':
			depth++
		case r == ')' && depth > 0:
			depth--
		case r == '#' && depth == 0 && (prev == ' ' || prev == '\t') && i > 0:
			return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
		prev = r
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return "", strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
	}
	return strings.TrimSpace(line), ""
}

var cronField = regexp.MustCompile(`^[0-9*/,-]+$`)

// cronCommand returns the command of a crontab line (what follows its
// five time fields).
func cronCommand(line string) (string, bool) {
	rest := line
	for range 5 {
		field, after, ok := strings.Cut(strings.TrimLeft(rest, " \t"), " ")
		if !ok || !cronField.MatchString(field) {
			return "", false
		}
		rest = after
	}
	return strings.TrimSpace(rest), true
}

var (
	assignRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(\$\((.*)\)|\S*)$`)
	varRe    = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
)

// words returns the words of the command a line runs (the one inside
// NAME=$(…)), and the variable it assigns, if any.
func (c docCommand) words() (words []string, assigns string) {
	text := c.Text
	if m := assignRe.FindStringSubmatch(text); m != nil {
		assigns, text = m[1], m[3]
	}
	return strings.Fields(text), assigns
}

// mirageArgs returns the arguments after mirage when the command runs mirage.
func mirageArgs(words []string) ([]string, bool) {
	if len(words) == 0 || words[0] != "mirage" && !strings.HasSuffix(words[0], "/mirage") {
		return nil, false
	}
	return words[1:], true
}

// readmeDocs lists the pages in the order a reader follows them: the
// README, then the guides in the order of its Documentation list, then any
// other guide.
func readmeDocs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, m := range regexp.MustCompile(`\((docs/guide/[a-z0-9-]+\.md)\)`).FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(pages, m[1]) {
			pages = append(pages, m[1])
		}
	}
	all, err := filepath.Glob("../../docs/guide/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if rel := "docs/guide/" + filepath.Base(p); !slices.Contains(pages, rel) {
			pages = append(pages, rel)
		}
	}
	return pages
}

// readmeSandbox is the world the documented commands run in.
type readmeSandbox struct {
	t                  *testing.T
	repo               string // the repository root (absolute)
	root, co, home     string // SANDBOX, SANDBOX/co (the working directory), SANDBOX/home
	bin                string // the mirage binary
	slurmConf          string // the loopback Slurm's slurm.conf ("" without)
	kubeconfig         string // the private API server's kubeconfig, also ~/.kube/config ("" without)
	slow               bool   // run readmeSlow's commands
	vars               map[string]string
	unset              map[string]string // variables whose command did not run, and why
	ran, checked, left []string
}

// newReadmeSandbox builds the mirage binary and an empty sandbox (files:
// prepare).
func newReadmeSandbox(t *testing.T) *readmeSandbox {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s := &readmeSandbox{t: t, repo: repo, root: root, co: filepath.Join(root, "co"), home: filepath.Join(root, "home"),
		bin: mirageBinary(t), vars: map[string]string{}, unset: map[string]string{}}
	for _, d := range []string{s.co, filepath.Join(s.home, "go", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{root, s.co, s.home} { // slurmd writes job output in the working directory
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The crontab lines name the binary where go install puts it.
	if err := os.Symlink(s.bin, filepath.Join(s.home, "go", "bin", "mirage")); err != nil {
		t.Fatal(err)
	}
	return s
}

// readmeTeams is the user's team rules (teams.yaml): two teams of 20 GPUs
// on the 4 × 10 GPUs of the snapshot and the Kubernetes cluster.
const readmeTeams = `teams:
  - {name: team-a, gpus: 20}
  - {name: team-b, gpus: 20}
borrowing:
  grace: 45s
`

// readmeSnapshot is the user's cluster snapshot (cluster.yaml): team-a runs
// 3 GPUs on each of 4 nodes of 10, so nothing of 8 GPUs fits.
const readmeSnapshot = `nodes:
  - {name: n1, gpus: 10, gpusUsed: 3}
  - {name: n2, gpus: 10, gpusUsed: 3}
  - {name: n3, gpus: 10, gpusUsed: 3}
  - {name: n4, gpus: 10, gpusUsed: 3}
jobs:
  - {id: "101", account: team-a, state: RUNNING, gpus: 3, nodeList: [n1], qos: normal}
  - {id: "102", account: team-a, state: RUNNING, gpus: 3, nodeList: [n2], qos: normal}
  - {id: "103", account: team-a, state: RUNNING, gpus: 3, nodeList: [n3], qos: normal}
  - {id: "104", account: team-a, state: RUNNING, gpus: 3, nodeList: [n4], qos: normal}
`

// prepare writes the files the commands name. The LS6 trace is synthetic
// (traces.Synth, every tenth job, moved to the dates the commands use and
// cut at 2023-03-01 like the shared file): from 26 January 2023, or from
// 24 November 2022 when the slow commands run (the walk-forward scores
// December).
func (s *readmeSandbox) prepare() {
	t := s.t
	t.Helper()
	files := map[string]string{
		"co/train.sbatch": "#!/bin/bash\n#SBATCH -t 1\nsleep 5\n",
		"co/serve.sbatch": "#!/bin/bash\n#SBATCH -t 2\nsleep 5\n",
		"co/train.sh":     "#!/bin/sh\npython train.py --resume\n",
		"co/teams.yaml":   readmeTeams,
		"home/teams.yaml": readmeTeams, // where a crontab line finds it
		"co/cluster.yaml": readmeSnapshot,
	}
	sweep, err := os.ReadFile(filepath.Join(s.repo, "eval", "sweeps", "ls6.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files["co/eval/sweeps/ls6.yaml"] = string(sweep)
	openb := "shared/traces/alibaba-pai-openb-2023/"
	files[openb+"openb_node_list_gpu_node.csv"] = "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,8,V100M32\nn2,96000,786432,8,V100M32\nn3,64000,262144,2,P100\nn4,64000,262144,4,T4\n"
	for i, name := range []string{"default", "gpushare100"} {
		var b strings.Builder
		b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for p := range 60 {
			gpus, milli := 1+r.IntN(2), 1000
			if r.IntN(3) == 0 {
				milli = 100 * (1 + r.IntN(9))
			}
			fmt.Fprintf(&b, "p%d,%d,4096,%d,%d,,LS,Running,%d,%d,%d\n", p, 1000*(1+r.IntN(8)), gpus, milli, 10*p, 10*p+600, 10*p)
		}
		files[openb+"openb_pod_list_"+name+".csv"] = b.String()
	}
	for name, body := range files {
		path := filepath.Join(s.root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chi, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2023, 1, 26, 0, 0, 0, 0, chi)
	if s.slow {
		from = time.Date(2022, 11, 24, 0, 0, 0, 0, chi)
	}
	ls6 := filepath.Join(s.root, "shared", "traces", "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz")
	writeThinLS6(t, ls6, from, time.Date(2023, 3, 1, 0, 0, 0, 0, chi))
	if err := os.Symlink(ls6, filepath.Join(s.co, "ls6.log.gz")); err != nil {
		t.Fatal(err)
	}
}

// writeThinLS6 writes a gzipped LS6-format trace: every tenth job of
// traces.Synth, moved to start at from, submitted before until. Ten times
// fewer jobs keep the simulator fast; the cost of train and eval is set by
// their windows (chains injected every 4 h, decisions every 10 min).
func writeThinLS6(t *testing.T, path string, from, until time.Time) {
	t.Helper()
	days := int(until.Sub(from).Hours()/24) + 1
	jobs, err := traces.Synth("ls6", days, 1)
	if err != nil {
		t.Fatal(err)
	}
	shift := from.Sub(traces.SynthEpoch)
	var thin []traces.Job
	for i, j := range jobs {
		if i%10 != 0 {
			continue
		}
		for _, p := range []*time.Time{&j.Submit, &j.Eligible, &j.Start, &j.End} {
			if !p.IsZero() {
				*p = p.Add(shift)
			}
		}
		if j.Submit.Before(until) {
			thin = append(thin, j)
		}
	}
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if err := traces.WriteJobs(z, traces.FormatLS6, thin); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startKubernetes starts a private control plane (scripts/k8s-up.sh with
// its own MIRAGE_TEST_DIR), stopped at cleanup, and fills it with the
// cluster of the team-rules guide: nodes n1–n4 of 10 GPUs; team-a runs 8
// GPUs on n1 and on n2 and 5 borrowed on n3 (pod a/a5); team-b runs 4 on n3
// and 6 on n4. A 5-GPU job of team-b fits nowhere but after reclaiming a5;
// a 4-GPU job of team-a fits n4. ~/.kube/config is mirage's least-privilege
// kubeconfig.
func (s *readmeSandbox) startKubernetes() {
	t := s.t
	t.Helper()
	dir := filepath.Join(s.root, "k8s-server")
	env := append(os.Environ(), "MIRAGE_TEST_DIR="+dir)
	up := exec.Command(filepath.Join(s.repo, "scripts", "k8s-up.sh"))
	up.Env = env
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("scripts/k8s-up.sh (a private API server): %v\n%s", err, out)
	}
	t.Cleanup(func() {
		down := exec.Command(filepath.Join(s.repo, "scripts", "k8s-down.sh"))
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("scripts/k8s-down.sh: %v\n%s", err, out)
		}
	})
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "k8s", "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &k8stest.Env{T: t, Admin: cs, Namespace: "a"}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		createGPUNode(t, cs, n, 10)
	}
	team := func(name string) map[string]string { return map[string]string{k8s.DefaultTeamLabel: name} }
	for _, p := range []k8stest.PodSpec{
		{Name: "a1", Node: "n1", GPUs: 8, Labels: team("team-a")},
		{Name: "a2", Node: "n2", GPUs: 8, Labels: team("team-a")},
		{Name: "a5", Node: "n3", GPUs: 5, Labels: map[string]string{k8s.DefaultTeamLabel: "team-a", k8s.LabelBorrowed: "true"}, PriorityClass: "mirage-borrowed"},
		{Name: "b3", Node: "n3", GPUs: 4, Labels: team("team-b")},
		{Name: "b4", Node: "n4", GPUs: 6, Labels: team("team-b")},
	} {
		p.Phase = corev1.PodRunning
		e.Pod(p)
	}
	kc, err := os.ReadFile(filepath.Join(dir, "k8s", "mirage.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	s.kubeconfig = filepath.Join(s.home, ".kube", "config")
	if err := os.MkdirAll(filepath.Dir(s.kubeconfig), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
}

// createGPUNode creates a ready node named name with gpus GPUs (status
// written through the subresource), labelled for kwok, which keeps it
// alive in place of a kubelet (scripts/k8s-up.sh).
func createGPUNode(t *testing.T, cs kubernetes.Interface, name string, gpus int) {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kwok.x-k8s.io/node": "fake"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse(strconv.Itoa(gpus))}
	if err := k8stest.WriteStatus(ctx, cs, name, res, true); err != nil {
		t.Fatal(err)
	}
}

// env is the environment of a documented command: the test's, with the
// sandbox's HOME, mirage first in PATH, SLURM_CONF for the loopback Slurm,
// no XDG or MIRAGE_ variables nor KUBECONFIG (~/.kube/config is the
// sandbox's), and the page's variables.
func (s *readmeSandbox) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "PATH" || k == "KUBECONFIG" || k == "SLURM_CONF" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "MIRAGE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+s.home, "PATH="+filepath.Dir(s.bin)+":"+os.Getenv("PATH"))
	if s.slurmConf != "" {
		env = append(env, "SLURM_CONF="+s.slurmConf)
	}
	for k, v := range s.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// shellResult is what a command did.
type shellResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// cronEnv is the environment cron gives a crontab line (HOME, LOGNAME,
// SHELL, PATH=/usr/bin:/bin), with SLURM_CONF standing in for
// /etc/slurm/slurm.conf and, where this Slurm's commands are not in
// /usr/bin (the newer releases' wrappers), their directory in PATH.
func (s *readmeSandbox) cronEnv() []string {
	path := "/usr/bin:/bin"
	if sbatch, err := exec.LookPath("sbatch"); err == nil && filepath.Dir(sbatch) != "/usr/bin" {
		path = filepath.Dir(sbatch) + ":" + path
	}
	env := []string{"HOME=" + s.home, "LOGNAME=" + cmp.Or(os.Getenv("LOGNAME"), os.Getenv("USER"), "root"), "SHELL=/bin/sh", "PATH=" + path}
	if s.slurmConf != "" {
		env = append(env, "SLURM_CONF="+s.slurmConf)
	}
	return env
}

// shell runs script with bash -o pipefail in dir, in the environment of
// env; with interrupt > 0 it sends SIGINT (Ctrl-C) to its process group
// after that long.
func (s *readmeSandbox) shell(dir, script string, timeout, interrupt time.Duration) (shellResult, error) {
	return s.exec(dir, s.env(), timeout, interrupt, "bash", "-o", "pipefail", "-c", script)
}

// exec runs a program (see shell).
func (s *readmeSandbox) exec(dir string, env []string, timeout, interrupt time.Duration, name string, args ...string) (shellResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return shellResult{}, err
	}
	if interrupt > 0 {
		timer := time.AfterFunc(interrupt, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	r := shellResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("did not end within %s", timeout)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, err
	}
	return r, nil
}

// check is the verdict on a command's run: exit 0, and for a console
// command every output line the page shows, in order (a line ending in …
// or ... as a prefix).
func check(c docCommand, r shellResult) error {
	if r.code != 0 {
		return fmt.Errorf("%s\nexit %d, want 0\nstderr (last lines):\n%s\nstdout (last lines):\n%s", c, r.code, tail(r.stderr, 30), tail(r.stdout, 10))
	}
	got := strings.Split(r.stdout, "\n")
	at := 0
	for _, want := range c.Output {
		want = strings.TrimRight(want, " ")
		prefix := false
		for _, ell := range []string{"…", "..."} {
			if w, ok := strings.CutSuffix(want, ell); ok {
				want, prefix = strings.TrimRight(w, " "), true
			}
		}
		found := false
		for ; at < len(got) && !found; at++ {
			line := strings.TrimRight(got[at], " ")
			found = line == want || prefix && strings.HasPrefix(line, want)
		}
		if !found {
			return fmt.Errorf("%s\nthe page shows the output line\n\t%s\nwhich the command did not print (in this order); it printed:\n%s", c, want, r.stdout)
		}
	}
	return nil
}

// run runs one documented command as written and returns the verdict. A
// command NAME=$(…) sets NAME for the page's later commands; a command
// whose comment says "until Ctrl-C" gets a SIGINT after 2 s; a crontab
// line runs as cron runs it (/bin/sh, in HOME, cron's environment); mirage
// recover, which asks before registering what it found, runs on a
// terminal (script(1)) and is answered n: on the shared loopback cluster
// it finds the chains of other tests (jobs of the same user), which a
// test must not take over.
func (s *readmeSandbox) run(c docCommand) error {
	interrupt, note := time.Duration(0), ""
	if strings.Contains(c.Note, "until Ctrl-C") {
		interrupt, note = 2*time.Second, ", Ctrl-C after 2 s"
	}
	timeout := 5 * time.Minute
	if _, slow := readmeSlow[c.Text]; slow {
		timeout = 30 * time.Minute
	}
	script := c.Text
	words, assigns := c.words()
	if assigns != "" {
		script += "\nprintf '%s' \"$" + assigns + "\""
	}
	if args, ok := mirageArgs(words); ok && len(args) > 0 && args[0] == "recover" &&
		!slices.Contains(args, "--yes") && !slices.Contains(args, "--dry-run") && !slices.Contains(args, "--json") {
		script, note = "printf 'n\\n' | script -qec '"+strings.ReplaceAll(script, "'", `'\''`)+"' /dev/null", ", on a terminal, answered n"
	}
	var r shellResult
	var err error
	if c.Kind == "cron" {
		r, err = s.exec(s.home, s.cronEnv(), timeout, interrupt, "/bin/sh", "-c", script)
		note = ", as cron runs it"
	} else {
		r, err = s.shell(s.co, script, timeout, interrupt)
	}
	if err != nil {
		return fmt.Errorf("%s: %v\nstderr:\n%s", c, err, tail(r.stderr, 30))
	}
	if err := check(c, r); err != nil {
		return err
	}
	if assigns != "" {
		if r.stdout == "" {
			return fmt.Errorf("%s: sets %s to an empty string", c, assigns)
		}
		s.vars[assigns] = r.stdout
	}
	s.ran = append(s.ran, fmt.Sprintf("%s (%.1f s%s)", c, r.took.Seconds(), note))
	return nil
}

// plan says whether a command runs here: "" if it does, else why not.
func (s *readmeSandbox) plan(c docCommand) (skip string) {
	for _, m := range varRe.FindAllStringSubmatch(c.Text, -1) {
		if why, ok := s.unset[m[1]]; ok {
			return "uses $" + m[1] + ", set by a command that did not run (" + why + ")"
		}
	}
	if slow, ok := readmeSlow[c.Text]; ok && !s.slow {
		return "slow: " + slow.why + "; set " + readmeSlowEnv + "=1 to run it"
	} else if ok && slow.slurm && s.slurmConf == "" {
		return "needs Slurm: " + slow.why
	}
	words, _ := c.words()
	args, isMirage := mirageArgs(words)
	switch {
	case len(words) > 0 && words[0] == "sbatch":
		if s.slurmConf == "" {
			return "needs Slurm: the loopback cluster is not configured (scripts/slurm-up.sh)"
		}
		return ""
	case !isMirage:
		return ""
	case slices.Contains(args, "kubernetes") || slices.Contains(args, "--kubeconfig") || len(args) > 0 && args[0] == "k8s":
		if s.kubeconfig == "" {
			return "needs Kubernetes: the loopback API server is not configured (scripts/k8s-up.sh)"
		}
	case len(args) > 0 && (slices.Contains([]string{"submit", "daemon", "cancel", "recover", "site"}, args[0]) ||
		args[0] == "predict-wait" && !slices.Contains(args, "--trace") && !slices.Contains(args, "--snapshot")):
		if s.slurmConf == "" {
			return "needs Slurm: the loopback cluster is not configured (scripts/slurm-up.sh)"
		}
	}
	return ""
}

// sbatch checks a documented sbatch command: --test-only (Slurm says it
// would take the job), or, with the slow commands, submits it and waits
// for the job (array) to leave the queue.
func (s *readmeSandbox) sbatch(c docCommand) error {
	script := strings.Replace(c.Text, "sbatch ", "sbatch --test-only ", 1)
	if s.slow {
		script = c.Text
	}
	r, err := s.shell(s.co, script, time.Minute, 0)
	if err == nil {
		err = check(c, r)
	}
	if err != nil || !s.slow {
		if err == nil {
			s.checked = append(s.checked, fmt.Sprintf("%s: sbatch --test-only (it would run the job array: the slow commands run it)", c))
		}
		return err
	}
	id := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(r.stdout)
	if id == nil {
		return fmt.Errorf("%s: no job id in %q", c, r.stdout)
	}
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		q, err := s.shell(s.co, "squeue -h -j "+id[1], time.Minute, 0)
		if err != nil || q.code != 0 {
			return fmt.Errorf("squeue -j %s: %v %s", id[1], err, q.stderr)
		}
		if strings.TrimSpace(q.stdout) == "" {
			s.ran = append(s.ran, fmt.Sprintf("%s (job %s, waited for it)", c, id[1]))
			return nil
		}
	}
	return fmt.Errorf("%s: job %s still queued after 30 minutes", c, id[1])
}

// script checks a job script block: bash -n, and its mirage lines run as
// written (outside a job, as a user trying them would).
func (s *readmeSandbox) script(c docCommand) error {
	r, err := s.shell(s.co, "bash -n <<'EOF'\n"+c.Text+"\nEOF", time.Minute, 0)
	if err == nil && r.code != 0 {
		err = errors.New(r.stderr)
	}
	if err != nil {
		return fmt.Errorf("%s:%d: the job script does not parse (bash -n): %v", c.File, c.Line, err)
	}
	s.checked = append(s.checked, fmt.Sprintf("%s:%d: job script: bash -n (its other lines need a job and the user's program)", c.File, c.Line))
	for i, line := range strings.Split(c.Text, "\n") {
		text, note := splitComment(line)
		if strings.HasPrefix(text, "mirage ") {
			if err := s.run(docCommand{File: c.File, Line: c.Line + i, Kind: "sh", Text: text, Note: note}); err != nil {
				return err
			}
		}
	}
	return nil
}

// makeTargets returns the make targets the README names: in its blocks
// and in its prose (`make X`).
func makeTargets(readme string, cmds []docCommand) []string {
	var out []string
	for _, c := range cmds {
		if f := strings.Fields(c.Text); len(f) > 1 && f[0] == "make" && !slices.Contains(out, f[1]) {
			out = append(out, f[1])
		}
	}
	for _, m := range regexp.MustCompile("`make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(readme, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// cancelChains cancels every chain the sandbox's state database holds
// (those on Slurm: the Kubernetes server goes away with the test).
func (s *readmeSandbox) cancelChains() {
	r, err := s.shell(s.co, `for c in $(mirage status --all --json | grep -o '"id": *"c-[^"]*"' | grep -o 'c-[^"]*'); do mirage cancel "$c" >/dev/null 2>&1 || true; done`, 2*time.Minute, 0)
	if err != nil || r.code != 0 {
		s.t.Logf("cancelling the chains left: %v %s", err, r.stderr)
	}
}

// TestReadmeCommands runs every documented command (see the top of this
// file). Budget: under 3 minutes on 2 cores without the slow commands.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	needXGBoost(t) // the documented train commands train xgb models
	start := time.Now()
	s := newReadmeSandbox(t)
	s.slow = os.Getenv(readmeSlowEnv) != ""
	s.prepare()
	// Without a backend its commands are left out (not skipped: the
	// others still run), except in CI, which requires both.
	if s.slurmConf = os.Getenv("MIRAGE_TEST_SLURM_CONF"); s.slurmConf != "" {
		t.Cleanup(s.cancelChains)
	} else if testenv.InCI() {
		t.Errorf("required in CI: %s not available: %s", testenv.NeedSlurm.What, testenv.NeedSlurm.How)
	}
	if os.Getenv("MIRAGE_TEST_KUBECONFIG") != "" {
		s.startKubernetes()
	} else if testenv.InCI() {
		t.Errorf("required in CI: %s not available: %s", testenv.NeedKubernetes.What, testenv.NeedKubernetes.How)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var all []docCommand
	for _, page := range readmeDocs(t) {
		b, err := os.ReadFile(filepath.Join(s.repo, page))
		if err != nil {
			t.Fatal(err)
		}
		cmds := extractCommands(page, string(b))
		all = append(all, cmds...)
		// The training guide shows evaluation before training: a page's
		// train commands run first, as the models must exist.
		slices.SortStableFunc(cmds, func(a, b docCommand) int {
			ta, tb := isTrain(a), isTrain(b)
			switch {
			case ta && !tb:
				return -1
			case tb && !ta:
				return 1
			}
			return 0
		})
		clear(s.vars)
		clear(s.unset)
		for _, c := range cmds {
			if _, ok := readmeSlow[c.Text]; ok {
				used[c.Text] = true
			}
			words, assigns := c.words()
			if len(words) > 0 && words[0] == "make" {
				continue // below, once per target
			}
			if why := s.plan(c); why != "" {
				s.left = append(s.left, fmt.Sprintf("%s: %s", c, why))
				if assigns != "" {
					s.unset[assigns] = why
				}
				continue
			}
			switch {
			case c.Kind == "script":
				err = s.script(c)
			case len(words) > 0 && words[0] == "sbatch":
				err = s.sbatch(c)
			default:
				err = s.run(c)
			}
			if err != nil {
				t.Errorf("documented command fails:\n%v", err)
				if assigns != "" {
					s.unset[assigns] = "it failed"
				}
			}
		}
	}
	for _, target := range makeTargets(string(readme), all) {
		r, err := s.shell(s.repo, "make -n "+target, time.Minute, 0)
		if err == nil && r.code != 0 {
			err = fmt.Errorf("exit %d: %s", r.code, tail(r.stderr, 10))
		}
		if err != nil {
			t.Errorf("README.md names make %s: make -n %s: %v", target, target, err)
			continue
		}
		s.checked = append(s.checked, fmt.Sprintf("make %s: make -n (a dry run: the target exists; CI runs make test itself)", target))
	}
	for text := range readmeSlow {
		if !used[text] {
			t.Errorf("readmeSlow names %q, which no page documents any more: remove it", text)
		}
	}
	t.Logf("ran %d documented commands:\n\t%s", len(s.ran), strings.Join(s.ran, "\n\t"))
	t.Logf("checked without running (%d):\n\t%s", len(s.checked), strings.Join(s.checked, "\n\t"))
	if len(s.left) > 0 {
		t.Logf("did not run (%d):\n\t%s", len(s.left), strings.Join(s.left, "\n\t"))
	}
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// isTrain reports whether c runs mirage train.
func isTrain(c docCommand) bool {
	words, _ := c.words()
	args, ok := mirageArgs(words)
	return ok && len(args) > 0 && args[0] == "train"
}

// TestExtractCommands: what the README commands test takes from a page.
func TestExtractCommands(t *testing.T) {
	t.Parallel()
	page := "text `mirage nothing`\n" +
		"```sh\n" +
		"# a comment line\n" +
		"CHAIN=$(mirage submit a.sbatch | cut -d' ' -f2)  # sets CHAIN\n" +
		"mirage train --trace t.log \\\n" +
		"  --out m/   # trains\n" +
		"*/10 * * * * $HOME/go/bin/mirage daemon --once >> $HOME/log 2>&1  # crontab\n" +
		"echo '# not a comment' \"#\" x#y\n" +
		"```\n" +
		"```yaml\n" +
		"mirage: not a command\n" +
		"```\n" +
		"```console\n" +
		"$ mirage place --team b\n" +
		"verdict:  queue\n" +
		"why:      … \n" +
		"```\n" +
		"```bash\n" +
		"#!/bin/bash\n" +
		"mirage handoff || exit 1\n" +
		"```\n" +
		"```\n" +
		"mirage in a block without a language\n" +
		"```\n"
	got := extractCommands("p.md", page)
	want := []docCommand{
		{File: "p.md", Line: 4, Kind: "sh", Text: "CHAIN=$(mirage submit a.sbatch | cut -d' ' -f2)", Note: "sets CHAIN"},
		{File: "p.md", Line: 5, Kind: "sh", Text: "mirage train --trace t.log --out m/", Note: "trains"},
		{File: "p.md", Line: 7, Kind: "cron", Text: "$HOME/go/bin/mirage daemon --once >> $HOME/log 2>&1", Note: "crontab"},
		{File: "p.md", Line: 8, Kind: "sh", Text: `echo '# not a comment' "#" x#y`},
		{File: "p.md", Line: 14, Kind: "console", Text: "mirage place --team b", Output: []string{"verdict:  queue", "why:      … "}},
		{File: "p.md", Line: 19, Kind: "script", Text: "#!/bin/bash\nmirage handoff || exit 1"},
	}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Errorf("got\n%#v\nwant\n%#v", got, want)
	}
	if w, v := got[0].words(); v != "CHAIN" || strings.Join(w, " ") != "mirage submit a.sbatch | cut -d' ' -f2" {
		t.Errorf("words of %q: %q, assigns %q", got[0].Text, w, v)
	}
	if args, ok := mirageArgs(strings.Fields(got[2].Text)); !ok || args[0] != "daemon" {
		t.Errorf("the crontab line runs %q (mirage: %v)", args, ok)
	}
	// The README's own blocks: its tour, one command a line, and its
	// quick start's make commands.
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range extractCommands("README.md", string(b)) {
		texts = append(texts, c.Text)
	}
	for _, w := range []string{"make demo", "make test", "mirage status $CHAIN", "$HOME/go/bin/mirage daemon --once >> $HOME/mirage-cron.log 2>&1"} {
		if !slices.Contains(texts, w) {
			t.Errorf("README.md: no command %q among %q", w, texts)
		}
	}
}

// TestReadmeCommandFailureShows: a broken documented command fails the
// check, naming the command, its exit code and its stderr; so does a
// console command whose output differs from the page's.
func TestReadmeCommandFailureShows(t *testing.T) {
	t.Parallel()
	s := newReadmeSandbox(t)
	bad := docCommand{File: "README.md", Line: 7, Kind: "sh", Text: "mirage status --colour"}
	err := s.run(bad)
	if err == nil || !strings.Contains(err.Error(), "README.md:7: mirage status --colour") || !strings.Contains(err.Error(), "exit 2, want 0") ||
		!strings.Contains(err.Error(), "unknown flag: --colour") {
		t.Errorf("a wrong flag: %v", err)
	}
	if s.plan(bad) != "" {
		t.Errorf("mirage status is not run: %s", s.plan(bad))
	}
	wrong := docCommand{File: "g.md", Line: 3, Kind: "console", Text: "mirage version", Output: []string{"mirage 0.0-not-this…"}}
	if err := s.run(wrong); err == nil || !strings.Contains(err.Error(), "mirage 0.0-not-this") {
		t.Errorf("output unlike the page's: %v", err)
	}
	ok := docCommand{File: "g.md", Line: 3, Kind: "console", Text: "mirage version", Output: []string{"mirage …"}}
	if err := s.run(ok); err != nil {
		t.Errorf("mirage version: %v", err)
	}
	// A variable whose command did not run skips what uses it.
	s.unset["CHAIN"] = "needs Slurm"
	if why := s.plan(docCommand{Text: "mirage log $CHAIN"}); !strings.Contains(why, "uses $CHAIN") {
		t.Errorf("plan of mirage log $CHAIN without CHAIN: %q", why)
	}
}
