package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// The sbatch option and #SBATCH parsing tests moved to slurm
// (sbatch_parse_test.go) with the parsers.

func TestSubmitBadInput(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	good := e.script(t, "ok.sbatch", "-t 55")
	noShebang := filepath.Join(e.dir, "plain.txt")
	if err := os.WriteFile(noShebang, []byte("python x.py\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noLimit := e.script(t, "nolimit.sbatch", "-p debug")
	// #50: a script others may write, or in a directory every user may
	// write without the sticky bit, is refused as unsafe.
	openScript := e.script(t, "open.sbatch", "-t 55")
	if err := os.Chmod(openScript, 0o777); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(e.dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	inShared := filepath.Join(shared, "x.sbatch")
	if err := os.Rename(e.script(t, "x.sbatch", "-t 55"), inShared); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
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
		{[]string{"submit", filepath.Join(e.dir, "missing.sbatch")}, cmdutil.ExitBadInput, "missing.sbatch: no such file or directory"},
		{[]string{"submit", e.dir}, cmdutil.ExitBadInput, "not a regular file"},
		{[]string{"submit", noShebang}, cmdutil.ExitBadInput, "must start with #!"},
		{[]string{"submit", good, "--", "--comment=mine"}, cmdutil.ExitBadInput, "mirage sets it"},
		{[]string{"submit", noLimit}, cmdutil.ExitBadInput, "script " + noLimit + " sets no time limit: a chain needs one to know when each successor is due; add \"#SBATCH --time=24:00:00\" to the script, or give it after \"--\": mirage submit " + noLimit + " -- --time=24:00:00"},
		{[]string{"submit", good, "--", "--time=UNLIMITED"}, cmdutil.ExitBadInput, "asks for no time limit (UNLIMITED)"},
		{[]string{"submit", good, "--segments", "3", "--until-done"}, cmdutil.ExitUsage, "exclude each other"},
		{[]string{"submit", good, "--segments", "0"}, cmdutil.ExitUsage, "want at least 1"},
		{[]string{"submit", good, "--policy", "psychic"}, cmdutil.ExitUsage, `unknown policy "psychic"`},
		{[]string{"submit", good, "extra"}, cmdutil.ExitUsage, "one SCRIPT"},
		{[]string{"submit", openScript}, cmdutil.ExitUnsafe, "may be written by group or others (mode 0777): anyone who may write it chooses what your jobs run; check its contents, then chmod go-w it"},
		{[]string{"submit", inShared}, cmdutil.ExitUnsafe, "which every user may write (mode 0777, no sticky bit)"},
	}
	if os.Geteuid() != 0 { // root reads files whatever their mode
		cases = append(cases, struct {
			args []string
			code int
			msg  string
		}{[]string{"submit", unreadable}, cmdutil.ExitBadInput, "permission denied"})
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
	script := e.script(t, "x.sbatch", "-t 55")
	_, stderr, code := e.run(t, "submit", script, "--", "-p", "nope")
	if code != cmdutil.ExitRejected || !strings.Contains(stderr, "invalid partition specified: nope") || !strings.Contains(stderr, "chain marked failed") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	out, _, code := e.run(t, "status", "--json")
	if code != 0 || !strings.Contains(out, `"state": "failed"`) || !strings.Contains(out, "invalid partition specified") {
		t.Fatalf("status after rejection: exit %d\n%s", code, out)
	}
}

// downBackend is a backend whose controller does not answer submissions.
type downBackend struct{ simBackend }

func (downBackend) Submit(context.Context, provisioner.SubmitRequest) (string, error) {
	return "", fmt.Errorf("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure): %w", provisioner.ErrUnavailable)
}

// TestSubmitTwiceIsOneChain: the same submit run again after it exited 4
// (the controller down) answers with the chain it registered, exit 0; only
// --new registers a second one. Another script, other sbatch options or
// another directory is other work.
func TestSubmitTwiceIsOneChain(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	up := e.f.Backend
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return downBackend{simBackend{e.s}}, nil }
	script := e.script(t, "x.sbatch", "-t 55")
	_, stderr, code := e.run(t, "submit", script, "--segments", "2", "--", "-p", "batch")
	if code != cmdutil.ExitUnavailable {
		t.Fatalf("submit with the controller down: exit %d: %s", code, stderr)
	}
	first := chainIDRe.FindString(stderr)
	e.f.Backend = up
	out, stderr, code := e.run(t, "submit", script, "--segments", "2", "--", "-p", "batch")
	if code != 0 || !strings.Contains(out, "chain "+first+" is already active") || !strings.Contains(out, "--new") {
		t.Fatalf("the same submit again: exit %d, out %q, err %q (first chain %q)", code, out, stderr, first)
	}
	out, _, code = e.run(t, "submit", script, "--segments", "2", "--json", "--", "-p", "batch")
	var fj chainops.FirstJSON
	if err := json.Unmarshal([]byte(out), &fj); err != nil || code != 0 || fj.Chain != first || fj.Status != "existing" {
		t.Errorf("again with --json: exit %d, %+v, %v", code, fj, err)
	}
	count := func() int {
		st, err := state.Open(context.Background(), e.state, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		cs, err := st.Chains(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d active chains after the same submit three times, want 1", n)
	}
	// Other options, or --new: another chain each.
	e.submitChain(t, script, "--segments", "2", "--", "-p", "batch", "-N", "2")
	second := e.submitChain(t, script, "--segments", "2", "--new", "--", "-p", "batch")
	if second == first {
		t.Errorf("--new answered with the first chain")
	}
	if n := count(); n != 3 {
		t.Errorf("%d active chains, want 3", n)
	}
}
