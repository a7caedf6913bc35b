package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
)

// End-to-end tests of the chain commands on the real loopback Slurm
// (scripts/slurm-up.sh): the mirage binary is built once and run as a
// user would run it. Slurm 22.05 kills a job 60–95 s after its limit, so
// a 1-minute segment lasts about two minutes; the long tests run in
// parallel to keep the suite's wall time near 7 minutes.

var (
	e2eBinOnce sync.Once
	e2eBin     string
	e2eBinErr  error
)

// mirageBinary builds cmd/mirage once for the e2e tests.
func mirageBinary(t *testing.T) string {
	t.Helper()
	e2eBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mirage-e2e-bin-")
		if err != nil {
			e2eBinErr = err
			return
		}
		e2eBin = filepath.Join(dir, "mirage")
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		cmd := exec.Command(goTool, "build", "-tags", "libsqlite3", "-o", e2eBin, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			e2eBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if e2eBinErr != nil {
		t.Fatal(e2eBinErr)
	}
	return e2eBin
}

// e2eEnv is one test's working directory, state directory and Slurm.
type e2eEnv struct {
	bin, work, state, conf string
}

func newE2E(t *testing.T) *e2eEnv {
	t.Helper()
	conf := testenv.SlurmConf(t)
	work := t.TempDir()
	if err := os.Chmod(work, 0o755); err != nil { // slurmd writes job output here
		t.Fatal(err)
	}
	return &e2eEnv{bin: mirageBinary(t), work: work, state: filepath.Join(work, "state"), conf: conf}
}

func (e *e2eEnv) command(env []string, args ...string) *exec.Cmd {
	args = append(args, "--state", e.state, "--slurm-conf", e.conf)
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.work
	cmd.Env = append(append(os.Environ(), "SLURM_CONF="+e.conf), env...)
	return cmd
}

// run runs mirage to completion and returns stdout, stderr and the exit code.
func (e *e2eEnv) run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := e.command(env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// script writes a batch script (1-minute limit, partition debug).
func (e *e2eEnv) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(e.work, name+".sbatch")
	s := "#!/bin/bash\n#SBATCH -t 1\n#SBATCH -p debug\n#SBATCH -J " + name + "\n#SBATCH -o " + e.work + "/%x-%j.out\n" +
		"echo \"chain=$MIRAGE_CHAIN segment=$MIRAGE_SEGMENT prev=$MIRAGE_PREV_JOB\"\n" + body + "\n"
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *e2eEnv) status(t *testing.T, id string) chainJSON {
	t.Helper()
	out, stderr, code := e.run(t, nil, "status", id, "--json")
	if code != 0 {
		t.Fatalf("status %s: exit %d: %s", id, code, stderr)
	}
	var cj chainJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	return cj
}

// sacctTagged lists, by tag, the jobs Slurm accounting holds for a chain.
func sacctTagged(t *testing.T, conf, chain string, since time.Time) map[provisioner.Tag][]string {
	t.Helper()
	cmd := exec.Command("sacct", "-X", "-n", "-P", "-S", since.UTC().Format("2006-01-02T15:04:05"), "-o", "JobID,Comment")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sacct: %v", err)
	}
	res := map[provisioner.Tag][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, comment, _ := strings.Cut(line, "|")
		if tag, ok := provisioner.ParseTag(comment); ok && tag.Chain == chain {
			res[tag] = append(res[tag], id)
		}
	}
	return res
}

// waitDone polls the chain until it leaves the active state.
func (e *e2eEnv) waitDone(t *testing.T, id string, timeout time.Duration, during func()) chainJSON {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if during != nil {
			during()
		}
		cj := e.status(t, id)
		if cj.State != string(provisioner.ChainActive) {
			return cj
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain %s still active after %s: %+v", id, timeout, cj)
		}
		if during == nil {
			time.Sleep(3 * time.Second)
		}
	}
}

// TestE2EChainOnSlurm: a 3-segment chain with 1-minute limits completes
// under `mirage daemon --interval`, every segment tagged, each segment
// ended by TIMEOUT, the interruption between segments recorded and equal
// to what Slurm accounting says.
func TestE2EChainOnSlurm(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := e.script(t, "mirage-e2e-main", "sleep 600")
	out, stderr, code := e.run(t, nil, "submit", script, "--segments", "3", "--policy", "reactive")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s%s", code, out, stderr)
	}
	id := chainIDRe.FindString(out)
	daemon := e.command(nil, "daemon", "--interval", "3s")
	var dout bytes.Buffer
	daemon.Stdout, daemon.Stderr = &dout, &dout
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		if t.Failed() {
			t.Logf("daemon output:\n%s", dout.String())
		}
	}()
	cj := e.waitDone(t, id, 9*time.Minute, nil)
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 3 {
		t.Fatalf("chain %s (%s) with %d segments", cj.State, cj.Reason, len(cj.SegmentList))
	}
	tags := sacctTagged(t, e.conf, id, start)
	for i, s := range cj.SegmentList {
		if s.Index != i || s.Attempt != 0 || s.State != string(provisioner.StateTimeout) {
			t.Errorf("segment %d: %+v", i, s)
		}
		if jobs := tags[provisioner.Tag{Chain: id, Segment: i}]; len(jobs) != 1 || jobs[0] != s.JobID {
			t.Errorf("segment %d: accounting holds %v for its tag, the state %s", i, jobs, s.JobID)
		}
		b, err := os.ReadFile(filepath.Join(e.work, fmt.Sprintf("mirage-e2e-main-%s.out", s.JobID)))
		prev := ""
		if i > 0 {
			prev = cj.SegmentList[i-1].JobID
		}
		if want := fmt.Sprintf("chain=%s segment=%d prev=%s\n", id, i, prev); err != nil || !strings.HasPrefix(string(b), want) {
			t.Errorf("segment %d output %q (%v), want it to start with %q", i, b, err, want)
		}
		if i > 0 {
			// reactive: the successor is submitted after the end is seen, so it starts after it.
			gap := s.Start.Sub(*cj.SegmentList[i-1].End)
			if s.GapSec == nil || *s.GapSec != gap.Seconds() || gap < 0 || gap > 30*time.Second {
				t.Errorf("segment %d: gap %v recorded %v; want the recorded gap equal to start − predecessor end, in [0, 30 s]", i, gap, s.GapSec)
			}
		}
	}
	out, _, _ = e.run(t, nil, "log", id, "--json", "--events")
	var lg struct {
		Events []eventJSON `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &lg); err != nil {
		t.Fatal(err)
	}
	var gaps []float64
	for _, ev := range lg.Events {
		if ev.Kind == string(provisioner.EventGap) {
			gaps = append(gaps, ev.Value)
		}
	}
	if len(gaps) != 2 || gaps[0] != *cj.SegmentList[1].GapSec || gaps[1] != *cj.SegmentList[2].GapSec {
		t.Errorf("gap events %v", gaps)
	}
}

// TestE2ECrashes: the daemon is killed at least 20 times while a 3-segment
// chain runs — SIGKILL at random instants and exits at the named fault
// points, including between sbatch and the commit (also in mirage submit
// itself) — and restarted each time. The chain must complete with exactly
// one job per segment in Slurm accounting and no segment lost.
func TestE2ECrashes(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Now().Add(-time.Minute)
	// Each segment works 30 s and exits 0: with --segments 3 it continues.
	script := e.script(t, "mirage-e2e-crash", "sleep 30")
	_, stderr, code := e.run(t, []string{"MIRAGE_TEST_CRASH_AT=after-submit"}, "submit", script, "--segments", "3", "--policy", "reactive")
	if code != crashExitCode || !strings.Contains(stderr, "point=after-submit") {
		t.Fatalf("submit with a crash after sbatch: exit %d: %s", code, stderr)
	}
	out, _, _ := e.run(t, nil, "status", "--json")
	var all []chainJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 || len(all[0].SegmentList) != 0 {
		t.Fatalf("after the crash the chain is registered without segments: %v %s", err, out)
	}
	id := all[0].ID
	kills := 1 // the submit above
	named := map[string]int{"after-submit": 1}
	points := []string{"after-lock", provisioner.FaultAfterBookkeeping, provisioner.FaultBeforeSubmit, provisioner.FaultAfterSubmit, provisioner.FaultAfterCommit}
	runOnce := func() {
		var env []string
		mode := "sigkill"
		if rng.IntN(2) == 0 {
			mode = points[rng.IntN(len(points))]
			env = append(env, "MIRAGE_TEST_CRASH_AT="+mode)
		}
		cmd := e.command(env, "daemon", "--interval", "1s")
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		limit := time.Duration(50+rng.IntN(4000)) * time.Millisecond // random kill instant
		if mode != "sigkill" {
			limit = 40 * time.Second // let the named point be reached
		}
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != crashExitCode {
				t.Fatalf("daemon ended without being killed (%v):\n%s", err, errb.String())
			}
			kills++
			named[mode]++
		case <-time.After(limit):
			_ = cmd.Process.Kill()
			<-done
			kills++
		}
	}
	cj := e.waitDone(t, id, 6*time.Minute, runOnce)
	for kills < 20 { // the chain finished early: keep killing idle daemons to reach the count
		runOnce()
	}
	t.Logf("%d kills; at named points: %v", kills, named)
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 3 {
		t.Fatalf("chain %s (%s), segments %+v", cj.State, cj.Reason, cj.SegmentList)
	}
	tags := sacctTagged(t, e.conf, id, start)
	if len(tags) != 3 {
		t.Errorf("accounting holds %d tags for the chain, want 3: %v", len(tags), tags)
	}
	for i, s := range cj.SegmentList {
		jobs := tags[provisioner.Tag{Chain: id, Segment: i}]
		if s.Attempt != 0 || s.State != string(provisioner.StateCompleted) || len(jobs) != 1 || jobs[0] != s.JobID {
			t.Errorf("segment %d: %+v; accounting %v (want exactly one job, the stored one)", i, s, jobs)
		}
	}
	out, _, _ = e.run(t, nil, "log", id, "--json")
	if !strings.Contains(out, `"action": "adopt"`) {
		t.Errorf("no adoption recorded after the crash between sbatch and commit:\n%s", out)
	}
}

// TestE2ETwoDaemons: two `mirage daemon --once` started together; the one
// that takes the lock holds it 2 s (test pause): exactly one acts.
func TestE2ETwoDaemons(t *testing.T) {
	e := newE2E(t)
	if _, stderr, code := e.run(t, nil, "status"); code != 0 { // create the database
		t.Fatal(stderr)
	}
	outs := make([]bytes.Buffer, 2)
	cmds := make([]*exec.Cmd, 2)
	for i := range cmds {
		cmds[i] = e.command([]string{"MIRAGE_TEST_PAUSE_AT=after-lock:2s"}, "daemon", "--once")
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	acted, held := 0, 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("daemon %d: %v\n%s", i, err, outs[i].String())
		}
		switch s := outs[i].String(); {
		case strings.Contains(s, " cycle: "):
			acted++
		case strings.Contains(s, "another mirage daemon holds the lock"):
			held++
		}
	}
	if acted != 1 || held != 1 {
		t.Errorf("acted %d, refused %d; want 1 and 1:\n%s\n---\n%s", acted, held, outs[0].String(), outs[1].String())
	}
}

// TestE2EBadInput: each bad input gives a clear message and a non-zero
// exit, and what is stored survives.
func TestE2EBadInput(t *testing.T) {
	e := newE2E(t)
	ok := e.script(t, "mirage-e2e-bad", "sleep 600")
	out, stderr, code := e.run(t, nil, "submit", ok, "--until-done")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	keep := chainIDRe.FindString(out)
	defer e.run(t, nil, "cancel", keep)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing script", []string{"submit", filepath.Join(e.work, "nope.sbatch")}, exitBadInput, "no such file or directory"},
		{"unknown partition", []string{"submit", ok, "--", "-p", "nosuchpartition"}, exitRejected, "invalid partition"},
		{"limit over the partition's", []string{"submit", ok, "--", "-t", "10"}, exitRejected, "time limit"},
		{"unknown chain (status)", []string{"status", "c-19990101-000000"}, exitBadInput, "chain not found"},
		{"unknown chain (cancel)", []string{"cancel", "c-19990101-000000"}, exitBadInput, "chain not found"},
		{"unknown chain (log)", []string{"log", "c-19990101-000000"}, exitBadInput, "chain not found"},
	}
	for _, c := range cases {
		_, stderr, code := e.run(t, nil, c.args...)
		if code != c.code || !strings.Contains(strings.ToLower(stderr), strings.ToLower(c.msg)) {
			t.Errorf("%s: exit %d, %q; want exit %d mentioning %q", c.name, code, stderr, c.code, c.msg)
		}
	}
	// Locked database: another process holds a write transaction.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(e.state, state.DBName)+"?_busy_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = e.run(t, nil, "cancel", keep, "--busy-timeout", "300ms")
	_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	db.Close()
	if code != exitUnavailable || !strings.Contains(stderr, "locked") {
		t.Errorf("locked database: exit %d, %q", code, stderr)
	}
	if cj := e.status(t, keep); cj.State != string(provisioner.ChainActive) || len(cj.SegmentList) != 1 {
		t.Errorf("the chain changed under a locked database: %+v", cj)
	}
	// Corrupt database: refused, untouched.
	bad := &e2eEnv{bin: e.bin, work: e.work, state: filepath.Join(e.work, "corrupt"), conf: e.conf}
	if err := os.MkdirAll(bad.state, 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := []byte("SQLite? no: notes\n")
	if err := os.WriteFile(filepath.Join(bad.state, state.DBName), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = bad.run(t, nil, "daemon", "--once")
	if code != exitUnavailable || !strings.Contains(stderr, "corrupt") {
		t.Errorf("corrupt database: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(bad.state, state.DBName)); !bytes.Equal(b, garbage) {
		t.Error("corrupt database overwritten")
	}
}
