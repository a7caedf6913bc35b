package slurm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDieWithParent: a command run with DieWithParent is killed when the
// process that ran it dies (SIGKILL, as a crashed daemon), and one run
// without it survives — the reason a crashed mirage leaves no sbatch
// running. The test runs itself as the parent process.
func TestDieWithParent(t *testing.T) {
	if pidFile := os.Getenv("MIRAGE_TEST_RUNNER_PIDFILE"); pidFile != "" {
		// the parent: run a command that records its pid, then sleeps
		r := &ExecRunner{DieWithParent: os.Getenv("MIRAGE_TEST_RUNNER_DIE") == "1"}
		_, _, _ = r.Run(context.Background(), "sh", []string{"-c", "echo $$ > " + pidFile + "; exec sleep 60"}, nil)
		return
	}
	for _, die := range []bool{true, false} {
		pidFile := filepath.Join(t.TempDir(), "pid")
		parent := exec.Command(os.Args[0], "-test.run=^TestDieWithParent$")
		parent.Env = append(os.Environ(), "MIRAGE_TEST_RUNNER_PIDFILE="+pidFile, "MIRAGE_TEST_RUNNER_DIE="+map[bool]string{true: "1", false: "0"}[die])
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		for deadline := time.Now().Add(10 * time.Second); pid == 0; {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if time.Now().After(deadline) {
				_ = parent.Process.Kill()
				t.Fatal("the child never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		_ = parent.Process.Kill()
		_ = parent.Wait()
		gone := false
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !gone; time.Sleep(20 * time.Millisecond) {
			gone = !alive(pid)
		}
		if !gone {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if gone != die {
			t.Errorf("DieWithParent=%v: child gone after the parent's death: %v", die, gone)
		}
	}
}

// alive reports whether pid runs (a zombie left for a reaper counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Issue #24: a 329 MB sacct answer took the daemon to 1.4 GB. Output past
// ExecRunner.MaxOutput kills the command and is an *OutputLimitError that
// names the command and the limit; a command that never stops printing is
// killed as soon as it passes the limit, not at the timeout.
func TestRunnerOutputLimit(t *testing.T) {
	r := &ExecRunner{MaxOutput: 1 << 20}
	start := time.Now()
	out, _, err := r.Run(context.Background(), "yes", []string{"a line that repeats forever"}, nil)
	var le *OutputLimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrOutputLimit) || le.Cmd != "yes" || le.Limit != 1<<20 {
		t.Fatalf("err = %v, want an OutputLimitError for yes at 1 MiB", err)
	}
	if !strings.Contains(err.Error(), "yes printed more than 1048576 bytes") || out != nil {
		t.Errorf("err %q, %d bytes of output kept", err, len(out))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to stop a command over the limit", d)
	}
	// Within the limit the output is returned whole.
	out, _, err = r.Run(context.Background(), "head", []string{"-c", "1048576", "/dev/zero"}, nil)
	if err != nil || len(out) != 1<<20 {
		t.Fatalf("1 MiB under a 1 MiB limit: %d bytes, %v", len(out), err)
	}
	// Through the Client: not retried, the error names the command and the limit.
	c, err := New(Config{MaxOutput: 1 << 10, Path: os.Getenv("PATH"), Retry: RetryPolicy{Attempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	c.runner = &fakeNameRunner{ExecRunner: c.runner.(*ExecRunner), real: "yes"}
	_, err = c.Partitions(context.Background())
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Attempts != 1 || !errors.Is(err, ErrOutputLimit) || !strings.Contains(err.Error(), "1024 bytes") {
		t.Fatalf("Partitions over the limit: %v", err)
	}
}

// fakeNameRunner runs real instead of the command asked for.
type fakeNameRunner struct {
	*ExecRunner
	real string
}

func (f *fakeNameRunner) Run(ctx context.Context, name string, args, env []string) ([]byte, []byte, error) {
	out, errb, err := f.ExecRunner.Run(ctx, f.real, nil, env)
	var le *OutputLimitError
	if errors.As(err, &le) {
		le.Cmd = name
	}
	return out, errb, err
}

// TestLookPathInAbsoluteOnly: a relative PATH entry ("", ".", "bin") names
// wherever mirage happens to run, which another user may fill: only
// absolute directories are searched.
func TestLookPathInAbsoluteOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sbatch"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, path := range []string{"", ".", "./", string(os.PathListSeparator) + "."} {
		if p, err := lookPathIn("sbatch", path); err == nil {
			t.Errorf("PATH %q found %s", path, p)
		}
	}
	if p, err := lookPathIn("sbatch", "."+string(os.PathListSeparator)+dir); err != nil || p != filepath.Join(dir, "sbatch") {
		t.Errorf("absolute entry: %q, %v", p, err)
	}
}

// WithOutputLimit lowers the cap for one call (the Client's JSON budget);
// it never raises it past MaxOutput.
func TestRunnerPerCallOutputLimit(t *testing.T) {
	r := &ExecRunner{MaxOutput: 1 << 20}
	_, _, err := r.Run(WithOutputLimit(context.Background(), 4096), "yes", nil, nil)
	var le *OutputLimitError
	if !errors.As(err, &le) || le.Limit != 4096 {
		t.Fatalf("err = %v, want an OutputLimitError at 4096 bytes", err)
	}
	_, _, err = r.Run(WithOutputLimit(context.Background(), 8<<20), "yes", nil, nil)
	if !errors.As(err, &le) || le.Limit != 1<<20 {
		t.Fatalf("err = %v, want the runner's own 1 MiB cap", err)
	}
}

// A streamed read (runOpts.lines) hands over the same lines as the whole
// output cut at its newlines: lines longer than the pipe's chunks, a last
// line without a newline, blank lines; and its cap holds as the buffered
// one does.
func TestRunnerStreamsLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 200_000)
	content := "a\x1fb\n\n" + long + "\nlast without newline"
	file := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(content, "\n") // worked out from the file, not by the code under test
	r := &ExecRunner{MaxOutput: 1 << 20}
	var got []string
	ctx, sink := withLines(context.Background(), func(l []byte) { got = append(got, string(l)) })
	out, _, err := r.Run(ctx, "cat", []string{file}, nil)
	if err != nil || !sink.used || len(out) != 0 {
		t.Fatalf("streamed cat: %v, used %v, %d bytes returned", err, sink.used, len(out))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed %d lines, want %d (first differing: %.40q)", len(got), len(want), firstDiff(got, want))
	}
	_, _, err = (&ExecRunner{MaxOutput: 4096}).Run(ctx, "yes", nil, nil)
	if !errors.Is(err, ErrOutputLimit) {
		t.Fatalf("streamed yes under a 4 KiB cap: %v", err)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return ""
}
