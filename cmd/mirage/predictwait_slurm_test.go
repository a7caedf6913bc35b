package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	out, stderr, code := runMirage(t, "predict-wait", "--models", fx.dir, "--slurm-conf", conf, "-N", "1", "--gres", "gpu:2", "-t", "1:00:00",
		"--json", "--save-snapshot", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		At     time.Time `json:"at"`
		Source string    `json:"source"`
		GPUs   int       `json:"gpus"`
		P10    float64   `json:"p10_s"`
		P50    float64   `json:"p50_s"`
		P90    float64   `json:"p90_s"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Source != "live" || got.GPUs != 2 || got.P10 > got.P50 || got.P50 > got.P90 || got.At.Before(before.Add(-2*time.Minute)) || got.At.After(time.Now().Add(time.Minute)) {
		t.Errorf("live prediction %+v", got)
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
