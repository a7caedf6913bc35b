package slurm

// Tests of the JSON parsers on hand-written documents in the shapes of the
// later Slurm releases (data_parser v0.0.39 to v0.0.43: numbers as
// {set,infinite,number}, job_state as a list of base state and flags,
// meta.slurm with string version numbers). Each expected value is read off
// the fixture by hand; comments give the arithmetic where there is any.

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// ts is a Unix time in UTC (how the parsers return JSON times).
func ts(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// checkJobs compares parsed jobs with expectations field by field, naming the job and field.
func checkJobs(t *testing.T, got, want []provisioner.Job) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d jobs, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := reflect.ValueOf(got[i]), reflect.ValueOf(want[i])
		for f := 0; f < w.NumField(); f++ {
			if !reflect.DeepEqual(g.Field(f).Interface(), w.Field(f).Interface()) {
				t.Errorf("job %s: %s = %#v, want %#v", want[i].ID, w.Type().Field(f).Name, g.Field(f).Interface(), w.Field(f).Interface())
			}
		}
	}
}

func TestParseSqueueJSON2302(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-23.02.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 23 || v.Minor != 2 || v.Micro != 5 || v.Release != "23.02.5" || v.Schema != "data_parser/v0.0.39" || !v.Known() {
		t.Errorf("version = %+v", v)
	}
	checkJobs(t, jobs, []provisioner.Job{
		{ID: "501", Name: "train", User: "alice", Account: "teama", Partition: "gpu", QOS: "normal",
			State: provisioner.StateRunning, Submit: ts(1795499940), Eligible: ts(1795500000), Start: ts(1795500060),
			TimeLimit: 60 * time.Minute, Nodes: 2, GPUs: 8, GPUType: "a100", Priority: 4242,
			Comment: "mirage:c-23/4.1", NodeList: []string{"gpu01", "gpu02"}},
		// The pending rest of array 600: id 600_[3-9%2]; an infinite limit reads as 0 (none).
		{ID: "600_[3-9%2]", Name: "sweep", User: "bob", Account: "teamb", Partition: "gpu", QOS: "normal",
			State: provisioner.StatePending, Reason: "JobArrayTaskLimit", Submit: ts(1795499000), Eligible: ts(1795499000),
			EstStart: ts(1795507200), Nodes: 1, GPUs: 1, Priority: 100},
		// Array task 2 of 600, killed by signal 9 (v0.0.39 names the signal "signal_id").
		{ID: "600_2", Name: "sweep", User: "bob", Account: "teamb", Partition: "gpu", QOS: "normal",
			State: provisioner.StateCancelled, Submit: ts(1795499000), Eligible: ts(1795499000), Start: ts(1795500100),
			End: ts(1795500500), TimeLimit: 30 * time.Minute, Nodes: 1, GPUs: 1, Priority: 100,
			NodeList: []string{"gpu03"}, Signal: 9},
		// Pending on a dependency: no estimate; GPUs from tres_req_str, the type from tres_per_node.
		{ID: "502", Name: "train", User: "alice", Account: "teama", Partition: "gpu", QOS: "normal",
			State: provisioner.StatePending, Reason: "Dependency", Submit: ts(1795501000), TimeLimit: 60 * time.Minute,
			Nodes: 2, GPUs: 8, GPUType: "a100", Priority: 4200, Comment: "mirage:c-23/5.0", Depend: "afterany:501(unfulfilled)"},
	})
}

func TestParseSqueueJSON2311(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-23.11.json")))
	if err != nil {
		t.Fatal(err)
	}
	// meta.slurm (lower case) with string numbers, placed after "jobs".
	if v.Major != 23 || v.Minor != 11 || v.Micro != 4 || v.Schema != "data_parser/v0.0.40" {
		t.Errorf("version = %+v", v)
	}
	checkJobs(t, jobs, []provisioner.Job{
		// ["RUNNING","COMPLETING"]: the base state wins over the flag.
		{ID: "7001", Name: "llm-pretrain", User: "carol", Account: "teama", Partition: "batch", QOS: "high",
			State: provisioner.StateRunning, Submit: ts(1795599000), Eligible: ts(1795600000), Start: ts(1795600000),
			TimeLimit: 120 * time.Minute, Nodes: 4, GPUs: 32, Priority: 9000, Comment: "mirage:c-2311/0.0",
			NodeList: []string{"n1", "n2", "n3", "n4"}},
		// ["PENDING","REQUEUED"] is pending; typed GPUs from tres_req_str.
		{ID: "7002", Name: "eval", User: "dave", Account: "teamb", Partition: "batch", QOS: "scavenger",
			State: provisioner.StatePending, Reason: "Resources", Submit: ts(1795601000), Eligible: ts(1795601000),
			EstStart: ts(1795607200), TimeLimit: 45 * time.Minute, Nodes: 1, GPUs: 2, GPUType: "h100", Priority: 10},
		{ID: "7000", Name: "eval", User: "dave", Account: "teamb", Partition: "batch", QOS: "scavenger",
			State: provisioner.StateTimeout, Submit: ts(1795589000), Eligible: ts(1795590000), Start: ts(1795590000),
			End: ts(1795593600), TimeLimit: 60 * time.Minute, Nodes: 1, Priority: 10, NodeList: []string{"n5"}, ExitCode: 2},
	})
}

func TestParseSacctJSON2405(t *testing.T) {
	jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-24.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	// minor "05" as a string reads as 5.
	if v.Major != 24 || v.Minor != 5 || v.Micro != 3 {
		t.Errorf("version = %+v", v)
	}
	checkJobs(t, jobs, []provisioner.Job{
		// Typed and untyped gres entries: the untyped count is the total, the typed names the type.
		{ID: "8001", Name: "train", User: "gina", Account: "teama", Partition: "gpu", QOS: "normal",
			State: provisioner.StateTimeout, Submit: ts(1795799990), Eligible: ts(1795800000), Start: ts(1795800030),
			End: ts(1795803660), TimeLimit: time.Hour, Nodes: 2, GPUs: 8, GPUType: "h100", Priority: 3000,
			Comment: "mirage:c-2405/0.0", NodeList: []string{"gpu07", "gpu09"}},
		{ID: "8100_3", Name: "sweep", User: "hank", Account: "teamb", Partition: "cpu", QOS: "normal",
			State: provisioner.StateFailed, Reason: "NonZeroExitCode", Submit: ts(1795800900), Eligible: ts(1795801000),
			Start: ts(1795801100), End: ts(1795801200), TimeLimit: 10 * time.Minute, Nodes: 1, Priority: 20,
			NodeList: []string{"cpu3"}, ExitCode: 7},
		// Pending: no allocation yet, so nodes and GPUs come from the requested TRES.
		{ID: "8200", Name: "queued", User: "hank", Account: "teamb", Partition: "gpu", QOS: "normal",
			State: provisioner.StatePending, Reason: "Priority", Submit: ts(1795802000), Eligible: ts(1795802000),
			TimeLimit: 30 * time.Minute, Nodes: 1, GPUs: 1, Priority: 10},
	})
}

func TestParseSinfoJSONGrouped(t *testing.T) {
	nodes, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-23.11-grouped.json")))
	if err != nil {
		t.Fatal(err)
	}
	want := []provisioner.Node{
		// Two nodes in one entry: 128 CPUs / 2 = 64 each, 32 / 2 = 16 used; GPUs in use unattributable.
		{Name: "n1", State: provisioner.NodeUp, CPUs: 64, CPUsUsed: 16, GPUs: 4, Partitions: []string{"batch"}},
		{Name: "n2", State: provisioner.NodeUp, CPUs: 64, CPUsUsed: 16, GPUs: 4, Partitions: []string{"batch"}},
		{Name: "n3", State: provisioner.NodeUp, CPUs: 64, GPUs: 4, Partitions: []string{"batch"}},
	}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("nodes =\n%+v\nwant\n%+v", nodes, want)
	}
}

func TestParseJSONVersions(t *testing.T) {
	cases := []struct {
		name    string
		doc     string
		wantErr string // substring; "" = no error
		unsup   bool   // the error wraps ErrUnsupportedVersion
		known   bool
	}{
		{"no meta", `{"jobs":[]}`, "no meta.slurm.version", true, false},
		{"too old", `{"meta":{"plugin":{"type":"openapi/v0.0.37"},"Slurm":{"version":{"major":21,"minor":8,"micro":5},"release":"21.08.5"}},"jobs":[]}`, "older than Slurm 22.05", true, false},
		{"future without jobs", `{"meta":{"plugin":{"data_parser":"data_parser/v0.0.99"},"slurm":{"version":{"major":"31","minor":"05","micro":"0"},"release":"31.05.0"}},"queue":[]}`, `no "jobs" list in the output of Slurm 31.05.0 (data_parser/v0.0.99) (mirage reads Slurm 22.05 to 25.11)`, true, false},
		{"future with jobs", `{"meta":{"slurm":{"version":{"major":"31","minor":"05","micro":"0"},"release":"31.05.0"}},"jobs":[{"job_id":1,"job_state":["RUNNING"]}]}`, "", false, false},
		{"only a release string", `{"meta":{"slurm":{"release":"24.05.2"}},"jobs":[]}`, "", false, true},
		{"syntax error names version", `{"meta":{"slurm":{"release":"24.05.2"}},"jobs":[{"job_id":1,]}`, "squeue --json: output of Slurm 24.05.2: JSON offset", false, true},
		{"not JSON", `squeue: error: something`, "squeue --json: JSON offset 0", false, false},
		{"trailing garbage", `{"meta":{"slurm":{"release":"24.05.2"}},"jobs":[]} x`, "data after the top-level value", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, v, err := ParseSqueueJSON([]byte(tc.doc))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrUnsupportedVersion) != tc.unsup {
				t.Errorf("errors.Is(%v, ErrUnsupportedVersion) = %v, want %v", err, !tc.unsup, tc.unsup)
			}
			if v.Known() != tc.known {
				t.Errorf("Known() = %v for %+v", v.Known(), v)
			}
		})
	}
}
