package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
)

func TestParseSlurmTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"30", 30 * time.Minute, false},
		{"30:15", 30*time.Minute + 15*time.Second, false},
		{"2:00:00", 2 * time.Hour, false},
		{"1-12", 36 * time.Hour, false},
		{"1-0:30", 24*time.Hour + 30*time.Minute, false},
		{"2-1:2:3", 49*time.Hour + 2*time.Minute + 3*time.Second, false},
		{"UNLIMITED", 0, false},
		{"", 0, true},
		{"0", 0, true},
		{"1:2:3:4", 0, true},
		{"x", 0, true},
		{"-5", 0, true},
		{"1-x", 0, true},
	}
	for _, c := range cases {
		got, err := parseSlurmTime(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseSlurmTime(%q) = %v, %v; want %v, err %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseSbatchArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want jobShape
		gpus int
		err  string
	}{
		{[]string{"-t", "90", "-N", "2", "--gres=gpu:a100:4", "-A", "vision", "-p", "gpu", "-J", "llm"},
			jobShape{limit: 90 * time.Minute, nodes: 2, gpusPerNode: 4, account: "vision", partition: "gpu", name: "llm"}, 8, ""},
		{[]string{"--time=1:00:00", "--nodes=3-4", "--gpus=6", "--account=a", "--partition=p", "--job-name=x", "--mem=8G"},
			jobShape{limit: time.Hour, nodes: 3, gpusTotal: 6, account: "a", partition: "p", name: "x"}, 6, ""},
		{[]string{"-t10", "-N1", "-G2"}, jobShape{limit: 10 * time.Minute, nodes: 1, gpusTotal: 2}, 2, ""},
		{[]string{"--gpus-per-node=a100:2", "-N", "2"}, jobShape{nodes: 2, gpusPerNode: 2}, 4, ""},
		{[]string{"--gres=gpu"}, jobShape{gpusPerNode: 1}, 1, ""},
		{[]string{"--comment=x"}, jobShape{}, 0, "--comment: mirage sets it"},
		{[]string{"-d", "afterok:1"}, jobShape{}, 0, "-d: mirage sets it"},
		{[]string{"--array=1-3"}, jobShape{}, 0, "job arrays cannot be chained"},
		{[]string{"-t"}, jobShape{}, 0, "-t needs a value"},
		{[]string{"-N", "zero"}, jobShape{}, 0, `-N "zero"`},
		{[]string{"--gres=gpu:a100:x"}, jobShape{}, 0, "GPU count"},
	}
	for _, c := range cases {
		got, err := parseSbatchArgs(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || got.gpus() != c.gpus {
			t.Errorf("%q: %+v (gpus %d), %v; want %+v (gpus %d)", c.args, got, got.gpus(), err, c.want, c.gpus)
		}
	}
}

func TestParseSbatchScript(t *testing.T) {
	t.Parallel()
	script := "#!/bin/bash\n#SBATCH -t 2:00:00 # two hours\n\n# a comment\n#SBATCH --gres=gpu:2\n#SBATCH -N 2\necho hi\n#SBATCH -p ignored\n"
	sh, err := parseSbatchScript(strings.NewReader(script))
	// the last #SBATCH comes after the first command: sbatch ignores it
	want := jobShape{limit: 2 * time.Hour, nodes: 2, gpusPerNode: 2}
	if err != nil || sh != want {
		t.Fatalf("got %+v, %v; want %+v", sh, err, want)
	}
	merged := sh.merge(jobShape{limit: time.Hour, partition: "gpu"})
	if merged.limit != time.Hour || merged.nodes != 2 || merged.partition != "gpu" || merged.gpus() != 4 {
		t.Errorf("merge: %+v", merged)
	}
	for _, bad := range []string{"", "echo no shebang\n", "#!/bin/sh\n#SBATCH --comment=x\n"} {
		if _, err := parseSbatchScript(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseSbatchArgs(f *testing.F) {
	f.Add("-t 10 -N 2 --gres=gpu:a100:4")
	f.Add("--time=1-2:3:4 --gpus=x")
	f.Add("-p")
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := parseSbatchArgs(strings.Fields(s))
		if err == nil && (sh.limit < 0 || sh.nodes < 0 || sh.gpus() < 0) {
			t.Fatalf("%q: negative shape %+v", s, sh)
		}
	})
}

func FuzzParseSlurmTime(f *testing.F) {
	for _, s := range []string{"30", "1-2:3:4", "UNLIMITED", "1:2", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseSlurmTime(s)
		if err == nil && d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
	})
}

func TestSubmitBadInput(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	good := e.script(t, "ok.sbatch", "-t 55")
	noShebang := filepath.Join(e.dir, "plain.txt")
	if err := os.WriteFile(noShebang, []byte("python x.py\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := e.script(t, "secret.sbatch")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"submit", filepath.Join(e.dir, "missing.sbatch")}, exitBadInput, "missing.sbatch: no such file or directory"},
		{[]string{"submit", e.dir}, exitBadInput, "not a regular file"},
		{[]string{"submit", noShebang}, exitBadInput, "must start with #!"},
		{[]string{"submit", good, "--", "--comment=mine"}, exitBadInput, "mirage sets it"},
		{[]string{"submit", good, "--segments", "3", "--until-done"}, exitUsage, "exclude each other"},
		{[]string{"submit", good, "--segments", "0"}, exitUsage, "want at least 1"},
		{[]string{"submit", good, "--policy", "psychic"}, exitUsage, `unknown policy "psychic"`},
		{[]string{"submit", good, "extra"}, exitUsage, "one SCRIPT"},
	}
	if os.Geteuid() != 0 { // root reads files whatever their mode
		cases = append(cases, struct {
			args []string
			code int
			msg  string
		}{[]string{"submit", unreadable}, exitBadInput, "permission denied"})
	}
	for _, c := range cases {
		out, stderr, code := e.run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d with %q (stdout %q)", c.args, code, stderr, c.code, c.msg, out)
		}
	}
	// Nothing was registered by the refused submissions.
	st, err := state.Open(context.Background(), e.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if cs, _ := st.Chains(context.Background(), false); len(cs) != 0 {
		t.Errorf("refused submissions registered %d chains", len(cs))
	}
}

func TestSubmitRegistersAndSubmits(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "train.sbatch", "-t 55", "-N 1", "--gres=gpu:4", "-J trainer")
	out, stderr, code := e.run(t, "submit", script, "--segments", "3", "--policy", "reactive", "--", "-p", "batch", "--mem=4G")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	id := chainIDRe.FindString(out)
	if want := fmt.Sprintf("chain %s registered (train.sbatch, 3 segments, policy reactive); segment 0 submitted as job sim-1\n", id); out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
	if !strings.HasPrefix(id, "c-20260302-") {
		t.Errorf("id %s: want the UTC date of the logical clock", id)
	}
	ctx := context.Background()
	st, err := state.Open(ctx, e.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Chain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Script != script || c.Name != "trainer" || c.TimeLimit != 55*time.Minute || c.Nodes != 1 || c.GPUs != 4 || c.Partition != "batch" ||
		c.Segments != 3 || c.MaxRetries != 2 || c.Policy != "reactive" || strings.Join(c.Args, " ") != "-p batch --mem=4G" || !c.Created.Equal(chainT0) {
		t.Errorf("chain %+v", c)
	}
	snap, _ := e.s.Snapshot(ctx)
	j := snap.Job("sim-1")
	if j == nil || j.Name != "trainer" || j.State != provisioner.StatePending || j.TimeLimit != 55*time.Minute {
		t.Fatalf("job in the simulator: %+v", j)
	}
	if tag, ok := provisioner.ParseTag(j.Comment); !ok || tag != (provisioner.Tag{Chain: id, Segment: 0, Attempt: 0}) {
		t.Errorf("comment %q", j.Comment)
	}
}

// rejectingBackend refuses every submission, as sbatch does for an invalid partition.
type rejectingBackend struct{ simBackend }

func (rejectingBackend) Submit(context.Context, provisioner.SubmitRequest) (string, error) {
	return "", fmt.Errorf("sbatch: error: invalid partition specified: nope: %w", provisioner.ErrRejected)
}

func TestSubmitRejected(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return rejectingBackend{simBackend{e.s}}, nil }
	script := e.script(t, "x.sbatch")
	_, stderr, code := e.run(t, "submit", script, "--", "-p", "nope")
	if code != exitRejected || !strings.Contains(stderr, "invalid partition specified: nope") || !strings.Contains(stderr, "chain marked failed") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	out, _, code := e.run(t, "status", "--json")
	if code != 0 || !strings.Contains(out, `"state": "failed"`) || !strings.Contains(out, "invalid partition specified") {
		t.Fatalf("status after rejection: exit %d\n%s", code, out)
	}
}
