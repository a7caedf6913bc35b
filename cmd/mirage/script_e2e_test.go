package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Issue #50, finding 1: the daemon submitted each successor from the
// script's path at that moment, so another user who could put a file of
// theirs at that path had the victim's daemon run it ("PWNED: attacker-
// written script ran as srvict"). Every segment now runs the private copy
// made at submit. The output of each segment's job shows which content
// ran. Before the fix both tests below failed: segment 1's output said
// PWNED.

// swapScript is a job script printing which content ran, with its output
// in dir (a directory only the test's user may write, so the output is the
// job's own).
func swapScript(name, dir, text string) string {
	return "#!/bin/bash\n#SBATCH -t 1\n#SBATCH -p debug\n#SBATCH -J " + name + "\n#SBATCH -o " + dir + "/%x-%j.out\n" +
		"echo \"" + text + " segment=$MIRAGE_SEGMENT\"\nsleep 3\n"
}

// attackerWrites has the other user copy src (a file anyone may read) to
// dst, as a file of their own.
func attackerWrites(t *testing.T, other, src, dst string) {
	t.Helper()
	if out, err := testenv.AsUser(t, other, "cp", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp as %s: %v: %s", other, err, out)
	}
}

// checkRanOriginal runs the daemon until the chain is done and checks that
// both segments ran the original content: their job outputs (work/NAME-JOB.out)
// say ORIGINAL, never PWNED, and the chain reports what became of the
// original (ScriptSeen) while keeping the hash of what submit read.
func checkRanOriginal(t *testing.T, e *e2eEnv, id, name, original string) {
	t.Helper()
	stop := e.daemon(t, nil, "--interval", "3s")
	cj := e.waitDone(t, id, 4*time.Minute, nil)
	stop()
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
		t.Fatalf("chain %s: %s with %d segments, want done with 2: %+v", id, cj.State, len(cj.SegmentList), cj)
	}
	for _, s := range cj.SegmentList {
		out, err := os.ReadFile(filepath.Join(e.work, name+"-"+s.JobID+".out"))
		if err != nil {
			t.Fatalf("segment %d (job %s): %v", s.Index, s.JobID, err)
		}
		if want := "ORIGINAL segment=" + strconv.Itoa(s.Index); !strings.Contains(string(out), want) || strings.Contains(string(out), "PWNED") {
			t.Errorf("segment %d (job %s) printed %q; want %q: the job ran another script than the one submitted", s.Index, s.JobID, out, want)
		}
	}
	sum := sha256.Sum256([]byte(original))
	if want := "sha256:" + hex.EncodeToString(sum[:]); cj.ScriptHash != want {
		t.Errorf("status shows script hash %q, want %q (the content submit read)", cj.ScriptHash, want)
	}
	if !strings.Contains(cj.ScriptSeen, "owned by uid") || !strings.Contains(cj.ScriptSeen, "segments run the private copy") {
		t.Errorf("status says of the original %q; want it reported as another user's file, not followed", cj.ScriptSeen)
	}
	reported := false
	for _, ev := range e.log(t, id).Events {
		reported = reported || ev.Kind == string(provisioner.EventScript) && strings.Contains(ev.Detail, "owned by uid")
	}
	if !reported {
		t.Errorf("the log of chain %s has no script event about the replaced original", id)
	}
}

// (a) The script lives in a project directory the other user's group may
// write (setgid, no sticky bit); after submit, the other user renames it
// away and puts a file of theirs in its place.
func TestE2EScriptSwappedInProjectDir(t *testing.T) {
	e := newE2E(t)
	other := testenv.SecondUser(t)
	testenv.AsUser(t, other, "sbatch", "--version") // the other user must be able to run the commands (testenv.Require)
	t.Parallel()
	u, err := user.Lookup(other)
	if err != nil {
		t.Fatal(err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := os.MkdirTemp("/tmp", "mirage-e2e-project-") // the other user must reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(proj) })
	if err := os.Chown(proj, os.Geteuid(), gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(proj, 0o2775); err != nil {
		t.Fatal(err)
	}
	name := "mirage-e2e-swap"
	original := swapScript(name, e.work, "ORIGINAL")
	script := filepath.Join(proj, "train.sbatch")
	if err := os.WriteFile(script, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(proj, "evil-source.sbatch")
	if err := os.WriteFile(evil, []byte(swapScript(name, e.work, "PWNED")), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.submit(t, nil, script, "--segments", "2", "--policy", "reactive")
	defer e.run(t, nil, "cancel", id)
	if out, err := testenv.AsUser(t, other, "mv", script, filepath.Join(proj, "moved.sbatch")).CombinedOutput(); err != nil {
		t.Fatalf("mv as %s: %v: %s", other, err, out)
	}
	attackerWrites(t, other, evil, script)
	checkRanOriginal(t, e, id, name, original)
}

// (b) The script lives in /tmp; after submit a cleaner deletes it, and
// the other user creates a file of theirs at the same path.
func TestE2EScriptReplacedInTmp(t *testing.T) {
	e := newE2E(t)
	other := testenv.SecondUser(t)
	testenv.AsUser(t, other, "sbatch", "--version")
	t.Parallel()
	name := "mirage-e2e-tmp"
	original := swapScript(name, e.work, "ORIGINAL")
	f, err := os.CreateTemp("/tmp", "mirage-e2e-*.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	script := f.Name()
	t.Cleanup(func() { os.Remove(script) })
	if _, err := f.WriteString(original); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(script, 0o644); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(e.work, "evil-source.sbatch")
	if err := os.WriteFile(evil, []byte(swapScript(name, e.work, "PWNED")), 0o644); err != nil {
		t.Fatal(err)
	}
	evilCopy, err := os.MkdirTemp("/tmp", "mirage-e2e-evil-") // where the other user can read it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(evilCopy) })
	if err := os.Chmod(evilCopy, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(evil)
	if err := os.WriteFile(filepath.Join(evilCopy, "evil.sbatch"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.submit(t, nil, script, "--segments", "2", "--policy", "reactive")
	defer e.run(t, nil, "cancel", id)
	if err := os.Remove(script); err != nil { // the cleaner
		t.Fatal(err)
	}
	attackerWrites(t, other, filepath.Join(evilCopy, "evil.sbatch"), script)
	checkRanOriginal(t, e, id, name, original)
}

// (c) submit refuses a script others may write, and one another user
// owns, before anything is registered or submitted (exit 6, with what to
// do).
func TestE2ESubmitRefusesOthersScripts(t *testing.T) {
	e := newE2E(t)
	other := testenv.SecondUser(t)
	t.Parallel()
	u, err := user.Lookup(other)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	openScript := filepath.Join(e.work, "open.sbatch")
	if err := os.WriteFile(openScript, []byte(swapScript("open", e.work, "x")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(openScript, 0o777); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(e.work, "theirs.sbatch")
	if err := os.WriteFile(theirs, []byte(swapScript("theirs", e.work, "x")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, uid, gid); err != nil {
		t.Fatal(err)
	}
	for script, want := range map[string]string{
		openScript: "may be written by group or others (mode 0777)",
		theirs:     "is owned by uid " + u.Uid + ", not by you",
	} {
		out, stderr, code := e.run(t, nil, "submit", script, "--segments", "2")
		if code != cmdutil.ExitUnsafe || !strings.Contains(stderr, want) || out != "" {
			t.Errorf("submit %s: exit %d, out %q, err %q; want exit %d saying %q", script, code, out, stderr, cmdutil.ExitUnsafe, want)
		}
	}
	if out, _, code := e.run(t, nil, "status", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("status after the refusals: exit %d, %s; want no chain", code, out)
	}
}
