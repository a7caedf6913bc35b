package main

import (
	"encoding/json"
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

// TestDoneCommand: inside a job, mirage done reads its chain, segment, job
// and state directory from the environment and writes one private marker;
// outside one, or with values that cannot name a marker, it says what to
// do and exits 2; a state directory others may write is refused (6).
func TestDoneCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	env := map[string]string{provisioner.EnvChain: "c-20261123-ab12cd", provisioner.EnvSegment: "3", "SLURM_JOB_ID": "46", envState: dir}
	f := testFactory(env)
	f.Now = func() time.Time { return chainT0 }
	out, stderr, code := runWith(t, f, "done")
	marker := filepath.Join(dir, state.DoneDir, "c-20261123-ab12cd.3.done")
	if code != 0 || !strings.Contains(out, "chain c-20261123-ab12cd segment 3 (job 46): the work is finished; the chain ends when this segment ends (marker "+marker) {
		t.Fatalf("done: exit %d, %q %q", code, out, stderr)
	}
	b, err := os.ReadFile(marker)
	var m state.DoneMark
	if err != nil || json.Unmarshal(b, &m) != nil || m != (state.DoneMark{Chain: "c-20261123-ab12cd", Segment: 3, Job: "46", Time: chainT0}) {
		t.Errorf("marker %s: %q, %v", marker, b, err)
	}
	// --chain and --segment win over the environment (from the login node).
	if _, _, code := runWith(t, f, "done", "--chain", "c-20261123-000001", "--segment", "0"); code != 0 {
		t.Errorf("--chain --segment: exit %d", code)
	} else if _, err := os.Stat(filepath.Join(dir, state.DoneDir, "c-20261123-000001.0.done")); err != nil {
		t.Errorf("--chain --segment: %v", err)
	}
	for _, c := range []struct {
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{nil, nil, cmdutil.ExitUsage, "run mirage done inside a segment's job ($MIRAGE_CHAIN and $MIRAGE_SEGMENT are set there), or give --chain and --segment"},
		{map[string]string{provisioner.EnvChain: "c-1", provisioner.EnvSegment: "x"}, nil, cmdutil.ExitUsage, `segment "x": want a segment index`},
		{nil, []string{"--chain", "../c-1", "--segment", "1", "--state", dir}, cmdutil.ExitUsage, `chain id "../c-1"`},
	} {
		_, stderr, code := runWith(t, testFactory(c.env), append([]string{"done"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("done %v with %v: exit %d, %q; want %d naming %q", c.args, c.env, code, stderr, c.code, c.msg)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runWith(t, f, "done"); code != cmdutil.ExitUnsafe || !strings.Contains(stderr, dir) {
		t.Errorf("state directory writable by others: exit %d, %q; want %d", code, stderr, cmdutil.ExitUnsafe)
	}
}

// TestDoneEndsChain: an --until-done chain under lead on the simulated
// cluster (limit 55 min, the daemon every 10 min). By hand: segment 0 runs
// 08:00–08:55 (TIMEOUT); at 08:30 its job runs mirage done; the 08:30
// cycle takes the marker. Lead would submit segment 1 at the 08:50 cycle
// (its lead point is 08:45), but the segment said the work is finished:
// no successor, and at the 09:00 cycle, segment 0 having ended, the chain
// is done. The simulator ran one job.
func TestDoneEndsChain(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--until-done", "--policy", "lead", "--", "-p", "batch")
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "4"); code != 0 { // 08:00 … 08:30
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	g := *e.f
	g.Getenv = func(k string) string {
		return map[string]string{provisioner.EnvChain: id, provisioner.EnvSegment: "0", envState: e.state, "SLURM_JOB_ID": "sim-1"}[k]
	}
	if out, stderr, code := runWith(t, &g, "done"); code != 0 {
		t.Fatalf("mirage done at %s: exit %d: %s%s", e.s.Now(), code, out, stderr)
	}
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "5"); code != 0 { // 08:30 … 09:10
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	cj := statusJSON(t, e, id)
	if cj.State != string(provisioner.ChainDone) || cj.Reason != "segment 0 (job sim-1 TIMEOUT) said the work is finished (mirage done)" ||
		len(cj.SegmentList) != 1 || !cj.SegmentList[0].Done {
		t.Errorf("chain %s (%s), segments %+v; want done after segment 0, marked done", cj.State, cj.Reason, cj.SegmentList)
	}
	if jobs := e.s.History(chainT0); len(jobs) != 1 {
		t.Errorf("the simulator ran %d jobs, want 1", len(jobs))
	}
	out, _, _ := e.run(t, "log", id, "--events")
	if !strings.Contains(out, "work-done") || !strings.Contains(out, "said the work is finished (mirage done): no successor; the chain ends when it ends") {
		t.Errorf("log lacks the marker's event and the wait it caused:\n%s", out)
	}
	if entries, err := os.ReadDir(filepath.Join(e.state, state.DoneDir)); err != nil || len(entries) != 0 {
		t.Errorf("markers left after the daemon took them: %v, %v", entries, err)
	}
}

// statusJSON is mirage status CHAIN --json.
func statusJSON(t *testing.T, e *chainEnv, id string) chainops.ChainJSON {
	t.Helper()
	out, stderr, code := e.run(t, "status", id, "--json")
	var cj chainops.ChainJSON
	if code != 0 || json.Unmarshal([]byte(out), &cj) != nil {
		t.Fatalf("status: exit %d: %s%s", code, out, stderr)
	}
	return cj
}
