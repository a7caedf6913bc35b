package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/traces"
)

// writeCSVTrace writes jobs as a canonical CSV trace.
func writeCSVTrace(t *testing.T, jobs []traces.Job) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jobs.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := traces.NewCSVWriter(f)
	for _, j := range jobs {
		if err := w.Write(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestSimCommandSlurmConf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2023, 1, 2, 10, 0, 0, 0, time.UTC)
	min := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	// one exclusive node: a runs 10:00-10:10 (recorded 10 min); b, submitted
	// at 10:01, waits for it and runs its recorded 10 min: 10:10-10:20; c
	// ran 50 min in the record but its limit is 30: TIMEOUT at 10:50.
	tr := writeCSVTrace(t, []traces.Job{
		{ID: "a", User: "u", Submit: min(0), Start: min(0), End: min(10), TimeLimit: 30 * time.Minute, Nodes: 1},
		{ID: "b", User: "u", Submit: min(1), Start: min(10), End: min(20), TimeLimit: 30 * time.Minute, Nodes: 1},
		{ID: "c", User: "u", Submit: min(2), Start: min(20), End: min(70), TimeLimit: 30 * time.Minute, Nodes: 1},
	})
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("SelectType=select/linear\nNodeName=n1 CPUs=8 Gres=gpu:4\nPartitionName=p Nodes=n1 Default=YES MaxTime=1:00:00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMirage(t, "sim", "--trace", tr, "--preset", "default", "--slurm-conf", conf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `id,submit,start,end,state,nodes
a,2023-01-02T10:00:00Z,2023-01-02T10:00:00Z,2023-01-02T10:10:00Z,COMPLETED,1
b,2023-01-02T10:01:00Z,2023-01-02T10:10:00Z,2023-01-02T10:20:00Z,COMPLETED,1
c,2023-01-02T10:02:00Z,2023-01-02T10:20:00Z,2023-01-02T10:50:00Z,TIMEOUT,1
`
	if _, csv, ok := strings.Cut(out, "\n"); !ok || csv != want {
		t.Fatalf("output:\n%s\nwant (after the summary line):\n%s", out, want)
	}
	if stderr != "" {
		t.Fatalf("stderr not quiet off a terminal: %q", stderr)
	}
}

func TestSimCommandReportJSON(t *testing.T) {
	t.Parallel()
	p, n := synthFile(t)
	out, stderr, code := runMirage(t, "sim", "--trace", p, "--report", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Nodes    int `json:"nodes"`
		Replayed int `json:"replayed"`
		Report   struct {
			Stats []struct {
				Group string  `json:"group"`
				Jobs  int     `json:"jobs"`
				KS    float64 `json:"ks"`
			} `json:"stats"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Nodes != 72 || got.Replayed != n || len(got.Report.Stats) != 6 || got.Report.Stats[0].Group != "all" {
		t.Fatalf("got %+v, want 72 nodes, %d jobs, 6 groups", got, n)
	}
	// The size groups partition "all"; ">=5 nodes" pools the two large ones.
	st := got.Report.Stats
	if st[1].Jobs+st[2].Jobs+st[3].Jobs+st[4].Jobs != st[0].Jobs || st[3].Jobs+st[4].Jobs != st[5].Jobs {
		t.Fatalf("groups do not add up: %+v", st)
	}
	if k := got.Report.Stats[0].KS; k < 0 || k > 1 {
		t.Fatalf("KS %v outside [0,1]", k)
	}
}

func TestSimCommandBadInput(t *testing.T) {
	t.Parallel()
	_, _, code := runMirage(t, "sim", "--trace", filepath.Join(t.TempDir(), "missing.csv"))
	if code == 0 {
		t.Fatal("missing trace succeeded")
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	os.WriteFile(conf, []byte("NodeName=n[3-1]\n"), 0o644)
	tr := writeCSVTrace(t, []traces.Job{{ID: "a", Submit: time.Unix(0, 0), Start: time.Unix(0, 0), End: time.Unix(1, 0), Nodes: 1}})
	if _, _, code := runMirage(t, "sim", "--trace", tr, "--slurm-conf", conf); code != cmdutil.ExitBadInput {
		t.Fatalf("bad slurm.conf: exit %d, want %d", code, cmdutil.ExitBadInput)
	}
}

// A Kubernetes pod list calibrated on its own node list: the preset file
// keeps the node list and the measured latency, and `mirage sim` replays
// with it. The pods (one every 10 minutes, 1 GPU, on two 4-GPU nodes that
// always have room) alternately waited 0 s and 40 s, which only the
// empirical latency reproduces.
func TestSimCalibrateNodeList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,65536,4,T4\nn2,32000,65536,4,T4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var pods strings.Builder
	pods.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	// one pod 49 h before the rest ends the hold detection's warm-up
	pods.WriteString("p0,1000,1024,1,1000,,LS,Succeeded,0,300,0\n")
	const n = 200
	for i := range n {
		c := 49*3600 + i*600
		w := 40 * (i % 2)
		fmt.Fprintf(&pods, "p%d,1000,1024,1,1000,,LS,Succeeded,%d,%d,%d\n", i+1, c, c+w+300, c+w)
	}
	trace := filepath.Join(dir, "openb_pod_list_test.csv")
	if err := os.WriteFile(trace, []byte(pods.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	preset := filepath.Join(dir, "cal.yaml")
	fitUntil := time.Unix(49*3600+n/2*600, 0).UTC().Format(time.RFC3339)
	out, stderr, code := runMirage(t, "sim", "calibrate", "--trace", trace, "--preset", "default", "--node-list", nodes,
		"--fit-until", fitUntil, "--replicas", "1", "--out", preset, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cal struct {
		Best struct {
			Params struct {
				Nodes            int  `json:"nodes"`
				EmpiricalLatency bool `json:"empirical_latency"`
			} `json:"params"`
		} `json:"best"`
		LatencySamples int `json:"latency_samples"`
	}
	if err := json.Unmarshal([]byte(out), &cal); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !cal.Best.Params.EmpiricalLatency || cal.LatencySamples != n/2 {
		t.Fatalf("want the empirical latency measured on the %d fit-span pods: %s", n/2, out)
	}
	b, err := os.ReadFile(preset)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "node_list: "+nodes) || !strings.Contains(string(b), "latency_table:") {
		t.Fatalf("preset file without the node list or the latency table:\n%s", b)
	}
	out, stderr, code = runMirage(t, "sim", "--trace", trace, "--preset", preset, "--report", "--json")
	if code != 0 {
		t.Fatalf("sim --preset: exit %d: %s", code, stderr)
	}
	var rep struct {
		Nodes    int `json:"nodes"`
		Replayed int `json:"replayed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Nodes != cal.Best.Params.Nodes || rep.Replayed != n+1 {
		t.Fatalf("sim with the preset: %+v, want %d nodes and %d pods", rep, cal.Best.Params.Nodes, n+1)
	}
	if _, stderr, code := runMirage(t, "sim", "--trace", trace, "--node-list", filepath.Join(dir, "missing.csv")); code != cmdutil.ExitBadInput {
		t.Fatalf("missing node list: exit %d, want %d: %s", code, cmdutil.ExitBadInput, stderr)
	}
}
