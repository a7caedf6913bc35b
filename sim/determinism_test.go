package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// The replay guard: every optimisation of the simulator's inner loop
// (issue 19, replay speed) must leave every schedule exactly as it was. Each
// scenario below replays a trace, hashing every backfill plan it can observe
// (each pending job's planned start, every 6 simulated hours) and, at the
// end, every job's state, start, end, requeue count and node list. The
// expected digests were computed by this very test on the simulator as it
// was before the speed work (commit 579dadc, the branch point of simspeed:
// this file copied into a `git archive 579dadc` tree and run there with the
// constants empty, copying the digests it logged); they are not produced by
// the code under test. The three first were recorded before any change to
// the simulator, digestSeam (added later) on that archived tree, where all
// five pass. A change that alters a
// digest changes results: it must be explained and the digest re-derived
// deliberately, never silently. digestShared was re-derived when jobs with
// a node list stopped blocking their partition in the main pass and began
// to be planned on their nodes by backfill, as slurmctld does (its trace
// has such jobs; TestRequiredNodesDoNotBlockThePartition and
// TestBackfillPlansRequiredNodes give the schedules by hand); the others,
// whose jobs have none, did not move. It was re-derived again when
// backfill began to reserve those nodes themselves, not node counts, and
// to keep other jobs off them (sched/backfill's _add_reservation;
// testdata/script/required.txt gives the schedules by hand): with that
// reservation switched off, the code of that change reproduced the digest
// before it, so nothing else moved; and with it when jobs that can preempt
// began to queue ahead of preemptible ones, as slurmctld sorts them
// (testdata/script/preemption.txt; its scavenger jobs are now preempted
// twice instead of 265 times): with that order switched off, the digest
// of the reservation alone came back; and once more when the backfill
// planner began to plan shared partitions' jobs node by node and reserve
// their nodes, not summed GPU counts (backfill_nodes.go, issue 46:
// TestBackfillPlansSharedNodesOneByOne gives a schedule by hand). Only
// this scenario has a shared partition; the other digests did not move.
// digestSeam was re-derived when the decision callback moved after the
// scheduler's passes of its second (a daemon reads squeue after slurmctld
// scheduled what happened at the start of that second; issue 46's real
// 22.05 run): TestTickSeesTheSecondsPasses gives a schedule by hand; the
// digests without a callback did not move.
const (
	digestLS6Synth      = "dece03600bdbb263c67e82e998bb46c02c0feffa023b445ce25c33f8031719c4"
	digestShared        = "a1260045eed5ba3c304851f123eaa4814bd2f34bfa52a4e3c903c1a8b771f03f"
	digestLS6Trace      = "ca74509581da184eb690531b250eac75a859a1cf3b6c0ca1eefc4c8a746b2744"
	digestLS6TraceSteps = "9de864fb34fd49edd92cbc3c51f08c5384b988630311f5c4ee84d17504e453ca"
	digestSeam          = "abdad3918d9fd1b3907252286f0ac1b5a17d9634fca689cfbd7e95a481e96341"
)

// replayDigest runs s to the end in 6-hour steps and hashes what it did.
func replayDigest(t *testing.T, s *Sim) string {
	t.Helper()
	h := sha256.New()
	s.start()
	for step := 0; !s.done(); step++ {
		if step > 4*365 {
			t.Fatalf("not done after a simulated year: %d jobs pending", len(s.pending))
		}
		s.Run(s.Now().Add(6 * time.Hour))
		fmt.Fprintf(h, "t %d\n", s.now)
		plan := slices.Clone(s.pending)
		slices.Sort(plan)
		for _, j := range plan {
			if d := &s.dyns[j]; d.state == stPending {
				fmt.Fprintf(h, "p %d %d %t\n", j, d.est, d.held)
			}
		}
	}
	digestJobs(h, s)
	// what the scenario exercised (a guard of an idle cluster proves little)
	waited, requeues, states := 0, 0, map[uint8]int{}
	for j := range s.dyns {
		d := &s.dyns[j]
		states[d.state]++
		requeues += int(d.requeues)
		if d.start-s.spec(int32(j)).submit > 3600 {
			waited++
		}
	}
	t.Logf("%d jobs waited over an hour, %d requeues, jobs by state %v", waited, requeues, states)
	return hex.EncodeToString(h.Sum(nil))
}

// digestJobs hashes every job's outcome and its nodes.
func digestJobs(h hash.Hash, s *Sim) {
	for j := range int32(s.numJobs()) {
		sp, d := s.spec(j), &s.dyns[j]
		fmt.Fprintf(h, "%s %d %d %d %d", sp.id, d.state, d.start, d.end, d.requeues)
		if d.start >= 0 {
			for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
				h.Write([]byte(" " + strconv.Itoa(int(n))))
			}
		}
		h.Write([]byte("\n"))
	}
}

func checkDigest(t *testing.T, name, got, want string) {
	t.Helper()
	if want == "" {
		t.Fatalf("%s: no expected digest recorded; this code gives %s", name, got)
	}
	if got != want {
		t.Errorf("%s: replay digest %s, want %s: the schedule changed", name, got, want)
	}
}

// TestReplayDigestLS6Synth: the ls6 preset (one exclusive partition, the
// benchmark's configuration) on 6,000 generated jobs.
func TestReplayDigestLS6Synth(t *testing.T) {
	jobs := synthJobs(6000, 11)
	for i := range jobs { // 1.25× the load: queues most days
		jobs[i].Submit = jobs[0].Submit.Add(jobs[i].Submit.Sub(jobs[0].Submit) * 4 / 5)
	}
	s := newLoaded(t, jobs)
	checkDigest(t, "ls6-synth", replayDigest(t, s), digestLS6Synth)
	checkRunToEnd(t, newLoaded(t, jobs), s)
}

// checkRunToEnd runs one to the end in one go, where backfill passes that
// can start nothing are skipped (nobody can read their plans), and checks
// that every job started, ended and ran where it did in stepped, a run of
// the same jobs in steps whose passes all ran (its plans were read).
func checkRunToEnd(t *testing.T, one, stepped *Sim) {
	t.Helper()
	one.Run(time.Time{})
	if one.bfSkipped == 0 || stepped.bfSkipped != 0 {
		t.Fatalf("backfill passes skipped: %d in one run to the end (want some), %d in the stepped run (want none)", one.bfSkipped, stepped.bfSkipped)
	}
	a, b := sha256.New(), sha256.New()
	digestJobs(a, one)
	digestJobs(b, stepped)
	if !bytes.Equal(a.Sum(nil), b.Sum(nil)) {
		t.Errorf("a run to the end (%d plan-only passes skipped) scheduled differently from the stepped run", one.bfSkipped)
	}
	t.Logf("run to the end: %d plan-only backfill passes skipped, same schedule", one.bfSkipped)
}

// TestReplayDigestShared exercises what the ls6 preset does not: a
// GPU-granular (shared-node) partition overlapping an exclusive one, nodes
// of two sizes, a coarse bf_resolution, a preemptible requeued QOS,
// dependencies, node lists and exclusions, a fair-share-free priority.
func TestReplayDigestShared(t *testing.T) {
	cfg := Defaults()
	var all, big []string
	for i := range 24 {
		n := NodeConfig{Name: fmt.Sprintf("n%02d", i), CPUs: 64, GPUs: 4}
		if i >= 16 {
			n.GPUs = 8
		}
		if i >= 16 && i < 20 {
			big = append(big, n.Name) // 8-GPU nodes of partition shared
		}
		cfg.Nodes = append(cfg.Nodes, n)
		all = append(all, n.Name)
	}
	cfg.Partitions = []PartitionConfig{
		{Name: "shared", Nodes: all[:20], MaxTime: 24 * time.Hour, Default: true, PriorityJobFactor: 1},
		{Name: "whole", Nodes: all[12:], MaxTime: 48 * time.Hour, Exclusive: true, PriorityJobFactor: 2},
	}
	cfg.QOS = []QOSConfig{{Name: "scavenger", Preemptible: true, PreemptMode: "requeue"}, {Name: "high", Priority: 10}}
	cfg.BFResolution = 5 * time.Minute
	cfg.BFMaxJobTest = 100
	cfg.PriorityType = PriorityMultifactor // the weights below count (22.05's default priority/basic ignores them)
	cfg.PriorityWeightAge = 1000
	cfg.PriorityWeightJobSize = 200
	cfg.PriorityWeightPartition = 300
	cfg.PriorityWeightQOS = 500
	cfg.SchedLatency = 3 * time.Second
	cfg.Seed = 5
	jobs := synthJobs(4000, 13)
	for i := range jobs {
		j := &jobs[i]
		switch i % 7 {
		case 0, 3:
			j.Partition = "whole"
			j.Nodes = min(j.Nodes, 6)
			j.GPUs = 0
		case 1:
			j.QOS = "scavenger"
			j.Nodes = 1
			j.GPUs = 1 + i%4
			j.CPUs = 8
		case 2:
			j.GPUs = j.Nodes * (1 + i%3)
			j.CPUs = 16 * j.Nodes
		case 4:
			j.Nodes, j.GPUs = 1, 6 // fits only the 8-GPU nodes
			j.QOS = "high"
		case 5:
			j.Nodes = min(j.Nodes, 4)
			j.GPUs = 2 * j.Nodes
			if i > 50 {
				j.Depend = "afterok:" + jobs[i-12].ID
			}
		case 6:
			j.Nodes, j.GPUs = 1, 2
			if i%3 == 0 {
				j.NodeList = []string{big[i%len(big)]}
			} else {
				j.Exclude = all[:8]
			}
		}
		if i%97 == 0 {
			j.Fail = true
		}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Load(slices.Clone(jobs)); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(jobs); err != nil {
		t.Fatal(err)
	}
	checkDigest(t, "shared", replayDigest(t, s), digestShared)
	checkRunToEnd(t, one, s)
}

// TestReplayDigestLS6Trace: the whole shared LS6 cut as BenchmarkReplayLS6
// replays it, in one run and in 6-hour steps with the plans (skipped
// without the shared traces).
func TestReplayDigestLS6Trace(t *testing.T) {
	jobs := loadLS6(t)
	_, elig := Holds(jobs, HoldOptions{Nodes: 84})
	specs, _, _ := FromTraces(jobs, elig)
	s := newLoaded(t, specs)
	s.Run(time.Time{})
	h := sha256.New()
	digestJobs(h, s)
	checkDigest(t, "ls6-trace", hex.EncodeToString(h.Sum(nil)), digestLS6Trace)
	if s.bfSkipped == 0 {
		t.Error("no plan-only backfill pass skipped in a run to the end")
	}
	checkDigest(t, "ls6-trace-steps", replayDigest(t, newLoaded(t, specs)), digestLS6TraceSteps)
}

// TestReplayDigestSeam drives the simulator as mirage's policies do: forks
// mid-trace that submit a probe through the Cluster seam, read squeue's
// planned starts from a snapshot and run until the probe starts; then a
// decision callback that submits, cancels and, with checkpointing, signals
// jobs while the trace plays on.
func TestReplayDigestSeam(t *testing.T) {
	jobs := synthJobs(3000, 17)
	for i := range jobs {
		jobs[i].Submit = jobs[0].Submit.Add(jobs[i].Submit.Sub(jobs[0].Submit) * 4 / 5)
	}
	s := newLoaded(t, jobs)
	s.SetCheckpoint(10 * time.Minute)
	ctx := context.Background()
	h := sha256.New()
	s.Run(jobs[1000].Submit)
	for k := range 12 {
		f := s.Fork()
		nodes := 1 + k%8
		id, err := f.Submit(ctx, provisioner.SubmitRequest{Name: "probe", Account: "mirage", TimeLimit: 24 * time.Hour, Nodes: nodes, GPUs: 3 * nodes})
		if err != nil {
			t.Fatal(err)
		}
		f.Run(f.Now().Add(10 * time.Minute))
		snap, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range snap.Jobs {
			fmt.Fprintf(h, "snap %s %s %d %d %v\n", j.ID, j.State, j.Priority, j.EstStart.Unix(), j.NodeList)
		}
		start, err := f.RunUntilStart(id, f.Now().Add(72*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "probe %d %s %d\n", k, id, start.Unix())
		s.Run(s.Now().Add(8 * time.Hour))
	}
	var mine []string
	s.OnTick(30*time.Minute, func(now time.Time, c provisioner.Cluster) {
		n := len(mine)
		if n >= 200 {
			return
		}
		id, err := c.Submit(ctx, provisioner.SubmitRequest{Name: "seg", Account: "mirage", TimeLimit: time.Duration(1+n%12) * time.Hour, Nodes: 1 + n%3, GPUs: 3 * (1 + n%3)})
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, id)
		switch {
		case n%5 == 2: // give up on an earlier one (pending or running)
			_ = c.Cancel(ctx, mine[n-2])
		case n%5 == 4: // hand off: the earlier one checkpoints and exits
			_ = c.Signal(ctx, mine[n-1], "USR1")
		}
	})
	s.Run(time.Time{})
	digestJobs(h, s)
	checkDigest(t, "seam", hex.EncodeToString(h.Sum(nil)), digestSeam)
}
