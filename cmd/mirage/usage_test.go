package main

import (
	"errors"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

// TestUsageErrors: every kind of bad command line exits 2 with a message
// that names the flag, argument or command at fault.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate" for "mirage"`},
		{"unknown subcommand", []string{"eval", "frobnicate"}, `unknown command "frobnicate" for "mirage eval"`},
		{"unknown flag", []string{"status", "--colour"}, "unknown flag: --colour"},
		{"unknown shorthand", []string{"daemon", "-z"}, "unknown shorthand flag: 'z' in -z"},
		{"bad int", []string{"submit", "x.sbatch", "--segments", "three"}, `invalid argument "three" for "--segments" flag`},
		{"bad duration", []string{"daemon", "--interval", "soon"}, `invalid argument "soon" for "--interval" flag`},
		{"bad bool", []string{"status", "--json=maybe"}, `invalid argument "maybe" for "--json" flag`},
		{"flag without value", []string{"status", "--state"}, "flag needs an argument: --state"},
		{"missing argument", []string{"cancel"}, "accepts 1 arg(s), received 0"},
		{"extra argument", []string{"version", "now"}, `unknown command "now" for "mirage version"`},
		{"missing required flag", []string{"sim"}, `required flag(s) "trace" not set`},
		{"out of range", []string{"daemon", "--interval", "0s"}, "--interval 0s: want a positive duration"},
		{"negative value", []string{"recover", "--since", "-1h"}, "--since -1h0m0s: want a positive duration"},
		{"bad sizes", []string{"handoff", "--poll", "0s"}, "--poll must be positive"},
		{"mistyped flag", []string{"status", "--actve"}, "unknown flag: --actve (did you mean --active?)"},
		{"mistyped inherited flag", []string{"eval", "--polices", "x"}, "(did you mean --policies?)"},
		{"sbatch option before --", []string{"submit", "x.sbatch", "-p", "gpu"}, `unknown shorthand flag: 'p' in -p: sbatch options go after "--"`},
		{"long sbatch option before --", []string{"submit", "x.sbatch", "--partition", "gpu"}, `sbatch options go after "--"`},
	}
	for _, c := range cases {
		_, stderr, code := runMirage(t, c.args...)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s %q: exit %d, stderr %q; want exit %d with %q", c.name, c.args, code, stderr, cmdutil.ExitUsage, c.msg)
		}
	}
}

// TestFlagsParse: flags reach the options a command runs with, through runF.
func TestFlagsParse(t *testing.T) {
	t.Parallel()
	f := testFactory(map[string]string{"MIRAGE_PREV_JOB": "41", "MIRAGE_CHAIN": "c-20260101-abcdef"})
	var got *handoffOptions
	cmd := newHandoffCmd(f, func(o *handoffOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--signal", "TERM", "--grace", "2m", "--cancel"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	h := got.handoff
	if h.Job != "41" || h.Chain != "c-20260101-abcdef" || h.Signal != "TERM" || h.Grace != 2*time.Minute || h.Poll != 5*time.Second || h.Settle != 10*time.Second || !h.Cancel {
		t.Errorf("handoff options %+v", h)
	}

	var d *daemonOptions
	cmd = newDaemonCmd(f, func(o *daemonOptions) error { d = o; return nil })
	cmd.SetArgs([]string{"--once", "--json", "--state", "/tmp/s", "--backend", "kubernetes"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !d.once || !d.json || d.interval != 10*time.Minute || d.state.Dir != "/tmp/s" || d.backend.kind != "kubernetes" || d.backend.slurm.Timeout != 30*time.Second {
		t.Errorf("daemon options %+v", d)
	}

	var s *submitOptions
	cmd = newSubmitCmd(f, func(o *submitOptions) error { s = o; return nil })
	cmd.SetArgs([]string{"job.sbatch", "--segments", "4", "--", "-p", "gpu"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if s.chain.Script != "job.sbatch" || s.chain.Segments != 4 || strings.Join(s.chain.Args, " ") != "-p gpu" || s.chain.Policy != "" || !s.defaultPolicy || s.chain.MaxRetries != 2 {
		t.Errorf("submit options %+v", s)
	}

	// train writes where submit and the daemon read by default.
	var tr *trainOptions
	cmd = newTrainCmd(testFactory(map[string]string{"MIRAGE_MODELS": "/m"}), func(o *trainOptions) error { tr = o; return nil })
	cmd.SetArgs([]string{"--trace", "t.log", "--model", "xgb"})
	if err := cmd.Execute(); err != nil || tr.spec.Out != "/m" {
		t.Errorf("train without --out: %v, out %q; want $MIRAGE_MODELS /m", err, tr.spec.Out)
	}

	// A usage error is typed, not recognised by its text.
	root := newRootCmd(f)
	root.SetArgs([]string{"status", "--nope"})
	var fe *cmdutil.FlagError
	if err := root.Execute(); !errors.As(err, &fe) {
		t.Errorf("unknown flag: %T %v, want *cmdutil.FlagError", err, err)
	}
}

// TestUnsafeStateExit: a state directory that others can write is refused
// with its own exit code (6), not read.
func TestUnsafeStateExit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMirage(t, "status", "--state", dir)
	if code != cmdutil.ExitUnsafe || !strings.Contains(stderr, dir) {
		t.Fatalf("exit %d, stderr %q; want exit %d naming %s", code, stderr, cmdutil.ExitUnsafe, dir)
	}
}

// TestExitCodeTable: one table of exit codes for every command — the same
// fault gives the same code whichever command meets it (docs/reference/exit-codes.md).
func TestExitCodeTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-trace.log")
	state := filepath.Join(dir, "state")
	synth := filepath.Join(dir, "synth.log") // a readable trace, for flags that are wrong about it
	jobs, err := traces.Synth("ls6", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteFile(synth, 0o644, func(w io.Writer) error { return traces.WriteJobs(w, traces.FormatLS6, jobs) }); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
	}{
		// a trace that is not there: bad input (3), in every command that reads one
		{[]string{"train", "--trace", missing, "--model", "dqn", "--out", dir}, cmdutil.ExitBadInput},
		{[]string{"eval", "--trace", missing, "--policies", "reactive", "--out", dir}, cmdutil.ExitBadInput},
		{[]string{"sim", "--trace", missing}, cmdutil.ExitBadInput},
		{[]string{"traces", "stats", missing}, cmdutil.ExitBadInput},
		// an unknown chain: bad input (3), in every command that takes one
		{[]string{"status", "c-nope", "--state", state}, cmdutil.ExitBadInput},
		{[]string{"log", "c-nope", "--state", state}, cmdutil.ExitBadInput},
		{[]string{"cancel", "c-nope", "--state", state}, cmdutil.ExitBadInput},
		// usage (2)
		{[]string{"train", "--trace", missing}, cmdutil.ExitUsage},
		{[]string{"status", "--bogus"}, cmdutil.ExitUsage},
		{[]string{"traces", "stats", synth, "--tz", "Mars/Olympus_Mons"}, cmdutil.ExitUsage},
	}
	if xgb.CanTrain { // predict-wait needs a trained wait model
		cases = append(cases, struct {
			args []string
			code int
		}{[]string{"predict-wait", "--trace", missing, "--models", trainedFixture(t).dir, "--at", "2023-02-01"}, cmdutil.ExitBadInput})
	}
	for _, c := range cases {
		out, stderr, code := runMirage(t, c.args...)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d (stdout %q, stderr %q)", c.args, code, c.code, out, stderr)
		}
	}
}

// TestEveryCommandHasExamples: every runnable command's --help shows at
// least one example (cobra's own help and completion commands aside).
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil && c.Parent().Name() != "completion" {
			if strings.TrimSpace(c.Example) == "" {
				t.Errorf("%s has no examples", c.CommandPath())
			} else if !strings.Contains(c.Example, c.CommandPath()) {
				t.Errorf("%s: examples do not show the command itself:\n%s", c.CommandPath(), c.Example)
			}
			checkExamples(t, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testFactory(nil)))
}

// checkExamples parses each example line of c as a command line (an
// example may show a step before, such as mirage train): it must name a
// command and give only flags that command knows, with valid values.
func checkExamples(t *testing.T, c *cobra.Command) {
	t.Helper()
	for _, line := range strings.Split(c.Example, "\n") {
		line = strings.TrimSpace(line)
		for _, cut := range []string{" #", " |", " >"} { // comments, pipes and redirections
			line, _, _ = strings.Cut(line, cut)
		}
		if !strings.HasPrefix(line, "mirage ") {
			continue
		}
		var words []string
		for i, part := range strings.Split(line, `"`) { // "quoted words" stay one
			if i%2 == 1 {
				words = append(words, part)
			} else {
				words = append(words, strings.Fields(part)...)
			}
		}
		root := newRootCmd(testFactory(nil))
		found, rest, err := root.Find(words[1:])
		if err != nil {
			t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			continue
		}
		if err := found.ParseFlags(rest); err != nil {
			t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
		}
	}
}
