package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestControllerDownAnswersAtOnce: with nothing listening at the
// controller's address, submit, the daemon, recover, cancel and
// predict-wait (#51: it retried for 30 s) answer with exit 4 and one line
// naming the controller, the slurm.conf and how to choose another — before
// any Slurm command runs (each would spend about 10 s in Slurm's own
// retries) and before submit registers anything.
func TestControllerDownAnswersAtOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // the port is now closed: a controller that is down
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=gone\nSlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort="+port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newChainEnv(t)
	// A chain registered while the controller was up, for cancel to act on.
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2")
	down := testFactory(nil)
	script := e.script(t, "y.sbatch", "-t 55")
	state := []string{"--state", e.state}
	cases := [][]string{
		append([]string{"submit", script, "--slurm-conf", conf}, state...),
		append([]string{"daemon", "--once", "--slurm-conf", conf}, state...),
		append([]string{"recover", "--slurm-conf", conf}, state...),
		append([]string{"cancel", id, "--slurm-conf", conf}, state...),
	}
	if xgb.CanTrain { // predict-wait needs a trained wait model
		cases = append(cases, []string{"predict-wait", "--models", trainedFixture(t).dir, "--slurm-conf", conf})
	}
	for _, args := range cases {
		out, stderr, code := runWith(t, down, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != cmdutil.ExitUnavailable || len(lines) != 1 || !strings.Contains(stderr, "ctl (127.0.0.1:"+port+")") ||
			!strings.Contains(stderr, conf) || !strings.Contains(stderr, "--slurm-conf or SLURM_CONF") {
			t.Errorf("%s with the controller down: exit %d, stdout %q, stderr %q", args[0], code, out, stderr)
		}
	}
	// cancel marks the chain first (no daemon cycle acts on it again) and
	// asks to be run again for its jobs.
	if cj := e.statusJSON(t, id); cj.State != string(provisioner.ChainCancelled) {
		t.Errorf("chain %s after cancel with the controller down: %s, want cancelled", id, cj.State)
	}
	out, _, _ := e.run(t, "status", "--json")
	if strings.Count(out, `"id"`) != 1 {
		t.Errorf("submit with the controller down registered a chain:\n%s", out)
	}
}
