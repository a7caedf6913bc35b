package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// jobsPerSegment counts the simulator's jobs by the segment their tag
// names (chain id/index), every attempt together.
func jobsPerSegment(e *chainEnv, id string) map[int]int {
	n := map[int]int{}
	for _, j := range e.s.History(chainT0) {
		if t, ok := provisioner.ParseTag(j.Comment); ok && t.Chain == id {
			n[t.Segment]++
		}
	}
	return n
}

// TestSecondStateDirectory (#50): a chain recovered into a second --state
// while the first one's daemon goes on is not run twice. Before, both
// daemons submitted segment 1 (and cancelled each other's job as a
// duplicate); now the second one registers the chain as the first one's
// and decides nothing for it, saying why. Taken over (--take-over) while
// the first still runs, the second does nothing while the first's job
// lives: either way every segment ran once.
func TestSecondStateDirectory(t *testing.T) {
	t.Parallel()
	for _, takeOver := range []bool{false, true} {
		e := newChainEnv(t)
		second := e.dir + "/second"
		script := e.script(t, "x.sbatch", "-t 55")
		id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive")
		args := []string{"recover", "--yes", "--state", second}
		if takeOver {
			args = append(args, "--take-over")
		}
		out, stderr, code := runWith(t, e.f, args...)
		if code != 0 || !strings.Contains(out, id) {
			t.Fatalf("recover into %s: exit %d\n%s%s", second, code, out, stderr)
		}
		if !takeOver && !strings.Contains(out, "submitted from another state database") {
			t.Errorf("recover does not say the chain is the other database's:\n%s", out)
		}
		// Both daemons every 10 minutes, the first one first, for 3 h 20 m:
		// three 55-minute segments.
		for i := 0; i < 20; i++ {
			for _, dir := range []string{e.state, second} {
				if _, stderr, code := runWith(t, e.f, "daemon", "--once", "--state", dir); code != 0 {
					t.Fatalf("daemon --state %s at %s: exit %d: %s", dir, e.s.Now().Format(time.Kitchen), code, stderr)
				}
			}
			e.s.Run(e.s.Now().Add(10 * time.Minute))
		}
		if n := jobsPerSegment(e, id); len(n) != 3 || n[0] != 1 || n[1] != 1 || n[2] != 1 {
			t.Errorf("take over %v: jobs per segment %v, want one each of 0, 1, 2", takeOver, n)
		}
		if cj := e.statusJSON(t, id); cj.State != string(provisioner.ChainDone) {
			t.Errorf("take over %v: the first database's chain is %s, want done", takeOver, cj.State)
		}
		out, _, _ = runWith(t, e.f, "log", id, "--state", second)
		want := "kept by another state database"
		if takeOver {
			want = "was submitted by another state database"
		}
		if !strings.Contains(out, want) {
			t.Errorf("take over %v: the second database's log does not say %q:\n%s", takeOver, want, out)
		}
	}
}
