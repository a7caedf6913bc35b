package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/slurm"
)

// copiesBackend is the simulator as a backend that submits from private
// script copies, as the Slurm client does (copiesOf reads its Config); the
// refusal of any other script is slurm's (TestSubmitOnlyFromPrivateCopies).
type copiesBackend struct {
	simBackend
	dir string
}

func (b copiesBackend) Config() slurm.Config { return slurm.Config{ScriptDir: b.dir} }

// newCopiesEnv is a chainEnv whose backend keeps script copies in the
// state directory's scripts/.
func newCopiesEnv(t *testing.T) *chainEnv {
	t.Helper()
	e := newChainEnv(t)
	b := copiesBackend{simBackend{e.s}, scriptsDir(e.state)}
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return b, nil }
	return e
}

func sha(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// scriptEvents are the chain's "script" events.
func (e *chainEnv) scriptEvents(t *testing.T, id string) []string {
	t.Helper()
	st, err := state.Open(context.Background(), e.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == provisioner.EventScript {
			out = append(out, ev.Detail)
		}
	}
	return out
}

// TestScriptFrozenAtSubmit: submit keeps a copy named by the content's
// hash; an edit of the original is reported once (status and log), not
// followed; update adopts it, and the daemon then removes the copy no
// chain uses.
func TestScriptFrozenAtSubmit(t *testing.T) {
	t.Parallel()
	e := newCopiesEnv(t)
	script := e.script(t, "train.sbatch", "-t 30")
	v1, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	id := e.submitChain(t, script, "--segments", "3")
	cj := e.statusJSON(t, id)
	copy1 := filepath.Join(scriptsDir(e.state), "sha256-"+strings.TrimPrefix(sha(string(v1)), "sha256:"))
	if cj.ScriptHash != sha(string(v1)) || cj.ScriptCopy != copy1 || cj.ScriptSeen != "" {
		t.Fatalf("after submit: hash %q, copy %q, seen %q; want %s in %s", cj.ScriptHash, cj.ScriptCopy, cj.ScriptSeen, sha(string(v1)), copy1)
	}
	if b, err := os.ReadFile(copy1); err != nil || string(b) != string(v1) {
		t.Fatalf("the copy holds %q (%v), want the script", b, err)
	}
	out, _, _ := e.run(t, "status", id)
	if !strings.Contains(out, "copy      "+sha(string(v1))) {
		t.Errorf("status text does not show the hash:\n%s", out)
	}
	// The original is edited: reported once, in status and the log.
	v2 := string(v1) + "echo more\n"
	if err := os.WriteFile(script, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 {
			t.Fatalf("daemon: exit %d: %s", code, stderr)
		}
	}
	cj = e.statusJSON(t, id)
	if !strings.Contains(cj.ScriptSeen, "changed since the copy was made (now "+sha(v2)[:19]+")") || cj.ScriptHash != sha(string(v1)) {
		t.Errorf("after the edit: seen %q, hash %q", cj.ScriptSeen, cj.ScriptHash)
	}
	if evs := e.scriptEvents(t, id); len(evs) != 1 || evs[0] != cj.ScriptSeen {
		t.Errorf("script events %q, want the one change, once", evs)
	}
	// Submit again: the existing chain, with a word on the edit.
	if _, stderr, code := e.run(t, "submit", script, "--segments", "3"); code != 0 || !strings.Contains(stderr, "mirage update "+id+" adopts the new version") {
		t.Errorf("submit again: exit %d, %q", code, stderr)
	}
	// update adopts the new version.
	out, stderr, code := e.run(t, "update", id)
	if code != 0 || !strings.Contains(out, "segments submitted from now on run "+script+" as it is now ("+sha(v2)[:19]+", was "+sha(string(v1))[:19]+")") {
		t.Fatalf("update: exit %d, %q %q", code, out, stderr)
	}
	cj = e.statusJSON(t, id)
	if cj.ScriptHash != sha(v2) || cj.ScriptSeen != "" {
		t.Errorf("after update: hash %q, seen %q; want %s and nothing seen", cj.ScriptHash, cj.ScriptSeen, sha(v2))
	}
	if out, _, code := e.run(t, "update", id); code != 0 || !strings.Contains(out, "nothing to adopt") {
		t.Errorf("update again: exit %d, %q", code, out)
	}
	if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(copy1); !os.IsNotExist(err) {
		t.Errorf("the first copy is still there (%v): no active chain uses it", err)
	}
	if _, err := os.Stat(cj.ScriptCopy); err != nil {
		t.Errorf("the copy in use is gone: %v", err)
	}
}

// TestLegacyChainGetsCopy: a chain stored without a copy (before #50, or
// recovered) gets one at the daemon's next cycle after submit's checks; one
// whose script fails them is held, reported once, and gets its copy once
// the script is fixed.
func TestLegacyChainGetsCopy(t *testing.T) {
	t.Parallel()
	e := newCopiesEnv(t)
	ctx := context.Background()
	good := e.script(t, "good.sbatch", "-t 30")
	openScript := e.script(t, "open.sbatch", "-t 30")
	if err := os.Chmod(openScript, 0o666); err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(ctx, e.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, script := range []string{good, openScript} {
		ch := provisioner.Chain{Name: "legacy", Script: script, Policy: "lead", Segments: 2, TimeLimit: 30 * time.Minute, Nodes: 1}
		if err := chainops.RegisterChain(ctx, st, &ch, chainT0, uint64(i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ch.ID)
	}
	st.Close()
	for range 2 {
		if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 {
			t.Fatalf("daemon: exit %d: %s", code, stderr)
		}
	}
	content, _ := os.ReadFile(good)
	if cj := e.statusJSON(t, ids[0]); cj.ScriptHash != sha(string(content)) || cj.ScriptCopy == "" || cj.ScriptSeen != "" {
		t.Errorf("legacy chain: hash %q, copy %q, seen %q; want a copy of %s", cj.ScriptHash, cj.ScriptCopy, cj.ScriptSeen, good)
	}
	if evs := e.scriptEvents(t, ids[0]); len(evs) != 1 || !strings.Contains(evs[0], "private copy of "+good+" made") {
		t.Errorf("legacy chain's script events %q", evs)
	}
	held := e.statusJSON(t, ids[1])
	if held.ScriptCopy != "" || !strings.Contains(held.ScriptSeen, "held: the chain has no private copy") || !strings.Contains(held.ScriptSeen, "chmod go-w") {
		t.Errorf("chain of a 0666 script: copy %q, seen %q; want held, saying what to do", held.ScriptCopy, held.ScriptSeen)
	}
	if evs := e.scriptEvents(t, ids[1]); len(evs) != 1 {
		t.Errorf("held chain's script events %q, want one (two cycles)", evs)
	}
	if _, _, code := e.run(t, "update", ids[1]); code != cmdutil.ExitBadInput {
		t.Errorf("update of a chain without a copy: exit %d, want %d", code, cmdutil.ExitBadInput)
	}
	if err := os.Chmod(openScript, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	if cj := e.statusJSON(t, ids[1]); cj.ScriptCopy == "" || cj.ScriptSeen != "" {
		t.Errorf("after the fix: copy %q, seen %q", cj.ScriptCopy, cj.ScriptSeen)
	}
}

// TestUpdateRefuses: update reads the script with submit's checks.
func TestUpdateRefuses(t *testing.T) {
	t.Parallel()
	e := newCopiesEnv(t)
	script := e.script(t, "train.sbatch", "-t 30")
	id := e.submitChain(t, script, "--segments", "3")
	if err := os.Chmod(script, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := e.run(t, "update", id); code != cmdutil.ExitUnsafe || !strings.Contains(stderr, "chmod go-w") {
		t.Errorf("update of a 0777 script: exit %d, %q; want %d", code, stderr, cmdutil.ExitUnsafe)
	}
	if err := os.Chmod(script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/bash\necho no limit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := e.run(t, "update", id); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "sets no time limit") {
		t.Errorf("update to a script without a limit: exit %d, %q; want %d", code, stderr, cmdutil.ExitBadInput)
	}
	if _, _, code := e.run(t, "update", "c-20200101-000000"); code != cmdutil.ExitBadInput {
		t.Errorf("update of an unknown chain: exit %d", code)
	}
	if _, _, code := e.run(t, "cancel", id); code != 0 {
		t.Fatal("cancel failed")
	}
	if _, stderr, code := e.run(t, "update", id); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "is cancelled") {
		t.Errorf("update of a cancelled chain: exit %d, %q", code, stderr)
	}
}
