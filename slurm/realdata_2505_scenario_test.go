package slurm

// Extra fixtures: real Slurm 25.05.8 outputs (data_parser v0.0.43, and v0.0.40 to
// v0.0.42 through --json=vX), recorded with ../shared/slurm-newer/scenario.sh
// (11 jobs of known outcome; the truth of each is in its jobs.env) at its
// third moment (t3: after the timeout of toD). The expectations were read off
// the files and checked against that truth.

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestScenarioSqueueJSON2505(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-25.05-scenario.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v != (Version{Major: 25, Minor: 5, Micro: 8, Release: "25.05.8", Schema: "data_parser/v0.0.43"}) || !v.Known() {
		t.Errorf("version = %+v", v)
	}
	// squeue --json --states=all: the ended jobs are listed. holdK (10) was
	// cancelled while held: slurmctld gives it its end time as start time,
	// but it has no nodes, so no start. cancE (--gpus=2) and toD end with
	// signal 15; cmtJ's comment keeps its quotes and non-ASCII.
	checkJobs(t, jobs, []provisioner.Job{
		{ID: "1", Name: "gpuA", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), TimeLimit: 20 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1, Comment: "mirage:chainA/0.0", NodeList: []string{"node1"}},
		{ID: "2", Name: "gpuB", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), TimeLimit: 20 * time.Minute, Nodes: 2, GPUs: 8, GPUType: "tesla", Priority: 1, NodeList: []string{"node2", "node3"}},
		{ID: "3", Name: "depC", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StatePending, Reason: "Dependency", Submit: ts(1795481470), TimeLimit: 15 * time.Minute, Nodes: 1, GPUs: 1, Priority: 1, Comment: "mirage:chainA/1.0", Depend: "afterok:1(unfulfilled)"},
		{ID: "4", Name: "toD", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Reason: "TimeLimit", Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481557), TimeLimit: 1 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}, Signal: 15},
		{ID: "5", Name: "cancE", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481486), TimeLimit: 5 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}, Signal: 15},
		{ID: "6", Name: "okG", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481473), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "7", Name: "failH", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Reason: "NonZeroExitCode", Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481471), TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "8_0", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481511), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "9", Name: "cmtJ", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481476), TimeLimit: 3 * time.Minute, Nodes: 1, Priority: 1, Comment: "note: a b=c \"q\" ü", NodeList: []string{"node1"}},
		{ID: "10", Name: "holdK", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StateCancelled, Reason: "JobHeldUser", Submit: ts(1795481470), End: ts(1795481486), TimeLimit: 10 * time.Minute, Nodes: 1, GPUs: 1},
		{ID: "8_1", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481511), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "8_2", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481511), Start: ts(1795481511), End: ts(1795481552), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "13", Name: "bigF", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StatePending, Reason: "Resources", Submit: ts(1795481473), Eligible: ts(1795481473), EstStart: ts(1795482671), TimeLimit: 10 * time.Minute, Nodes: 2, GPUs: 8, Priority: 1},
		{ID: "8_3", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481511), Start: ts(1795481512), End: ts(1795481552), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
	})
}

func TestScenarioSacctJSON2505(t *testing.T) {
	jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-25.05-scenario.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != "25.05.8" || v.Schema != "data_parser/v0.0.43" {
		t.Errorf("version = %+v", v)
	}
	// The same moment from sacct -S/-E: depC (waiting on a dependency) and
	// holdK (held, then cancelled) were never eligible and are absent;
	// gpuA's comment is empty while it runs; cancE and toD exit 0:0.
	checkJobs(t, jobs, []provisioner.Job{
		{ID: "1", Name: "gpuA", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), TimeLimit: 20 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "2", Name: "gpuB", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StateRunning, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), TimeLimit: 20 * time.Minute, Nodes: 2, GPUs: 8, GPUType: "tesla", Priority: 1, NodeList: []string{"node2", "node3"}},
		{ID: "4", Name: "toD", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateTimeout, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481557), TimeLimit: 1 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "5", Name: "cancE", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCancelled, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481486), TimeLimit: 5 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "6", Name: "okG", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481473), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "7", Name: "failH", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateFailed, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481471), TimeLimit: 2 * time.Minute, Nodes: 1, Priority: 1, NodeList: []string{"node1"}, ExitCode: 3},
		{ID: "9", Name: "cmtJ", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481476), TimeLimit: 3 * time.Minute, Nodes: 1, Priority: 1, Comment: "note: a b=c \"q\" ü", NodeList: []string{"node1"}},
		{ID: "8_0", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481511), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "8_1", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Submit: ts(1795481470), Eligible: ts(1795481470), Start: ts(1795481471), End: ts(1795481511), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "8_2", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Reason: "JobArrayTaskLimit", Submit: ts(1795481470), Eligible: ts(1795481511), Start: ts(1795481511), End: ts(1795481552), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node1"}},
		{ID: "8_3", Name: "arrI", User: "root", Account: "teama", Partition: "debug", QOS: "normal", State: provisioner.StateCompleted, Reason: "JobArrayTaskLimit", Submit: ts(1795481470), Eligible: ts(1795481511), Start: ts(1795481512), End: ts(1795481552), TimeLimit: 2 * time.Minute, Nodes: 1, GPUs: 1, GPUType: "tesla", Priority: 1, NodeList: []string{"node4"}},
		{ID: "13", Name: "bigF", User: "root", Account: "teama", Partition: "long", QOS: "normal", State: provisioner.StatePending, Submit: ts(1795481473), Eligible: ts(1795481473), TimeLimit: 10 * time.Minute, Nodes: 2, GPUs: 8, Priority: 1},
	})
}

// TestRealSacctCancelledPending: a job cancelled while it waited for
// resources (18, liveB), from sacct -j in every schema 25.05 writes: its
// time.start is the plain NO_VAL 4294967294 in each, read as no start
// (it once read as 2106-02-07T06:28:14Z; issue #17).
func TestRealSacctCancelledPending(t *testing.T) {
	want := []provisioner.Job{{ID: "18", Name: "liveB", User: "root", Account: "teama", Partition: "long", QOS: "normal",
		State: provisioner.StateCancelled, Submit: ts(1795481956), Eligible: ts(1795481956), End: ts(1795482032),
		TimeLimit: 5 * time.Minute, Nodes: 4, GPUs: 16, Priority: 1}}
	for _, schema := range []string{"v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43"} {
		jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, fmt.Sprintf("sacct-25.05-cancelled-pending-%s.json", schema))))
		if err != nil {
			t.Fatal(err)
		}
		if v.Schema != "data_parser/"+schema {
			t.Errorf("%s: version = %+v", schema, v)
		}
		checkJobs(t, jobs, want)
	}
}

// TestScenarioSchemasAgree2505: one moment printed by 25.05.8 in each schema it
// writes (--json=v0.0.40 to v0.0.43: the shapes of 23.11, 24.05, 24.11 and
// 25.05) reads as the same jobs and nodes in each.
func TestScenarioSchemasAgree2505(t *testing.T) {
	want, _, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-25.05-scenario-v0.0.43.json")))
	if err != nil || len(want) == 0 {
		t.Fatalf("squeue v0.0.43: %d jobs, %v", len(want), err)
	}
	wantAcct, _, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-25.05-scenario-v0.0.43.json")))
	if err != nil || len(wantAcct) == 0 {
		t.Fatalf("sacct v0.0.43: %d jobs, %v", len(wantAcct), err)
	}
	wantNodes, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-25.05-scenario-v0.0.43.json")))
	if err != nil || len(wantNodes) != 4 {
		t.Fatalf("sinfo v0.0.43: %+v, %v", wantNodes, err)
	}
	for _, schema := range []string{"v0.0.40", "v0.0.41", "v0.0.42"} {
		jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-25.05-scenario-"+schema+".json")))
		if err != nil || v.Schema != "data_parser/"+schema {
			t.Fatalf("squeue %s: %v, %v", schema, v, err)
		}
		checkJobs(t, jobs, want)
		acct, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-25.05-scenario-"+schema+".json")))
		if err != nil || v.Schema != "data_parser/"+schema {
			t.Fatalf("sacct %s: %v, %v", schema, v, err)
		}
		checkJobs(t, acct, wantAcct)
		nodes, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-25.05-scenario-"+schema+".json")))
		if err != nil || len(nodes) != len(wantNodes) {
			t.Fatalf("sinfo %s: %+v, %v", schema, nodes, err)
		}
		for i := range nodes {
			// 25.05 lists a node's partitions in no fixed order.
			a, b := nodes[i], wantNodes[i]
			a.Partitions, b.Partitions = slices.Sorted(slices.Values(a.Partitions)), slices.Sorted(slices.Values(b.Partitions))
			if !reflect.DeepEqual(a, b) {
				t.Errorf("sinfo %s: node %+v, want %+v", schema, nodes[i], wantNodes[i])
			}
		}
	}
}
