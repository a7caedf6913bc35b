package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestRecoverAsksForOptions (#50): the jobs' comments leave the sbatch
// options out, so a chain submitted with some is recovered only when they
// are given again after "--" (as many words as at submit); without them it
// is listed as needs-options and not registered (said on stderr in a
// sweep over every chain, exit 2 when the chain was named).
func TestRecoverAsksForOptions(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive", "--", "--mem=4G", "--mail-user=me@example.org")
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"recover", "--yes"}, {"recover", id, "--yes"}} {
		out, stderr, code := e.run(t, args...)
		want := cmdutil.ExitUsage
		if len(args) == 2 {
			want = 0 // a sweep: the others would have been registered
		}
		if code != want || !strings.Contains(out, id) || !strings.Contains(out, "needs-options") ||
			!strings.Contains(out, "leave out its 2 sbatch option word(s)") || !strings.Contains(stderr, "mirage recover CHAIN -- OPTIONS") {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, stderr)
		}
		if strings.Contains(out, "me@example.org") || strings.Contains(out, "--mem=4G") {
			t.Errorf("%q: the options show, though no comment carries them:\n%s", args, out)
		}
	}
	if _, _, code := e.run(t, "status", id); code != cmdutil.ExitBadInput {
		t.Fatalf("status after recover without the options: exit %d, want %d (not registered)", code, cmdutil.ExitBadInput)
	}
	// Another number of words than at submit: refused, not registered.
	if out, _, code := e.run(t, "recover", id, "--yes", "--", "--mem=4G"); code != cmdutil.ExitUsage || !strings.Contains(out, "submitted with 2 sbatch option word(s), and 1 were given") {
		t.Errorf("recover with one word of two: exit %d\n%s", code, out)
	}
	// Options belong to one chain.
	if _, stderr, code := e.run(t, "recover", id, "c-other", "--yes", "--", "--mem=4G"); code != cmdutil.ExitUsage || !strings.Contains(stderr, "exactly one CHAIN") {
		t.Errorf("recover of two chains with options: exit %d, %s", code, stderr)
	}
	out, stderr, code := e.run(t, "recover", id, "--yes", "--", "--mem=4G", "--mail-user=me@example.org")
	if code != 0 || !strings.Contains(out, "recovered") {
		t.Fatalf("recover with the options: exit %d\n%s%s", code, out, stderr)
	}
	if cj := e.statusJSON(t, id); cj.Script != script || !slices.Equal(cj.Args, []string{"--mem=4G", "--mail-user=me@example.org"}) || cj.Segments != 3 {
		t.Errorf("recovered chain: %+v", cj)
	}
}

// TestSubmitRefusesLongComment (#50): Slurm rejects a comment over 1024
// bytes, so a chain whose jobs' comments could grow past it is refused at
// submit, not rejected mid-chain.
func TestSubmitRefusesLongComment(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	out, stderr, code := e.run(t, "submit", script, "--name", strings.Repeat("n", 800))
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "over the 1024 Slurm accepts: shorten the job name (--name)") {
		t.Errorf("submit with an 800-byte name: exit %d\n%s%s", code, out, stderr)
	}
	if out, _, _ := e.run(t, "status", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("a chain was registered: %s", out)
	}
	// A 400-byte name fits: about 530 bytes as base64, the rest of the comment under 300.
	if _, stderr, code := e.run(t, "submit", script, "--name", strings.Repeat("n", 400)); code != 0 {
		t.Errorf("submit with a 400-byte name: exit %d: %s", code, stderr)
	}
}

// TestRecoverDryRunWritesNothing (#51): recover --dry-run after the state
// directory is lost lists the chain it would rebuild and leaves no trace:
// no tag.key made, no database, not even the directory.
func TestRecoverDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2", "--policy", "reactive")
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run(t, "recover", "--dry-run")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "would-recover") {
		t.Errorf("recover --dry-run: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Lstat(e.state); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(e.state)
		t.Errorf("recover --dry-run left the state directory %s (%v): %v", e.state, err, entries)
	}
	if strings.Contains(stderr, "tag.key") {
		t.Errorf("recover --dry-run speaks of a key: %s", stderr)
	}
}

// commentless is the simulated cluster as a Slurm whose accounting keeps
// no job comments (AccountingStoreFlags without job_comment): the history
// has none, and it says so.
type commentless struct{ simBackend }

func (c commentless) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	jobs, err := c.simBackend.History(ctx, since)
	for i := range jobs {
		jobs[i].Comment = ""
	}
	return jobs, err
}

func (commentless) KeepsComments(context.Context) (bool, error) { return false, nil }

// TestRecoverWarnsWithoutComments (#51): on a cluster whose accounting
// keeps no job comments, recover says that chains whose jobs have all
// ended cannot be found (where before it found none without a word); on
// one that keeps them it says nothing of it.
func TestRecoverWarnsWithoutComments(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "1", "--policy", "reactive")
	// The one segment runs its 55 minutes: the chain's only job has ended.
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "8"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	if cj := e.statusJSON(t, id); cj.State != string(provisioner.ChainDone) {
		t.Fatalf("chain %s: %s, want done", id, cj.State)
	}
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run(t, "recover", "--dry-run")
	if code != 0 || !strings.Contains(out, id) || strings.Contains(stderr, "job_comment") {
		t.Errorf("recover --dry-run, comments kept: exit %d\n%s%s", code, out, stderr)
	}
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return commentless{simBackend{e.s}}, nil }
	out, stderr, code = e.run(t, "recover", "--dry-run")
	if code != 0 || strings.Contains(out, id) || !strings.Contains(stderr, "AccountingStoreFlags lacks job_comment") ||
		!strings.Contains(stderr, "never one whose jobs have all ended") {
		t.Errorf("recover --dry-run, no comments kept: exit %d\n%s%s", code, out, stderr)
	}
}
