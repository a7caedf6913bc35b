package main

import (
	"encoding/json"
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
