package slurm

// Tests on outputs recorded from the project's real Slurm 24.11 cluster
// (scripts/slurm-newer/up.sh 24.11; scripts/slurm-record.sh 24.11): the same
// jobs as the 22.05 recording (realdata_test.go) plus one cancelled while
// pending (44, pending-cancelled). The expectations were read off the files
// and checked against what each job was submitted to do (slurm-record.sh).

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestRealSqueueJSON2411(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-24.11.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v != (Version{Major: 24, Minor: 11, Micro: 5, Release: "24.11.5", Schema: "data_parser/v0.0.42"}) {
		t.Errorf("version = %+v", v)
	}
	// squeue --json --all --states=all: the jobs that ended (34, 41-44) are
	// listed; a bare squeue --json leaves them out from 23.02 on.
	// 44 was cancelled while it waited for resources: slurmctld gives it its
	// end time as start time, but it has no nodes, so no start (issue #17).
	// A cancelled or timed-out job's signal is 15 here (0 in sacct, below).
	checkJobs(t, jobs, recordedSqueue2411())
}

func TestRealSacctJSON2411(t *testing.T) {
	jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-24.11.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != "24.11.5" || v.Schema != "data_parser/v0.0.42" {
		t.Errorf("version = %+v", v)
	}
	// What sacct says differently from squeue at the same moment:
	// - 44's time.start is the plain NO_VAL 4294967294: no start, not 2106;
	// - a running job's comment is empty until it ends (35); so is the
	//   reason of most jobs;
	// - a cancelled or timed-out job's exit code is 0:0 (squeue: signal 15);
	// - slurmdbd stores a job name's double quotes as backquotes (35);
	// - pending jobs have no start estimate.
	checkJobs(t, jobs, recordedSacct2411())
}

func TestRealSinfoJSON2411(t *testing.T) {
	nodes, v, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-24.11.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != "24.11.5" {
		t.Errorf("version = %+v", v)
	}
	// At the moment of squeue-24.11.json: node1 runs 35 (2 GPUs) and 39_0
	// (1 GPU); node2 and node3 run 36 (6 GPUs: 4 + 2).
	want := []provisioner.Node{
		{Name: "node1", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 2, GPUs: 4, GPUsUsed: 3, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node2", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 4, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node3", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 2, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node4", State: provisioner.NodeUp, CPUs: 8, GPUs: 4, GPUType: "tesla", Partitions: []string{"debug", "long"}},
	}
	if len(nodes) != len(want) {
		t.Fatalf("nodes = %+v", nodes)
	}
	for i := range want {
		n := nodes[i]
		n.Labels = nil
		if n.Name != want[i].Name || n.State != want[i].State || n.CPUs != want[i].CPUs || n.CPUsUsed != want[i].CPUsUsed ||
			n.GPUs != want[i].GPUs || n.GPUsUsed != want[i].GPUsUsed || n.GPUType != want[i].GPUType ||
			len(n.Partitions) != 2 || n.Partitions[0] != "debug" || n.Partitions[1] != "long" {
			t.Errorf("node %d = %+v, want %+v", i, nodes[i], want[i])
		}
	}
}

// TestRecordedFailures2411: what 24.11's commands print with munged,
// slurmctld or slurmdbd stopped, and sbatch's rejections, classified as on
// 22.05. Unlike 22.05, squeue --json with slurmctld down prints no JSON: it
// exits 1 with "slurm_load_jobs error: Unable to contact slurm controller".
func TestRecordedFailures2411(t *testing.T) { checkRecordedFailures(t, "24.11") }

// checkRecordedFailures classifies what release's commands printed with
// munged, slurmctld or slurmdbd stopped (fail-*-RELEASE.txt) and sbatch's
// rejections (sbatch-reject-*-RELEASE.txt), as on 22.05.
func checkRecordedFailures(t *testing.T, release string) {
	t.Helper()
	cases := []struct {
		file, cmd string
		want      error
	}{
		{"fail-munged-squeue-" + release + ".txt", "squeue", ErrMungeDown},
		{"fail-munged-sbatch-" + release + ".txt", "sbatch", ErrMungeDown},
		{"fail-munged-sacct-" + release + ".txt", "sacct", ErrMungeDown},
		{"fail-slurmctld-squeue-" + release + ".txt", "squeue", ErrControllerDown},
		{"fail-slurmctld-sbatch-" + release + ".txt", "sbatch", ErrControllerDown},
		{"fail-slurmdbd-sacct-" + release + ".txt", "sacct", provisioner.ErrNoAccounting},
	}
	for _, tc := range cases {
		kind, _ := classify(tc.cmd, []byte(readTestdata(t, tc.file)), exitErr)
		if kind != tc.want {
			t.Errorf("%s: kind %v, want %v", tc.file, kind, tc.want)
		}
	}
	if !connectFailed([]byte(readTestdata(t, "fail-slurmctld-sbatch-"+release+".txt"))) {
		t.Error("sbatch with slurmctld down: want a connect failure (safe to retry)")
	}
	rejections := map[string]string{
		"sbatch-reject-time-" + release + ".txt":      "Requested time limit is invalid (missing or exceeds some limit)",
		"sbatch-reject-account-" + release + ".txt":   "Invalid account or account/partition combination specified",
		"sbatch-reject-gpus-" + release + ".txt":      "Requested node configuration is not available",
		"sbatch-reject-partition-" + release + ".txt": "Invalid partition name specified (invalid partition specified: nosuchpartition)",
	}
	for f, want := range rejections {
		b := []byte(readTestdata(t, f))
		if kind, _ := classify("sbatch", b, exitErr); kind != nil {
			t.Errorf("%s classified as %v; a rejection has no kind", f, kind)
		}
		if got := rejection(b); got != want {
			t.Errorf("%s: reason %q, want %q", f, got, want)
		}
	}
}

// recordedSqueue2411 is what squeue-24.11.json says (see TestRealSqueueJSON2411).
func recordedSqueue2411() []provisioner.Job {
	return []provisioner.Job{
		{ID: "34", Name: "timeout", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Reason: "TimeLimit", Submit: ts(1795609865), Eligible: ts(1795609865), Start: ts(1795609865), End: ts(1795609950), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, Signal: 15},
		{ID: "35", Name: "train $(touch pwned) `id`; \"q\" 's", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609866), Eligible: ts(1795609866), Start: ts(1795609866), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1000, Comment: "mirage:c-rec/0.0 note; $(touch pwned2)", NodeList: []string{"node1"}},
		{ID: "36", Name: "multi", User: "root", Account: "teamb", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609867), Eligible: ts(1795609867), Start: ts(1795609868), TimeLimit: 30 * time.Minute, Nodes: 2, GPUs: 6, GPUType: "tesla", Priority: 1000, NodeList: []string{"node2", "node3"}},
		{ID: "37", Name: "dep", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "Dependency", Submit: ts(1795609867), TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1000, Depend: "afterany:35(unfulfilled)"},
		{ID: "38", Name: "big", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "Resources", Submit: ts(1795609867), Eligible: ts(1795609867), EstStart: ts(1795611668), TimeLimit: 5 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "39_0", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609868), Eligible: ts(1795609871), Start: ts(1795609871), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "40", Name: "held", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "JobHeldUser", Submit: ts(1795609869), TimeLimit: 1 * time.Minute, Nodes: 1},
		{ID: "41", Name: "fail", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Reason: "NonZeroExitCode", Submit: ts(1795609869), Eligible: ts(1795609869), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "42", Name: "ok", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795609869), Eligible: ts(1795609869), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, Comment: "mirage:c-rec/1.2", NodeList: []string{"node1"}},
		{ID: "43", Name: "cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: ts(1795609870), Eligible: ts(1795609870), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, Signal: 15},
		{ID: "44", Name: "pending-cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Reason: "Priority", Submit: ts(1795609870), Eligible: ts(1795609870), End: ts(1795609873), TimeLimit: 1 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "39_[1-3%1]", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "JobArrayTaskLimit", Submit: ts(1795609868), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, Priority: 1000},
	}
}

// recordedSacct2411 is what sacct-24.11.json says (see TestRealSacctJSON2411).
func recordedSacct2411() []provisioner.Job {
	return []provisioner.Job{
		{ID: "34", Name: "timeout", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Submit: ts(1795609865), Eligible: ts(1795609865), Start: ts(1795609865), End: ts(1795609950), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}},
		{ID: "35", Name: "train $(touch pwned) `id`; `q` 's", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609866), Eligible: ts(1795609866), Start: ts(1795609866), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "36", Name: "multi", User: "root", Account: "teamb", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609867), Eligible: ts(1795609867), Start: ts(1795609868), TimeLimit: 30 * time.Minute, Nodes: 2, GPUs: 6, GPUType: "tesla", Priority: 1000, NodeList: []string{"node2", "node3"}},
		{ID: "37", Name: "dep", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: ts(1795609867), TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1000},
		{ID: "38", Name: "big", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: ts(1795609867), Eligible: ts(1795609867), TimeLimit: 5 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "39_0", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795609868), Eligible: ts(1795609871), Start: ts(1795609871), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "39_[1-3%1]", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "JobArrayTaskLimit", Submit: ts(1795609868), TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, Priority: 1000},
		{ID: "40", Name: "held", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: ts(1795609869), TimeLimit: 1 * time.Minute, Nodes: 1},
		{ID: "41", Name: "fail", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Submit: ts(1795609869), Eligible: ts(1795609869), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "42", Name: "ok", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795609869), Eligible: ts(1795609869), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, Comment: "mirage:c-rec/1.2", NodeList: []string{"node1"}},
		{ID: "43", Name: "cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: ts(1795609870), Eligible: ts(1795609870), Start: ts(1795609871), End: ts(1795609872), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}},
		{ID: "44", Name: "pending-cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: ts(1795609870), Eligible: ts(1795609870), End: ts(1795609873), TimeLimit: 1 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
	}
}

func TestRealSqueueText2411(t *testing.T) {
	// The same moment printed by `squeue -O` in UTC: the same jobs, except
	// that the text has no exit codes.
	jobs, err := ParseSqueueText([]byte(readTestdata(t, "squeue-24.11.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSqueue2411()
	for i := range want {
		want[i].ExitCode, want[i].Signal = 0, 0
	}
	checkJobs(t, inOrderOf(t, jobs, want), want)
}

func TestRealSacctParsable2411(t *testing.T) {
	jobs, err := ParseSacctParsable([]byte(readTestdata(t, "sacct-24.11.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSacct2411()
	checkJobs(t, inOrderOf(t, jobs, want), want)
}
