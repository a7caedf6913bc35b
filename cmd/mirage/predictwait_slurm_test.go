package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestPredictWaitLiveSlurm predicts from the real loopback Slurm 22.05
// cluster (4 nodes × 4 fake GPUs, scripts/slurm-up.sh): the live path reads
// squeue, sinfo and sacct through the Slurm client and only reads.
func TestPredictWaitLiveSlurm(t *testing.T) {
	t.Parallel()
	conf := testenv.SlurmConf(t)
	fx := trainedFixture(t)
	snap := filepath.Join(t.TempDir(), "live.json")
	before := time.Now()
	// Partition long allows 60 minutes (debug, the default, 5).
	out, stderr, code := runMirage(t, "predict-wait", "--models", fx.dir, "--slurm-conf", conf, "-N", "1", "--gres", "gpu:2", "-t", "1:00:00", "-p", "long",
		"--json", "--save-snapshot", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		At      time.Time `json:"at"`
		Source  string    `json:"source"`
		GPUs    int       `json:"gpus"`
		P10     float64   `json:"p10_s"`
		P50     float64   `json:"p50_s"`
		P90     float64   `json:"p90_s"`
		Warning string    `json:"warning"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Source != "live" || got.GPUs != 2 || got.P10 > got.P50 || got.P50 > got.P90 || got.At.Before(before.Add(-2*time.Minute)) || got.At.After(time.Now().Add(time.Minute)) {
		t.Errorf("live prediction %+v", got)
	}
	// The fixture's wait model was trained on the ls6 preset (#51): on the
	// loopback cluster's 4 nodes × 4 GPUs its answer is flagged.
	if want := "this one has 4 nodes × 4 GPUs: its answer extrapolates"; !strings.Contains(got.Warning, want) || !strings.Contains(stderr, want) {
		t.Errorf("no shape warning: JSON %q, stderr %q", got.Warning, stderr)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	var sf provisioner.SnapshotFile
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	// slurm.conf of the loopback cluster: node1…node4, Gres=gpu:tesla:4.
	if len(sf.Snapshot.Nodes) != 4 {
		t.Fatalf("snapshot has %d nodes, want the loopback cluster's 4", len(sf.Snapshot.Nodes))
	}
	for _, n := range sf.Snapshot.Nodes {
		if n.GPUs != 4 {
			t.Errorf("node %s has %d GPUs, want 4", n.Name, n.GPUs)
		}
	}
}

// TestPredictWaitRefusesWhatSlurmRejects (#51): a job the live cluster can
// never run — more nodes than it has, a limit over the partition's MaxTime
// (sbatch rejects both) — gets no predicted wait but exit 3 and the
// limit it breaks; before, -N 8 -t 48:00:00 answered "expected wait 3s".
func TestPredictWaitRefusesWhatSlurmRejects(t *testing.T) {
	t.Parallel()
	conf := testenv.SlurmConf(t)
	fx := trainedFixture(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		// scripts/slurm/slurm.conf.in: 4 nodes in debug (the default, MaxTime 5 min) and long (60 min).
		{[]string{"-N", "8", "-t", "48:00:00"}, "-N 8: partition debug has 4 node(s)"},
		{[]string{"-N", "1", "-t", "48:00:00"}, "-t 48h0m0s: partition debug allows at most 5m0s (MaxTime)"},
		{[]string{"-N", "1", "-t", "2:00:00", "-p", "long"}, "-t 2h0m0s: partition long allows at most 1h0m0s (MaxTime)"},
		{[]string{"-N", "1", "-t", "5", "--gres", "gpu:8"}, "--gres gpu:8 on 1 node(s): partition debug has 0 node(s) with that many GPUs"},
	} {
		out, stderr, code := runMirage(t, append([]string{"predict-wait", "--models", fx.dir, "--slurm-conf", conf}, c.args...)...)
		if code != cmdutil.ExitBadInput || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d saying %q", c.args, code, out, stderr, cmdutil.ExitBadInput, c.want)
		}
	}
}
