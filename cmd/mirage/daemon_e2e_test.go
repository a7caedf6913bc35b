package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// End-to-end tests of the chain commands on the real loopback Slurm
// (scripts/slurm-up.sh): the mirage binary is built once and run as a user
// would run it, against the real slurmctld, slurmd and slurmdbd. Slurm 22.05
// kills a job 60–95 s after its limit, so a segment that uses its whole
// 1-minute limit lasts about two minutes; every test runs in parallel and
// the other segments exit 0 on their own, which keeps the whole file near
// four minutes. Other users' jobs may share the cluster: the tests look
// only at jobs carrying their own chains' tags.

// TestMain lets the e2e tests run side by side: they spend their minutes
// waiting for Slurm, not on the CPU, so unless -test.parallel was given
// they may all run at once (the default, GOMAXPROCS, is 2 on the test
// machine, which would run them two by two for about three times as long).
// Every test calls t.Parallel.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit && os.Getenv("MIRAGE_TEST_SLURM_CONF") != "" {
		_ = flag.Set("test.parallel", "8")
	}
	code := m.Run()
	if e2eBin != "" {
		_ = os.RemoveAll(filepath.Dir(e2eBin)) // the binary built for the e2e tests
	}
	if trainTmp != "" {
		_ = os.RemoveAll(trainTmp) // the models trained once for the train tests
	}
	os.Exit(code)
}

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
		if err := os.Chmod(dir, 0o755); err != nil { // job scripts run the binary (mirage handoff)
			e2eBinErr = err
			return
		}
		e2eBin = filepath.Join(dir, "mirage")
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		tags := "libsqlite3"
		if xgb.CanTrain { // the README commands test trains xgb models with it
			tags += " xgboost"
		}
		cmd := exec.Command(goTool, "build", "-tags", tags, "-o", e2eBin, ".")
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

// slurmCommands take --slurm-conf (the others read the state database only).
var slurmCommands = []string{"submit", "daemon", "cancel", "recover", "handoff"}

// command builds a mirage invocation: --state (and --slurm-conf for the
// commands that talk to Slurm, unless args set it) go before a "--"
// separator, if any.
func (e *e2eEnv) command(env []string, args ...string) *exec.Cmd {
	extra := []string{"--state", e.state}
	if len(args) > 0 && slices.Contains(slurmCommands, args[0]) && !slices.Contains(args, "--slurm-conf") {
		extra = append(extra, "--slurm-conf", e.conf)
	}
	full := slices.Clone(args)
	if i := slices.Index(full, "--"); i >= 0 {
		full = slices.Insert(full, i, extra...)
	} else {
		full = append(full, extra...)
	}
	cmd := exec.Command(e.bin, full...)
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

// submit registers a chain and returns its id.
func (e *e2eEnv) submit(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, stderr, code := e.run(t, env, append([]string{"submit"}, args...)...)
	id := chainIDRe.FindString(out)
	if code != 0 || id == "" {
		t.Fatalf("submit %v: exit %d: %s%s", args, code, out, stderr)
	}
	return id
}

// script writes a batch script (1-minute limit, partition debug, the job
// name given, output beside it) whose body runs after a line printing the
// MIRAGE_* variables.
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

// daemon starts `mirage daemon` with the given flags; the returned
// function stops it (SIGTERM) and, if the test failed, logs its output.
func (e *e2eEnv) daemon(t *testing.T, env []string, args ...string) func() {
	t.Helper()
	return e.start(t, e.command(env, append([]string{"daemon"}, args...)...))
}

// start starts a daemon command; the returned function stops it (SIGTERM)
// and, if the test failed, logs its output.
func (e *e2eEnv) start(t *testing.T, cmd *exec.Cmd) func() {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("daemon output:\n%s", out.String())
		}
	}
}

// cronDaemon starts `mirage daemon` as cron would: in /, with HOME,
// PATH=/usr/bin:/bin and SLURM_CONF only; the Slurm commands' directory is
// given with --slurm-bin, as a crontab line for a site whose Slurm is
// elsewhere must (docs/guide/chains-and-daemon.md).
func (e *e2eEnv) cronDaemon(t *testing.T, args ...string) func() {
	t.Helper()
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.command(nil, append([]string{"daemon", "--slurm-bin", filepath.Dir(sbatch)}, args...)...)
	cmd.Env = []string{"HOME=" + e.work, "PATH=/usr/bin:/bin", "SLURM_CONF=" + e.conf}
	cmd.Dir = "/"
	return e.start(t, cmd)
}

func (e *e2eEnv) status(t *testing.T, id string) chainops.ChainJSON {
	t.Helper()
	out, stderr, code := e.run(t, nil, "status", id, "--json")
	if code != 0 {
		t.Fatalf("status %s: exit %d: %s", id, code, stderr)
	}
	var cj chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	return cj
}

// chainLog is `mirage log CHAIN --json --events`.
type chainLog struct {
	Decisions []chainops.DecisionJSON `json:"decisions"`
	Events    []chainops.EventJSON    `json:"events"`
}

func (e *e2eEnv) log(t *testing.T, id string) chainLog {
	t.Helper()
	out, stderr, code := e.run(t, nil, "log", id, "--json", "--events")
	var lg chainLog
	if err := json.Unmarshal([]byte(out), &lg); err != nil || code != 0 {
		t.Fatalf("log %s: exit %d, %v: %s%s", id, code, err, out, stderr)
	}
	return lg
}

// taggedJob is a job of one of the test's chains as Slurm reports it.
type taggedJob struct {
	ID, State, QOS string
	Comment        string // sacct's only
}

// sacctTagged lists, by tag, the jobs Slurm accounting holds for a chain
// (sacct -X: allocations only), in job id order.
func sacctTagged(t *testing.T, conf, chain string, since time.Time) map[provisioner.Tag][]taggedJob {
	t.Helper()
	cmd := exec.Command("sacct", "-X", "-n", "-P", "-a", "-S", since.UTC().Format("2006-01-02T15:04:05"), "-o", "JobID,State,QOS,Comment")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sacct: %v", err)
	}
	res := map[provisioner.Tag][]taggedJob{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) < 4 {
			continue
		}
		if tag, ok := provisioner.ParseTag(f[3]); ok && tag.Chain == chain {
			res[tag] = append(res[tag], taggedJob{ID: f[0], State: strings.Fields(f[1] + " ")[0], QOS: f[2], Comment: f[3]})
		}
	}
	return res
}

// squeueTagged lists, by tag, the jobs slurmctld holds for a chain
// (squeue -o: id, state, QOS, comment).
func squeueTagged(t *testing.T, conf, chain string) map[provisioner.Tag][]taggedJob {
	t.Helper()
	cmd := exec.Command("squeue", "-h", "-a", "-t", "all", "-o", "%i|%T|%q|%k")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	res := map[provisioner.Tag][]taggedJob{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) < 4 {
			continue
		}
		if tag, ok := provisioner.ParseTag(f[3]); ok && tag.Chain == chain {
			res[tag] = append(res[tag], taggedJob{ID: f[0], State: f[1], QOS: f[2]})
		}
	}
	return res
}

// waitDone polls the chain until it leaves the active state, calling
// during (if any) between polls.
func (e *e2eEnv) waitDone(t *testing.T, id string, timeout time.Duration, during func()) chainops.ChainJSON {
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
			time.Sleep(2 * time.Second)
		}
	}
}

// TestE2EChainOnSlurm: a 3-segment chain with 1-minute limits completes
// under `mirage daemon --interval`: segment 0 uses its whole limit and ends
// by TIMEOUT, segments 1 and 2 work 20 s and exit 0 (a chain of N segments
// continues). Every segment is tagged in squeue while it is queued or runs
// and in sacct afterwards, each tag has exactly one job, the job sees its
// MIRAGE_* variables, and the interruption between segments is recorded
// and equals start − predecessor end from Slurm's own times.
func TestE2EChainOnSlurm(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := e.script(t, "mirage-e2e-main", `if [ "$MIRAGE_SEGMENT" = 0 ]; then sleep 600; else sleep 20; fi`)
	id := e.submit(t, nil, script, "--segments", "3", "--policy", "reactive")
	stop := e.daemon(t, nil, "--interval", "3s")
	defer stop()
	seenLive := map[provisioner.Tag]string{} // tag → job id seen in squeue
	cj := e.waitDone(t, id, 7*time.Minute, func() {
		for tag, jobs := range squeueTagged(t, e.conf, id) {
			for _, j := range jobs {
				if j.State == "PENDING" || j.State == "RUNNING" {
					seenLive[tag] = j.ID
				}
			}
		}
		time.Sleep(2 * time.Second)
	})
	stop()
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 3 {
		t.Fatalf("chain %s (%s) with %d segments: %+v", cj.State, cj.Reason, len(cj.SegmentList), cj.SegmentList)
	}
	tags := sacctTagged(t, e.conf, id, start)
	if len(tags) != 3 {
		t.Errorf("accounting holds %d tags for the chain, want 3: %v", len(tags), tags)
	}
	wantState := []provisioner.JobState{provisioner.StateTimeout, provisioner.StateCompleted, provisioner.StateCompleted}
	for i, s := range cj.SegmentList {
		tag := provisioner.Tag{Chain: id, Segment: i}
		// A segment that reaches its limit is sent SIGTERM, its batch shell
		// and the shell's sleep alike: when the sleep dies first, the shell
		// exits 143 (128 + SIGTERM) instead of dying of the signal itself
		// (exit 0, signal 15). Which comes first is the kernel's choice.
		exitOK := s.ExitCode == 0 || wantState[i] == provisioner.StateTimeout && s.ExitCode == 128+15
		if s.Index != i || s.Attempt != 0 || s.State != string(wantState[i]) || !exitOK {
			t.Errorf("segment %d: %+v, want %s exit 0 (or 143 for a timeout)", i, s, wantState[i])
		}
		if jobs := tags[tag]; len(jobs) != 1 || jobs[0].ID != s.JobID || jobs[0].State != string(wantState[i]) {
			t.Errorf("segment %d: accounting holds %v for tag %s, the state database job %s", i, jobs, tag, s.JobID)
		}
		if seenLive[tag] != s.JobID {
			t.Errorf("segment %d: squeue showed job %q with tag %s while it was queued or ran, want %s", i, seenLive[tag], tag, s.JobID)
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
			// reactive: the successor is submitted once the daemon (every
			// 3 s) sees the end, so it starts after it, within seconds on
			// an idle cluster (30 s allows for other users' jobs).
			gap := s.Start.Sub(*cj.SegmentList[i-1].End)
			if s.GapSec == nil || *s.GapSec != gap.Seconds() || gap < 0 || gap > 30*time.Second {
				t.Errorf("segment %d: gap %v, recorded %v; want the recorded gap equal to start − predecessor end, in [0, 30 s]", i, gap, s.GapSec)
			}
		}
	}
	lg := e.log(t, id)
	var gaps []float64
	for _, ev := range lg.Events {
		if ev.Kind == string(provisioner.EventGap) {
			gaps = append(gaps, ev.Value)
		}
	}
	if len(gaps) != 2 || gaps[0] != *cj.SegmentList[1].GapSec || gaps[1] != *cj.SegmentList[2].GapSec {
		t.Errorf("gap events %v", gaps)
	}
	// The daemon decided every 3 s (plus the cycle's own time, a few
	// seconds at most) while segment 0 used its whole 1-minute limit and
	// segment 1 worked 20 s; consecutive waits for the same reason are one
	// entry each (a segment seen pending, then running, is two): first,
	// waits (at least 5 while segment 0 ran), submit, waits (at least 2),
	// submit, end (no successor is decided on while the last segment runs).
	var acts []string
	var counts []int
	decisions := 0
	for i, d := range lg.Decisions {
		n := max(d.Count, 1)
		decisions += n
		if d.Action == string(provisioner.Wait) && len(acts) > 0 && acts[len(acts)-1] == d.Action {
			if prev := lg.Decisions[i-1]; provisioner.SameReason(prev.Reason, d.Reason) {
				t.Errorf("waits %q and %q for the same reason are two entries", prev.Reason, d.Reason)
			}
			counts[len(counts)-1] += n
			continue
		}
		acts = append(acts, d.Action)
		counts = append(counts, n)
	}
	t.Logf("decision log: %d entries for %d decisions (runs of waits %v)", len(lg.Decisions), decisions, counts)
	if got := strings.Join(acts, " "); got != "first wait submit wait submit end" || counts[1] < 5 || counts[3] < 2 {
		t.Errorf("decision log %q, counts %v; want first wait submit wait submit end, with ≥ 5 and ≥ 2 waits coalesced", got, counts)
	}
}

// TestE2ECrashes: the daemon is killed while a 6-segment chain runs — at
// least 50 SIGKILLs at random instants (the acceptance of #50) and exits at
// the named fault points (after the lock, after the bookkeeping commit,
// after the intent commit before sbatch, between sbatch and the commit,
// after the commit), also `mirage submit` itself between sbatch and the
// commit — and restarted each time. The chain must complete with exactly
// one job per segment in Slurm accounting (never submitted twice) and no
// segment lost. The paths of #50 run in every cycle: each job's comment
// names the state directory that keeps the chain and the cluster, the
// view checks (implausible loss, incomplete history, keeper) run, and none
// may stop the chain by mistake (no decision refusing it).
func TestE2ECrashes(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Now().Add(-time.Minute)
	// Each segment works 25 s and exits 0: with --segments 10 the chain
	// continues (10 segments leave spare submissions for the named points,
	// and about 5 minutes for the random kills while the chain runs).
	const segments = 10
	const wantKills = 50 // random SIGKILLs, the named points apart
	script := e.script(t, "mirage-e2e-crash", "sleep 25")
	_, stderr, code := e.run(t, []string{"MIRAGE_TEST_CRASH_AT=after-submit"}, "submit", script, "--segments", strconv.Itoa(segments), "--policy", "reactive")
	if code != crashExitCode || !strings.Contains(stderr, "point=after-submit") {
		t.Fatalf("submit with a crash after sbatch: exit %d: %s", code, stderr)
	}
	out, _, _ := e.run(t, nil, "status", "--json")
	var all []chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 || len(all[0].SegmentList) != 1 ||
		all[0].SegmentList[0].State != string(provisioner.StateSubmitting) || all[0].SegmentList[0].JobID != "" {
		t.Fatalf("after the crash the chain is registered with the intent of segment 0 and no job id: %v %s", err, out)
	}
	id := all[0].ID
	kills := 1 // the submit above
	sigkills, whileActive := 0, 0
	active := true
	named := map[string]int{"after-submit (submit)": 1}
	// Runs alternate, a named point, then a SIGKILL at a random instant,
	// until each named point has come once, in this order (a daemon armed
	// for a submission point runs until the next submission: the end of
	// the running segment, or the new submission after an abandoned one);
	// then SIGKILLs alone.
	points := []string{provisioner.FaultAfterSubmit, provisioner.FaultBeforeSubmit, provisioner.FaultAfterCommit, provisioner.FaultAfterBookkeeping, "after-lock"}
	run := 0
	runOnce := func(pointsToo bool) {
		var env []string
		mode := "sigkill"
		if pointsToo && run%2 == 0 && run/2 < len(points) {
			mode = points[run/2]
			env = append(env, "MIRAGE_TEST_CRASH_AT="+mode)
		}
		run++
		cmd := e.command(env, "daemon", "--interval", "1s", "--submit-grace", "15s")
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		limit := time.Duration(50+rng.IntN(4000)) * time.Millisecond // random kill instant
		if mode != "sigkill" {
			limit = 60 * time.Second // let the named point be reached
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
			sigkills++
			if active {
				whileActive++
			}
		}
	}
	cj := e.waitDone(t, id, 12*time.Minute, func() { runOnce(true) })
	active = false
	for sigkills < wantKills { // the chain finished early: keep killing daemons to reach the count
		runOnce(false)
	}
	t.Logf("%d kills, %d of them SIGKILLs at random instants (%d while the chain ran); at named points: %v", kills, sigkills, whileActive, named)
	for _, p := range points {
		if named[p] == 0 {
			t.Errorf("no crash at %s", p)
		}
	}
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != segments {
		t.Fatalf("chain %s (%s), segments %+v", cj.State, cj.Reason, cj.SegmentList)
	}
	tags := sacctTagged(t, e.conf, id, start)
	if len(tags) != segments {
		t.Errorf("accounting holds %d tags for the chain, want %d: %v", len(tags), segments, tags)
	}
	// Every job names this state directory as the chain's keeper and the
	// loopback cluster (ClusterName=mirage in the slurm.conf that
	// scripts/slurm-up.sh writes).
	key, _, err := (&state.Location{Dir: e.state}).TagKey(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for tag, jobs := range tags {
		for _, j := range jobs {
			if c, ok := provisioner.ParseChainSpec(j.Comment); !ok || c.Keeper != key.Keeper || c.Cluster != "mirage" {
				t.Errorf("%s job %s: comment %q names keeper %q and cluster %q, want %s and mirage", tag, j.ID, j.Comment, c.Keeper, c.Cluster, key.Keeper)
			}
		}
	}
	for i, s := range cj.SegmentList {
		jobs := tags[provisioner.Tag{Chain: id, Segment: i}]
		if s.Attempt != 0 || s.State != string(provisioner.StateCompleted) || len(jobs) != 1 || jobs[0].ID != s.JobID {
			t.Errorf("segment %d: %+v; accounting %v (want exactly one job, the stored one)", i, s, jobs)
		}
	}
	adopted := false
	lg := e.log(t, id)
	for _, d := range lg.Decisions {
		adopted = adopted || d.Action == string(provisioner.ActAdopt) && d.Segment == 0
		if strings.Contains(d.Reason, "another state database") || strings.Contains(d.Reason, "registered on cluster") {
			t.Errorf("a decision refused the chain: %+v", d)
		}
	}
	if !adopted {
		t.Error("no adoption of segment 0 recorded after the crash between sbatch and commit")
	}
}

// TestE2ESubmitRace: mirage is SIGKILLed while its sbatch is in flight,
// and a new daemon reads squeue before that sbatch's job lands. sbatch is
// replaced (--slurm-bin) by a wrapper that marks its start and hands the
// real sbatch to a detached process that submits 4 s later — a request
// still on its way when mirage died. Three chains, each first submitted by
// a `mirage submit` killed mid-sbatch:
//
//   - late: the job lands 4 s after the kill; the daemon (grace 30 s)
//     waits for it and adopts it: one job;
//   - lost: the request never reaches Slurm; the daemon waits the grace
//     (10 s), abandons the submission and makes it again under the same
//     tag: one job;
//   - nograce: like late (the job lands 8 s after the kill), but with a
//     grace of 1 ms the daemon submits again at once: this is the race
//     (two jobs carry the tag), and the daemon cancels the late one as a
//     duplicate when it lands.
func TestE2ESubmitRace(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := e.script(t, "mirage-e2e-race", "sleep 15")
	realSbatch, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	type variant struct {
		name, grace string
		lands       bool
		delay       string // how long after mirage's death the request reaches Slurm
		env         *e2eEnv
		id          string
	}
	vs := []*variant{{name: "late", grace: "30s", lands: true, delay: "4"}, {name: "lost", grace: "10s", delay: "4"},
		{name: "nograce", grace: "1ms", lands: true, delay: "8"}}
	for _, v := range vs {
		// each chain has its own state (and daemon, with its own grace)
		v.env = &e2eEnv{bin: e.bin, work: e.work, state: filepath.Join(e.work, "state-"+v.name), conf: e.conf}
		bin := filepath.Join(e.work, "bin-"+v.name)
		if err := os.Mkdir(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		mark := filepath.Join(e.work, "sbatch-started-"+v.name)
		late := "exit 0"
		if v.lands {
			late = "exec " + realSbatch + ` "$@"`
		}
		// The detached subshell is not mirage's child, so it survives
		// mirage and the wrapper (killed with it); setsid keeps it out of
		// their process group.
		// The mark is made once the detached process exists.
		wrapper := "#!/bin/bash\nsetsid bash -c 'sleep " + v.delay + "; " + late + "' sbatch \"$@\" </dev/null >/dev/null 2>&1 &\ntouch " + mark + "\nsleep 60\n"
		if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"squeue", "sinfo", "sacct", "scancel", "scontrol"} {
			p, err := exec.LookPath(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p, filepath.Join(bin, c)); err != nil {
				t.Fatal(err)
			}
		}
		sub := v.env.command(nil, "submit", script, "--segments", "1", "--name", "mirage-e2e-race-"+v.name, "--slurm-bin", bin)
		if err := sub.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(mark); err == nil {
				break
			}
			if time.Now().After(deadline) {
				_ = sub.Process.Kill()
				t.Fatalf("%s: the sbatch wrapper never started", v.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = sub.Process.Kill() // mid-sbatch
		_ = sub.Wait()
		out, _, _ := v.env.run(t, nil, "status", "--json")
		var all []chainops.ChainJSON
		if err := json.Unmarshal([]byte(out), &all); err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if c.Name == "mirage-e2e-race-"+v.name {
				v.id = c.ID
				if len(c.SegmentList) != 1 || c.SegmentList[0].State != string(provisioner.StateSubmitting) {
					t.Fatalf("%s: after the kill: %+v, want segment 0 SUBMITTING", v.name, c.SegmentList)
				}
			}
		}
		if v.id == "" {
			t.Fatalf("%s: chain not registered: %s", v.name, out)
		}
		stop := v.env.daemon(t, nil, "--interval", "1s", "--submit-grace", v.grace)
		defer stop()
	}
	for _, v := range vs {
		cj := v.env.waitDone(t, v.id, 3*time.Minute, nil)
		if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 1 || cj.SegmentList[0].State != string(provisioner.StateCompleted) {
			t.Errorf("%s: chain %s (%s): %+v", v.name, cj.State, cj.Reason, cj.SegmentList)
			continue
		}
		stored := cj.SegmentList[0].JobID
		time.Sleep(5 * time.Second) // every wrapper's detached sbatch has run by now (at most 8 s after its start)
		jobs := sacctTagged(t, e.conf, v.id, start)[provisioner.Tag{Chain: v.id}]
		actions := map[string]int{}
		for _, d := range v.env.log(t, v.id).Decisions {
			actions[d.Action]++
		}
		switch v.name {
		case "late", "lost":
			if len(jobs) != 1 || jobs[0].ID != stored {
				t.Errorf("%s: accounting holds %v for segment 0, want exactly the stored job %s", v.name, jobs, stored)
			}
			want := map[string]int{"late": actions["adopt"], "lost": actions["abandon"]}[v.name]
			if want != 1 {
				t.Errorf("%s: decisions %v; want one %s", v.name, actions, map[string]string{"late": "adopt", "lost": "abandon"}[v.name])
			}
		case "nograce":
			// two jobs, the stored one completed, the late one cancelled as a duplicate
			if len(jobs) != 2 || actions["cancel"] != 1 {
				t.Errorf("nograce: accounting %v, decisions %v; want 2 jobs (the race) and one cancel", jobs, actions)
				break
			}
			for _, j := range jobs {
				if j.ID == stored && j.State != "COMPLETED" || j.ID != stored && j.State != "CANCELLED" {
					t.Errorf("nograce: job %s %s (stored %s): want the stored one COMPLETED, the duplicate CANCELLED", j.ID, j.State, stored)
				}
			}
		}
	}
}

// TestE2EHandoff: a 2-segment chain under the lead policy (its lead is a
// quarter of the 1-minute limit, 15 s: the successor is submitted once
// segment 0 has run 45 s and starts at once, so they overlap). Segment 1's
// script calls `mirage handoff`, which signals segment 0 (USR1: it has run
// half its limit by then) and waits for it; segment 0 traps USR1, writes a
// checkpoint marker and exits 0. Overlap turns into continuity: segment
// 0 ends COMPLETED (not TIMEOUT) within the grace, after segment 1
// started, and the overlap is recorded as a negative gap.
//
// The daemon runs as cron runs it: in /, with only HOME, PATH=/usr/bin:/bin
// and the Slurm configuration. The script uses relative paths and calls
// mirage by name: each segment runs where submit ran, with submit's PATH
// (mirage's own directory first).
func TestE2EHandoff(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	body := `trap 'echo "checkpoint of segment $MIRAGE_SEGMENT" > ckpt-$MIRAGE_SEGMENT; exit 0' USR1
pwd > pwd-$MIRAGE_SEGMENT
if [ "$MIRAGE_SEGMENT" = 1 ]; then
  mirage handoff --signal USR1 --grace 60s --poll 1s > handoff-1.txt 2>&1 || exit 3
  sleep 5
  exit 0
fi
sleep 600 &
wait $!`
	script := e.script(t, "mirage-e2e-handoff", body)
	id := e.submit(t, nil, script, "--segments", "2", "--policy", "lead")
	stop := e.cronDaemon(t, "--interval", "2s")
	defer stop()
	cj := e.waitDone(t, id, 3*time.Minute, nil)
	stop()
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
		out, _ := os.ReadFile(filepath.Join(e.work, "handoff-1.txt"))
		t.Fatalf("chain %s (%s): %+v\nhandoff output:\n%s", cj.State, cj.Reason, cj.SegmentList, out)
	}
	s0, s1 := cj.SegmentList[0], cj.SegmentList[1]
	if s0.State != string(provisioner.StateCompleted) || s0.ExitCode != 0 || s1.State != string(provisioner.StateCompleted) {
		out, _ := os.ReadFile(filepath.Join(e.work, "handoff-1.txt"))
		t.Errorf("segments %+v, %+v; want both COMPLETED exit 0 (segment 0 checkpointed on USR1)\nhandoff output:\n%s", s0, s1, out)
	}
	if b, err := os.ReadFile(filepath.Join(e.work, "ckpt-0")); err != nil || string(b) != "checkpoint of segment 0\n" {
		t.Errorf("checkpoint marker of segment 0: %q, %v", b, err)
	}
	b, _ := os.ReadFile(filepath.Join(e.work, "handoff-1.txt"))
	if !strings.Contains(string(b), "sent SIGUSR1 to predecessor "+s0.JobID) || !strings.Contains(string(b), "hand-off complete") {
		t.Errorf("handoff output:\n%s", b)
	}
	for i := range 2 {
		if b, err := os.ReadFile(filepath.Join(e.work, fmt.Sprintf("pwd-%d", i))); err != nil || strings.TrimSpace(string(b)) != e.work {
			t.Errorf("segment %d ran in %q (%v), want the directory of submit %s", i, b, err, e.work)
		}
	}
	// Overlap: segment 1 started while segment 0 ran (handoff signalled a
	// running job), and segment 0 ended within the grace. Slurm's times have
	// whole seconds, so a hand-off within the second records a gap of 0.
	if s1.Start == nil || s0.End == nil || s1.GapSec == nil || *s1.GapSec > 0 || *s1.GapSec < -60 || *s1.GapSec != s1.Start.Sub(*s0.End).Seconds() {
		t.Errorf("gap %v (start %v, predecessor end %v): want a recorded overlap in [-60 s, 0]", s1.GapSec, s1.Start, s0.End)
	}
}

// TestE2ETeamRulesOnSlurm: with --rules the engine applies the team rules
// on Slurm, team = account. Rules (worked out by hand): teama 12 GPUs,
// teamb 4 GPUs (16 = the cluster), borrowing on with QOS preemptible.
// teamb's first 4-GPU chain is within quota (0 + 4 ≤ 4): admitted, QOS
// normal. Its second 4-GPU chain would make 8 > 4: over quota; 12 GPUs are
// idle, so it borrows: submitted with --qos=preemptible. A chain of an
// account the rules do not know, and one without an account, are bad input.
// (The borrow needs 4 idle GPUs on one node: other users' jobs on the test
// cluster are small.)
func TestE2ETeamRulesOnSlurm(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	rules := filepath.Join(e.work, "teams.yaml")
	if err := os.WriteFile(rules, []byte(`teams:
  - name: teama
    gpus: 12
  - name: teamb
    gpus: 4
borrowing:
  enabled: true
  qos: preemptible
`), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.script(t, "mirage-e2e-rules", "sleep 30")
	first := e.submit(t, nil, script, "--segments", "1", "--rules", rules, "--", "-A", "teamb", "--gres=gpu:4")
	defer e.run(t, nil, "cancel", first)
	second := e.submit(t, nil, script, "--segments", "1", "--new", "--rules", rules, "--", "-A", "teamb", "--gres=gpu:4") // the same work again
	defer e.run(t, nil, "cancel", second)
	for _, c := range []struct {
		id, qos, verdict string
	}{
		// admit when a node has 4 free GPUs now, queue otherwise: submitted either way, as normal work
		{first, "normal", "team teamb within quota (0 of 4 GPUs used, job asks 4)"},
		{second, "preemptible", "borrow: team teamb over quota (4 of 4 GPUs used, job asks 4)"},
	} {
		cj := e.status(t, c.id)
		if len(cj.SegmentList) != 1 || cj.SegmentList[0].JobID == "" {
			t.Errorf("chain %s: %+v", c.id, cj.SegmentList)
			continue
		}
		live := squeueTagged(t, e.conf, c.id)[provisioner.Tag{Chain: c.id}]
		if len(live) != 1 || live[0].ID != cj.SegmentList[0].JobID || live[0].QOS != c.qos {
			t.Errorf("chain %s: squeue %v, want job %s with QOS %s", c.id, live, cj.SegmentList[0].JobID, c.qos)
		}
		ds := e.log(t, c.id).Decisions
		if len(ds) == 0 || !strings.Contains(ds[0].Reason, c.verdict) {
			t.Errorf("chain %s: decisions %+v; want the first to say %q", c.id, ds, c.verdict)
		}
	}
	_, stderr, code := e.run(t, nil, "submit", script, "--rules", rules, "--", "-A", "nosuchteam", "--gres=gpu:1")
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, `unknown team "nosuchteam"`) || !strings.Contains(stderr, "teama, teamb") {
		t.Errorf("unknown team: exit %d, %q", code, stderr)
	}
	_, stderr, code = e.run(t, nil, "submit", script, "--rules", rules)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "give one with -A/--account") {
		t.Errorf("no account: exit %d, %q", code, stderr)
	}
}

// TestE2ETwoDaemons: two `mirage daemon --once` started together; the one
// that takes the lock holds it 2 s (test pause): exactly one acts. Then
// `mirage cancel` stops the chain and its job in Slurm.
func TestE2ETwoDaemons(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	id := e.submit(t, nil, e.script(t, "mirage-e2e-two", "sleep 20"), "--segments", "2", "--policy", "reactive")
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
		case strings.Contains(s, " cycle: 1 active chains"):
			acted++
		case strings.Contains(s, "another mirage daemon holds the lock"):
			held++
		}
	}
	if acted != 1 || held != 1 {
		t.Errorf("acted %d, refused %d; want 1 and 1:\n%s\n---\n%s", acted, held, outs[0].String(), outs[1].String())
	}
	// One cycle acted: one decision about segment 1 (a wait, the
	// predecessor still pending or running) after the first.
	ds := e.log(t, id).Decisions
	if len(ds) != 2 || ds[1].Action != string(provisioner.Wait) || ds[1].Count != 1 {
		t.Errorf("decisions %+v; want first and a single wait", ds)
	}
	// mirage cancel: the chain is marked cancelled and its job cancelled in Slurm.
	job := e.status(t, id).SegmentList[0].JobID
	out, stderr, code := e.run(t, nil, "cancel", id)
	if code != 0 || !strings.Contains(out, "cancelled job "+job+" (segment 0)") {
		t.Fatalf("cancel: exit %d: %s%s", code, out, stderr)
	}
	if cj := e.status(t, id); cj.State != string(provisioner.ChainCancelled) || cj.SegmentList[0].State != string(provisioner.StateCancelled) {
		t.Errorf("after cancel: %+v", cj)
	}
	var live []taggedJob
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if live = squeueTagged(t, e.conf, id)[provisioner.Tag{Chain: id}]; len(live) == 1 && live[0].State != "COMPLETING" {
			break // a running job is COMPLETING for a moment
		}
	}
	if len(live) != 1 || live[0].ID != job || live[0].State != "CANCELLED" {
		t.Errorf("squeue after cancel: %v, want job %s CANCELLED", live, job)
	}
}

// TestE2EBadInput: each bad input gives a clear message and a non-zero
// exit, and what is stored survives.
func TestE2EBadInput(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	ok := e.script(t, "mirage-e2e-bad", "sleep 600")
	keep := e.submit(t, nil, ok, "--until-done")
	defer e.run(t, nil, "cancel", keep)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing script", []string{"submit", filepath.Join(e.work, "nope.sbatch")}, cmdutil.ExitBadInput, "no such file or directory"},
		{"not a batch script", []string{"submit", filepath.Join(e.work, "state", state.DBName)}, cmdutil.ExitBadInput, "must start with #!"},
		{"unknown partition", []string{"submit", ok, "--", "-p", "nosuchpartition"}, cmdutil.ExitRejected, "invalid partition"},
		{"limit over the partition's", []string{"submit", ok, "--", "-t", "10"}, cmdutil.ExitRejected, "time limit"},
		{"unknown account", []string{"submit", ok, "--", "-A", "nosuchaccount"}, cmdutil.ExitRejected, "invalid account"},
		{"an option mirage owns", []string{"submit", ok, "--", "--dependency=afterany:1"}, cmdutil.ExitBadInput, "mirage sets it"},
		{"missing slurm.conf", []string{"submit", ok, "--slurm-conf", filepath.Join(e.work, "nope.conf")}, cmdutil.ExitBadInput, "nope.conf"},
		{"unknown chain (status)", []string{"status", "c-19990101-000000"}, cmdutil.ExitBadInput, "chain not found"},
		{"unknown chain (cancel)", []string{"cancel", "c-19990101-000000"}, cmdutil.ExitBadInput, "chain not found"},
		{"unknown chain (log)", []string{"log", "c-19990101-000000"}, cmdutil.ExitBadInput, "chain not found"},
	}
	for _, c := range cases {
		_, stderr, code := e.run(t, nil, c.args...)
		if code != c.code || !strings.Contains(strings.ToLower(stderr), strings.ToLower(c.msg)) {
			t.Errorf("%s: exit %d, %q; want exit %d mentioning %q", c.name, code, stderr, c.code, c.msg)
		}
	}
	// Rejected chains are kept, marked failed with Slurm's reason; the good one is untouched.
	out, _, _ := e.run(t, nil, "status", "--json")
	var all []chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range all {
		switch {
		case c.ID == keep:
			if c.State != string(provisioner.ChainActive) || len(c.SegmentList) != 1 || c.SegmentList[0].JobID == "" {
				t.Errorf("the good chain changed: %+v", c)
			}
		case c.State == string(provisioner.ChainFailed) && strings.Contains(c.Reason, "rejected the first segment"):
			failed++
		default:
			t.Errorf("unexpected chain %+v", c)
		}
	}
	if failed != 3 {
		t.Errorf("%d chains failed by rejection, want 3 (partition, limit, account)", failed)
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
	_, stderr, code := e.run(t, nil, "cancel", keep, "--busy-timeout", "300ms")
	_, stderr2, code2 := e.run(t, nil, "daemon", "--once", "--busy-timeout", "300ms")
	_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	db.Close()
	if code != cmdutil.ExitUnavailable || !strings.Contains(stderr, "locked") {
		t.Errorf("cancel on a locked database: exit %d, %q", code, stderr)
	}
	if code2 != cmdutil.ExitUnavailable || !strings.Contains(stderr2, "locked") {
		t.Errorf("daemon on a locked database: exit %d, %q", code2, stderr2)
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
	for _, args := range [][]string{{"daemon", "--once"}, {"submit", ok}, {"status"}} {
		_, stderr, code := bad.run(t, nil, args...)
		if code != cmdutil.ExitUnavailable || !strings.Contains(stderr, "corrupt") || !strings.Contains(stderr, "left untouched") {
			t.Errorf("%v on a corrupt database: exit %d, %q", args, code, stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(bad.state, state.DBName)); !bytes.Equal(b, garbage) {
		t.Error("corrupt database overwritten")
	}
}

// TestE2ERecover: the state directory is lost while a 2-segment chain's
// first segment runs; `mirage recover --take-over` rebuilds the chain from
// the tagged job in squeue (its comment carries the chain's specification,
// but for its sbatch option, given again after "--") as this directory's,
// and the daemon carries it on to the end with one job per segment.
func TestE2ERecover(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := e.script(t, "mirage-e2e-recover", "sleep 15")
	id := e.submit(t, nil, script, "--segments", "2", "--policy", "reactive", "--max-retries", "1", "--", "--mem=100M")
	before := e.status(t, id)
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	// #50: the comment every user can read carries no option text.
	for _, jobs := range squeueTagged(t, e.conf, id) {
		for _, j := range jobs {
			cmd := exec.Command("squeue", "-h", "-j", j.ID, "-o", "%k")
			cmd.Env = append(os.Environ(), "SLURM_CONF="+e.conf)
			comment, err := cmd.Output()
			if err != nil || strings.Contains(provisioner.DecodeSpecText(string(comment)), "mem=100M") ||
				!strings.Contains(provisioner.DecodeSpecText(string(comment)), "1 sbatch option word(s) not in the comment") {
				t.Errorf("job %s's comment %q (%v): want the options left out", j.ID, comment, err)
			}
		}
	}
	// Only this chain: other tests' chains run on the same cluster. Its
	// option is not in the comments: recover asks for it.
	out, stderr, code := e.run(t, nil, "recover", id, "--since", "1h", "--dry-run")
	if code != cmdutil.ExitUsage || !strings.Contains(out, id) || !strings.Contains(out, "needs-options") {
		t.Fatalf("recover --dry-run without the options: exit %d: %s%s", code, out, stderr)
	}
	out, stderr, code = e.run(t, nil, "recover", id, "--since", "1h", "--dry-run", "--", "--mem=100M")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "would-recover") {
		t.Fatalf("recover --dry-run: exit %d: %s%s", code, out, stderr)
	}
	// The state directory went with its tag.key: the jobs name the lost
	// directory as their keeper, and this one takes the chain over.
	out, stderr, code = e.run(t, nil, "recover", id, "--since", "1h", "--json", "--yes", "--take-over", "--", "--mem=100M")
	var rec []chainops.Recovered
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil {
		t.Fatalf("recover: exit %d, %v: %s%s", code, err, out, stderr)
	}
	if len(rec) != 1 || rec[0].Chain != id || rec[0].Action != "recovered" || rec[0].State != string(provisioner.ChainActive) || rec[0].Jobs != 1 {
		t.Fatalf("recover: %s", out)
	}
	got := e.status(t, id)
	if got.Script != before.Script || got.Segments != 2 || got.Policy != "reactive" || got.MaxRetries != 1 || got.TimeLimitS != 60 ||
		!slices.Equal(got.Args, []string{"--mem=100M"}) || len(got.SegmentList) != 1 || got.SegmentList[0].JobID != before.SegmentList[0].JobID {
		t.Fatalf("recovered chain %+v\nwas %+v", got, before)
	}
	stop := e.daemon(t, nil, "--interval", "2s")
	defer stop()
	cj := e.waitDone(t, id, 3*time.Minute, nil)
	stop()
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
		t.Fatalf("chain %s (%s): %+v", cj.State, cj.Reason, cj.SegmentList)
	}
	tags := sacctTagged(t, e.conf, id, start)
	for i, s := range cj.SegmentList {
		if jobs := tags[provisioner.Tag{Chain: id, Segment: i}]; len(jobs) != 1 || jobs[0].ID != s.JobID || s.State != string(provisioner.StateCompleted) {
			t.Errorf("segment %d: %+v; accounting %v", i, s, jobs)
		}
	}
}

// TestE2ECancelBetweenSegments (#50, low): a chain cancelled between
// segments (segment 0 ended, no successor submitted yet) left nothing in
// Slurm to say so, and recover after the loss of the state directory
// offered it as active. mirage cancel marks the last job's comment in
// accounting (sacctmgr modify job, as the ordinary owner may), and recover
// registers the chain as cancelled. On 22.05, whose sacctmgr lowercases
// comments, it leaves the comment alone and warns.
func TestE2ECancelBetweenSegments(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	script := e.script(t, "mirage-e2e-between", "true")
	id := e.submit(t, nil, script, "--segments", "3", "--policy", "reactive")
	// No daemon runs: segment 0 ends and nothing follows it.
	var last taggedJob
	for deadline := time.Now().Add(90 * time.Second); last.State != string(provisioner.StateCompleted); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("segment 0 not COMPLETED in accounting after 90 s: %+v", last)
		}
		if jobs := sacctTagged(t, e.conf, id, start)[provisioner.Tag{Chain: id}]; len(jobs) == 1 {
			last = jobs[0]
		}
	}
	out, stderr, code := e.run(t, nil, "cancel", id)
	if strings.HasPrefix(testenv.SlurmRelease(), "22.") {
		// Slurm 22.05's sacctmgr wrote every comment in lower case (fixed
		// in 23.02): the job is left unmarked, and cancel says what that
		// means. The comment in accounting is untouched.
		if code != 0 || !strings.Contains(out, "warning: the chain's last job could not be marked") || !strings.Contains(out, "lower case") {
			t.Fatalf("cancel on 22.05: exit %d\n%s%s", code, out, stderr)
		}
		if after := sacctTagged(t, e.conf, id, start)[provisioner.Tag{Chain: id}]; len(after) != 1 || after[0].Comment != last.Comment {
			t.Fatalf("accounting after cancel on 22.05: %+v, want the comment untouched", after)
		}
		return
	}
	if code != 0 || !strings.Contains(out, "job "+last.ID+" (the chain's last) marked "+provisioner.EndMark) {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, stderr)
	}
	marked := sacctTagged(t, e.conf, id, start)[provisioner.Tag{Chain: id}]
	if len(marked) != 1 || !provisioner.MarkedCancelled(marked[0].Comment) || !strings.HasPrefix(marked[0].Comment, strings.TrimSpace(last.Comment)) {
		t.Fatalf("accounting after cancel: %+v; want the comment %q followed by %s", marked, last.Comment, provisioner.EndMark)
	}
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = e.run(t, nil, "recover", id, "--since", "1h", "--json", "--dry-run")
	var rec []chainops.Recovered
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil {
		t.Fatalf("recover --dry-run: exit %d, %v: %s%s", code, err, out, stderr)
	}
	if len(rec) != 1 || rec[0].Chain != id || rec[0].State != string(provisioner.ChainCancelled) || !strings.Contains(rec[0].Note, "cancelled by mirage cancel") {
		t.Fatalf("recover after the loss: %s; want the chain as cancelled", out)
	}
}

// TestE2ECancelledWhilePending: a segment cancelled (by its user, with
// scancel) before it ever started has no start time in mirage status (read
// from the state database) nor a "started" event in mirage log --events.
// squeue gives such a job its end time as start time and sacct the NO_VAL
// 4294967294, which once read as a start in 2106 (issue #17).
func TestE2ECancelledWhilePending(t *testing.T) {
	e := newE2E(t)
	t.Parallel()
	script := e.script(t, "mirage-e2e-held", "true")
	id := e.submit(t, nil, script, "--segments", "1", "--policy", "reactive", "--max-retries", "0", "--", "--hold")
	cj := e.status(t, id)
	if len(cj.SegmentList) != 1 || cj.SegmentList[0].JobID == "" {
		t.Fatalf("chain after submit: %+v", cj)
	}
	job := cj.SegmentList[0].JobID
	if _, stderr, code := e.run(t, nil, "daemon", "--once"); code != 0 {
		t.Fatalf("daemon --once: exit %d: %s", code, stderr)
	}
	scancel := exec.Command("scancel", job)
	scancel.Env = append(os.Environ(), "SLURM_CONF="+e.conf)
	if out, err := scancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", job, err, out)
	}
	deadline := time.Now().Add(time.Minute)
	var seg *chainops.SegmentJSON
	for seg == nil || seg.State != string(provisioner.StateCancelled) {
		if time.Now().After(deadline) {
			t.Fatalf("segment of job %s not cancelled after a minute: %+v", job, seg)
		}
		if _, stderr, code := e.run(t, nil, "daemon", "--once"); code != 0 {
			t.Fatalf("daemon --once: exit %d: %s", code, stderr)
		}
		cj = e.status(t, id)
		for i := range cj.SegmentList {
			if cj.SegmentList[i].JobID == job {
				seg = &cj.SegmentList[i]
			}
		}
		time.Sleep(time.Second)
	}
	if seg.Start != nil {
		t.Errorf("mirage status: job %s cancelled while pending started at %s, want no start", job, seg.Start)
	}
	for _, ev := range e.log(t, id).Events {
		if ev.Kind == string(provisioner.EventStarted) || strings.Contains(ev.Detail, "2106") {
			t.Errorf("mirage log --events: %+v for a job cancelled while pending", ev)
		}
	}
}
