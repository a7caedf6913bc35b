package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

// TestEveryCommandFaultCodes (#51): one exit code per fault class, in every
// command that can meet the fault (docs/reference/exit-codes.md): a flag
// no command knows (2, every command of the tree); an input file that is
// not there — trace, models directory, job script, snapshot, rules file,
// node or pod list, report — (3); a chain no one registered (3; not
// mirage done, which runs inside jobs and writes its marker without
// reading the database); a state directory others may write (6). The
// controller being down (4) is driven through every command that talks to
// Slurm in TestControllerDownAnswersAtOnce.
func TestEveryCommandFaultCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := func(name string) string { return filepath.Join(dir, "missing", name) }
	state := filepath.Join(dir, "state")
	unsafe := filepath.Join(dir, "unsafe")
	if err := os.Mkdir(unsafe, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(unsafe, 0o777); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "synth.log")
	jobs, err := traces.Synth("ls6", 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteFile(trace, 0o644, func(w io.Writer) error { return traces.WriteJobs(w, traces.FormatLS6, jobs) }); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(script, []byte("#!/bin/bash\n#SBATCH -t 55\nsleep 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newChainEnv(t) // the chain commands on a simulated cluster
	out := filepath.Join(dir, "out")
	faults := []struct {
		name string
		code int
		runs [][]string
	}{
		{"an input file that is not there", cmdutil.ExitBadInput, [][]string{
			{"train", "--trace", missing("t.log"), "--model", "dqn", "--out", out},
			{"eval", "--trace", missing("t.log"), "--policies", "reactive", "--out", out},
			{"eval", "walk-forward", "--trace", missing("t.log"), "--months", "2022-11-02"},
			{"sim", "--trace", missing("t.log")},
			{"sim", "calibrate", "--trace", missing("t.log"), "--fit-until", "2022-11-02", "--out", filepath.Join(out, "preset.json")},
			{"traces", "stats", missing("t.log")},
			{"traces", "convert", missing("t.log"), "--out", filepath.Join(out, "t.csv")},
			{"eval", "--trace", trace, "--policies", "reactive,xgb", "--models", missing("models"), "--out", out},
			{"models", "ls", missing("models")},
			{"models", "show", missing("models/xgb")},
			{"predict-wait", "--models", missing("models"), "--trace", trace, "--at", "2022-11-03"},
			{"predict-wait", "--models", missing("models"), "--snapshot", missing("snap.json")},
			{"place", "--rules", missing("rules.yaml"), "--team", "a", "--gpus", "1", "--snapshot", missing("snap.json")},
			{"pack-eval", "--nodes", missing("nodes.csv"), "--pods", missing("pods.csv")},
			{"eval", "verify", missing("report")},
			{"eval", "merge", "--out", out, missing("report.json")},
			{"submit", missing("job.sbatch"), "--state", state},
			{"submit", script, "--policy", "xgb", "--models", missing("models"), "--state", state},
		}},
		{"a chain no one registered", cmdutil.ExitBadInput, [][]string{
			{"status", "c-20260101-000000", "--state", state},
			{"log", "c-20260101-000000", "--state", state},
			{"cancel", "c-20260101-000000", "--state", state},
			{"update", "c-20260101-000000", "--state", state},
			{"recover", "c-20260101-000000", "--yes", "--state", state},
		}},
		{"a state directory others may write", cmdutil.ExitUnsafe, [][]string{
			{"status", "--state", unsafe},
			{"log", "c-20260101-000000", "--state", unsafe},
			{"cancel", "c-20260101-000000", "--state", unsafe},
			{"update", "c-20260101-000000", "--state", unsafe},
			{"done", "--chain", "c-20260101-000000", "--segment", "0", "--state", unsafe},
			{"recover", "--dry-run", "--state", unsafe},
			{"submit", script, "--state", unsafe},
			{"daemon", "--once", "--state", unsafe},
		}},
	}
	if xgb.CanTrain { // a models directory that holds a wait model, for the other inputs of predict-wait
		faults[0].runs = append(faults[0].runs, []string{"predict-wait", "--models", trainedFixture(t).dir, "--trace", missing("t.log"), "--at", "2022-11-03"},
			[]string{"predict-wait", "--models", trainedFixture(t).dir, "--snapshot", missing("snap.json")})
	}
	for _, f := range faults {
		for _, args := range f.runs {
			o, stderr, code := runWith(t, e.f, args...)
			if code != f.code {
				t.Errorf("%s: %q: exit %d, want %d (stdout %q, stderr %q)", f.name, args, code, f.code, o, stderr)
			}
		}
	}
	// The rules file is read where the backend is opened (the simulated
	// one of e takes none): before anything talks to Slurm.
	for _, args := range [][]string{
		{"submit", script, "--rules", missing("rules.yaml"), "--state", state},
		{"daemon", "--once", "--rules", missing("rules.yaml"), "--state", state},
		{"cancel", "c-20260101-000000", "--rules", missing("rules.yaml"), "--state", state},
		{"recover", "--dry-run", "--rules", missing("rules.yaml"), "--state", state},
	} {
		o, stderr, code := runMirage(t, args...)
		if code != cmdutil.ExitBadInput {
			t.Errorf("an input file that is not there: %q: exit %d, want %d (stdout %q, stderr %q)", args, code, cmdutil.ExitBadInput, o, stderr)
		}
	}
	// A flag no command knows: every runnable command of the tree.
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && c.Parent() != nil && c.Parent().Name() != "completion" && c.Name() != "completion" {
			path := strings.Fields(c.CommandPath())[1:]
			args := append(slices.Clone(path), "--no-such-flag")
			o, stderr, code := runWith(t, e.f, args...)
			if code != cmdutil.ExitUsage {
				t.Errorf("a flag no command knows: %q: exit %d, want %d (stdout %q, stderr %q)", args, code, cmdutil.ExitUsage, o, stderr)
			}
			n++
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testFactory(nil)))
	if n < 25 {
		t.Errorf("%d commands driven with a bad flag: the walk missed some", n)
	}
	t.Logf("%d commands driven with a bad flag", n)
}
