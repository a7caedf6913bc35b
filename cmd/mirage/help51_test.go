package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestSubmitHelpNamesTheRealDefault (#51): submit --help showed
// (default "lead") while a chain submitted without --policy gets pin or
// the default learned policy's pinned form: the help names those and no
// other default.
func TestSubmitHelpNamesTheRealDefault(t *testing.T) {
	t.Parallel()
	out, _, code := runMirage(t, "submit", "--help")
	if code != 0 {
		t.Fatalf("submit --help: exit %d", code)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "--policy string") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no --policy flag in submit --help:\n%s", out)
	}
	if strings.Contains(line, `(default "`) {
		t.Errorf("--policy help claims a flag default: %s", line)
	}
	for _, want := range []string{models.DefaultPinned, provisioner.PolicyPin} {
		if !strings.Contains(line, want) {
			t.Errorf("--policy help does not name %s: %s", want, line)
		}
	}
}

// TestDaemonHelpCronLine (#51): the crontab line of daemon --help runs
// mirage by its full path (cron's PATH is /usr/bin:/bin) and names the
// slurm.conf (cron's environment has no SLURM_CONF), with flags the
// daemon knows.
func TestDaemonHelpCronLine(t *testing.T) {
	t.Parallel()
	cmd := newDaemonCmd(testFactory(nil), nil)
	found := false
	for _, l := range strings.Split(cmd.Example, "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] == "#" || !strings.HasPrefix(f[0], "*/") { // a crontab line: five time fields, then the command
			continue
		}
		found = true
		bin := f[5]
		if !strings.HasSuffix(bin, "/mirage") || !(filepath.IsAbs(bin) || strings.HasPrefix(bin, "$HOME/")) {
			t.Errorf("cron line runs %q: want mirage's full path", bin)
		}
		args, _, _ := strings.Cut(strings.Join(f[6:], " "), ">")
		if !strings.Contains(args, "--slurm-conf ") {
			t.Errorf("cron line %q gives no --slurm-conf", l)
		}
		words := strings.Fields(args)
		if len(words) == 0 || words[0] != "daemon" {
			t.Fatalf("cron line %q does not run mirage daemon", l)
		}
		d := newDaemonCmd(testFactory(nil), nil)
		if err := d.ParseFlags(words[1:]); err != nil {
			t.Errorf("cron line %q: %v", l, err)
		}
	}
	if !found {
		t.Errorf("daemon --help shows no crontab line:\n%s", cmd.Example)
	}
}

// TestSubmitRefusesTheOracle (#51): submit --policy oracle says why no
// chain can use it, and an unknown policy's list of known ones does not
// offer the oracle to a chain.
func TestSubmitRefusesTheOracle(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	_, stderr, code := e.run(t, "submit", script, "--policy", "oracle")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "no chain can use it") {
		t.Errorf("submit --policy oracle: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = e.run(t, "submit", script, "--policy", "psychic")
	_, after, _ := strings.Cut(stderr, "known: [")
	known, _, _ := strings.Cut(after, "]")
	if code != cmdutil.ExitUsage || known == "" || strings.Contains(" "+known+" ", " oracle ") || !strings.Contains(known, "xgb-online-pin") {
		t.Errorf("submit --policy psychic: exit %d, known policies %q (stderr %q): want the chain policies without the oracle", code, known, stderr)
	}
}
