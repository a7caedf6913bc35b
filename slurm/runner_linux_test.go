package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
		_, _, _ = r.Run(context.Background(), "sh", []string{"-c", "echo $$ > " + pidFile + "; exec sleep 60"})
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
