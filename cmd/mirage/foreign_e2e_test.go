package main

import (
	"maps"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
)

// TestE2EForeignTags (#21): a second Unix user on the same cluster copies
// the visible tags of the first user's chain into the comments of their own
// jobs — a new segment (1.0), a duplicate of the stored segment 0, and a
// whole forged chain with its specification. The first user's daemon adopts
// none of them, cancels none, reports each of its chain's once (an event
// per job over several cycles); mirage recover registers nothing of them.
// Without the owner checks the daemon adopted the forged segment 1 (see
// provisioner's TestForeignTaggedJobsIgnored, self=""). The second user is
// added by scripts/slurm-up.sh (testenv.SecondUser).
func TestE2EForeignTags(t *testing.T) {
	e := newE2E(t)
	other := testenv.SecondUser(t)
	asUser(t, other, "sbatch", "--version") // before anything is submitted: the other user must be able to run sbatch
	t.Parallel()
	// reactive: the successor waits for segment 0 to end, so a forged
	// segment 1 stands alone while segment 0 runs.
	id := e.submit(t, nil, e.script(t, "mirage-e2e-owned", "sleep 45"), "--segments", "2", "--policy", "reactive")
	forgedChain := "c-20200101-f0f0f0"
	spec := func(chain string, seg int) string {
		return provisioner.ChainComment(&provisioner.Chain{ID: chain, Name: "evil", Script: "/tmp/evil.sbatch", Policy: "lead", Segments: 5,
			TimeLimit: time.Minute, Nodes: 1}, seg, 0)
	}
	var forged, hostile []string
	for _, comment := range []string{spec(id, 1), spec(id, 0), spec(forgedChain, 0)} {
		cmd := asUser(t, other, "sbatch", "--parsable", "-p", "debug", "-t", "3", "-o", "/dev/null",
			"--comment", comment, "--wrap", "sleep 150") // alive through the checks below, even under load
		cmd.Dir = "/tmp"
		cmd.Env = append(cmd.Env, "SLURM_CONF="+e.conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch as %s: %v\n%s", other, err, out)
		}
		job := strings.TrimSpace(strings.Split(string(out), ";")[0])
		forged = append(forged, job)
		t.Cleanup(func() { _ = exec.Command("scancel", job).Run() })
	}
	// #24: a job of the other user whose name holds a newline and whose
	// comment holds the text readers' separator and a newline followed by a
	// record claiming to be the first user's segment 1: the reads must not
	// split it into records, so nothing is adopted or cancelled and every
	// cycle completes.
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	fake := strings.Join([]string{"999", "x", me.Username, "teama", "debug", "normal", "COMPLETED", spec(id, 1)}, slurm.Sep)
	cmd := asUser(t, other, "sbatch", "--parsable", "-p", "debug", "-t", "3", "-o", "/dev/null",
		"--job-name=a\nb", "--comment=x"+slurm.Sep+"y\n"+fake, "--wrap", "sleep 150")
	cmd.Dir = "/tmp"
	cmd.Env = append(cmd.Env, "SLURM_CONF="+e.conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("sbatch as %s refused the hostile name and comment (%v: %s): only the tags are checked", other, err, out)
	} else {
		job := strings.TrimSpace(strings.Split(string(out), ";")[0])
		hostile = append(hostile, job)
		t.Cleanup(func() { _ = exec.Command("scancel", job).Run() })
	}
	defer e.run(t, nil, "cancel", id)
	for range 3 {
		if _, stderr, code := e.run(t, nil, "daemon", "--once"); code != 0 {
			t.Fatalf("daemon: exit %d: %s", code, stderr)
		}
		time.Sleep(3 * time.Second)
	}
	isForged := func(job string) bool {
		return slices.Contains(forged, job) || slices.Contains(hostile, job) || job == "999"
	}
	cj := e.status(t, id)
	if cj.State != string(provisioner.ChainActive) || len(cj.SegmentList) != 1 {
		t.Errorf("chain %s: %s with %d segments, want active with its own segment 0 only", id, cj.State, len(cj.SegmentList))
	}
	for _, s := range cj.SegmentList {
		if isForged(s.JobID) {
			t.Errorf("segment %d.%d is %s's forged job %s", s.Index, s.Attempt, other, s.JobID)
		}
	}
	reported := map[string]int{}
	for _, ev := range e.log(t, id).Events {
		if ev.Kind == string(provisioner.EventForeign) {
			reported[ev.JobID]++
		}
	}
	// The hostile job's comment carries the chain's tag too (after its
	// newline): one foreign job more, not a record of the first user's.
	want := map[string]int{forged[0]: 1, forged[1]: 1}
	for _, h := range hostile {
		want[h] = 1
	}
	if !maps.Equal(reported, want) {
		t.Errorf("foreign events by job %v, want %v: the forged and hostile jobs that carry the chain's tag, once each", reported, want)
	}
	// None of the forged jobs was cancelled by the daemon.
	sq, err := exec.Command("squeue", "-h", "-a", "-j", strings.Join(append(forged, hostile...), ","), "-o", "%i %T %u").Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	for _, job := range append(forged, hostile...) {
		if !strings.Contains(string(sq), job+" ") || strings.Contains(string(sq), job+" CANCELLED") {
			t.Errorf("forged job %s is no longer queued or running:\n%s", job, sq)
		}
	}
	// recover: the forged chain is not rebuilt, by name or in a sweep.
	out, stderr, code := e.run(t, nil, "recover", forgedChain)
	if code != cmdutil.ExitBadInput || !strings.Contains(out, "only other users' jobs") {
		t.Errorf("recover %s: exit %d, out %q, err %q", forgedChain, code, out, stderr)
	}
	if _, stderr, code := e.run(t, nil, "recover", "--yes"); code != 0 {
		t.Errorf("recover: exit %d: %s", code, stderr)
	}
	if _, _, code := e.run(t, nil, "status", forgedChain); code != cmdutil.ExitBadInput {
		t.Errorf("status %s after recover: exit %d, want %d (unknown chain)", forgedChain, code, cmdutil.ExitBadInput)
	}
}

// asUser runs a Slurm command as another user (testenv.AsUser).
func asUser(t *testing.T, user, name string, args ...string) *exec.Cmd {
	t.Helper()
	return testenv.AsUser(t, user, name, args...)
}
