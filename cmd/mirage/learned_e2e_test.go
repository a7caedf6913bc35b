package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// readmeCron is the command of the README's crontab line (what follows its
// five time fields), as a user would paste it into crontab -e.
func readmeCron(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "*/10 * * * * ") {
			continue
		}
		return strings.TrimPrefix(line, "*/10 * * * * ")
	}
	t.Fatal("README.md has no crontab line (*/10 * * * * …)")
	return ""
}

// readmeCronLoop runs the README's crontab command every period, as cron
// would: /bin/sh -c, in /, with cron's environment (HOME, LOGNAME, SHELL,
// PATH=/usr/bin:/bin) and SLURM_CONF standing in for /etc/slurm/slurm.conf.
// Where this Slurm's commands are not in /usr/bin (the newer releases'
// wrappers) the line gets --slurm-bin, since cron's PATH would find another
// Slurm. The returned function stops the loop and returns what the runs
// printed.
func (e *e2eEnv) readmeCronLoop(t *testing.T, period time.Duration) func() string {
	t.Helper()
	line := readmeCron(t)
	if sbatch, err := exec.LookPath("sbatch"); err != nil {
		t.Fatal(err)
	} else if dir := filepath.Dir(sbatch); dir != "/usr/bin" {
		line = strings.Replace(line, " daemon --once", " daemon --once --slurm-bin "+dir, 1)
		t.Logf("sbatch is in %s, not cron's PATH: the crontab line runs with --slurm-bin", dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string)
	go func() {
		var out bytes.Buffer
		for ctx.Err() == nil {
			cmd := exec.Command("/bin/sh", "-c", line)
			cmd.Dir = "/"
			cmd.Env = []string{"HOME=" + e.work, "LOGNAME=root", "SHELL=/bin/sh", "PATH=/usr/bin:/bin", "SLURM_CONF=" + e.conf}
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(&out, "cron run: %v\n", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(period):
			}
		}
		done <- out.String()
	}()
	var once sync.Once
	var out string
	return func() string {
		once.Do(func() { cancel(); out = <-done })
		return out
	}
}

// TestE2ELearnedPoliciesUnderCron is the acceptance of learned policies at
// work (#25): models trained by mirage train on a synthetic LS6-like trace,
// chains submitted with --policy xgb, xgb-online, rf, dqn and pg and --models, and a
// daemon run only by the README's crontab line, as written (in /, cron's
// PATH, no flags). Every chain completes, every decision its model made
// names the model and its version (once the predecessor has ended, the
// common rules decide), and the xgb chain's successor is submitted before
// its predecessor ends, runs in the directory of submit and hands off
// with mirage handoff.
func TestE2ELearnedPoliciesUnderCron(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	fx := trainedFixture(t)
	// The crontab line finds mirage where go install puts it and the state
	// in its default place under HOME.
	e.state = filepath.Join(e.work, ".local", "state", "mirage")
	if err := os.MkdirAll(filepath.Join(e.work, "go", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.bin, filepath.Join(e.work, "go", "bin", "mirage")); err != nil {
		t.Fatal(err)
	}
	handoff := e.script(t, "mirage-e2e-xgb", `pwd > pwd-$MIRAGE_SEGMENT
trap 'echo "checkpoint of segment $MIRAGE_SEGMENT" > ckpt-$MIRAGE_SEGMENT; exit 0' USR1
if [ "$MIRAGE_SEGMENT" = 1 ]; then
  mirage handoff --signal USR1 --grace 60s --poll 1s > handoff-1.txt 2>&1 || exit 3
  exit 0
fi
sleep 600 &
wait $!`)
	ids := map[string]string{"xgb": e.submit(t, nil, handoff, "--segments", "2", "--policy", "xgb", "--models", fx.dir)}
	for _, p := range []string{"xgb-online", "rf", "dqn", "pg"} {
		ids[p] = e.submit(t, nil, e.script(t, "mirage-e2e-"+p, "sleep 20"), "--segments", "2", "--policy", p, "--models", fx.dir)
	}
	stop := e.readmeCronLoop(t, 2*time.Second)
	defer func() {
		cronOut := stop()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(e.work, "mirage-cron.log"))
			t.Logf("cron runs:\n%s\nmirage-cron.log (tail):\n%s", cronOut, tail(string(log), 40))
		}
	}()
	done := map[string]chainops.ChainJSON{}
	for p, id := range ids {
		done[p] = e.waitDone(t, id, 5*time.Minute, nil)
	}
	stop()
	for p, id := range ids {
		cj := done[p]
		if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
			t.Errorf("%s chain %s: %s (%s) with %d segments, want done with 2", p, id, cj.State, cj.Reason, len(cj.SegmentList))
			continue
		}
		meta, err := models.ReadMeta(filepath.Join(fx.dir, p))
		if err != nil {
			t.Fatal(err)
		}
		label := p + "@" + meta.Created.UTC().Format(time.RFC3339) + ": "
		named := 0
		for _, d := range e.log(t, id).Decisions {
			if d.Action != string(provisioner.Wait) && d.Action != string(provisioner.SubmitNow) {
				continue
			}
			switch {
			case d.Policy != p:
				t.Errorf("%s chain: decision %+v by another policy", p, d)
			case strings.HasPrefix(d.Reason, label):
				named++
			case !commonRule(d.Reason):
				t.Errorf("%s chain: decision %+v does not name the model %q", p, d, label)
			}
		}
		if named == 0 {
			t.Errorf("%s chain: no decision of the model", p)
		}
	}
	// The xgb chain: segment 1 ran in the directory of submit and handed off.
	s0, s1 := done["xgb"].SegmentList[0], done["xgb"].SegmentList[1]
	if b, err := os.ReadFile(filepath.Join(e.work, "pwd-1")); err != nil || strings.TrimSpace(string(b)) != e.work {
		t.Errorf("segment 1 ran in %q (%v), want the directory of submit %s", b, err, e.work)
	}
	b, _ := os.ReadFile(filepath.Join(e.work, "handoff-1.txt"))
	if !strings.Contains(string(b), "hand-off complete") {
		t.Errorf("handoff output:\n%s", b)
	}
	if s1.Submit == nil || s0.End == nil {
		t.Fatalf("segments without times: %+v %+v", s0, s1)
	}
	t.Logf("xgb: successor submitted %s before the predecessor ended; gap %v s", s0.End.Sub(*s1.Submit), deref(s1.GapSec))
	if !s1.Submit.Before(*s0.End) {
		t.Errorf("xgb: successor submitted at %s, after its predecessor ended at %s: want it early", s1.Submit, s0.End)
	}
}

// commonRule reports whether a decision's reason is one of the rules every
// policy shares, decided before the policy is asked: the predecessor still
// pending ("predecessor job J still pending: …"), ended ("predecessor
// segment N (job J) ended …"), its state unknown, or a submission whose
// outcome is not known yet. A model that could not
// be loaded would show instead as "NAME unavailable (…), lead decides: …".
func commonRule(reason string) bool {
	return strings.HasPrefix(reason, "predecessor segment ") || strings.HasPrefix(reason, "predecessor job ") ||
		strings.HasPrefix(reason, "state of predecessor job ") || strings.HasPrefix(reason, "the submission of segment ")
}

func deref(p *float64) any {
	if p == nil {
		return "-"
	}
	return *p
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
