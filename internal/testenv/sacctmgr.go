package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SacctmgrAdmin runs `sacctmgr -i ARGS` on the loopback cluster of conf as
// the test's user, its administrator (scripts/slurm-up.sh makes root one):
// for tests that set association or QOS limits. The test fails if it
// cannot.
func SacctmgrAdmin(t testing.TB, conf string, args ...string) {
	t.Helper()
	cmd := exec.Command("sacctmgr", append([]string{"-i"}, args...)...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sacctmgr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
