package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// guideScriptPage holds the job script of the checkpoint pattern that the
// e2e test below runs as written.
const guideScriptPage = "docs/guide/chains-and-daemon.md"

// guideScript is the job script of guideScriptPage: its one bash block
// that starts with #! and ends the work with mirage done.
func guideScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", guideScriptPage))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, c := range extractCommands(guideScriptPage, string(b)) {
		if c.Kind == "script" && strings.Contains(c.Text, "mirage done") {
			found = append(found, c.Text)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d job scripts with mirage done, want 1", guideScriptPage, len(found))
	}
	return found[0] + "\n"
}

// The user's own programs the guide's script calls, as stand-ins (shell
// scripts: on Slurm 24.11 jobs run in a chroot without the host's Python).
// "python train.py --resume" resumes from ckpt ("STEP CHECKPOINTS"), does
// a step a second and keeps its progress in progress-SEGMENT;
// save_checkpoint (the trap's) makes that progress the checkpoint and logs
// it. The run is sized to four segments: it is complete 10 steps into the
// segment that resumes from the third checkpoint, whenever Slurm's signal
// stopped the three before (Slurm may signal up to a minute early, so a
// run sized in steps would end in a segment that depends on the timing).
// The trainer stops when its job script has exited (the trap's exit 0):
// the loopback cluster's proctrack/linuxproc loses track of a process
// whose parent has gone, so Slurm would not end it with its job.
const (
	guideTrainer = `#!/bin/bash
step=0 checkpoints=0
if [ "$1 $2" = "train.py --resume" ] && [ -f ckpt ]; then read -r step checkpoints < ckpt; fi
resumed=$step n=0
until [ "$checkpoints" -ge 3 ] && [ "$n" -ge 10 ]; do
  kill -0 "$PPID" 2>/dev/null && [ "$n" -lt 300 ] || exit 0 # its job script has ended: so does it
  sleep 1
  step=$((step + 1)) n=$((n + 1))
  echo "$step $((checkpoints + 1))" > "progress-$MIRAGE_SEGMENT.tmp" && mv "progress-$MIRAGE_SEGMENT.tmp" "progress-$MIRAGE_SEGMENT"
done
echo "segment $MIRAGE_SEGMENT: the work is complete at step $step (resumed from step $resumed)"
`
	guideSaveCheckpoint = `#!/bin/sh
cp "progress-$MIRAGE_SEGMENT" ckpt.tmp && mv ckpt.tmp ckpt
echo "segment $MIRAGE_SEGMENT $(cat ckpt)" >> checkpoints.log
`
)

// TestE2ECheckpointChainOnSlurm (issue #51): the guide's job script, as
// written, checkpoints on USR1 and exits 0; Slurm sends it USR1 40 s before
// each segment's 2-minute limit (--signal=B:USR1@40 after --, winning over
// the script's #SBATCH lines). An --until-done chain under pin, driven by
// `mirage daemon --once` in a loop as cron would, must go on after each
// such exit 0 — each segment stopped at or after its signal point, 2:00 −
// 40 s − Slurm's up to 60 s early = 0:20 after its start — and end when
// the fourth segment's train.py exits 0 and the script runs mirage done.
// Before, the first exit 0 ended the chain ("exited 0 before its limit:
// the work is done") and cancelled the pinned successor.
//
// Checked from sacct: four jobs, one per segment 0–3, all COMPLETED exit
// 0, segments 0–2 between 20 s and 2 min long; no fifth. From the state:
// the chain done by mirage done in segment 3. From the job's files: three
// checkpoints, by segments 0, 1 and 2, and segment 3 resumed from the
// third.
func TestE2ECheckpointChainOnSlurm(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := filepath.Join(e.work, "train.sbatch")
	bin := filepath.Join(e.work, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path, body string
		mode       os.FileMode
	}{
		{script, guideScript(t), 0o644},
		{filepath.Join(e.work, "train.py"), "# the trainer: bin/python stands in for python and this file\n", 0o644},
		{filepath.Join(bin, "python"), guideTrainer, 0o755},
		{filepath.Join(bin, "save_checkpoint"), guideSaveCheckpoint, 0o755},
	} {
		if err := os.WriteFile(f.path, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	const limit, lead = 2 * time.Minute, 40 * time.Second
	// submit records its PATH for the segments: the user's programs are on it.
	id := e.submit(t, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, script, "--until-done", "--policy", "pin", "--",
		"-t", "2", "--signal=B:USR1@40", "-p", "debug")
	var cycles []string
	cj := e.waitDone(t, id, 10*time.Minute, func() {
		out, stderr, code := e.run(t, nil, "daemon", "--once")
		if code != 0 {
			t.Fatalf("daemon --once: exit %d: %s%s", code, out, stderr)
		}
		cycles = append(cycles, strings.TrimSpace(out+stderr))
		time.Sleep(3 * time.Second)
	})
	logs := func() string {
		var b strings.Builder
		for _, n := range []string{"checkpoints.log"} {
			c, _ := os.ReadFile(filepath.Join(e.work, n))
			fmt.Fprintf(&b, "%s:\n%s\n", n, c)
		}
		outs, _ := filepath.Glob(filepath.Join(e.work, "slurm-*.out"))
		for _, o := range outs {
			c, _ := os.ReadFile(o)
			fmt.Fprintf(&b, "%s:\n%s\n", filepath.Base(o), c)
		}
		out, _, _ := e.run(t, nil, "log", id)
		return b.String() + "mirage log:\n" + out
	}
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 4 || !strings.HasPrefix(cj.Reason, "segment 3 (job ") ||
		!strings.HasSuffix(cj.Reason, "COMPLETED) said the work is finished (mirage done)") {
		t.Fatalf("chain %s (%s) with %d segments, want done by mirage done in segment 3: %+v\n%s", cj.State, cj.Reason, len(cj.SegmentList), cj.SegmentList, logs())
	}
	jobs := sacctTimes(t, e.conf, id, start)
	for i, s := range cj.SegmentList {
		j, ok := jobs[provisioner.Tag{Chain: id, Segment: i}]
		if s.Index != i || s.Attempt != 0 || s.State != string(provisioner.StateCompleted) || s.ExitCode != 0 || s.Done != (i == 3) || !ok || j.id != s.JobID ||
			j.state != "COMPLETED" || j.exit != "0:0" {
			t.Errorf("segment %d: stored %+v, in sacct %+v (found %v); want COMPLETED exit 0, one job%s", i, s, j, ok, map[bool]string{true: ", marked done"}[i == 3])
			continue
		}
		if ran := j.end.Sub(j.start); i < 3 && (ran < limit-lead-provisioner.SignalEarly || ran >= limit) {
			t.Errorf("segment %d ran %s: want it stopped by Slurm's signal, in [%s, %s)", i, ran, limit-lead-provisioner.SignalEarly, limit)
		}
		if i > 0 {
			if prev := jobs[provisioner.Tag{Chain: id, Segment: i - 1}]; s.GapSec != nil {
				t.Logf("segment %d ran %s; segment %d started %+.0fs after its end", i-1, prev.end.Sub(prev.start), i, *s.GapSec)
			}
		}
	}
	if len(jobs) != 4 {
		t.Errorf("accounting holds %d jobs for the chain, want 4: %+v", len(jobs), jobs)
	}
	b, err := os.ReadFile(filepath.Join(e.work, "checkpoints.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err != nil || len(lines) != 3 {
		t.Fatalf("checkpoints.log: %v, %d lines, want 3 (segments 0, 1, 2)\n%s", err, len(lines), logs())
	}
	steps := make([]int, len(lines)) // the step each checkpoint saved
	for i, l := range lines {
		var seg, checkpoints int
		if n, err := fmt.Sscanf(l, "segment %d %d %d", &seg, &steps[i], &checkpoints); n != 3 || err != nil || seg != i || checkpoints != i+1 {
			t.Errorf("checkpoint %d: %q, want segment %d's, its checkpoint %d", i, l, i, i+1)
		}
	}
	last, err := os.ReadFile(filepath.Join(e.work, "slurm-"+cj.SegmentList[3].JobID+".out"))
	if want := fmt.Sprintf("segment 3: the work is complete at step %d (resumed from step %d)", steps[2]+10, steps[2]); err != nil || !strings.Contains(string(last), want) {
		t.Errorf("segment 3's output %q, %v; want %q: 10 steps from the third checkpoint", last, err, want)
	}
	if t.Failed() {
		t.Logf("%s\ndaemon cycles:\n%s", logs(), strings.Join(cycles, "\n"))
	}
}

// sacctJob is one allocation of a chain's job as sacct reports it.
type sacctJob struct {
	id, state, exit string
	start, end      time.Time
}

// sacctTimes lists, by tag, the allocations Slurm accounting holds for a
// chain with their states, exit codes and times (the last job of a tag).
func sacctTimes(t *testing.T, conf, chain string, since time.Time) map[provisioner.Tag]sacctJob {
	t.Helper()
	cmd := exec.Command("sacct", "-X", "-n", "-P", "-a", "-S", since.UTC().Format("2006-01-02T15:04:05"), "-o", "JobID,State,ExitCode,Start,End,Comment")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sacct: %v", err)
	}
	res := map[provisioner.Tag]sacctJob{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 6)
		if len(f) < 6 {
			continue
		}
		tag, ok := provisioner.ParseTag(f[5])
		if !ok || tag.Chain != chain {
			continue
		}
		j := sacctJob{id: f[0], state: strings.Fields(f[1] + " ")[0], exit: f[2]}
		j.start, _ = time.Parse("2006-01-02T15:04:05", f[3])
		j.end, _ = time.Parse("2006-01-02T15:04:05", f[4])
		if _, dup := res[tag]; dup {
			t.Errorf("tag %s: a second job %s in accounting", tag, j.id)
		}
		res[tag] = j
	}
	return res
}
