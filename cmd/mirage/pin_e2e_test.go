package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestE2EPinnedSuccessorAheadOfYoungerJob runs the defaults end to end on
// the real Slurm (issues 49 and 46): a chain submitted without --policy and
// without models (mirage submit picks pin) and one submitted with a trained
// xgb-online (it picks xgb-online-pin), driven by `mirage daemon --once`
// cycles as cron drives them, against the second user's load; and beside
// them a reactive chain, the reference. What the product is built on: a
// successor queued early, pinned to its predecessor's node, starts as the
// predecessor ends, ahead of a job queued after it for the same node; a
// reactive successor, queued once its predecessor has ended, waits behind
// that job.
//
// The scene: node2, node3 and node4 reserved for the two users (other
// tests keep their jobs elsewhere) and a partition of their own (so that
// mirage's snapshot looks at those nodes only). The second user holds 2 of
// each node's 4 GPUs for the whole test. Each chain's segment 0 takes the
// other 2 GPUs of one node (the nodes are then full: no node is free, and
// the successor cannot fit beside its predecessor), works 40 s and exits.
// The daemon cycles every 2 s; after at most 5 cycles (10 s, well before
// the predecessors end), the second user queues one job per chain for the
// 2 GPUs of that chain's node (-w), 20 s of work. With pin the successor is
// already queued (pinned) then: the competing job is younger. Expected,
// from sacct, for each pinned chain:
//
//   - the successor was submitted before the competing job (queued early);
//   - it started on its predecessor's node within one scheduling pass of
//     the predecessor's end: 0 ≤ start − end ≤ bf_interval + 1 s. The
//     predecessor's end frees its GPUs; slurmctld then schedules at once
//     (sched_min_interval=0), at the latest in the next backfill pass,
//     every bf_interval (5 s in scripts/slurm/slurm.conf.in, read from
//     scontrol show config); Slurm's times have whole seconds (+1 s);
//   - the competing job had not started when the successor started (it
//     starts once the successor's 10 s end).
//
// Without the pin (reactive: the successor submitted once the predecessor
// has ended) the competing job is the older one and takes the GPUs: the
// successor waits its 20 s, and every line above fails. The reactive chain
// asserts exactly that: its successor was not queued while its predecessor
// ran, the competing job started first, and the successor started later
// than one scheduling pass after its predecessor's end. (With the pin
// removed from pin and xgb-online-pin, they fail as reactive passes.)
//
// Not parallel: the three reserved nodes are most of the cluster, which
// the other e2e tests of this package share while they run (they run after
// it).
func TestE2EPinnedSuccessorAheadOfYoungerJob(t *testing.T) {
	e := newE2E(t)
	other := testenv.SecondUser(t)
	asUser(t, other, "sbatch", "--version")
	fx := trainedFixture(t)
	bound := time.Duration(bfInterval(t, e.conf)+1) * time.Second
	lab := newPinLab(t, e, other, "node2", "node3", "node4")

	// The second user's load: 2 GPUs of each node, for the whole test.
	for _, node := range lab.nodes {
		lab.otherJob(t, node, "sleep 300")
	}
	lab.waitRunning(t, lab.others...)

	// The chains: pin by default without models, xgb-online-pin with them,
	// and reactive, the reference.
	noModels := filepath.Join(e.work, "no-models")
	if err := os.Mkdir(noModels, 0o755); err != nil {
		t.Fatal(err)
	}
	type chain struct {
		policy, id, pred, node string
		competitor             string
	}
	chains := []*chain{{policy: provisioner.PolicyPin}, {policy: "xgb-online-pin"}, {policy: provisioner.PolicyReactive}}
	for _, c := range chains {
		script := lab.script(t, "mirage-e2e-"+c.policy, `if [ "$MIRAGE_SEGMENT" = 0 ]; then sleep 40; else sleep 10; fi`)
		switch c.policy {
		case provisioner.PolicyPin:
			c.id = e.submit(t, []string{"MIRAGE_MODELS=" + noModels}, script, "--segments", "2")
		case provisioner.PolicyReactive:
			c.id = e.submit(t, nil, script, "--segments", "2", "--policy", c.policy)
		default:
			c.id = e.submit(t, nil, script, "--segments", "2", "--models", fx.dir)
		}
		if cj := e.status(t, c.id); cj.Policy != c.policy || len(cj.SegmentList) != 1 {
			t.Fatalf("chain %s: policy %q with %d segments; want mirage submit's default %q", c.id, cj.Policy, len(cj.SegmentList), c.policy)
		}
		c.pred = e.status(t, c.id).SegmentList[0].JobID
	}
	lab.waitRunning(t, chains[0].pred, chains[1].pred, chains[2].pred)
	seen := map[string]string{}
	for _, c := range chains {
		c.node = lab.nodeOf(t, c.pred)
		if p, ok := seen[c.node]; ok {
			t.Fatalf("the %s and %s predecessors both on %s: each node has room for one", p, c.policy, c.node)
		}
		seen[c.node] = c.policy
	}

	// Daemon cycles until both successors are queued, 5 at most; then the
	// younger competing jobs.
	cycle := func() {
		if _, stderr, code := e.run(t, nil, "daemon", "--once"); code != 0 {
			t.Fatalf("daemon --once: exit %d: %s", code, stderr)
		}
	}
	for i := 0; i < 5; i++ {
		cycle()
		if len(e.status(t, chains[0].id).SegmentList) == 2 && len(e.status(t, chains[1].id).SegmentList) == 2 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	for _, c := range chains {
		if segs := e.status(t, c.id).SegmentList; len(segs) == 2 && c.policy == provisioner.PolicyReactive {
			t.Errorf("reactive: successor %s queued while its predecessor %s runs", segs[1].JobID, c.pred)
		} else if len(segs) == 2 {
			// Queued while the node is full: pending, its node list the predecessor's.
			if q := lab.queued(t, segs[1].JobID); q.state != "PENDING" || q.reqNodes != c.node {
				t.Errorf("%s: successor %s is %s with requested nodes %q; want PENDING, pinned to %s", c.policy, segs[1].JobID, q.state, q.reqNodes, c.node)
			}
		}
		c.competitor = lab.otherJob(t, c.node, "sleep 20")
	}

	cycles := 0
	for _, c := range chains {
		e.waitDone(t, c.id, 3*time.Minute, func() { cycle(); cycles++; time.Sleep(2 * time.Second) })
	}
	t.Logf("%d daemon cycles after the competing jobs; bound %s (bf_interval + 1 s)", cycles, bound)

	for _, c := range chains {
		cj := e.status(t, c.id)
		if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
			t.Errorf("%s chain %s: %s (%s) with %d segments, want done with 2", c.policy, c.id, cj.State, cj.Reason, len(cj.SegmentList))
			continue
		}
		succ := cj.SegmentList[1].JobID
		acct := lab.sacct(t, c.pred, succ, c.competitor)
		p, s, o := acct[c.pred], acct[succ], acct[c.competitor]
		t.Logf("%s: predecessor %s on %s ended %s; successor %s submitted %s, started %s on %s; competing job %s submitted %s, started %s",
			c.policy, c.pred, p.nodes, p.end.Format(time.TimeOnly), succ, s.submit.Format(time.TimeOnly), s.start.Format(time.TimeOnly), s.nodes,
			c.competitor, o.submit.Format(time.TimeOnly), fmtStart(o.start))
		if p.end.IsZero() || s.start.IsZero() || o.submit.IsZero() {
			t.Errorf("%s: accounting lacks times: predecessor %+v, successor %+v, competing job %+v", c.policy, p, s, o)
			continue
		}
		if !o.submit.Before(p.end) {
			t.Errorf("%s: the competing job was queued at %s, not before the predecessor ended at %s: no contest", c.policy, o.submit, p.end)
		}
		if c.policy == provisioner.PolicyReactive {
			checkReactiveBehind(t, p, s, o, bound)
			continue
		}
		if !s.submit.Before(o.submit) && !(s.submit.Equal(o.submit) && jobBefore(succ, c.competitor)) {
			t.Errorf("%s: successor %s submitted at %s, not before the competing job %s (%s): it was not queued early", c.policy, succ, s.submit, c.competitor, o.submit)
		}
		if gap := s.start.Sub(p.end); gap < 0 || gap > bound || s.nodes != p.nodes {
			t.Errorf("%s: successor started %s after its predecessor ended, on %s (predecessor on %s); want within [0, %s] on the same node",
				c.policy, gap, s.nodes, p.nodes, bound)
		}
		if !o.start.IsZero() && !o.start.After(s.start) {
			t.Errorf("%s: the younger competing job %s started at %s, not after the successor (%s)", c.policy, c.competitor, o.start, s.start)
		}
		pinned := false
		for _, d := range e.log(t, c.id).Decisions {
			pinned = pinned || d.Segment == 1 && d.Action == string(provisioner.SubmitPinned)
		}
		if !pinned {
			t.Errorf("%s: no submit-pinned decision for segment 1: %+v", c.policy, e.log(t, c.id).Decisions)
		}
	}
}

// checkReactiveBehind asserts that a reactive successor s waited behind
// the younger competing job o: it was queued once its predecessor p had
// ended, o started first, and s did not start within one scheduling pass
// (bound) of p's end.
func checkReactiveBehind(t *testing.T, p, s, o acctTimes, bound time.Duration) {
	t.Helper()
	if s.submit.Before(p.end) {
		t.Errorf("reactive: successor submitted at %s, before its predecessor ended at %s", s.submit, p.end)
	}
	if o.start.IsZero() || !o.start.Before(s.start) {
		t.Errorf("reactive: the competing job started at %s, not before the successor (%s): the successor did not wait behind it", fmtStart(o.start), s.start)
	}
	if gap := s.start.Sub(p.end); gap <= bound {
		t.Errorf("reactive: successor started %s after its predecessor ended, within one scheduling pass (%s): it did not wait", gap, bound)
	}
}

func fmtStart(t time.Time) string {
	if t.IsZero() {
		return "not yet"
	}
	return t.Format(time.TimeOnly)
}

// jobBefore reports whether job id a was given before b (plain job ids).
func jobBefore(a, b string) bool {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return err1 == nil && err2 == nil && x < y
}

// bfInterval is the running cluster's backfill interval in seconds
// (SchedulerParameters bf_interval; Slurm's default 30 when unset).
func bfInterval(t *testing.T, conf string) int {
	t.Helper()
	cmd := exec.Command("scontrol", "show", "config")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scontrol show config: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "SchedulerParameters" {
			continue
		}
		for _, p := range strings.Split(strings.TrimSpace(v), ",") {
			if s, ok := strings.CutPrefix(p, "bf_interval="); ok {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("SchedulerParameters %q: %v", v, err)
				}
				return n
			}
		}
	}
	return 30
}

// pinLab is the scene of TestE2EPinnedSuccessorAheadOfYoungerJob: nodes
// reserved for the test's user and the second user, a partition of those
// nodes, and the second user's jobs there. Its cleanup cancels the jobs
// and removes the partition and the reservation.
type pinLab struct {
	e                 *e2eEnv
	other             string
	nodes, others     []string
	partition, reserv string
}

func newPinLab(t *testing.T, e *e2eEnv, other string, nodes ...string) *pinLab {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	l := &pinLab{e: e, other: other, nodes: nodes, partition: "mirage-e2e-pin", reserv: "mirage-e2e-pin"}
	l.remove(t) // what an interrupted run left
	l.scontrol(t, "create", "reservation", "ReservationName="+l.reserv, "StartTime=now", "Duration=15",
		"Nodes="+strings.Join(nodes, ","), "Users="+me.Username+","+other, "Flags=IGNORE_JOBS")
	t.Cleanup(func() { l.remove(t) })
	l.scontrol(t, "create", "PartitionName="+l.partition, "Nodes="+strings.Join(nodes, ","), "MaxTime=5", "State=UP")
	return l
}

// remove cancels the lab's jobs, then deletes its partition and its
// reservation (each may be absent).
func (l *pinLab) remove(t *testing.T) {
	t.Helper()
	sc := exec.Command("scancel", "-p", l.partition)
	sc.Env = append(os.Environ(), "SLURM_CONF="+l.e.conf)
	_ = sc.Run() // absent partition: nothing to cancel
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		q := exec.Command("squeue", "-h", "-p", l.partition, "-t", "PD,R,CG", "-o", "%i")
		q.Env = sc.Env
		if out, err := q.Output(); err != nil || strings.TrimSpace(string(out)) == "" {
			break
		}
	}
	for _, args := range [][]string{{"delete", "PartitionName=" + l.partition}, {"delete", "ReservationName=" + l.reserv}} {
		cmd := exec.Command("scontrol", args...)
		cmd.Env = sc.Env
		_ = cmd.Run() // absent: nothing to delete
	}
}

func (l *pinLab) scontrol(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("scontrol", args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+l.e.conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scontrol %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// script writes a chain's batch script for the lab: 2-minute limit, its
// partition and reservation, 2 GPUs, output beside it.
func (l *pinLab) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(l.e.work, name+".sbatch")
	s := fmt.Sprintf("#!/bin/bash\n#SBATCH -t 2\n#SBATCH -p %s\n#SBATCH --reservation=%s\n#SBATCH --gres=gpu:2\n#SBATCH -J %s\n#SBATCH -o %s/%%x-%%j.out\n%s\n",
		l.partition, l.reserv, name, l.e.work, body)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// otherJob submits, as the second user, a job on node holding 2 GPUs and
// running cmd, and returns its id.
func (l *pinLab) otherJob(t *testing.T, node, cmd string) string {
	t.Helper()
	c := asUser(t, l.other, "sbatch", "--parsable", "-p", l.partition, "--reservation="+l.reserv, "-w", node, "--gres=gpu:2",
		"-t", "5", "-J", "mirage-e2e-other", "-o", "/dev/null", "--wrap", cmd)
	c.Dir = "/tmp"
	c.Env = append(c.Env, "SLURM_CONF="+l.e.conf)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch as %s: %v\n%s", l.other, err, out)
	}
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	l.others = append(l.others, id)
	return id
}

// queuedJob is a job as squeue shows it: state and requested nodes.
type queuedJob struct{ state, node, reqNodes string }

func (l *pinLab) queued(t *testing.T, id string) queuedJob {
	t.Helper()
	cmd := exec.Command("squeue", "-h", "-j", id, "-t", "all", "-o", "%T|%N|%n")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+l.e.conf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue -j %s: %v", id, err)
	}
	f := strings.Split(strings.TrimSpace(string(out)), "|")
	if len(f) != 3 {
		return queuedJob{}
	}
	return queuedJob{state: f[0], node: f[1], reqNodes: f[2]}
}

// waitRunning waits up to 3 minutes until every job runs (jobs of other
// tests on the nodes when they were reserved may hold their GPUs a while).
func (l *pinLab) waitRunning(t *testing.T, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for _, id := range ids {
		for {
			q := l.queued(t, id)
			if q.state == "RUNNING" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s is %q, not running after 3 minutes", id, q.state)
			}
			time.Sleep(time.Second)
		}
	}
}

func (l *pinLab) nodeOf(t *testing.T, id string) string {
	t.Helper()
	return l.queued(t, id).node
}

// acctTimes is a job's record in accounting (zero times: not yet).
type acctTimes struct {
	submit, start, end time.Time
	nodes              string
}

// sacct reads the jobs' submit, start and end times and nodes (UTC, whole
// seconds), waiting a little for the records of jobs that just ended.
func (l *pinLab) sacct(t *testing.T, ids ...string) map[string]acctTimes {
	t.Helper()
	parse := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.UTC)
		if err != nil {
			return time.Time{} // Unknown, None
		}
		return v
	}
	var res map[string]acctTimes
	for range 10 {
		cmd := exec.Command("sacct", "-X", "-n", "-P", "-a", "-j", strings.Join(ids, ","), "-o", "JobID,Submit,Start,End,NodeList")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+l.e.conf, "TZ=UTC")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sacct: %v", err)
		}
		res = map[string]acctTimes{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Split(line, "|"); len(f) == 5 {
				res[f[0]] = acctTimes{submit: parse(f[1]), start: parse(f[2]), end: parse(f[3]), nodes: f[4]}
			}
		}
		if len(res) == len(ids) && !res[ids[0]].end.IsZero() && !res[ids[1]].start.IsZero() {
			break
		}
		time.Sleep(time.Second)
	}
	return res
}
