package slurm

// Tests on outputs recorded from the project's real Slurm 22.05 cluster by
// scripts/slurm-record.sh. The recording submitted (all at 06:17:14 UTC,
// Unix 1795414634, as root):
//
//	91  timeout    teama debug 1 node, -t 1, sleeps: killed at its limit
//	92  train ...  teama debug 1 node, --gres=gpu:2, -t 3, name and comment with shell metacharacters
//	93  multi      teamb long  2 nodes, --gpus=tesla:6, -t 30
//	94  dep        teama debug --dependency=afterany:92, -t 2
//	95  big        teamb debug 4 nodes, --gres=gpu:4 (all 16 GPUs), -t 5: waits for resources
//	96  arr        teama debug --array=0-3%1, --gres=gpu:1, -t 3 (task 0 is job 101)
//	97  held       teama debug --hold, -t 1
//	98  fail       exit 3; 99 ok (comment mirage:c-rec/1.2, teamb); 100 cancelled after it started
//
// and recorded every output at 06:18:49, once job 91 had been killed.

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

const (
	recSubmit = 1795414634 // 06:17:14 UTC
	recStart  = 1795414636 // 06:17:16, first scheduling pass
	recStart2 = 1795414639 // 06:17:19, second pass (after the first jobs started)
)

const (
	recGPUName    = "train $(touch pwned) `id`; \"q\" 's"
	recGPUComment = "mirage:c-rec/0.0 note; $(touch pwned2)"
)

// recordedSqueue is what the recorded squeue outputs must parse to, worked
// out from the submissions above (times from the recording, checked against
// the scenario in the comments).
func recordedSqueue() []provisioner.Job {
	base := func(id, name, account string) provisioner.Job {
		return provisioner.Job{ID: id, Name: name, User: "root", Account: account, Partition: "debug", QOS: "normal",
			Submit: ts(recSubmit), Eligible: ts(recSubmit), Priority: 1000, Nodes: 1}
	}
	var jobs []provisioner.Job
	add := func(j provisioner.Job, mod func(*provisioner.Job)) {
		mod(&j)
		jobs = append(jobs, j)
	}
	add(base("91", "timeout", "teama"), func(j *provisioner.Job) {
		// Killed 87 s after its start (1795414723 - 1795414636): inside the
		// 60-95 s that 22.05 takes to enforce a 1-minute limit. squeue --json's
		// exit_code is the wait status 15: killed by SIGTERM.
		j.State, j.Reason, j.Start, j.End, j.TimeLimit = provisioner.StateTimeout, "TimeLimit", ts(recStart), ts(1795414723), time.Minute
		j.NodeList, j.Signal = []string{"node1"}, 15
	})
	add(base("92", recGPUName, "teama"), func(j *provisioner.Job) {
		// --gres=gpu:2 on one node; the allocation names the configured type.
		j.State, j.Start, j.TimeLimit, j.GPUs, j.GPUType = provisioner.StateRunning, ts(recStart), 3*time.Minute, 2, "tesla"
		j.NodeList, j.Comment = []string{"node1"}, recGPUComment
	})
	add(base("93", "multi", "teamb"), func(j *provisioner.Job) {
		// --gpus=tesla:6 over 2 nodes: a job total.
		j.Partition, j.State, j.Start, j.TimeLimit, j.Nodes = "long", provisioner.StateRunning, ts(recStart), 30*time.Minute, 2
		j.GPUs, j.GPUType, j.NodeList = 6, "tesla", []string{"node2", "node3"}
	})
	add(base("94", "dep", "teama"), func(j *provisioner.Job) {
		j.State, j.Reason, j.Eligible, j.TimeLimit = provisioner.StatePending, "Dependency", time.Time{}, 2*time.Minute
		j.Depend = "afterany:92(unfulfilled)"
	})
	add(base("95", "big", "teamb"), func(j *provisioner.Job) {
		// 4 nodes x 4 GPUs = 16. Its estimated start is when job 93 (30
		// minutes from 06:17:16) frees nodes 2 and 3: 1795414636 + 1800 = 1795416436.
		j.State, j.Reason, j.TimeLimit, j.Nodes, j.GPUs = provisioner.StatePending, "Resources", 5*time.Minute, 4, 16
		j.EstStart = ts(1795416436)
	})
	add(base("96_0", "arr", "teama"), func(j *provisioner.Job) {
		j.State, j.Start, j.TimeLimit, j.GPUs, j.GPUType = provisioner.StateRunning, ts(recStart2), 3*time.Minute, 1, "tesla"
		j.NodeList = []string{"node1"}
	})
	add(base("97", "held", "teama"), func(j *provisioner.Job) {
		j.State, j.Reason, j.Eligible, j.TimeLimit, j.Priority = provisioner.StatePending, "JobHeldUser", time.Time{}, time.Minute, 0
	})
	add(base("98", "fail", "teama"), func(j *provisioner.Job) {
		// exit 3: wait status 768 = 3 << 8.
		j.State, j.Reason, j.Start, j.End, j.TimeLimit = provisioner.StateFailed, "NonZeroExitCode", ts(recStart2), ts(recStart2), time.Minute
		j.NodeList, j.ExitCode = []string{"node1"}, 3
	})
	add(base("99", "ok", "teamb"), func(j *provisioner.Job) {
		j.State, j.Start, j.End, j.TimeLimit = provisioner.StateCompleted, ts(recStart2), ts(recStart2), time.Minute
		j.NodeList, j.Comment = []string{"node1"}, "mirage:c-rec/1.2"
	})
	add(base("100", "cancelled", "teama"), func(j *provisioner.Job) {
		j.State, j.Start, j.End, j.TimeLimit = provisioner.StateCancelled, ts(recStart2), ts(recStart2), time.Minute
		j.NodeList, j.Signal = []string{"node1"}, 15
	})
	add(base("96_[1-3%1]", "arr", "teama"), func(j *provisioner.Job) {
		j.State, j.Reason, j.Eligible, j.TimeLimit, j.GPUs = provisioner.StatePending, "JobArrayTaskLimit", time.Time{}, 3*time.Minute, 1
	})
	return jobs
}

func TestParseSqueueJSON2205(t *testing.T) {
	jobs, v, err := ParseSqueueJSON([]byte(readTestdata(t, "squeue-22.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v != (Version{Major: 22, Minor: 5, Micro: 8, Release: "22.05.8", Schema: "openapi/v0.0.38"}) {
		t.Errorf("version = %+v", v)
	}
	checkJobs(t, jobs, recordedSqueue())
}

// inOrderOf returns got in the order of want's ids (the text formats sort
// differently from the JSON), failing when the sets differ.
func inOrderOf(t *testing.T, got, want []provisioner.Job) []provisioner.Job {
	t.Helper()
	m := byID(t, got)
	if len(m) != len(want) {
		t.Fatalf("%d jobs, want %d", len(m), len(want))
	}
	var out []provisioner.Job
	for _, w := range want {
		g, ok := m[w.ID]
		if !ok {
			t.Fatalf("job %s missing", w.ID)
		}
		out = append(out, g)
	}
	return out
}

// byID indexes jobs by id.
func byID(t *testing.T, jobs []provisioner.Job) map[string]provisioner.Job {
	t.Helper()
	m := map[string]provisioner.Job{}
	for _, j := range jobs {
		if _, dup := m[j.ID]; dup {
			t.Fatalf("job %s twice", j.ID)
		}
		m[j.ID] = j
	}
	return m
}

func TestParseSqueueText2205(t *testing.T) {
	// The same moment as squeue-22.05.json, printed by `squeue -O` in UTC:
	// the same jobs, except that the text has no exit codes.
	jobs, err := ParseSqueueText([]byte(readTestdata(t, "squeue-22.05.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSqueue()
	for i := range want {
		want[i].ExitCode, want[i].Signal = 0, 0
	}
	checkJobs(t, inOrderOf(t, jobs, want), want)
}

func TestParseStartText2205(t *testing.T) {
	got, err := ParseStartText([]byte(readTestdata(t, "squeue-start-22.05.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	// Only job 95 has an estimate (the same as its start_time in squeue --json).
	want := map[string]time.Time{"95": ts(1795416436)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("estimates = %v, want %v", got, want)
	}
	// Read in another zone, the same wall-clock text is another instant:
	// 06:47:16 in UTC+1 is 05:47:16 UTC, one hour earlier.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	got, _ = ParseStartText([]byte(readTestdata(t, "squeue-start-22.05.txt")), berlin)
	if d := ts(1795416436).Sub(got["95"]); d != time.Hour {
		t.Errorf("zone not applied: difference %v, want 1h", d)
	}
}

// recordedSacct is what the recorded sacct outputs must parse to: the same
// jobs as squeue, as the accounting database holds them.
func recordedSacct() []provisioner.Job {
	sq := byIDNoT(recordedSqueue())
	var out []provisioner.Job
	for _, id := range []string{"91", "92", "93", "94", "95", "96_[1-3%1]", "97", "98", "99", "100", "96_0"} {
		j := sq[id]
		j.EstStart = time.Time{}
		j.ExitCode, j.Signal = 0, 0 // sacct prints ExitCode 0:0 for the killed jobs
		j.Depend = ""               // not an accounting field
		switch id {
		case "91":
			j.Reason = "" // sacct keeps the last pending reason (None), not TimeLimit
		case "92":
			// slurmdbd stores '"' as '`' in job names.
			j.Name = "train $(touch pwned) `id`; `q` 's"
			j.Comment = "" // the comment reaches accounting only when the job ends
		case "95":
			j.Reason = ""
		case "98":
			j.Reason, j.ExitCode = "", 3
		}
		out = append(out, j)
	}
	return out
}

func byIDNoT(jobs []provisioner.Job) map[string]provisioner.Job {
	m := map[string]provisioner.Job{}
	for _, j := range jobs {
		m[j.ID] = j
	}
	return m
}

func TestParseSacctParsable2205(t *testing.T) {
	jobs, err := ParseSacctParsable([]byte(readTestdata(t, "sacct-22.05.txt")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := recordedSacct()
	checkJobs(t, inOrderOf(t, jobs, want), want)
}

func TestParseSacctJSON2205(t *testing.T) {
	jobs, v, err := ParseSacctJSON([]byte(readTestdata(t, "sacct-22.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Schema != "openapi/dbv0.0.38" || v.Release != "22.05.8" {
		t.Errorf("version = %+v", v)
	}
	want := recordedSacct()
	for i := range want {
		if want[i].ID == "98" {
			// The known gap of 22.05's sacct --json: exit 3 is reported as 0
			// (the text above has 3:0). This is why History reads
			// --parsable2 on 22.05.
			want[i].ExitCode = 0
		}
	}
	// sacct --json lists the array's remainder by job id (96, before 97);
	// its task set comes as the bitmap 0xE = tasks 1, 2, 3 with 1 running at
	// most, rendered like the text: 96_[1-3%1].
	checkJobs(t, jobs, want)
}

func TestParseScontrolJob2205(t *testing.T) {
	recs, err := ParseScontrolJob([]byte(readTestdata(t, "scontrol-job-22.05.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 11 {
		t.Fatalf("%d records, want 11", len(recs))
	}
	var gpu, dep map[string]string
	for _, r := range recs {
		switch r["JobId"] {
		case "92":
			gpu = r
		case "94":
			dep = r
		}
	}
	for k, v := range map[string]string{
		// Tokens without "=" continue the previous value, so names and
		// comments with single spaces come back whole.
		"JobName": recGPUName, "Comment": recGPUComment, "TresPerNode": "gres:gpu:2", "JobState": "RUNNING",
		"AllocNode:Sid": gpu["AllocNode:Sid"], "NumNodes": "1", "Partition": "debug", "TimeLimit": "00:03:00",
	} {
		if gpu[k] != v || v == "" {
			t.Errorf("job 92 %s = %q, want %q", k, gpu[k], v)
		}
	}
	if dep["Dependency"] != "afterany:92(unfulfilled)" || dep["Reason"] != "Dependency" {
		t.Errorf("job 94: %v", dep)
	}
}

func TestParseNodes2205(t *testing.T) {
	// 4 nodes x 4 tesla GPUs in debug and long. GPUs in use: node1 has job
	// 92 (2) and 96_0 (1) = 3; node2 and node3 hold job 93's 6 (4 + 2);
	// node4 is idle, planned for job 95 (still schedulable).
	want := []provisioner.Node{
		{Name: "node1", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 2, GPUs: 4, GPUsUsed: 3, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node2", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 4, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node3", State: provisioner.NodeUp, CPUs: 8, CPUsUsed: 1, GPUs: 4, GPUsUsed: 2, GPUType: "tesla", Partitions: []string{"debug", "long"}},
		{Name: "node4", State: provisioner.NodeUp, CPUs: 8, GPUs: 4, GPUType: "tesla", Partitions: []string{"debug", "long"}},
	}
	fromJSON, _, err := ParseSinfoJSON([]byte(readTestdata(t, "sinfo-22.05.json")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, want) {
		t.Errorf("sinfo --json:\n%+v\nwant\n%+v", fromJSON, want)
	}
	fromText, err := ParseNodesText([]byte(readTestdata(t, "sinfo-nodes-22.05.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromText, want) {
		t.Errorf("sinfo -O:\n%+v\nwant\n%+v", fromText, want)
	}
}

func TestParsePartitions2205(t *testing.T) {
	got, err := ParsePartitionsText([]byte(readTestdata(t, "sinfo-partitions-22.05.txt")))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{"node1", "node2", "node3", "node4"}
	// scripts/slurm/slurm.conf.in: debug MaxTime=5 DefaultTime=5 Default=YES; long MaxTime=60 DefaultTime=10.
	want := []Partition{
		{Name: "debug", Default: true, Up: true, MaxTime: 5 * time.Minute, DefaultTime: 5 * time.Minute, Nodes: nodes, GPUsPerNode: 4},
		{Name: "long", Up: true, MaxTime: time.Hour, DefaultTime: 10 * time.Minute, Nodes: nodes, GPUsPerNode: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("partitions =\n%+v\nwant\n%+v", got, want)
	}
}

func TestRecordedFailures(t *testing.T) {
	cases := []struct {
		file, cmd string
		want      error
	}{
		{"fail-munged-squeue-22.05.txt", "squeue", ErrMungeDown},
		{"fail-munged-sbatch-22.05.txt", "sbatch", ErrMungeDown},
		{"fail-munged-sacct-22.05.txt", "sacct", ErrMungeDown},
		{"fail-slurmctld-sbatch-22.05.txt", "sbatch", ErrControllerDown},
		{"fail-slurmdbd-sacct-22.05.txt", "sacct", provisioner.ErrNoAccounting},
	}
	for _, tc := range cases {
		kind, _ := classify(tc.cmd, []byte(readTestdata(t, tc.file)), exitErr)
		if kind != tc.want {
			t.Errorf("%s: kind %v, want %v", tc.file, kind, tc.want)
		}
	}
	if !connectFailed([]byte(readTestdata(t, "fail-slurmctld-sbatch-22.05.txt"))) {
		t.Error("sbatch with slurmctld down: want a connect failure (safe to retry)")
	}
	// 22.05's squeue and sinfo --json exit 0 with an errors list when
	// slurmctld is down: never an empty queue.
	for _, f := range []string{"fail-slurmctld-squeue-22.05.json", "fail-munged-squeue-22.05.json"} {
		_, _, err := ParseSqueueJSON([]byte(readTestdata(t, f)))
		var je *JSONError
		if !asJSONError(err, &je) || !slices.Contains(je.Messages, "slurm_load_jobs: Failed while looking for jobs (Unspecified error) [error -1]") {
			t.Errorf("%s: err = %v, want a JSONError naming slurm_load_jobs", f, err)
		}
	}
	_, _, err := ParseSinfoJSON([]byte(readTestdata(t, "fail-slurmctld-sinfo-22.05.json")))
	var je *JSONError
	if !asJSONError(err, &je) || !slices.Equal(je.Messages, []string{"Unspecified error [error -1]"}) {
		t.Errorf("sinfo: err = %v", err)
	}
	rejections := map[string]string{
		"sbatch-reject-time-22.05.txt":      "Requested time limit is invalid (missing or exceeds some limit)",
		"sbatch-reject-account-22.05.txt":   "Invalid account or account/partition combination specified",
		"sbatch-reject-gpus-22.05.txt":      "Requested node configuration is not available",
		"sbatch-reject-partition-22.05.txt": "Invalid partition name specified (invalid partition specified: nosuchpartition)",
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

func TestClientOnRecordedControllerDown(t *testing.T) {
	// squeue --json exits 0 with the errors list: the Client must report the
	// controller down (and retry), not an empty queue.
	doc := readTestdata(t, "fail-slurmctld-squeue-22.05.json")
	r := &fakeRunner{replies: map[string][]reply{"squeue": {{out: doc}}}}
	c, clk := newTestClient(t, r, func(c *Config) { c.Retry.Attempts = 2 })
	_, err := c.Jobs(t.Context(), JobFilter{})
	if !errorsIs(err, ErrControllerDown) || !errorsIs(err, provisioner.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrControllerDown", err)
	}
	if r.count("squeue") != 2 || len(clk.waits) != 1 {
		t.Errorf("runs %d, waits %v: want 2 runs (retried once)", r.count("squeue"), clk.waits)
	}
	// With munged down the stderr names MUNGE: not retried.
	r = &fakeRunner{replies: map[string][]reply{"squeue": {{out: readTestdata(t, "fail-munged-squeue-22.05.json"),
		stderr: readTestdata(t, "fail-munged-squeue-22.05.txt")}}}}
	c, _ = newTestClient(t, r, nil)
	if _, err := c.Jobs(t.Context(), JobFilter{}); !errorsIs(err, ErrMungeDown) || r.count("squeue") != 1 {
		t.Errorf("munge down: err = %v after %d runs", err, r.count("squeue"))
	}
}

func asJSONError(err error, target **JSONError) bool { return errors.As(err, target) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
