package slurm

// Tests on outputs recorded from the project's real Slurm 25.05 cluster
// (scripts/slurm-newer/up.sh 25.05; scripts/slurm-record.sh 25.05): the same
// jobs as the 22.05 and 24.11 recordings (timeout 406, the GPU job with shell
// metacharacters 407, multi 408, dep 409, big 410, array 411, held 412, fail
// 413, ok 414, cancelled 415, pending-cancelled 416), in data_parser v0.0.43
// and in every older schema 25.05 still writes (--json=v0.0.40 to v0.0.42,
// the shapes of 23.11, 24.05 and 24.11). The expectations were read off the
// text outputs (squeue -O, sacct --parsable2), not the JSON, and checked
// against what each job was submitted to do (slurm-record.sh).

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestRealSqueueJSON2505(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-25.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v != (Version{Major: 25, Minor: 5, Micro: 8, Release: "25.05.8", Schema: "data_parser/v0.0.43"}) || !v.Known() {
		t.Errorf("version = %+v", v)
	}
	// squeue --json --all --states=all: the jobs that ended (406, 413-416)
	// are listed. 416 was cancelled while it waited: slurmctld gives it its
	// end time as start time, but it has no nodes, so no start (issue #17).
	checkJobs(t, jobs, recordedSqueue2505())
}

func TestRealSacctJSON2505(t *testing.T) {
	jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-25.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != "25.05.8" || v.Schema != "data_parser/v0.0.43" {
		t.Errorf("version = %+v", v)
	}
	// As on 24.11: 416's time.start is the plain NO_VAL 4294967294 (no
	// start); the pending array's eligible time is the plain INFINITE
	// 4294967295 (none); a running job's comment is empty (407); exit codes
	// of cancelled and timed-out jobs are 0:0; double quotes in a name come
	// back as backquotes. Unlike 24.11, the pending array's reason is None.
	checkJobs(t, jobs, recordedSacct2505())
}

func TestRealSqueueText2505(t *testing.T) {
	jobs, err := ParseSqueueText([]byte(readTestdata(t, "squeue-25.05.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSqueue2505()
	for i := range want {
		want[i].ExitCode, want[i].Signal = 0, 0 // the text has no exit codes
	}
	checkJobs(t, inOrderOf(t, jobs, want), want)
}

func TestRealSacctParsable2505(t *testing.T) {
	jobs, err := ParseSacctParsable([]byte(readTestdata(t, "sacct-25.05.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSacct2505()
	checkJobs(t, inOrderOf(t, jobs, want), want)
}

func TestRealSinfoJSON2505(t *testing.T) {
	nodes, v, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-25.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != "25.05.8" {
		t.Errorf("version = %+v", v)
	}
	// node1 runs 407 (2 GPUs) and 411_0 (1 GPU); node2 and node3 run 408
	// (6 GPUs: 4 + 2); node4 is idle.
	want := []provisioner.Node{
		{Name: "node1", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 2, GPUs: 4, GPUsUsed: 3, GPUType: "tesla"},
		{Name: "node2", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 4, GPUType: "tesla"},
		{Name: "node3", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 2, GPUType: "tesla"},
		{Name: "node4", State: provisioner.NodeUp, CPUs: 8, GPUs: 4, GPUType: "tesla"},
	}
	if len(nodes) != len(want) {
		t.Fatalf("nodes = %+v", nodes)
	}
	for i := range want {
		n := nodes[i]
		// 25.05 lists a node's partitions in no fixed order.
		if got := slices.Sorted(slices.Values(n.Partitions)); !slices.Equal(got, []string{"debug", "long"}) {
			t.Errorf("node %s partitions %v, want debug and long", n.Name, n.Partitions)
		}
		if n.Name != want[i].Name || n.State != want[i].State || n.CPUs != want[i].CPUs || n.CPUsUsed != want[i].CPUsUsed ||
			n.GPUs != want[i].GPUs || n.GPUsUsed != want[i].GPUsUsed || n.GPUType != want[i].GPUType {
			t.Errorf("node %d = %+v, want %+v", i, nodes[i], want[i])
		}
	}
}

// TestRealSchemasAgree2505: the recording's moment in every schema 25.05
// writes reads as the same jobs and nodes as in v0.0.43, each document
// naming its own schema.
func TestRealSchemasAgree2505(t *testing.T) {
	wantNodes, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-25.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{"v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43"} {
		jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-25.05-"+schema+".json")))
		if err != nil || v.Schema != "data_parser/"+schema {
			t.Fatalf("squeue %s: %+v, %v", schema, v, err)
		}
		checkJobs(t, jobs, recordedSqueue2505())
		acct, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-25.05-"+schema+".json")))
		if err != nil || v.Schema != "data_parser/"+schema {
			t.Fatalf("sacct %s: %+v, %v", schema, v, err)
		}
		checkJobs(t, acct, recordedSacct2505())
		nodes, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-25.05-"+schema+".json")))
		if err != nil || len(nodes) != len(wantNodes) {
			t.Fatalf("sinfo %s: %+v, %v", schema, nodes, err)
		}
		for i := range nodes {
			a, b := nodes[i], wantNodes[i]
			a.Partitions, b.Partitions = slices.Sorted(slices.Values(a.Partitions)), slices.Sorted(slices.Values(b.Partitions))
			if !reflect.DeepEqual(a, b) {
				t.Errorf("sinfo %s: node %+v, want %+v", schema, nodes[i], wantNodes[i])
			}
		}
	}
}

// TestRecordedFailures2505: what 25.05's commands print with munged,
// slurmctld or slurmdbd stopped, and sbatch's rejections, classified as on
// 22.05 and 24.11. sacct needs no slurmctld (its file is empty).
func TestRecordedFailures2505(t *testing.T) {
	checkRecordedFailures(t, "25.05")
	if readTestdata(t, "fail-slurmctld-sacct-25.05.txt") != "" {
		t.Error("sacct with slurmctld down printed an error; the recording says it needs only slurmdbd")
	}
}

// The recording's clock: every job was submitted at 10:08:53 UTC on
// 2026-11-27; the first ones started at :56, the rest at :57; the timeout
// job was killed at 10:10:22; big's start estimate is 10:38:56.
const (
	rec25Submit   = 1795774133
	rec25Start    = 1795774136
	rec25Start2   = 1795774137
	rec25Timeout  = 1795774222
	rec25Estimate = 1795775936
)

// recordedSqueue2505 is what squeue-25.05.json says (see TestRealSqueueJSON2505).
func recordedSqueue2505() []provisioner.Job {
	sub, st, st2 := ts(rec25Submit), ts(rec25Start), ts(rec25Start2)
	return []provisioner.Job{
		{ID: "406", Name: "timeout", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Reason: "TimeLimit", Submit: sub, Eligible: sub, Start: st, End: ts(rec25Timeout), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, Signal: 15},
		{ID: "407", Name: "train $(touch pwned) `id`; \"q\" 's", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: sub, Start: st, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1000, Comment: "mirage:c-rec/0.0 note; $(touch pwned2)", NodeList: []string{"node1"}},
		{ID: "408", Name: "multi", User: "root", Account: "teamb", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: sub, Start: st, TimeLimit: 30 * time.Minute, Nodes: 2, GPUs: 6, GPUType: "tesla", Priority: 1000, NodeList: []string{"node2", "node3"}},
		{ID: "409", Name: "dep", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "Dependency", Submit: sub, TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1000, Depend: "afterany:407(unfulfilled)"},
		{ID: "410", Name: "big", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "Resources", Submit: sub, Eligible: sub, EstStart: ts(rec25Estimate), TimeLimit: 5 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "411_0", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: st, Start: st2, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "412", Name: "held", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "JobHeldUser", Submit: sub, TimeLimit: 1 * time.Minute, Nodes: 1},
		{ID: "413", Name: "fail", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Reason: "NonZeroExitCode", Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "414", Name: "ok", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, Comment: "mirage:c-rec/1.2", NodeList: []string{"node1"}},
		{ID: "415", Name: "cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, Signal: 15},
		{ID: "416", Name: "pending-cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Reason: "Priority", Submit: sub, Eligible: sub, End: st2, TimeLimit: 1 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "411_[1-3%1]", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Reason: "JobArrayTaskLimit", Submit: sub, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, Priority: 1000},
	}
}

// recordedSacct2505 is what sacct-25.05.json says (see TestRealSacctJSON2505).
func recordedSacct2505() []provisioner.Job {
	sub, st, st2 := ts(rec25Submit), ts(rec25Start), ts(rec25Start2)
	return []provisioner.Job{
		{ID: "406", Name: "timeout", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Submit: sub, Eligible: sub, Start: st, End: ts(rec25Timeout), TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}},
		{ID: "407", Name: "train $(touch pwned) `id`; `q` 's", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: sub, Start: st, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "408", Name: "multi", User: "root", Account: "teamb", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: sub, Start: st, TimeLimit: 30 * time.Minute, Nodes: 2, GPUs: 6, GPUType: "tesla", Priority: 1000, NodeList: []string{"node2", "node3"}},
		{ID: "409", Name: "dep", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: sub, TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1000},
		{ID: "410", Name: "big", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: sub, Eligible: sub, TimeLimit: 5 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "412", Name: "held", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: sub, TimeLimit: 1 * time.Minute, Nodes: 1},
		{ID: "413", Name: "fail", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "414", Name: "ok", User: "root", Account: "teamb", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, Comment: "mirage:c-rec/1.2", NodeList: []string{"node1"}},
		{ID: "415", Name: "cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: sub, Eligible: sub, Start: st2, End: st2, TimeLimit: 1 * time.Minute, Nodes: 1, Priority: 1000, NodeList: []string{"node1"}},
		{ID: "416", Name: "pending-cancelled", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: sub, Eligible: sub, End: st2, TimeLimit: 1 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1000},
		{ID: "411_0", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateRunning, Submit: sub, Eligible: st, Start: st2, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1000, NodeList: []string{"node1"}},
		{ID: "411_[1-3%1]", Name: "arr", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StatePending, Submit: sub, TimeLimit: 3 * time.Minute, Nodes: 1, GPUs: 1, Priority: 1000},
	}
}
