// Package testenv decides what a test does when something it needs is
// missing: a backend started by scripts/slurm-up.sh or scripts/k8s-up.sh,
// the second Unix user, the xgboost build, the shared traces, a tool.
// Outside CI the test is skipped with a message naming what is missing and
// how to provide it; in CI (the CI variable set, as .ci/run sets it) the
// same message fails the test, so CI can never go green by skipping.
//
// Every skip of a test for a missing resource goes through Require (the
// helpers below call it); a t.Skip elsewhere says in a comment why it never
// applies in CI (an opt-in results run, -short, a platform without /proc).
package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"
)

// InCI reports whether the tests run in CI: the CI variable is set to
// anything but "", "0" or "false" (.ci/run sets CI=true).
func InCI() bool {
	switch os.Getenv("CI") {
	case "", "0", "false":
		return false
	}
	return true
}

// Require returns when ok. Otherwise it fails the test in CI, or skips it
// outside CI, with the message "WHAT not available: HOW" (in CI prefixed
// "required in CI:"). what names the missing thing as a user would look
// for it; how says how to provide it.
func Require(t testing.TB, ok bool, what, how string) {
	t.Helper()
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("required in CI: %s not available: %s", what, how)
	}
	t.Skipf("%s not available: %s", what, how)
}

// A Resource is something the environment provides to the tests, named as
// Require's messages name it. Resources lists those make test provides.
type Resource struct {
	What   string // what is missing, as the messages say it
	How    string // how to provide it
	Suites string // the tests that need it (printed at the start of make test)
}

// Require is Require(t, ok, r.What, r.How).
func (r *Resource) Require(t testing.TB, ok bool) {
	t.Helper()
	Require(t, ok, r.What, r.How)
}

// The resources of make test, in the order it prints them.
var (
	NeedSlurm = &Resource{
		What:   "the loopback Slurm cluster (MIRAGE_TEST_SLURM_CONF)",
		How:    "run scripts/slurm-up.sh and source the env.sh it writes (make test does)",
		Suites: "slurm: TestIntegration*; cmd/mirage: TestE2E*, *OnSlurm, *LiveSlurm, TestReadmeCommands (22.05, then 24.11)",
	}
	NeedSecondUser = &Resource{
		What:   "the second Unix user (MIRAGE_TEST_SECOND_USER)",
		How:    "run scripts/slurm-up.sh as root: it adds the user mirageb and names it in its env.sh (make test does)",
		Suites: "cmd/mirage: TestE2EForeignTags, TestE2EPinnedSuccessorAheadOfYoungerJob, the script e2e tests; slurm: the hostile-fields tests",
	}
	NeedKubernetes = &Resource{
		What:   "the loopback kube-apiserver (MIRAGE_TEST_KUBECONFIG)",
		How:    "run scripts/k8s-up.sh and source the env.sh it writes (make test does)",
		Suites: "k8s/...; cmd/mirage: the Kubernetes backend tests, TestReadmeCommands",
	}
	NeedXGBoost = &Resource{
		What:   "the xgboost build (libxgboost)",
		How:    `build the tests with -tags "libsqlite3 xgboost" (make test's GOTAGS; do not override it with GOTAGS=) and install libxgboost-dev (scripts/deps.sh)`,
		Suites: "models/xgb, models/train, cmd/mirage: training, the learned policies, predict-wait, the demo",
	}
	NeedSharedTraces = &Resource{
		What:   "the shared public traces (../shared/traces beside the clone, or MIRAGE_TRACES)",
		How:    "put the shared folder beside the clone as ../shared, or set MIRAGE_TRACES to its traces folder",
		Suites: "traces, sim, eval, models/train: the LS6 and openb fidelity, replay and packing checks",
	}
	NeedChromium = &Resource{
		What:   "/usr/bin/chromium",
		How:    "install the chromium package (scripts/deps.sh; make test does)",
		Suites: "eval: the report's browser check",
	}
	NeedRoot = &Resource{
		What:   "root (the tests run as an ordinary user)",
		How:    "run the tests as root, as make test does (it installs packages and adds the second user)",
		Suites: "internal/state, internal/safefile: files owned by another user are refused",
	}
	NeedGo = &Resource{
		What:   "the go command in PATH",
		How:    "put Go's bin directory on PATH",
		Suites: "internal/archtest: the import rules",
	}
)

// Resources lists every Resource, in the order make test prints them.
var Resources = []*Resource{NeedSlurm, NeedSecondUser, NeedKubernetes, NeedXGBoost, NeedSharedTraces, NeedChromium, NeedRoot, NeedGo}

// SlurmConf returns the slurm.conf path of the loopback Slurm cluster.
func SlurmConf(t testing.TB) string {
	t.Helper()
	v := os.Getenv("MIRAGE_TEST_SLURM_CONF")
	NeedSlurm.Require(t, v != "")
	return v
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
	t.Helper()
	v := os.Getenv("MIRAGE_TEST_KUBECONFIG")
	NeedKubernetes.Require(t, v != "")
	return v
}

// SecondUser returns the name of the second Unix user of the two-user
// tests (MIRAGE_TEST_SECOND_USER, written by scripts/slurm-up.sh), which
// must exist on this machine.
func SecondUser(t testing.TB) string {
	t.Helper()
	name := os.Getenv("MIRAGE_TEST_SECOND_USER")
	if name != "" {
		if _, err := user.Lookup(name); err != nil {
			Require(t, false, NeedSecondUser.What+": user "+name+" does not exist", NeedSecondUser.How)
		}
	}
	NeedSecondUser.Require(t, name != "")
	return name
}

// XGBoost requires the xgboost build; built is models/xgb.CanTrain (the
// caller passes it, so that this package links no learner).
func XGBoost(t testing.TB, built bool) {
	t.Helper()
	NeedXGBoost.Require(t, built)
}

// SharedTraces returns the folder of the shared public traces: MIRAGE_TRACES,
// or ../shared/traces beside the clone (found from a package directory up
// to three levels deep).
func SharedTraces(t testing.TB) string {
	t.Helper()
	dir := sharedTraces()
	NeedSharedTraces.Require(t, dir != "")
	return dir
}

func sharedTraces() string {
	for _, d := range []string{os.Getenv("MIRAGE_TRACES"), "../shared/traces", "../../shared/traces", "../../../shared/traces"} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// LS6 is the shared LS6 A100 trace, relative to the shared traces folder.
const LS6 = "tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz"

// SharedTrace returns the path of a file in the shared traces folder (rel
// is relative to it, e.g. "tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz"),
// which must exist. A file that exists but cannot be read is the caller's
// failure, not a missing resource.
func SharedTrace(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(SharedTraces(t), rel)
	_, err := os.Stat(p)
	Require(t, !errors.Is(err, fs.ErrNotExist), "the shared trace "+rel+" ("+p+")", NeedSharedTraces.How+" (a complete copy)")
	return p
}

// AsUser builds a command running a command as another user: with runuser
// where the commands are the host's (22.05, 25.05), and through the 24.11
// chroot wrapper's MIRAGE_CHROOT_USERSPEC there (entering the chroot needs
// root). A command the user cannot run is a missing resource (Require): a
// 25.05 build cached under root's home (0700) before
// scripts/slurm-newer/install.sh moved it to /var/cache/mirage was one, and
// the two-user tests then always skipped on 25.05.
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
	err = exec.Command("runuser", "-u", user, "--", "test", "-x", path).Run()
	Require(t, err == nil, fmt.Sprintf("%s for the second user %s (%s)", name, user, path),
		"the command must lie where every user can enter (a 25.05 build under root's home cannot be: build it again, make test-slurm25 installs it under /var/cache/mirage)")
	cmd := exec.Command("runuser", append([]string{"-u", user, "--", path}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}
