// Package testenv tells integration tests where the real backends started by
// scripts/slurm-up.sh and scripts/k8s-up.sh are. Outside CI a test without a
// backend is skipped with a message; with CI set it fails, so CI can never go
// green without running the integration tests.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// need returns the value of the environment variable, or skips/fails the test.
func need(t testing.TB, env, what, script string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not configured (%s unset) but CI is set: run %s (make test does)", what, env, script)
	}
	t.Skipf("%s not configured: set %s (run %s, or make test)", what, env, script)
	return ""
}

// SlurmConf returns the slurm.conf path of the loopback Slurm cluster.
func SlurmConf(t testing.TB) string {
	return need(t, "MIRAGE_TEST_SLURM_CONF", "real Slurm cluster", "scripts/slurm-up.sh")
}

// SlurmRelease returns the release (MAJOR.MINOR, e.g. "24.11") of the
// loopback Slurm cluster the env file names (MIRAGE_TEST_SLURM_RELEASE);
// "22.05", the release of scripts/slurm-up.sh, when unset.
func SlurmRelease() string {
	if v := os.Getenv("MIRAGE_TEST_SLURM_RELEASE"); v != "" {
		return v
	}
	return "22.05"
}

// Kubeconfig returns the kubeconfig path of the loopback kube-apiserver.
func Kubeconfig(t testing.TB) string {
	return need(t, "MIRAGE_TEST_KUBECONFIG", "real kube-apiserver", "scripts/k8s-up.sh")
}

// SharedTraces returns the folder of the shared public traces, or skips (never
// fails: unit tests must run without them).
func SharedTraces(t testing.TB) string {
	t.Helper()
	for _, d := range []string{os.Getenv("MIRAGE_TRACES"), "../shared/traces", "../../shared/traces", "../../../shared/traces"} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	t.Skip("shared traces not found: set MIRAGE_TRACES to ../shared/traces")
	return ""
}

// SecondUser returns the second Unix user of the loopback Slurm cluster
// (MIRAGE_TEST_SECOND_USER, added by scripts/slurm-up.sh when it runs as
// root): the other user of the tests of hostile ground.
func SecondUser(t testing.TB) string {
	return need(t, "MIRAGE_TEST_SECOND_USER", "second Unix user", "scripts/slurm-up.sh as root")
}

// AsUser builds a command running a Slurm command as another user: with
// runuser where the commands are the host's (22.05, 25.05), and through
// the 24.11 chroot wrapper's MIRAGE_CHROOT_USERSPEC there (entering the
// chroot needs root). It skips where that user cannot run the command
// (the 25.05 build lives under the cache in root's home, which other users
// cannot enter).
func AsUser(t testing.TB, user, name string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Base(real) == "chroot-run" {
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), "MIRAGE_CHROOT_USERSPEC="+user+":"+user)
		return cmd
	}
	if err := exec.Command("runuser", "-u", user, "--", "test", "-x", path).Run(); err != nil {
		t.Skipf("user %s cannot run %s (%v): the two-user tests need Slurm commands other users can run", user, path, err)
	}
	cmd := exec.Command("runuser", append([]string{"-u", user, "--", path}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}
