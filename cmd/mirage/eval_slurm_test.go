package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/testenv"
)

// buildMirage builds this command with the test binary's build tags.
func buildMirage(t *testing.T) string {
	t.Helper()
	var tags string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "mirage")
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// slurmCmd runs a Slurm client with the loopback cluster's configuration.
func slurmCmd(ctx context.Context, conf, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	return cmd
}

// TestEvalArrayOnSlurm runs a sweep as a job array on the real loopback
// Slurm: the emitted script is submitted with sbatch, each task runs one
// cell with the mirage binary, and the merge of the cells' JSON equals the
// report of the same sweep run in one process.
func TestEvalArrayOnSlurm(t *testing.T) {
	t.Parallel()
	conf := testenv.SlurmConf(t)
	bin := buildMirage(t)
	sweep := tinySweep(t, fmt.Sprintf("slurm:\n  partition: debug\n  time: \"00:04:00\"\n  cpus: 1\n  mirage: %q\n", bin))
	out := filepath.Join(t.TempDir(), "array-out")
	stdout, stderr, code := runMirage(t, "eval", "--sweep", sweep, "--emit-array", "--out", out)
	if code != 0 {
		t.Fatalf("emit: exit %d: %s", code, stderr)
	}
	script := strings.TrimSpace(stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sub, err := slurmCmd(ctx, conf, "sbatch", "--parsable", script).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch %s: %v: %s", script, err, sub)
	}
	jobID, _, _ := strings.Cut(strings.TrimSpace(string(sub)), ";")
	t.Logf("array job %s", jobID)
	t.Cleanup(func() { _ = slurmCmd(context.Background(), conf, "scancel", jobID).Run() })
	// Wait until no task of the array is queued or running.
	for {
		q, err := slurmCmd(ctx, conf, "squeue", "-h", "-j", jobID, "-o", "%i %T").CombinedOutput()
		if err != nil && ctx.Err() == nil && !strings.Contains(string(q), "Invalid job id") {
			t.Fatalf("squeue: %v: %s", err, q)
		}
		if strings.TrimSpace(string(q)) == "" || strings.Contains(string(q), "Invalid job id") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("array %s still queued or running after 4 minutes:\n%s", jobID, q)
		}
		time.Sleep(2 * time.Second)
	}
	for i := range 4 {
		if _, err := os.Stat(eval.CellFile(out, i)); err != nil {
			log, _ := os.ReadFile(filepath.Join(out, "logs", fmt.Sprintf("cell-%d.out", i)))
			t.Fatalf("cell %d wrote no report: %v\ntask log:\n%s", i, err, log)
		}
	}
	merged := filepath.Join(out, "merged")
	if _, stderr, code := runMirage(t, "eval", "merge", "--out", merged, filepath.Join(out, "cells")); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	single := filepath.Join(t.TempDir(), "single")
	if _, stderr, code := runMirage(t, "eval", "--sweep", sweep, "--out", single); code != 0 {
		t.Fatalf("single: exit %d: %s", code, stderr)
	}
	if a, b := readReportJSON(t, filepath.Join(merged, "report.json")), readReportJSON(t, filepath.Join(single, "report.json")); a != b {
		i := 0
		for i < min(len(a), len(b)) && a[i] == b[i] {
			i++
		}
		t.Fatalf("the job array's merged report differs from the single-process report at byte %d:\nmerged: …%s…\nsingle: …%s…",
			i, a[max(0, i-300):min(len(a), i+200)], b[max(0, i-300):min(len(b), i+200)])
	}
}
