package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
)

// trainFixture is one small training run shared by the train, models and
// predict-wait tests: 10 synthetic LS6 days, chains of 1 and 4 nodes with
// 12 h segments every 12 h, decisions every 30 min.
type trainFixture struct {
	trace, dir     string
	stdout, stderr string
}

var (
	trainOnce sync.Once
	trainTmp  string // removed by TestMain
	trainFix  trainFixture
	trainErr  error
	trainCode int
)

// needXGBoost requires the xgboost build of a test that trains xgb or wait
// models (testenv.XGBoost: go test without -tags xgboost skips it, or
// fails it in CI).
func needXGBoost(t *testing.T) {
	t.Helper()
	testenv.XGBoost(t, xgb.CanTrain)
}

func trainedFixture(t *testing.T) trainFixture {
	t.Helper()
	needXGBoost(t)
	trainOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "mirage-train-test-")
		if err != nil {
			trainErr = err
			return
		}
		trainTmp = tmp
		trainFix.trace = filepath.Join(tmp, "synth.log")
		if _, se, code := runMirage(t, "traces", "synth", "--like", "ls6", "--days", "10", "--seed", "5", "--out", trainFix.trace); code != 0 {
			trainErr = errors.New("synth: " + se)
			return
		}
		trainFix.dir = filepath.Join(tmp, "models")
		trainFix.stdout, trainFix.stderr, trainCode = runMirage(t, "train", "--trace", trainFix.trace, "--model", "xgb,xgb-online,rf,wait,dqn,pg", "--out", trainFix.dir, "--dqn-steps", "3000", "--pg-iterations", "20",
			"--from", "2022-11-04", "--train-until", "2022-11-08", "--until", "2022-11-10", "--nodes", "1,4", "--every", "12h", "--cycle", "30m",
			"--limit", "12h", "--seed", "3", "--cache", filepath.Join(tmp, "cache"))
	})
	if trainErr != nil {
		t.Fatal(trainErr)
	}
	if trainCode != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", trainCode, trainFix.stdout, trainFix.stderr)
	}
	return trainFix
}

func TestTrainWritesModels(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	// The summary table names every model and its directory.
	for _, name := range []string{"xgb", "rf", "wait"} {
		if !strings.Contains(fx.stdout, filepath.Join(fx.dir, name)) {
			t.Errorf("summary lacks %s:\n%s", name, fx.stdout)
		}
	}
	if !strings.HasPrefix(fx.stdout, "NAME") || !strings.Contains(fx.stderr, "dataset train ×1:") || !strings.Contains(fx.stderr, "dataset validation:") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", fx.stdout, fx.stderr)
	}
	meta, err := models.ReadMeta(filepath.Join(fx.dir, "xgb"))
	if err != nil {
		t.Fatal(err)
	}
	// Windows as given, in the trace's zone (US Central for LS6): validation starts where training ends.
	chi, _ := time.LoadLocation("America/Chicago")
	if !meta.Windows.TrainUntil.Equal(time.Date(2022, 11, 8, 0, 0, 0, 0, chi)) || !meta.Windows.ValidFrom.Equal(meta.Windows.TrainUntil) ||
		!meta.Windows.TrainFrom.Equal(time.Date(2022, 11, 4, 0, 0, 0, 0, chi)) {
		t.Errorf("windows %+v", meta.Windows)
	}
	if meta.Seed != 3 || meta.Trace != "synth.log" || meta.Kind != models.KindXGB || meta.Decision == nil || meta.Decision.Target != models.TargetWait {
		t.Errorf("meta %+v", meta)
	}
	if meta.Libraries["libxgboost"] == "" || meta.Libraries["go"] == "" {
		t.Errorf("libraries %v", meta.Libraries)
	}
	for _, k := range []string{"valid_mean_abs_gap_h", "valid_reactive_mean_abs_gap_h", "calib_mean_abs_gap_h", "valid_gap_mae_h"} {
		if _, ok := meta.Metrics[k]; !ok {
			t.Errorf("metric %s missing: %v", k, meta.Metrics)
		}
	}
	if rf, err := models.ReadMeta(filepath.Join(fx.dir, "rf")); err != nil || rf.Kind != models.KindRF || rf.Task != models.Classification {
		t.Errorf("rf: %+v, %v", rf, err)
	}
	// The cache holds the chain datasets by injection day (UTC): training
	// from 4 November, validation up to 10 November 00:00 US Central
	// (06:00Z): every day from the 4th to the 9th, and the 10th when an
	// injection of the 12-hour grid falls before 06:00Z.
	ents, _ := os.ReadDir(filepath.Join(filepath.Dir(fx.dir), "cache"))
	days := map[string]bool{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "chainday-202211") {
			t.Errorf("cache file %s: want chainday-DATE-KEY.gob.gz", e.Name())
			continue
		}
		days[e.Name()[len("chainday-"):len("chainday-20221104")]] = true
	}
	for d := 4; d <= 9; d++ {
		if !days[fmt.Sprintf("202211%02d", d)] {
			t.Errorf("cache holds days %v: no 2022-11-%02d", days, d)
		}
	}
	if n := len(days); n != 6 && !(n == 7 && days["20221110"]) {
		t.Errorf("cache holds days %v, want 4–9 November (and perhaps the 10th)", days)
	}
}

func TestTrainBadInput(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t)
	out := t.TempDir()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--model", "nope"}, cmdutil.ExitUsage, `--model "nope"`},
		{[]string{"--model", "dqn", "--train-until", "yesterday"}, cmdutil.ExitUsage, `--train-until "yesterday"`},
		{[]string{"--model", "dqn", "--train-until", "2022-11-03", "--until", "2022-11-02"}, cmdutil.ExitUsage, "is not after"},
		{[]string{"--model", "dqn", "--scales", "0.5"}, cmdutil.ExitUsage, "--scales"},
		{[]string{"--model", "dqn", "--target", "both"}, cmdutil.ExitUsage, "--target"},
		{[]string{"--model", "dqn", "--from", "2030-01-01"}, cmdutil.ExitUsage, "no injection points"},
	}
	if xgb.CanTrain {
		tests = append(tests, []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"--model", "wait", "--wait-replicas", "0"}, cmdutil.ExitUsage, "--wait-replicas 0"},
			{[]string{"--model", "wait", "--wait-replicas", "65"}, cmdutil.ExitUsage, "--wait-replicas 65"},
		}...)
	}
	for _, tt := range tests {
		args := append([]string{"train", "--trace", tr, "--out", out, "--every", "12h", "--limit", "6h", "--cycle", "1h"}, tt.args...)
		_, stderr, code := runMirage(t, args...)
		if code != tt.code || !strings.Contains(stderr, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.msg)
		}
	}
	if _, stderr, code := runMirage(t, "train", "--trace", filepath.Join(out, "missing.log"), "--model", "dqn", "--out", out); code == 0 || !strings.Contains(stderr, "missing.log") {
		t.Errorf("missing trace: exit %d, %q", code, stderr)
	}
}

func TestModelsLsShow(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	out, stderr, code := runMirage(t, "models", "ls", fx.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The fixture's models, by name: dqn, pg, rf, wait, xgb, xgb-online.
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "dqn ") || !strings.HasPrefix(lines[2], "pg ") ||
		!strings.HasPrefix(lines[3], "rf ") || !strings.HasPrefix(lines[4], "wait ") || !strings.HasPrefix(lines[5], "xgb ") || !strings.HasPrefix(lines[6], "xgb-online ") {
		t.Fatalf("ls:\n%s", out)
	}
	lines = append(lines[:1], lines[3:]...) // rf, wait, xgb as below
	if !strings.Contains(lines[3], "mean |gap|") || !strings.Contains(lines[2], "median |err|") || !strings.Contains(lines[3], "2022-11-04 – 2022-11-08") {
		t.Errorf("ls rows:\n%s", out)
	}
	out, _, _ = runMirage(t, "models", "ls", "--json", fx.dir)
	var ents []models.Entry
	if err := json.Unmarshal([]byte(out), &ents); err != nil || len(ents) != 6 {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	ents = ents[2:] // rf, wait, xgb after dqn and pg
	if ents[2].Name != "xgb" || ents[2].Meta.Schema.Name != "mirage-chain" || ents[2].Meta.Schema.Version != features.FeatureSchemaVersion ||
		ents[1].Meta.Params["wait_quantile"] != "0.5" || ents[1].Meta.Schema.Name != "mirage-wait" || ents[1].Meta.Schema.Version != features.WaitSchemaVersion {
		t.Errorf("ls --json entries %+v", ents)
	}
	out, _, code = runMirage(t, "models", "show", filepath.Join(fx.dir, "xgb"))
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "  "); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	if code != 0 || kv["kind"] != "xgb (regression)" || kv["seed"] != "3" || !strings.HasPrefix(kv["decision"], "submit when score ≥") ||
		!strings.Contains(kv["decision"], "(target wait)") || kv["param num_round"] != "300" || kv["metric valid_episodes"] != "8" {
		t.Errorf("show:\n%s", out)
	}
	// xgb-online: an xgb model whose rule is online, its guard beside it.
	out, _, code = runMirage(t, "models", "show", filepath.Join(fx.dir, "xgb-online"))
	if code != 0 || !strings.Contains(out, "; online: ") || !strings.Contains(out, "guard ") {
		t.Errorf("show xgb-online:\n%s", out)
	}
	if g, err := models.ReadMeta(filepath.Join(fx.dir, "xgb-online", models.GuardDir)); err != nil || g.Task != models.Classification {
		t.Errorf("xgb-online's guard: %+v, %v", g, err)
	}
	out, _, _ = runMirage(t, "models", "show", "--json", filepath.Join(fx.dir, "wait"))
	var w map[string]models.Meta
	if err := json.Unmarshal([]byte(out), &w); err != nil || w["p90"].Params["wait_quantile"] != "0.9" {
		t.Errorf("show --json wait: %v\n%s", err, out)
	}
	// A model of an older chain schema is listed as stale, and show names the current one.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.CopyFS(filepath.Join(old, "xgb"), os.DirFS(filepath.Join(fx.dir, "xgb"))); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(old, "xgb", models.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(mb, &meta); err != nil {
		t.Fatal(err)
	}
	meta["schema"].(map[string]any)["version"] = 3
	if mb, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "xgb", models.MetaFile), mb, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runMirage(t, "models", "ls", old); code != 0 || !strings.Contains(out, "chain v3 (stale)") {
		t.Errorf("ls of a v3 model: exit %d\n%s", code, out)
	}
	want := fmt.Sprintf("stale: this mirage computes mirage-chain v%d; retrain", features.FeatureSchemaVersion)
	if out, _, code := runMirage(t, "models", "show", filepath.Join(old, "xgb")); code != 0 || !strings.Contains(out, want) {
		t.Errorf("show of a v3 model: exit %d, want %q in\n%s", code, want, out)
	}
	if _, stderr, code := runMirage(t, "models", "ls", filepath.Join(fx.dir, "nope")); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "does not exist") {
		t.Errorf("missing dir: exit %d %q", code, stderr)
	}
	if _, stderr, code := runMirage(t, "models", "show", fx.dir); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "give DIR/NAME") {
		t.Errorf("show of the directory itself: exit %d %q", code, stderr)
	}
}

func TestPredictWait(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	snap := filepath.Join(t.TempDir(), "snap.json")
	out, stderr, code := runMirage(t, "predict-wait", "--models", fx.dir, "--trace", fx.trace, "--at", "2022-11-09T12:00", "-N", "4", "-t", "12:00:00",
		"--json", "--save-snapshot", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	// 4 whole LS6 nodes: 12 GPUs; the interval is ordered.
	if a["nodes"] != 4.0 || a["gpus"] != 12.0 || a["time_limit"] != "12h0m0s" || a["p10_s"].(float64) > a["p50_s"].(float64) || a["p50_s"].(float64) > a["p90_s"].(float64) {
		t.Errorf("prediction %v", a)
	}
	// The saved snapshot gives the same answer.
	out2, stderr, code := runMirage(t, "predict-wait", "--models", fx.dir, "--snapshot", snap, "-N", "4", "-t", "12:00:00", "--json")
	var b map[string]any
	if code != 0 || json.Unmarshal([]byte(out2), &b) != nil {
		t.Fatalf("from snapshot: exit %d %s", code, stderr)
	}
	for _, k := range []string{"p10_s", "p50_s", "p90_s", "gpus", "at"} {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("%s: trace %v, snapshot %v", k, a[k], b[k])
		}
	}
	out, _, code = runMirage(t, "predict-wait", "--models", fx.dir, "--snapshot", snap, "-N", "1", "--gres", "gpu:2")
	if code != 0 || !strings.Contains(out, "1 node(s), 2 GPU(s), limit 48h0m0s") || !strings.Contains(out, "expected wait") {
		t.Errorf("text output:\n%s", out)
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--snapshot", snap, "-t", "soon"}, cmdutil.ExitUsage, `-t "soon"`},
		{[]string{"--snapshot", snap, "-N", "0"}, cmdutil.ExitUsage, "at least 1 node"},
		{[]string{"--snapshot", snap, "--gres", "gpu:x:y"}, cmdutil.ExitUsage, "--gres"},
		{[]string{"--snapshot", snap, "--trace", fx.trace}, cmdutil.ExitUsage, "either --snapshot or --trace"},
		{[]string{"--trace", fx.trace}, cmdutil.ExitUsage, "--at"},
		{[]string{"--snapshot", fx.trace}, cmdutil.ExitBadInput, "not a snapshot"},
	}
	for _, tt := range tests {
		_, stderr, code := runMirage(t, append([]string{"predict-wait", "--models", fx.dir}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.msg) {
			t.Errorf("%v: exit %d %q, want %d %q", tt.args, code, stderr, tt.code, tt.msg)
		}
	}
	if _, stderr, code := runMirage(t, "predict-wait", "--models", t.TempDir(), "--snapshot", snap); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "mirage train --model wait") {
		t.Errorf("no model: exit %d %q", code, stderr)
	}
	// The live path: the backend is injected; an unreachable cluster is exit 4.
	live := testFactory(nil)
	live.LiveCluster = func(context.Context, *predictWaitOptions) (provisioner.Cluster, provisioner.HistorySource, error) {
		return failingCluster{}, nil, nil
	}
	if _, stderr, code := runWith(t, live, "predict-wait", "--models", fx.dir); code != cmdutil.ExitUnavailable || !strings.Contains(stderr, "live snapshot") {
		t.Errorf("unreachable live cluster: exit %d %q", code, stderr)
	}
}

// failingCluster is a backend whose controller is down.
type failingCluster struct{ provisioner.Cluster }

func (failingCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	return nil, provisioner.ErrUnavailable
}

// TestTrainWithoutLibXGBoost: a mirage built without libxgboost refuses a
// model that needs it before any work — before the trace is even opened
// (the path given does not exist, and the answer is about the library) —
// and still trains what does not need it as far as reading the trace.
func TestTrainWithoutLibXGBoost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second mirage") // never in CI: make test does not pass -short
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mirage-nolib")
	if out, err := exec.Command("go", "build", "-tags", "libsqlite3", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build without the xgboost tag: %v\n%s", err, out)
	}
	missing := filepath.Join(t.TempDir(), "no-such-trace.log")
	for _, model := range []string{"xgb", "rf-xgb", "wait", "dqn,xgb"} {
		out, err := exec.Command(bin, "train", "--trace", missing, "--model", model, "--out", t.TempDir()).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitUsage || !strings.Contains(string(out), "built without libxgboost") ||
			strings.Contains(string(out), missing) {
			t.Errorf("--model %s without libxgboost: %v\n%s", model, err, out)
		}
	}
	// dqn needs no libxgboost: the run goes on to the trace, and fails there.
	out, err := exec.Command(bin, "train", "--trace", missing, "--model", "dqn", "--out", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), missing) || strings.Contains(string(out), "libxgboost") {
		t.Errorf("--model dqn without libxgboost: %v\n%s", err, out)
	}
}

// TestTrainWorkload: train --workload fits the policy for the workload's
// cost into DIR/NAME@WORKLOAD (its meta records the training cost, 60 per
// hour of interruption and 2.5 per hour of overlap, with hand-off, and the
// hand-off rule it decides by), with the same data as the fixture (its
// dataset cache).
func TestTrainWorkload(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	out := t.TempDir()
	if _, stderr, code := runMirage(t, "train", "--trace", fx.trace, "--model", "xgb", "--workload", "training", "--out", out,
		"--from", "2022-11-04", "--train-until", "2022-11-08", "--until", "2022-11-10", "--nodes", "1,4", "--every", "12h", "--cycle", "30m",
		"--limit", "12h", "--seed", "3", "--cache", filepath.Join(filepath.Dir(fx.dir), "cache")); code != 0 {
		t.Fatalf("train --workload training: exit %d: %s", code, stderr)
	}
	meta, err := models.ReadMeta(filepath.Join(out, "xgb@training"))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Params["cost"] != "interruption 60/h, overlap 2.5/h + 0/GPU-h, with hand-off" || meta.Kind != models.KindXGB {
		t.Errorf("xgb@training meta: kind %s, cost %q", meta.Kind, meta.Params["cost"])
	}
	if d := meta.Decision; d == nil || d.Floor == nil || !strings.HasPrefix(d.Tuned, "hand-off rule") {
		t.Errorf("xgb@training decides by %+v, want the hand-off rule", d)
	}
	if _, err := os.Stat(filepath.Join(out, "xgb")); err == nil {
		t.Error("train --workload also wrote DIR/xgb")
	}
	if _, stderr, code := runMirage(t, "train", "--trace", fx.trace, "--model", "xgb", "--workload", "batch", "--out", out); code != cmdutil.ExitUsage {
		t.Errorf("train --workload batch: exit %d (%s), want %d", code, stderr, cmdutil.ExitUsage)
	}
}
